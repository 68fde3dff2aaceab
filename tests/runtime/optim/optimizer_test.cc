// SGD, Adam and AdamW against torch.optim (1.13): the same initial parameters and the
// same gradients at every step (set by hand, so that only the optimizer is compared)
// give torch's parameters; a linear regression trained with backward() matches torch's
// parameters and losses; a changing learning rate and Adam's changing bias corrections
// do not recompile the step's graph.
//
// Tolerance (f32): |got - torch| <= 1e-6 + 1e-5 * |torch| after 4 steps. The update
// formulas are torch's in torch's order; the difference is rounding where the graph
// compiler contracts or reorders (a * b + c) and where torch's kernels do.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/autograd/autograd.h"
#include "runtime/debug/metrics.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/sgd.h"
#include "runtime/tensor/tensor.h"
#include "tests/runtime/optim/oracle/torch_oracle.h"

namespace podsim::optim {
namespace {

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;
constexpr int kSteps = 4;
const std::vector<std::vector<int64_t>> kShapes = {{4, 3}, {5}, {2, 2}};

ir::Literal random_literal(const std::vector<int64_t>& shape, std::mt19937& rng, double scale) {
  ir::Literal lit(ir::Shape(kFloat32, shape));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : lit.data<float>()) v = static_cast<float>(normal(rng) * scale);
  return lit;
}

// p<j>, g<s>_<j> (p2 has no grad at step 1: the optimizers skip it), and the
// regression data x, y, w, b.
ir::NamedLiterals make_inputs() {
  std::mt19937 rng(7);
  ir::NamedLiterals in;
  for (size_t j = 0; j < kShapes.size(); ++j)
    in.emplace_back(fmt::format("p{}", j), random_literal(kShapes[j], rng, 1.0));
  for (int s = 0; s < kSteps; ++s)
    for (size_t j = 0; j < kShapes.size(); ++j)
      if (!(s == 1 && j == 2))
        in.emplace_back(fmt::format("g{}_{}", s, j), random_literal(kShapes[j], rng, 0.5));
  in.emplace_back("x", random_literal({8, 4}, rng, 1.0));
  in.emplace_back("y", random_literal({8, 3}, rng, 1.0));
  in.emplace_back("w", random_literal({4, 3}, rng, 0.3));
  in.emplace_back("b", random_literal({3}, rng, 0.3));
  return in;
}

const ir::NamedLiterals& inputs() {
  static const ir::NamedLiterals* in = new ir::NamedLiterals(make_inputs());
  return *in;
}

const ir::Literal* input(const std::string& name) {
  for (const auto& [n, lit] : inputs())
    if (n == name) return &lit;
  return nullptr;
}

constexpr const char* kCases = R"([
  {"name": "sgd", "kind": "optimizer", "optimizer": "SGD", "steps": 4, "kwargs": {"lr": 0.1}},
  {"name": "sgd_momentum", "kind": "optimizer", "optimizer": "SGD", "steps": 4,
   "kwargs": {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}},
  {"name": "sgd_nesterov", "kind": "optimizer", "optimizer": "SGD", "steps": 4,
   "kwargs": {"lr": 0.05, "momentum": 0.9, "nesterov": true, "weight_decay": 0.001}},
  {"name": "sgd_groups", "kind": "optimizer", "optimizer": "SGD", "steps": 4,
   "kwargs": {"lr": 0.1}, "groups": [[0, 2], [1]],
   "group_kwargs": [{"lr": 0.2}, {"momentum": 0.5}]},
  {"name": "adam", "kind": "optimizer", "optimizer": "Adam", "steps": 4, "kwargs": {"lr": 0.01}},
  {"name": "adam_wd_amsgrad", "kind": "optimizer", "optimizer": "Adam", "steps": 4,
   "kwargs": {"lr": 0.02, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1,
              "amsgrad": true}},
  {"name": "adam_lrs", "kind": "optimizer", "optimizer": "Adam", "steps": 4,
   "kwargs": {"lr": 0.01}, "lrs": [0.01, 0.02, 0.005, 0.001]},
  {"name": "adamw", "kind": "optimizer", "optimizer": "AdamW", "steps": 4,
   "kwargs": {"lr": 0.01, "weight_decay": 0.1}},
  {"name": "adamw_amsgrad", "kind": "optimizer", "optimizer": "AdamW", "steps": 4,
   "kwargs": {"lr": 0.03, "amsgrad": true}},
  {"name": "train_adam", "kind": "train", "optimizer": "Adam", "steps": 5,
   "kwargs": {"lr": 0.05}},
  {"name": "train_sgd_clip", "kind": "train", "optimizer": "SGD", "steps": 5,
   "kwargs": {"lr": 0.1, "momentum": 0.9}, "clip": 0.5}
])";

const testing::OracleResult& oracle() {
  static const testing::OracleResult* r =
      new testing::OracleResult(testing::run_torch_oracle("optim", inputs(), kCases));
  return *r;
}

// Compares and returns the largest |got - want| / (atol + rtol |want|) (<= 1 passes).
double compare(const Tensor& got, const std::string& key) {
  const auto& tensors = oracle().tensors;
  auto it = tensors.find(key);
  EXPECT_NE(it, tensors.end()) << "the oracle has no " << key;
  if (it == tensors.end()) return 0;
  std::vector<double> values = got.to_vector<double>();
  EXPECT_EQ(static_cast<int64_t>(values.size()), it->second.num_elements()) << key;
  double worst = 0;
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < it->second.num_elements();
       ++i) {
    double want = it->second.get_as_double(static_cast<int64_t>(i));
    double ratio = std::abs(values[i] - want) / (kAtol + kRtol * std::abs(want));
    worst = std::max(worst, ratio);
    EXPECT_LE(ratio, 1.0) << key << "[" << i << "]: podsim " << values[i] << ", torch " << want;
  }
  return worst;
}

class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_eager_mode(false);
    mark_step();
    wait_device_ops();
  }

  pjrt::Device& dev() { return podsim::device(); }

  std::vector<Tensor> make_params() {
    std::vector<Tensor> params;
    for (size_t j = 0; j < kShapes.size(); ++j) {
      Tensor p = Tensor::from_literal(*input(fmt::format("p{}", j)), &dev());
      p.requires_grad_();
      params.push_back(p);
    }
    return params;
  }

  void set_grads(std::vector<Tensor>& params, int step) {
    for (size_t j = 0; j < params.size(); ++j) {
      const ir::Literal* g = input(fmt::format("g{}_{}", step, j));
      params[j].set_grad(g ? Tensor::from_literal(*g, &dev()) : Tensor());
    }
  }

  // Runs kSteps steps and compares the parameters with the oracle's case.
  void run_case(const std::string& name, std::vector<Tensor>& params, Optimizer& optimizer,
                const std::vector<double>& lrs = {}) {
    ASSERT_EQ(oracle().error, "");
    for (int s = 0; s < kSteps; ++s) {
      if (!lrs.empty()) optimizer.set_lr(lrs[static_cast<size_t>(s)]);
      set_grads(params, s);
      optimizer.step();
      mark_step();
    }
    double worst = 0;
    for (size_t j = 0; j < params.size(); ++j)
      worst = std::max(worst, compare(params[j], fmt::format("{}.p{}", name, j)));
    RecordProperty("worst_error_over_tolerance", std::to_string(worst));
  }
};

TEST_F(OptimizerTest, SgdMatchesTorch) {
  auto params = make_params();
  SGD opt(params, {.lr = 0.1});
  run_case("sgd", params, opt);
}

TEST_F(OptimizerTest, SgdMomentumDampeningWeightDecayMatchesTorch) {
  auto params = make_params();
  SGD opt(params, {.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
  run_case("sgd_momentum", params, opt);
}

TEST_F(OptimizerTest, SgdNesterovMatchesTorch) {
  auto params = make_params();
  SGD opt(params, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.001, .nesterov = true});
  run_case("sgd_nesterov", params, opt);
}

TEST_F(OptimizerTest, SgdParamGroupsMatchTorch) {
  auto params = make_params();
  SGD opt(std::vector<ParamGroup>{{{params[0], params[2]}, {{"lr", 0.2}}},
                                  {{params[1]}, {{"momentum", 0.5}}}},
          {.lr = 0.1});
  // Group order gives torch's global numbering: p0, p2, p1.
  run_case("sgd_groups", params, opt);
}

TEST_F(OptimizerTest, AdamMatchesTorch) {
  auto params = make_params();
  Adam opt(params, {.lr = 0.01});
  run_case("adam", params, opt);
}

TEST_F(OptimizerTest, AdamWeightDecayAmsgradMatchesTorch) {
  auto params = make_params();
  Adam opt(
      params,
      {.lr = 0.02, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true});
  run_case("adam_wd_amsgrad", params, opt);
}

TEST_F(OptimizerTest, AdamWithChangingLrMatchesTorch) {
  auto params = make_params();
  Adam opt(params, {.lr = 0.01});
  run_case("adam_lrs", params, opt, {0.01, 0.02, 0.005, 0.001});
}

TEST_F(OptimizerTest, AdamWMatchesTorch) {
  auto params = make_params();
  AdamW opt(params, {.lr = 0.01, .weight_decay = 0.1});
  run_case("adamw", params, opt);
}

TEST_F(OptimizerTest, AdamWAmsgradMatchesTorch) {
  auto params = make_params();
  AdamW opt(params, {.lr = 0.03, .amsgrad = true});
  run_case("adamw_amsgrad", params, opt);
}

// Forward, backward, clipping and update through autograd, one graph per step.
void train(OptimizerTest* test, const std::string& name, Optimizer& opt, Tensor& w, Tensor& b,
           std::optional<double> clip) {
  ASSERT_EQ(oracle().error, "");
  pjrt::Device& dev = podsim::device();
  Tensor x = Tensor::from_literal(*input("x"), &dev);
  Tensor y = Tensor::from_literal(*input("y"), &dev);
  std::vector<float> losses;
  for (int s = 0; s < 5; ++s) {
    opt.zero_grad();
    Tensor err = add(matmul(x, w), b) - y;
    Tensor loss = mean(mul(err, err));
    loss.backward();
    if (clip) clip_grad_norm_({w, b}, *clip);
    opt.step();
    mark_step();
    losses.push_back(loss.item().to<float>());
  }
  (void)test;
  compare(w, name + ".w");
  compare(b, name + ".b");
  compare(Tensor::from_vector(losses, {5}), name + ".loss");
}

TEST_F(OptimizerTest, AdamTrainingStepsMatchTorch) {
  Tensor w = Tensor::from_literal(*input("w"), &dev());
  Tensor b = Tensor::from_literal(*input("b"), &dev());
  w.requires_grad_();
  b.requires_grad_();
  Adam opt({w, b}, {.lr = 0.05});
  train(this, "train_adam", opt, w, b, std::nullopt);
}

TEST_F(OptimizerTest, SgdTrainingStepsWithClippingMatchTorch) {
  Tensor w = Tensor::from_literal(*input("w"), &dev());
  Tensor b = Tensor::from_literal(*input("b"), &dev());
  w.requires_grad_();
  b.requires_grad_();
  SGD opt({w, b}, {.lr = 0.1, .momentum = 0.9});
  train(this, "train_sgd_clip", opt, w, b, 0.5);
}

// After the first steps (which create the state), steps with a new learning rate and
// new bias corrections every time hit the compile cache.
TEST_F(OptimizerTest, ChangingLrAndStepCountDoNotRecompile) {
  for (int kind = 0; kind < 2; ++kind) {
    auto params = make_params();
    std::unique_ptr<Optimizer> opt;
    if (kind == 0)
      opt = std::make_unique<SGD>(params, SGDOptions{.lr = 0.1, .momentum = 0.9});
    else
      opt = std::make_unique<AdamW>(params, AdamWOptions{.lr = 0.01});
    int64_t uncached = 0, cached = 0;
    for (int s = 0; s < 8; ++s) {
      if (s == 3) {
        uncached = debug::counter_value("UncachedCompile");
        cached = debug::counter_value("CachedCompile");
      }
      opt->set_lr(0.1 / (s + 1));
      set_grads(params, 0);  // every parameter has a grad: the same graph every step
      opt->step();
      mark_step();
    }
    wait_device_ops();
    EXPECT_EQ(debug::counter_value("UncachedCompile") - uncached, 0) << opt->name();
    EXPECT_GE(debug::counter_value("CachedCompile") - cached, 5) << opt->name();
  }
}

TEST_F(OptimizerTest, StateLivesOnTheParametersDevice) {
  auto params = make_params();
  Adam opt(params, {.amsgrad = true});
  set_grads(params, 0);
  opt.step();
  mark_step();
  int states = 0;
  for (const auto& [name, tensor] : opt.state_dict()) {
    if (name.starts_with("state.") && !name.ends_with(".step")) {
      EXPECT_EQ(tensor.device(), &dev()) << name;
      ++states;
    }
  }
  EXPECT_EQ(states, 9);  // exp_avg, exp_avg_sq, max_exp_avg_sq for 3 parameters
}

TEST_F(OptimizerTest, ZeroGrad) {
  auto params = make_params();
  SGD opt(params, {.lr = 0.1});
  set_grads(params, 0);
  opt.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : params) {
    ASSERT_TRUE(p.grad().defined());
    for (float v : p.grad().to_vector<float>()) EXPECT_EQ(v, 0.f);
  }
  opt.zero_grad();
  for (const Tensor& p : params) EXPECT_FALSE(p.grad().defined());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST_F(OptimizerTest, BadArgumentsAreErrors) {
  auto params = make_params();
  EXPECT_NE(error_of([&] { SGD opt(params, {}); }).find("learning rate"), std::string::npos);
  EXPECT_NE(error_of([&] { SGD opt(params, {.lr = 0.1, .nesterov = true}); }).find("Nesterov"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Adam opt(params, {.beta1 = 1.0}); }).find("beta1"), std::string::npos);
  EXPECT_NE(error_of([&] {
              SGD opt({params[0], params[0]}, {.lr = 0.1});
            }).find("twice"),
            std::string::npos);
  Tensor ints = zeros({2}, {kInt32, dev()});
  EXPECT_NE(error_of([&] { SGD opt({ints}, {.lr = 0.1}); }).find("floating"), std::string::npos);
  EXPECT_NE(error_of([&] {
              SGD opt(std::vector<ParamGroup>{{{params[0]}, {{"betas", 0.5}}}}, {.lr = 0.1});
            }).find("'betas'"),
            std::string::npos);
  SGD opt({params[0]}, {.lr = 0.1});
  EXPECT_NE(error_of([&] {
              opt.add_param_group({{params[0]}, {}});
            }).find("another group"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              opt.add_param_group({{params[1]}, {{"lr", -1.0}}});
            }).find("learning rate"),
            std::string::npos);
  EXPECT_EQ(opt.param_groups().size(), 1u);
}

}  // namespace
}  // namespace podsim::optim
