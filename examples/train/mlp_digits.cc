// `podsim train mlp`: a two-layer perceptron classifying scikit-learn's 8x8 handwritten
// digits (1797 images; 80% train, 20% test), trained with Adam and a cosine schedule
// with warmup. The model is built on the host and moved to the device, as in PyTorch;
// each step (forward, cross-entropy, backward, update) is one graph, compiled once.
#include <fmt/format.h>

#include <memory>

#include "examples/train/train.h"
#include "examples/train/train_loop.h"
#include "runtime/autograd/autograd.h"
#include "runtime/data/datasets.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/lr_scheduler.h"

namespace podsim::examples {
namespace {

constexpr int64_t kPixels = 64, kHidden = 128, kClasses = 10;

// Pixel values 0..16 scaled to [0, 1].
data::TensorDataset scaled(const data::TensorDataset& d) {
  return data::TensorDataset({d.tensors()[0] / 16.0, d.tensors()[1]});
}

// Share of the test examples whose largest logit is the label.
double accuracy(nn::Module& model, const data::TensorDataset& test, pjrt::Device& device) {
  NoGradGuard no_grad;
  model.eval();
  Tensor predicted = model(test.tensors()[0].to(device)).argmax(1);
  model.train();
  return eq(predicted, test.tensors()[1].to(device)).to(kFloat32).mean().item().to_double();
}

}  // namespace

TrainResult train_mlp(const TrainOptions& options, std::ostream& out) {
  const int64_t steps = options.steps > 0 ? options.steps : 300;
  const int64_t batch = options.batch > 0 ? options.batch : 64;
  const double lr = options.lr > 0 ? options.lr : 1e-2;

  auto [train_raw, test_raw] = data::train_test_split(data::load_digits(), 0.2, options.seed);
  auto train_set = std::make_shared<data::TensorDataset>(scaled(train_raw));
  const data::TensorDataset test = scaled(test_raw);
  std::vector<Replica> replicas = make_replicas(options, [&](pjrt::Device& device) {
    auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(kPixels, kHidden), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(kHidden, kClasses)});
    model->to(device);
    auto optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = lr});
    auto schedule = std::make_unique<optim::CosineWarmupLR>(*optimizer, steps / 20, steps);
    return Replica{nullptr, model, std::move(optimizer), std::move(schedule),
                   [model](const data::Example& b) {
                     return nn::functional::cross_entropy((*model)(b[0]), b[1]);
                   }};
  });
  pjrt::Device& device = *replicas[0].device;
  out << fmt::format("mlp: digits {} train / {} test, {}-{}-{} on {}, {} steps of batch {}\n",
                     train_set->size(), test.size(), kPixels, kHidden, kClasses,
                     placement(replicas), steps, batch);

  TrainResult result = train(replicas, train_set, steps, batch, options, out);
  result.test_accuracy = accuracy(*replicas[0].model, test, device);
  out << fmt::format(
      "mlp: test accuracy {:.2f}% after {} steps ({:.1f} steps/s, {} compilation(s))\n",
      100 * *result.test_accuracy, result.steps, result.steps_per_second, result.compilations);
  return result;
}

}  // namespace podsim::examples
