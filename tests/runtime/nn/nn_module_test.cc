// Module mechanics: dotted names in registration order, state_dict / load_state_dict
// (round trip, strictness, error messages, failed loads changing nothing), train / eval,
// to(device), zero_grad, Sequential, torch's default initializations, and Dropout: the
// identity in eval, mask statistics in train, and no recompilation across steps.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/autograd/autograd.h"
#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"

namespace podsim::nn {
namespace {

pjrt::Device& dev() { return podsim::device(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A module with each kind of registration, for the naming rules.
class Block : public Module {
 public:
  explicit Block(TensorOptions options = {}) : Module("Block") {
    scale_ = ones({3}, options);
    register_parameter("scale", &scale_);
    running_ = zeros({3}, options);
    register_buffer("running", &running_);
    proj_ = register_module("proj", std::make_shared<Linear>(3, 2, true, options));
  }
  Tensor forward(const Tensor& x) override { return proj_->forward(mul(x, scale_) + running_); }
  void register_twice() { register_parameter("scale", &scale_); }

 private:
  Tensor scale_, running_;
  std::shared_ptr<Linear> proj_;
};

std::vector<std::string> names(const NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) out.push_back(name);
  return out;
}

std::shared_ptr<Sequential> model(TensorOptions options = {}) {
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(4, 3, true, options), std::make_shared<ReLU>(),
      std::make_shared<Block>(options)});
}

TEST(ModuleTest, NamesFollowRegistrationOrder) {
  auto m = model();
  EXPECT_EQ(
      names(m->named_parameters()),
      (std::vector<std::string>{"0.weight", "0.bias", "2.scale", "2.proj.weight", "2.proj.bias"}));
  EXPECT_EQ(names(m->named_buffers()), (std::vector<std::string>{"2.running"}));
  EXPECT_EQ(names(m->state_dict()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.scale", "2.running", "2.proj.weight",
                                      "2.proj.bias"}));
  EXPECT_TRUE(m->parameters(false).empty());
  EXPECT_EQ(m->parameters().size(), 5u);
  for (const Tensor& p : m->parameters()) EXPECT_TRUE(p.requires_grad());
  for (const Tensor& b : m->buffers()) EXPECT_FALSE(b.requires_grad());
  Block block;
  EXPECT_NE(error_of([&] { block.register_twice(); }).find("already registered"),
            std::string::npos);
}

TEST(ModuleTest, LoadStateDictRoundTrip) {
  manual_seed(1);
  auto a = model(dev());
  auto b = model(dev());
  std::vector<Tensor> handles = b->parameters();
  Tensor x = randn({2, 4}, dev());
  EXPECT_NE(a->forward(x).to_vector<float>(), b->forward(x).to_vector<float>());
  LoadResult r = b->load_state_dict(a->state_dict());
  EXPECT_TRUE(r.missing_keys.empty() && r.unexpected_keys.empty());
  EXPECT_EQ(a->forward(x).to_vector<float>(), b->forward(x).to_vector<float>());
  std::vector<Tensor> after = b->parameters();
  for (size_t i = 0; i < handles.size(); ++i) {
    EXPECT_TRUE(after[i].is_same(handles[i]));  // copied in place
    EXPECT_TRUE(after[i].requires_grad());
    EXPECT_TRUE(after[i].is_leaf());
  }
  // Host values load into device parameters.
  NamedTensors host;
  for (const auto& [name, t] : a->state_dict()) host.emplace_back(name, t.cpu());
  auto c = model(dev());
  c->load_state_dict(host);
  EXPECT_EQ(a->forward(x).to_vector<float>(), c->forward(x).to_vector<float>());
}

TEST(ModuleTest, LoadStateDictErrors) {
  auto m = model();
  NamedTensors state = m->state_dict();
  NamedTensors missing(state.begin() + 1, state.end());
  missing.emplace_back("2.extra", zeros({1}));
  std::string e = error_of([&] { m->load_state_dict(missing); });
  EXPECT_NE(e.find("missing keys: \"0.weight\""), std::string::npos) << e;
  EXPECT_NE(e.find("unexpected keys: \"2.extra\""), std::string::npos) << e;
  LoadResult r = m->load_state_dict(missing, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"0.weight"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"2.extra"});

  std::vector<float> before = m->state_dict()[0].second.to_vector<float>();
  NamedTensors wrong = state;
  wrong[0].second = full({3, 4}, 7.0);  // right: changed first...
  wrong[2].second = zeros({4});         // ...then a shape mismatch
  e = error_of([&] { m->load_state_dict(wrong); });
  EXPECT_NE(e.find("\"2.scale\" is f32[4] in the state but f32[3] in the module"),
            std::string::npos)
      << e;
  EXPECT_EQ(m->state_dict()[0].second.to_vector<float>(), before);  // nothing changed
  wrong = state;
  wrong[1].second = zeros({3}, kFloat64);
  e = error_of([&] { m->load_state_dict(wrong); });
  EXPECT_NE(e.find("\"0.bias\" is f64[3] in the state but f32[3]"), std::string::npos) << e;
}

TEST(ModuleTest, TrainEval) {
  auto m = model();
  EXPECT_TRUE(m->is_training());
  m->eval();
  EXPECT_FALSE(m->is_training());
  for (const auto& [name, child] : m->named_children()) EXPECT_FALSE(child->is_training());
  m->train();
  EXPECT_TRUE((*m)[2]->is_training());
}

TEST(ModuleTest, ToDeviceMovesParametersAndGrads) {
  manual_seed(2);
  auto m = model();  // on the host
  Tensor x = randn({2, 4});
  std::vector<float> expected = m->forward(x).to_vector<float>();
  m->forward(x).sum().backward();
  std::vector<float> grad = m->parameters()[0].grad().to_vector<float>();
  m->to(dev());
  for (const auto& [name, t] : m->state_dict()) EXPECT_EQ(t.device(), &dev()) << name;
  for (const Tensor& p : m->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(m->parameters()[0].grad().device(), &dev());
  EXPECT_EQ(m->parameters()[0].grad().to_vector<float>(), grad);
  std::vector<float> got = m->forward(x.to(dev())).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5);
}

TEST(ModuleTest, ZeroGrad) {
  auto m = model(dev());
  m->forward(randn({2, 4}, dev())).sum().backward();
  for (const Tensor& p : m->parameters()) EXPECT_TRUE(p.grad().defined());
  m->zero_grad();
  for (const Tensor& p : m->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(ModuleTest, Sequential) {
  auto m = model();
  EXPECT_EQ(m->size(), 3u);
  EXPECT_EQ((*m)[1]->type_name(), "ReLU");
  EXPECT_NE(error_of([&] { (*m)[3]; }).find("out of range"), std::string::npos);
  CrossEntropyLoss loss;
  EXPECT_NE(error_of([&] { loss.forward(zeros({2})); }).find("CrossEntropyLoss"),
            std::string::npos);
}

// torch's default: U(-1/sqrt(in), 1/sqrt(in)), whose standard deviation is bound/sqrt(3).
TEST(ModuleTest, LinearInitialization) {
  manual_seed(3);
  Linear m(256, 128, true, dev());
  double bound = 1.0 / 16;
  std::vector<float> w = m.weight().to_vector<float>();
  double sum = 0, sq = 0, extreme = 0;
  for (float v : w) {
    sum += v;
    sq += v * v;
    extreme = std::max(extreme, std::abs(static_cast<double>(v)));
  }
  double n = static_cast<double>(w.size());
  EXPECT_LE(extreme, bound);
  EXPECT_NEAR(sum / n, 0.0, 0.01 * bound);
  EXPECT_NEAR(std::sqrt(sq / n), bound / std::sqrt(3.0), 0.02 * bound);
  for (float v : m.bias().to_vector<float>()) EXPECT_LE(std::abs(v), bound);
}

TEST(DropoutTest, IdentityInEval) {
  Dropout d(0.5);
  d.eval();
  Tensor x = randn({64}, dev());
  EXPECT_EQ(d(x).to_vector<float>(), x.to_vector<float>());
}

// With p = 0.3 over 20000 elements the dropped fraction has a standard deviation of
// sqrt(0.21 / 20000) = 0.0032: 0.3 +- 0.016 is five of them. Kept values are 1 / 0.7.
TEST(DropoutTest, MaskStatistics) {
  manual_seed(4);
  Dropout d(0.3);
  std::vector<float> y = d(ones({20000}, dev())).to_vector<float>();
  int64_t dropped = 0;
  for (float v : y) {
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(v, 1 / 0.7f);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / 20000, 0.3, 0.016);
}

// A training step with dropout compiles once: the RNG state is a device tensor and p a
// graph parameter, so neither new masks nor a new p recompiles; each step draws a new mask.
TEST(DropoutTest, NoRecompilesAcrossSteps) {
  manual_seed(5);
  Sequential m{std::make_shared<Linear>(8, 8, true, dev()), std::make_shared<Dropout>(0.5)};
  Tensor x = randn({4, 8}, dev());
  mark_step();
  std::vector<std::vector<float>> outputs;
  int64_t uncached = 0;
  for (int step = 0; step < 4; ++step) {
    Tensor y = functional::dropout(m(x), step < 2 ? 0.25 : 0.4);
    y.sum().backward();
    {
      NoGradGuard no_grad;
      for (Tensor p : m.parameters()) p -= mul(p.grad(), 0.01);
    }
    m.zero_grad();
    outputs.push_back(y.detach().to_vector<float>());
    mark_step();
    if (step == 1) uncached = debug::counter_value("UncachedCompile");
  }
  EXPECT_EQ(debug::counter_value("UncachedCompile"), uncached);
  EXPECT_NE(outputs[2], outputs[3]);
}

}  // namespace
}  // namespace podsim::nn
