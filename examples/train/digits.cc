// `podsim train mlp` and `podsim train cnn`: classifiers of scikit-learn's 8x8
// handwritten digits (1797 images; 80% train, 20% test), trained with Adam and a cosine
// schedule with warmup. The model is built on the host and moved to the device, as in
// PyTorch; each step (forward, cross-entropy, backward, update) is one graph, compiled
// once.
//   mlp: a two-layer perceptron on the 64 pixels.
//   cnn: two blocks of Conv2d (3x3, padding 1), BatchNorm2d, ReLU and 2x2 max pooling
//     (8x8 -> 4x4 -> 2x2), then a linear classifier. On a simulated chip the
//     convolutions run on the MXU as one GEMM each (im2col), pooling and its gradient on
//     the vector unit (passes::make_window_expander). Data parallel, each replica
//     normalizes by its own share of the batch (BatchNorm2d without SyncBatchNorm).
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>

#include "examples/train/train.h"
#include "examples/train/train_loop.h"
#include "runtime/autograd/autograd.h"
#include "runtime/data/datasets.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/lr_scheduler.h"

namespace podsim::examples {
namespace {

constexpr int64_t kSide = 8, kPixels = kSide * kSide, kHidden = 128, kClasses = 10;

// Share of the test examples whose largest logit is the label (in eval mode).
double accuracy(nn::Module& model, const data::TensorDataset& test, pjrt::Device& device) {
  NoGradGuard no_grad;
  model.eval();
  Tensor predicted = model(test.tensors()[0].to(device)).argmax(1);
  model.train();
  return eq(predicted, test.tensors()[1].to(device)).to(kFloat32).mean().item().to_double();
}

// Trains the model `make` builds (on the host) on the digits, pixel values 0..16 scaled
// to [0, 1] and given the shape `input` ({-1 for the batch, ...}).
TrainResult train_digits(const TrainOptions& options, std::ostream& out, const std::string& name,
                         const std::string& description, const std::vector<int64_t>& input,
                         const std::function<std::shared_ptr<nn::Module>()>& make) {
  const int64_t steps = options.steps > 0 ? options.steps : 300;
  const int64_t batch = options.batch > 0 ? options.batch : 64;
  const double lr = options.lr > 0 ? options.lr : 1e-2;

  auto scaled = [&](const data::TensorDataset& d) {
    std::vector<int64_t> shape = input;
    shape[0] = d.tensors()[0].size(0);
    return data::TensorDataset({(d.tensors()[0] / 16.0).reshape(shape), d.tensors()[1]});
  };
  auto [train_raw, test_raw] = data::train_test_split(data::load_digits(), 0.2, options.seed);
  auto train_set = std::make_shared<data::TensorDataset>(scaled(train_raw));
  const data::TensorDataset test = scaled(test_raw);
  std::vector<Replica> replicas = make_replicas(options, [&](pjrt::Device& device) {
    std::shared_ptr<nn::Module> model = make();
    model->to(device);
    auto optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = lr});
    auto schedule = std::make_unique<optim::CosineWarmupLR>(*optimizer, steps / 20, steps);
    return Replica{nullptr, model, std::move(optimizer), std::move(schedule),
                   [model](const data::Example& b) {
                     return nn::functional::cross_entropy((*model)(b[0]), b[1]);
                   }};
  });
  pjrt::Device& device = *replicas[0].device;
  out << fmt::format("{}: digits {} train / {} test, {} on {}, {} steps of batch {}\n", name, train_set->size(),
                     test.size(), description, placement(replicas), steps, batch);

  TrainResult result = train(replicas, train_set, steps, batch, options, out);
  result.test_accuracy = accuracy(*replicas[0].model, test, device);
  out << fmt::format("{}: test accuracy {:.2f}% after {} steps ({:.1f} steps/s, {} compilation(s))\n", name,
                     100 * *result.test_accuracy, result.steps, result.steps_per_second, result.compilations);
  return result;
}

}  // namespace

TrainResult train_mlp(const TrainOptions& options, std::ostream& out) {
  return train_digits(options, out, "mlp", fmt::format("{}-{}-{}", kPixels, kHidden, kClasses), {-1, kPixels}, [] {
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(kPixels, kHidden), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(kHidden, kClasses)});
  });
}

TrainResult train_cnn(const TrainOptions& options, std::ostream& out) {
  const std::string description = fmt::format(
      "conv 1-16 + batch norm + pool, conv 16-32 + batch norm + pool, linear 128-{}", kClasses);
  return train_digits(options, out, "cnn", description, {-1, 1, kSide, kSide}, [] {
    auto model = std::make_shared<nn::Sequential>();
    for (auto [in, out] : {std::pair<int64_t, int64_t>{1, 16}, {16, 32}}) {
      model->push_back(std::make_shared<nn::Conv2d>(in, out, 3, 1, 1));
      model->push_back(std::make_shared<nn::BatchNorm2d>(out));
      model->push_back(std::make_shared<nn::ReLU>());
      model->push_back(std::make_shared<nn::MaxPool2d>(2));
    }
    model->push_back(std::make_shared<nn::Flatten>());
    model->push_back(std::make_shared<nn::Linear>(32 * 2 * 2, kClasses));
    return std::shared_ptr<nn::Module>(model);
  });
}

}  // namespace podsim::examples
