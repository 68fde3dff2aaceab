// `podsim train cnn`: a small convolutional network classifying scikit-learn's 8x8
// handwritten digits (the mlp workload's data and split): two blocks of Conv2d (3x3,
// padding 1), BatchNorm2d, ReLU and 2x2 max pooling (8x8 -> 4x4 -> 2x2), then a linear
// classifier; Adam with a cosine schedule with warmup. On a simulated chip, the
// convolutions run on the MXU as one GEMM each (im2col), pooling and its gradient on
// the vector unit (passes::make_window_expander); data parallel, each replica
// normalizes by its own share of the batch (torch's BatchNorm2d without SyncBatchNorm).
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

constexpr int64_t kSide = 8, kClasses = 10;

// Pixel values 0..16 scaled to [0, 1], as one-channel 8x8 images.
data::TensorDataset images(const data::TensorDataset& d) {
  const Tensor& pixels = d.tensors()[0];
  return data::TensorDataset({(pixels / 16.0).reshape({pixels.size(0), 1, kSide, kSide}), d.tensors()[1]});
}

// Built on the host, as in PyTorch (moved to the device by the caller).
std::shared_ptr<nn::Sequential> make_cnn() {
  auto model = std::make_shared<nn::Sequential>();
  for (auto [in, out] : {std::pair<int64_t, int64_t>{1, 16}, {16, 32}}) {
    model->push_back(std::make_shared<nn::Conv2d>(in, out, 3, 1, 1));
    model->push_back(std::make_shared<nn::BatchNorm2d>(out));
    model->push_back(std::make_shared<nn::ReLU>());
    model->push_back(std::make_shared<nn::MaxPool2d>(2));
  }
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(32 * 2 * 2, kClasses));
  return model;
}

// Share of the test examples whose largest logit is the label (running statistics).
double accuracy(nn::Module& model, const data::TensorDataset& test, pjrt::Device& device) {
  NoGradGuard no_grad;
  model.eval();
  Tensor predicted = model(test.tensors()[0].to(device)).argmax(1);
  model.train();
  return eq(predicted, test.tensors()[1].to(device)).to(kFloat32).mean().item().to_double();
}

}  // namespace

TrainResult train_cnn(const TrainOptions& options, std::ostream& out) {
  const int64_t steps = options.steps > 0 ? options.steps : 300;
  const int64_t batch = options.batch > 0 ? options.batch : 64;
  const double lr = options.lr > 0 ? options.lr : 1e-2;

  auto [train_raw, test_raw] = data::train_test_split(data::load_digits(), 0.2, options.seed);
  auto train_set = std::make_shared<data::TensorDataset>(images(train_raw));
  const data::TensorDataset test = images(test_raw);
  std::vector<Replica> replicas = make_replicas(options, [&](pjrt::Device& device) {
    std::shared_ptr<nn::Sequential> model = make_cnn();
    model->to(device);
    auto optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = lr});
    auto schedule = std::make_unique<optim::CosineWarmupLR>(*optimizer, steps / 20, steps);
    return Replica{nullptr, model, std::move(optimizer), std::move(schedule),
                   [model](const data::Example& b) {
                     return nn::functional::cross_entropy((*model)(b[0]), b[1]);
                   }};
  });
  pjrt::Device& device = *replicas[0].device;
  out << fmt::format(
      "cnn: digits {} train / {} test, conv 1-16 + batch norm + pool, conv 16-32 + batch norm + pool, "
      "linear 128-{} on {}, {} steps of batch {}\n",
      train_set->size(), test.size(), kClasses, placement(replicas), steps, batch);

  TrainResult result = train(replicas, train_set, steps, batch, options, out);
  result.test_accuracy = accuracy(*replicas[0].model, test, device);
  out << fmt::format(
      "cnn: test accuracy {:.2f}% after {} steps ({:.1f} steps/s, {} compilation(s))\n",
      100 * *result.test_accuracy, result.steps, result.steps_per_second, result.compilations);
  return result;
}

}  // namespace podsim::examples
