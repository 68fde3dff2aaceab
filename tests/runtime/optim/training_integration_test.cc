// The pieces together, as a training loop uses them: a DeviceLoader over shuffled
// batches, an MLP, cross-entropy, backward, clip_grad_norm_, AdamW and a cosine
// schedule with warmup. Every step is one graph, compiled once: after warm-up the
// compile cache serves every step although the lr and Adam's bias corrections change
// each time. The model learns: well-separated blobs, then the digits (>= 90% test
// accuracy after a few epochs; the CLI example trains longer for >= 95%).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include "runtime/data/datasets.h"
#include "runtime/data/device_loader.h"
#include "runtime/debug/metrics.h"
#include "runtime/nn/functional.h"
#include "runtime/nn/layers.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/lr_scheduler.h"

namespace podsim::optim {
namespace {

std::shared_ptr<nn::Sequential> mlp(int64_t in, int64_t hidden, int64_t out) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(in, hidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, out)});
  model->to(podsim::device());
  return model;
}

double accuracy(nn::Module& model, const data::TensorDataset& dataset) {
  Tensor x = dataset.tensors()[0].to(podsim::device());
  // argmax on the host: the simulated chip's lowering has no variadic reduce yet.
  Tensor predicted = argmax(model(x).cpu(), 1);
  std::vector<int64_t> p = predicted.to_vector<int64_t>();
  std::vector<int64_t> y = dataset.tensors()[1].to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < y.size(); ++i) right += p[i] == y[i];
  return static_cast<double>(right) / static_cast<double>(y.size());
}

struct TrainingRun {
  std::vector<double> epoch_losses;  // mean loss per epoch
  int64_t compiles_after_warmup = 0;
  int64_t steps = 0;
};

TrainingRun train(nn::Module& model, std::shared_ptr<const data::Dataset> train_set, int epochs,
                  int64_t batch_size, double lr) {
  data::DeviceLoader loader(
      data::DataLoader(std::move(train_set),
                       {.batch_size = batch_size, .shuffle = true, .seed = 3, .drop_last = true}),
      podsim::device());
  AdamW opt(model.parameters(), {.lr = lr, .weight_decay = 1e-4});
  int64_t total = epochs * loader.num_batches();
  CosineWarmupLR schedule(opt, total / 10, total);
  TrainingRun run;
  int64_t uncached_at_warmup = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::vector<Tensor> losses;
    for (const data::Example& batch : loader) {
      if (run.steps == 3) uncached_at_warmup = debug::counter_value("UncachedCompile");
      opt.zero_grad();
      Tensor loss = nn::functional::cross_entropy(model(batch[0]), batch[1]);
      loss.backward();
      clip_grad_norm_(model.parameters(), 1.0);
      opt.step();
      schedule.step();
      losses.push_back(loss);  // read after the loader's mark_step ran the step
      ++run.steps;
    }
    double sum = 0;
    for (const Tensor& l : losses) sum += l.item().to_double();
    run.epoch_losses.push_back(sum / static_cast<double>(losses.size()));
  }
  run.compiles_after_warmup = debug::counter_value("UncachedCompile") - uncached_at_warmup;
  return run;
}

TEST(Training, BlobsOneCompiledGraphPerStepAndTheLossFalls) {
  manual_seed(0);
  data::TensorDataset blobs = data::make_blobs(
      {.samples = 512, .features = 4, .classes = 3, .cluster_std = 1.5, .seed = 2});
  auto [train_set, test_set] = data::train_test_split(blobs, 0.25, 1);
  auto model = mlp(4, 16, 3);
  TrainingRun run = train(*model, std::make_shared<data::TensorDataset>(train_set), 4, 32, 0.02);
  EXPECT_EQ(run.compiles_after_warmup, 0);
  EXPECT_LT(run.epoch_losses.back(), 0.5 * run.epoch_losses.front());
  double test_accuracy = accuracy(*model, test_set);
  RecordProperty("test_accuracy", std::to_string(test_accuracy));
  RecordProperty("first_last_epoch_loss",
                 fmt::format("{:.4f} {:.4f}", run.epoch_losses.front(), run.epoch_losses.back()));
  EXPECT_GE(test_accuracy, 0.9);
}

TEST(Training, DigitsMlpLearns) {
  manual_seed(0);
  data::TensorDataset digits = data::load_digits();
  // Pixels 0..16 scaled to 0..1.
  data::TensorDataset scaled({div(digits.tensors()[0], 16.0), digits.tensors()[1]});
  auto [train_set, test_set] = data::train_test_split(scaled, 0.2, 0);
  auto model = mlp(64, 64, 10);
  TrainingRun run = train(*model, std::make_shared<data::TensorDataset>(train_set), 4, 64, 0.01);
  EXPECT_EQ(run.compiles_after_warmup, 0);
  EXPECT_LT(run.epoch_losses.back(), 0.5 * run.epoch_losses.front());
  double test_accuracy = accuracy(*model, test_set);
  RecordProperty("test_accuracy", std::to_string(test_accuracy));
  RecordProperty("first_last_epoch_loss",
                 fmt::format("{:.4f} {:.4f}", run.epoch_losses.front(), run.epoch_losses.back()));
  EXPECT_GE(test_accuracy, 0.9);
}

}  // namespace
}  // namespace podsim::optim
