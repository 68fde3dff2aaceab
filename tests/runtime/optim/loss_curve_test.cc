// 20 training steps against PyTorch 1.13 (tests/runtime/optim/oracle/loss_curve_oracle.py):
// the same initial weights and batches, and every step's loss and the final weights
// within tolerance, for an MLP with SGD (momentum, Nesterov) and one with LayerNorm,
// GELU, label smoothing, AdamW and gradient clipping, on the CPU device. Each step is
// one graph (forward, backward, update).
//
// Tolerance: both sides compute in f32 with different summation orders; differences of a
// few ulps per step grow slowly through 20 updates: losses within 1e-4 relative, weights
// within 1e-4 + 1e-3 * |w| (measured worst cases are well below).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/sgd.h"
#include "tests/runtime/torch_oracle.h"

namespace podsim {
namespace {

constexpr int64_t kSteps = 20, kIn = 12, kHidden = 24, kClasses = 5;

const torch_oracle::OracleResult& oracle() {
  static const torch_oracle::OracleResult result =
      torch_oracle::run_torch_script("tests/runtime/optim/oracle/loss_curve_oracle.py", {});
  return result;
}

const ir::Literal& value(const std::string& name) {
  auto it = oracle().tensors.find(name);
  if (it == oracle().tensors.end()) throw Error("the oracle wrote no tensor " + name);
  return it->second;
}

std::shared_ptr<nn::Sequential> model_for(const std::string& run) {
  if (run == "sgd")
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(kIn, kHidden), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(kHidden, kClasses)});
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(kIn, kHidden),
      std::make_shared<nn::LayerNorm>(std::vector<int64_t>{kHidden}),
      std::make_shared<nn::GELU>(GeluApproximate::kTanh),
      std::make_shared<nn::Linear>(kHidden, kClasses)});
}

void check_run(const std::string& run) {
  ASSERT_EQ(oracle().error, "");
  pjrt::Device& device = podsim::device();
  auto model = model_for(run);
  nn::NamedTensors init;
  for (const auto& [name, tensor] : model->state_dict())
    init.emplace_back(name, Tensor::from_literal(value(run + ".init." + name)));
  model->load_state_dict(init);
  model->to(device);
  std::unique_ptr<optim::Optimizer> optimizer;
  if (run == "sgd")
    optimizer = std::make_unique<optim::SGD>(
        model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
  else
    optimizer = std::make_unique<optim::AdamW>(
        model->parameters(), optim::AdamWOptions{.lr = 3e-3, .weight_decay = 0.05});

  Tensor x = Tensor::from_literal(value(run + ".x"));
  Tensor y = Tensor::from_literal(value(run + ".y"));
  std::vector<float> want = Tensor::from_literal(value(run + ".loss")).to_vector<float>();
  std::vector<Tensor> losses;
  for (int64_t step = 0; step < kSteps; ++step) {
    Tensor logits = (*model)(x.narrow(0, step, 1).squeeze(0).to(device));
    Tensor loss = nn::functional::cross_entropy(logits, y.narrow(0, step, 1).squeeze(0).to(device),
                                                nn::Reduction::kMean, run == "sgd" ? 0.0 : 0.1);
    loss.backward();
    if (run == "adamw") optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer->step();
    optimizer->zero_grad();
    losses.push_back(loss);
    mark_step();
  }
  for (int64_t step = 0; step < kSteps; ++step) {
    double got = losses[static_cast<size_t>(step)].item().to_double();
    EXPECT_NEAR(got, want[static_cast<size_t>(step)],
                1e-4 * std::fabs(want[static_cast<size_t>(step)]))
        << run << " step " << step;
  }
  EXPECT_LT(want.back(), want.front());  // the runs learn something: the check is not vacuous
  for (const auto& [name, tensor] : model->state_dict()) {
    std::vector<float> got = tensor.cpu().to_vector<float>();
    std::vector<float> expected =
        Tensor::from_literal(value(run + ".final." + name)).to_vector<float>();
    ASSERT_EQ(got.size(), expected.size()) << name;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], expected[i], 1e-4 + 1e-3 * std::fabs(expected[i]))
          << run << " " << name << "[" << i << "]";
  }
}

TEST(LossCurve, SgdMomentumNesterovMatchesTorchFor20Steps) { check_run("sgd"); }
TEST(LossCurve, AdamWWithClippingAndLabelSmoothingMatchesTorchFor20Steps) { check_run("adamw"); }

}  // namespace
}  // namespace podsim
