// Autograd over lazy tensors: every differentiable op's gradient against PyTorch 1.13
// (oracle/autograd_oracle.py computes the gradients of sum(f(inputs) * w) for seeded
// inputs and a random cotangent w), then the engine's semantics: accumulation, no_grad,
// detach, in-place rules, freeing the graph, autograd::grad, and a whole training step
// compiling to one cached graph without leaking saved tensors.
//
// Tolerance for the oracle cases (f32): |podsim - torch| <= 1e-5 + 1e-4 |torch|
// elementwise. Both sides compute in f32 with different operation orders (reductions,
// matmul), and podsim's erf (gelu) is a rational approximation with relative error
// below 1.2e-7; observed differences are far below this bound. bf16 cases: 2e-3 +
// 2e-2 |torch|: both sides round every op's result to bf16 (8-bit mantissas) at
// different points; observed differences are 1-2 bf16 ulps (up to ~1.3%).
#include "runtime/autograd/autograd.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "runtime/debug/metrics.h"
#include "runtime/tensor/tensor.h"
#include "runtime/lazy/tensor_impl.h"
#include "tests/runtime/torch_oracle.h"

namespace podsim {
namespace {

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;
constexpr double kBf16Rtol = 2e-2;
constexpr double kBf16Atol = 2e-3;

pjrt::Device& dev() { return podsim::device(); }

Tensor dev_tensor(const std::vector<float>& values, std::vector<int64_t> shape) {
  return Tensor::from_vector(values, std::move(shape), &dev());
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor inplace(const std::vector<Tensor>& in) {
  Tensor a = in[0] * 1.0;
  a += in[1];
  a *= in[1];
  a -= in[0];
  a /= 2;
  a += 1.5;
  return a;
}

Tensor copy_case(const std::vector<Tensor>& in) {
  Tensor a = in[0] * 2.0;
  a.copy_(in[1]);
  return a * in[0];
}

Tensor reuse(const Tensor& x) {
  Tensor y = x.exp();
  return y * x + y.sum() - x.tanh();
}

// Keep in step with CASES in oracle/autograd_oracle.py.
const std::map<std::string, Fn>& cases() {
  static const std::map<std::string, Fn> table = {
      {"add", [](auto& in) { return in[0] + in[1]; }},
      {"add_scalar", [](auto& in) { return in[0] + 2.5; }},
      {"sub", [](auto& in) { return in[0] - in[1]; }},
      {"rsub", [](auto& in) { return 2 - in[0]; }},
      {"mul", [](auto& in) { return in[0] * in[1]; }},
      {"mul_scalar", [](auto& in) { return in[0] * 3; }},
      {"div", [](auto& in) { return in[0] / in[1]; }},
      {"div_scalar", [](auto& in) { return in[0] / 4; }},
      {"rdiv", [](auto& in) { return 2 / in[0]; }},
      {"pow", [](auto& in) { return pow(in[0], in[1]); }},
      {"pow_scalar", [](auto& in) { return in[0].pow(3); }},
      {"pow_half", [](auto& in) { return in[0].pow(0.5); }},
      {"pow_zero", [](auto& in) { return in[0].pow(0); }},
      {"rpow", [](auto& in) { return pow(2, in[0]); }},
      {"maximum", [](auto& in) { return maximum(in[0], in[1]); }},
      {"minimum", [](auto& in) { return minimum(in[0], in[1]); }},
      {"clamp", [](auto& in) { return in[0].clamp(-0.5, 0.5); }},
      {"clamp_min", [](auto& in) { return in[0].clamp(0, std::nullopt); }},
      {"clamp_max", [](auto& in) { return in[0].clamp(std::nullopt, 1); }},
      {"clamp_tensor", [](auto& in) { return clamp(in[0], in[1], in[2]); }},
      {"where", [](auto& in) { return where(in[0], in[1], in[2]); }},
      {"where_scalar", [](auto& in) { return where(in[0], in[1], 0.5); }},
      {"neg", [](auto& in) { return -in[0]; }},
      {"abs", [](auto& in) { return in[0].abs(); }},
      {"exp", [](auto& in) { return in[0].exp(); }},
      {"log", [](auto& in) { return in[0].log(); }},
      {"sqrt", [](auto& in) { return in[0].sqrt(); }},
      {"rsqrt", [](auto& in) { return rsqrt(in[0]); }},
      {"tanh", [](auto& in) { return in[0].tanh(); }},
      {"sigmoid", [](auto& in) { return in[0].sigmoid(); }},
      {"relu", [](auto& in) { return in[0].relu(); }},
      {"gelu", [](auto& in) { return gelu(in[0]); }},
      {"gelu_tanh", [](auto& in) { return gelu(in[0], GeluApproximate::kTanh); }},
      {"matmul", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_dot", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_vec_mat", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_mat_vec", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_batched", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_broadcast", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_batch_mat", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_mat_batch", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_vec_batch", [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul_batch_vec", [](auto& in) { return matmul(in[0], in[1]); }},
      {"sum", [](auto& in) { return in[0].sum(); }},
      {"sum_dims",
       [](auto& in) {
         return in[0].sum({0, 2});
       }},
      {"sum_keepdim", [](auto& in) { return in[0].sum({1}, true); }},
      {"mean", [](auto& in) { return in[0].mean(); }},
      {"mean_dims", [](auto& in) { return in[0].mean({-1}, true); }},
      {"max", [](auto& in) { return in[0].max(); }},
      {"max_dim", [](auto& in) { return in[0].max({1}); }},
      {"min_dims",
       [](auto& in) {
         return in[0].min({0, 2}, true);
       }},
      {"logsumexp", [](auto& in) { return in[0].logsumexp({1}); }},
      {"logsumexp_keepdim",
       [](auto& in) {
         return in[0].logsumexp({0, 2}, true);
       }},
      {"softmax", [](auto& in) { return in[0].softmax(1); }},
      {"softmax_dim0", [](auto& in) { return in[0].softmax(0); }},
      {"log_softmax", [](auto& in) { return in[0].log_softmax(-1); }},
      {"reshape",
       [](auto& in) {
         return in[0].reshape({2, 6});
       }},
      {"view", [](auto& in) { return in[0].view({-1}); }},
      {"permute",
       [](auto& in) {
         return in[0].permute({2, 0, 1});
       }},
      {"transpose", [](auto& in) { return in[0].transpose(0, 2); }},
      {"t", [](auto& in) { return in[0].t(); }},
      {"expand",
       [](auto& in) {
         return in[0].expand({2, 3, 4});
       }},
      {"squeeze", [](auto& in) { return in[0].squeeze(); }},
      {"squeeze_dim", [](auto& in) { return in[0].squeeze(1); }},
      {"unsqueeze", [](auto& in) { return in[0].unsqueeze(1); }},
      {"flatten", [](auto& in) { return in[0].flatten(1); }},
      {"cat",
       [](auto& in) {
         return cat({in[0], in[1], in[2]}, 0);
       }},
      {"cat_dim1",
       [](auto& in) {
         return cat({in[0], in[1]}, 1);
       }},
      {"stack",
       [](auto& in) {
         return stack({in[0], in[1]}, 1);
       }},
      {"slice", [](auto& in) { return in[0].slice(1, 1, 4); }},
      {"slice_step", [](auto& in) { return in[0].slice(0, 1, 6, 2); }},
      {"slice_step_end", [](auto& in) { return in[0].slice(1, 2, std::nullopt, 3); }},
      {"slice_negative", [](auto& in) { return in[0].slice(0, -5, -1); }},
      {"narrow", [](auto& in) { return in[0].narrow(1, 2, 3); }},
      {"index_select", [](auto& in) { return in[0].index_select(0, in[1]); }},
      {"index_select_dim1", [](auto& in) { return in[0].index_select(1, in[1]); }},
      {"gather", [](auto& in) { return in[0].gather(1, in[1]); }},
      {"gather_dim0", [](auto& in) { return in[0].gather(0, in[1]); }},
      {"to_f64", [](auto& in) { return in[0].to(kFloat64).exp().to(kFloat32); }},
      {"inplace", [](auto& in) { return inplace(in); }},
      {"copy", [](auto& in) { return copy_case(in); }},
      {"cross_entropy",
       [](auto& in) { return -in[0].log_softmax(1).gather(1, in[1].unsqueeze(1)); }},
      {"mlp", [](auto& in) { return matmul((matmul(in[0], in[1].t()) + in[2]).relu(), in[3]); }},
      {"reuse", [](auto& in) { return reuse(in[0]); }},
      {"bf16_mul_add", [](auto& in) { return in[0] * in[1] + in[0]; }},
      {"bf16_matmul", [](auto& in) { return matmul(in[0], in[1]); }},
      {"bf16_softmax", [](auto& in) { return in[0].softmax(1); }},
      {"bf16_log_softmax", [](auto& in) { return in[0].log_softmax(1); }},
      {"bf16_gelu", [](auto& in) { return gelu(in[0]); }},
      {"bf16_sum_mean", [](auto& in) { return in[0].sum({1}) + in[0].mean({1}); }},
      {"bf16_to_f32", [](auto& in) { return in[0].to(kFloat32).tanh(); }},
  };
  return table;
}

class AutogradOracle : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    torch_oracle::OracleResult result =
        torch_oracle::run_torch_script("tests/runtime/oracle/autograd_oracle.py", {});
    error_ = result.error;
    values_ = new std::map<std::string, ir::Literal>(std::move(result.tensors));
  }
  static void TearDownTestSuite() {
    delete values_;
    values_ = nullptr;
  }

  static const ir::Literal* find(const std::string& name) {
    auto it = values_->find(name);
    return it == values_->end() ? nullptr : &it->second;
  }

  static inline std::map<std::string, ir::Literal>* values_ = nullptr;
  static inline std::string error_;
};

TEST_P(AutogradOracle, GradientMatchesTorch) {
  ASSERT_TRUE(error_.empty()) << error_;
  const std::string& name = GetParam();
  std::vector<Tensor> inputs;
  for (int i = 0; const ir::Literal* l = find(fmt::format("{}.in{}", name, i)); ++i) {
    Tensor t = Tensor::from_literal(*l, &dev());
    if (ir::is_float(t.dtype())) t.requires_grad_();
    inputs.push_back(t);
  }
  ASSERT_FALSE(inputs.empty()) << "the oracle has no case " << name;
  const ir::Literal* w = find(name + ".w");
  ASSERT_NE(w, nullptr);
  Tensor out = cases().at(name)(inputs);
  ASSERT_TRUE(out.requires_grad());
  EXPECT_FALSE(out.is_leaf());
  ASSERT_EQ(out.shape(), w->shape().dims());
  Tensor loss = (out * Tensor::from_literal(*w, &dev())).sum();
  loss.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Literal* expected = find(fmt::format("{}.grad{}", name, i));
    if (expected == nullptr) {
      EXPECT_FALSE(inputs[i].grad().defined()) << "input " << i;
      continue;
    }
    Tensor grad = inputs[i].grad();
    std::vector<double> got;
    if (grad.defined()) {
      ASSERT_EQ(grad.shape(), expected->shape().dims()) << "input " << i;
      EXPECT_EQ(grad.dtype(), inputs[i].dtype());
      got = grad.to_vector<double>();
    } else {  // no gradient reached it: torch's zeros
      got.assign(static_cast<size_t>(expected->num_elements()), 0.0);
    }
    bool bf16 = inputs[i].dtype() == kBFloat16;
    for (int64_t k = 0; k < expected->num_elements(); ++k) {
      double want = expected->get_as_double(k);
      double bound = bf16 ? kBf16Atol + kBf16Rtol * std::abs(want) : kAtol + kRtol * std::abs(want);
      EXPECT_NEAR(got[static_cast<size_t>(k)], want, bound)
          << name << ": input " << i << " element " << k;
    }
  }
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : cases()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, AutogradOracle, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// ---- Engine semantics --------------------------------------------------------------

Tensor leaf(const std::vector<float>& values, std::vector<int64_t> shape) {
  Tensor t = dev_tensor(values, std::move(shape));
  t.requires_grad_();
  return t;
}

TEST(Autograd, LeavesAndFlags) {
  Tensor x = leaf({1, 2, 3}, {3});
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(x.grad().defined());
  Tensor y = x * 2;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_FALSE(y.grad().defined());  // non-leaves keep no grad
  Tensor plain = dev_tensor({1, 2, 3}, {3});
  EXPECT_FALSE(plain.requires_grad());
  EXPECT_TRUE(plain.is_leaf());
  EXPECT_FALSE((plain * 2).requires_grad());
  x.requires_grad_(false);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_FALSE((x * 2).requires_grad());
}

TEST(Autograd, NonDifferentiableResultsNeverRequireGrad) {
  Tensor x = leaf({1, -2, 3}, {3});
  EXPECT_FALSE(gt(x, 0).requires_grad());
  EXPECT_FALSE(eq(x, x).requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_FALSE(x.to(kInt32).requires_grad());
  EXPECT_TRUE(x.to(kFloat64).requires_grad());
}

TEST(Autograd, RequiresGradErrors) {
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2}, &dev());
  try {
    i.requires_grad_();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("floating-point"), std::string::npos) << e.what();
  }
  Tensor y = leaf({1, 2}, {2}) * 3;
  EXPECT_THROW(y.requires_grad_(false), Error);
  EXPECT_NO_THROW(y.requires_grad_(true));
  Tensor plain = dev_tensor({1}, {});
  EXPECT_THROW(plain.backward(), Error);  // does not require grad
  Tensor vector = leaf({1, 2}, {2}) * 2;
  EXPECT_THROW(vector.backward(), Error);  // no implicit gradient for 2 elements
  EXPECT_THROW(vector.backward(dev_tensor({1, 2, 3}, {3})), Error);  // wrong shape
}

TEST(Autograd, AccumulatesOverBackwardCalls) {
  Tensor x = leaf({1, 2, 3}, {3});
  (x * x).sum().backward();  // 2x
  Tensor first = x.grad();
  EXPECT_EQ(first.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  (x * 3).sum().backward();  // + 3
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 7, 9}));
  // Accumulation is in place, as in torch: an earlier handle sees the sum.
  EXPECT_EQ(first.to_vector<float>(), (std::vector<float>{5, 7, 9}));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
  (x * 3).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

TEST(Autograd, BackwardOfALeafAndOfSeveralRoots) {
  Tensor x = leaf({1, 2}, {2});
  x.backward(dev_tensor({3, 4}, {2}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 4}));
  x.set_grad(Tensor());
  // One pass over the joint graph: d/dx (sum(x^2) + sum(3x)) with the roots' weights.
  Tensor shared = x * x;
  Tensor a = shared.sum();
  Tensor b = (shared * 3).sum();
  autograd::backward({a, b}, {dev_tensor({1}, {}), dev_tensor({2}, {})});
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{14, 28}));  // 2x (1 + 6)
}

TEST(Autograd, StoredGradientIsNotSharedWithOtherTensors) {
  // add passes its incoming gradient to both operands: each leaf must own its grad.
  Tensor a = leaf({1, 2}, {2});
  Tensor b = leaf({3, 4}, {2});
  (a + b).backward(dev_tensor({1, 1}, {2}));
  {
    NoGradGuard no_grad;
    Tensor g = a.grad();
    g *= 5;
  }
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{5, 5}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(Autograd, SetGradChecksTheTensor) {
  Tensor x = leaf({1, 2}, {2});
  EXPECT_THROW(x.set_grad(dev_tensor({1, 2, 3}, {3})), Error);
  EXPECT_THROW(x.set_grad(Tensor::from_vector<double>({1, 2}, {2}, &dev())), Error);
  x.set_grad(dev_tensor({7, 8}, {2}));
  (x * 1).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{8, 9}));
}

TEST(Autograd, NoGradGuardNestsAndIsPerThread) {
  Tensor x = leaf({1, 2}, {2});
  EXPECT_TRUE(is_grad_enabled());
  {
    NoGradGuard outer;
    EXPECT_FALSE(is_grad_enabled());
    {
      NoGradGuard inner;
      EXPECT_FALSE(is_grad_enabled());
    }
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    bool other_thread = false;
    std::thread([&] { other_thread = is_grad_enabled(); }).join();
    EXPECT_TRUE(other_thread);
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(Autograd, DetachSharesTheValueWithoutHistory) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{3, 6}));
  // Through the detached value no gradient flows back to x.
  Tensor z = (y * d).sum();
  z.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{9, 18}));  // 3 * d
}

TEST(Autograd, InPlaceOnLeafRequiringGradIsAnError) {
  Tensor x = leaf({1, 2}, {2});
  try {
    x += 1;
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("leaf Variable that requires grad"), std::string::npos) << what;
    EXPECT_NE(what.find("add_"), std::string::npos) << what;
  }
  EXPECT_THROW(x *= dev_tensor({2, 2}, {2}), Error);
  EXPECT_THROW(x.copy_(dev_tensor({5, 5}, {2})), Error);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2}));  // unchanged
  {
    NoGradGuard no_grad;  // how optimizers update parameters
    x -= dev_tensor({0.5f, 0.5f}, {2});
    x.copy_(x * 2);
  }
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 3}));
  (x * x).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 6}));
}

TEST(Autograd, InPlaceSeesTheValueAtRecordTime) {
  // y is saved by mul before y changes in place: the gradient uses the old value.
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 1;
  Tensor z = y * y;  // saves y = x
  y += 10;           // y = x + 10, z unchanged
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1, 4}));
  (z.sum() + y.sum()).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 5}));  // 2x + 1
}

TEST(Autograd, SecondBackwardThroughAFreedGraphIsAnError) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = (x * x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward through the graph a second time"),
              std::string::npos)
        << e.what();
  }
  // retain_graph keeps it.
  Tensor w = leaf({3}, {1});
  Tensor v = (w * w).sum();
  autograd::backward({v}, {}, true);
  autograd::backward({v});
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{12}));
  EXPECT_THROW(v.backward(), Error);
}

TEST(Autograd, FunctionalGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor unused = leaf({5}, {1});
  Tensor h = x * x;  // non-leaf input
  Tensor y = (h * 3).sum();
  std::vector<Tensor> g = grad({y}, {x, h, unused}, {}, true);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{6, 12}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_FALSE(g[2].defined());
  EXPECT_FALSE(x.grad().defined());  // grad() touches no leaf
  // Weighted, through the retained graph, then freed.
  std::vector<Tensor> g2 = grad({h}, {x}, {dev_tensor({1, 10}, {2})});
  EXPECT_EQ(g2[0].to_vector<float>(), (std::vector<float>{2, 40}));
  EXPECT_THROW(grad({y}, {x}), Error);
  EXPECT_THROW(grad({y}, {dev_tensor({1}, {1})}), Error);  // input without grad
}

TEST(Autograd, MixedPrecisionGradientsTakeTheInputType) {
  Tensor a = Tensor::from_vector<float>({1, 2}, {2}, &dev()).to(kBFloat16);
  a.requires_grad_();
  Tensor b = leaf({3, 4}, {2});
  Tensor y = (a * b).sum();  // f32
  y.backward();
  EXPECT_EQ(a.grad().dtype(), kBFloat16);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Autograd, HostTensorsDifferentiateToo) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  x.requires_grad_();
  (x.exp() * x).sum().backward();
  std::vector<float> g = x.grad().to_vector<float>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[i], std::exp(i + 1.0) * (i + 2.0), 1e-4 * g[i]);
  EXPECT_TRUE(x.grad().is_host());
}

TEST(Autograd, IndexGradientsUseNoScatter) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2}, {3}, &dev());
  Tensor y = x.index_select(0, idx).sum() +
             x.gather(1, Tensor::from_vector<int64_t>({1, 1, 0}, {3, 1}, &dev())).sum();
  y.backward();
  Tensor g = x.grad();
  lazy::NodePtr root = g.impl()->pending_node();
  ASSERT_TRUE(root);
  lazy::Graph graph = lazy::capture_graph({root});
  for (const lazy::Node* n : graph.post_order) {
    EXPECT_NE(n->op, ir::Opcode::kScatter);
    EXPECT_NE(n->op, ir::Opcode::kGather);  // the one-hot form needs no gather either
  }
  // index_select: row 0 once, row 2 twice -> [[1, 1], [0, 0], [2, 2]];
  // gather: column 1 of rows 0 and 1, column 0 of row 2 -> [[0, 1], [0, 1], [1, 0]].
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1, 2, 0, 1, 3, 2}));
}

// One training step of a two-layer MLP with SGD: forward, backward, update under
// NoGradGuard; the caller marks the step.
struct Mlp {
  Tensor w1, b1, w2;
  Tensor x, y;

  Mlp() {
    manual_seed(7);
    w1 = randn({8, 4}, &dev()) * 0.5;
    b1 = zeros({8}, &dev());
    w2 = randn({1, 8}, &dev()) * 0.5;
    x = randn({16, 4}, &dev());
    y = randn({16, 1}, &dev());
    mark_step();
    for (Tensor* p : {&w1, &b1, &w2}) p->requires_grad_();
  }

  Tensor step(double lr) {
    for (Tensor* p : {&w1, &b1, &w2}) p->set_grad(Tensor());
    Tensor h = (matmul(x, w1.t()) + b1).relu();
    Tensor err = matmul(h, w2.t()) - y;
    Tensor loss = (err * err).mean();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor* p : {&w1, &b1, &w2}) *p -= p->grad() * lr;
    return loss;
  }
};

TEST(Autograd, TrainingStepIsOneCachedGraph) {
  Mlp mlp;
  wait_device_ops();
  int64_t uncached = debug::counter_value("UncachedCompile");
  int64_t cached = debug::counter_value("CachedCompile");
  size_t pending_before = lazy::pending_tensors(&dev()).size();
  Tensor loss0 = mlp.step(0.1);
  // The graph's outputs: the loss, three updated parameters and their three gradients;
  // no saved snapshot or intermediate is left to become an output.
  EXPECT_EQ(lazy::pending_tensors(&dev()).size() - pending_before, 7u);
  mark_step();
  wait_device_ops();
  EXPECT_EQ(debug::counter_value("UncachedCompile") - uncached, 1);
  EXPECT_EQ(debug::counter_value("CachedCompile") - cached, 0);
  Tensor loss1 = mlp.step(0.1);
  mark_step();
  Tensor loss2 = mlp.step(0.05);  // a new learning rate is a parameter, not a recompile
  mark_step();
  wait_device_ops();
  EXPECT_EQ(debug::counter_value("UncachedCompile") - uncached, 1);
  EXPECT_EQ(debug::counter_value("CachedCompile") - cached, 2);
  EXPECT_LT(loss2.item().to_double(), loss0.item().to_double());
  EXPECT_TRUE(mlp.w1.is_leaf());
  EXPECT_TRUE(mlp.w1.requires_grad());
}

TEST(Autograd, BackwardFreesSavedTensors) {
  Tensor x = leaf({0.1f, 0.2f, 0.3f}, {3});
  mark_step();
  wait_device_ops();
  size_t before = lazy::pending_tensors(&dev()).size();
  Tensor loss;
  {
    Tensor h = x;
    for (int i = 0; i < 20; ++i) h = (h * h).tanh() + h.exp() * 0.1;
    loss = h.sum();
  }
  // Only the loss is held, but each recorded op saved snapshots of its operands.
  size_t recorded = lazy::pending_tensors(&dev()).size() - before;
  EXPECT_GT(recorded, 40u);
  loss.backward();
  // Left: the loss and x's gradient.
  EXPECT_LE(lazy::pending_tensors(&dev()).size() - before, 2u);
}

TEST(Autograd, DeepGraphsFreeWithoutRecursion) {
  Tensor x = leaf({1}, {1});
  Tensor h = x;
  for (int i = 0; i < 100000; ++i) h = h + 1.0;
  h = Tensor();  // frees 100000 chained nodes
  SUCCEED();
}

}  // namespace
}  // namespace podsim
