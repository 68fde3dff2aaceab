// clip_grad_norm_ against torch.nn.utils.clip_grad_norm_ (1.13) for the 2-norm, 1-norm,
// 3-norm and max norm, clipping and not clipping; and it never reads a value back
// (no host transfer, no extra graph) before mark_step.
// Tolerance (f32): 1e-6 + 1e-5 relative.
#include "runtime/optim/clip_grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/debug/metrics.h"
#include "tests/runtime/optim/oracle/torch_oracle.h"

namespace podsim::optim {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{4, 3}, {7}, {2, 2, 2}};

ir::NamedLiterals make_inputs() {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  ir::NamedLiterals in;
  for (size_t j = 0; j < kShapes.size(); ++j) {
    ir::Literal lit(ir::Shape(kFloat32, kShapes[j]));
    for (float& v : lit.data<float>()) v = normal(rng);
    in.emplace_back(fmt::format("p{}", j), ir::Literal(lit));  // the shape only
    in.emplace_back(fmt::format("g0_{}", j), std::move(lit));
  }
  return in;
}

const ir::NamedLiterals& inputs() {
  static const ir::NamedLiterals* in = new ir::NamedLiterals(make_inputs());
  return *in;
}

struct Case {
  const char* name;
  double max_norm;
  double norm_type;
};
const Case kClipCases[] = {{"l2_clip", 1.0, 2.0},       {"l2_keep", 100.0, 2.0},
                           {"l1_clip", 2.0, 1.0},       {"l3_clip", 0.7, 3.0},
                           {"inf_clip", 0.5, kInfNorm}, {"inf_keep", 10.0, kInfNorm}};

const testing::OracleResult& oracle() {
  static const testing::OracleResult* r = [] {
    std::string cases = "[";
    for (const Case& c : kClipCases)
      cases += fmt::format(R"({}{{"name": "{}", "kind": "clip", "max_norm": {}, "norm_type": {}}})",
                           cases.size() > 1 ? ", " : "", c.name, c.max_norm,
                           std::isinf(c.norm_type) ? "Infinity" : fmt::format("{}", c.norm_type));
    cases += "]";
    return new testing::OracleResult(testing::run_torch_oracle("optim", inputs(), cases));
  }();
  return *r;
}

void expect_close(const Tensor& got, const ir::Literal& want, const std::string& what) {
  std::vector<double> v = got.to_vector<double>();
  ASSERT_EQ(static_cast<int64_t>(v.size()), want.num_elements()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    double w = want.get_as_double(static_cast<int64_t>(i));
    EXPECT_NEAR(v[i], w, 1e-6 + 1e-5 * std::abs(w)) << what << "[" << i << "]";
  }
}

class ClipGradTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ASSERT_EQ(oracle().error, "");
    mark_step();
    wait_device_ops();
  }
};

TEST_P(ClipGradTest, MatchesTorch) {
  const Case& c = GetParam();
  pjrt::Device& dev = podsim::device();
  std::vector<Tensor> params;
  for (size_t j = 0; j < kShapes.size(); ++j) {
    Tensor p = zeros(kShapes[j], dev);
    p.requires_grad_();
    p.set_grad(Tensor::from_literal(inputs()[2 * j + 1].second, &dev));
    params.push_back(p);
  }
  mark_step();
  wait_device_ops();
  int64_t transfers = debug::metric_summary("TransferFromDeviceTime").total_samples;
  int64_t compiles =
      debug::counter_value("CachedCompile") + debug::counter_value("UncachedCompile");
  Tensor total = clip_grad_norm_(params, c.max_norm, c.norm_type);
  // Nothing ran: the norm and the clipped grads are pending until mark_step.
  EXPECT_TRUE(total.is_pending());
  EXPECT_EQ(debug::metric_summary("TransferFromDeviceTime").total_samples, transfers);
  EXPECT_EQ(debug::counter_value("CachedCompile") + debug::counter_value("UncachedCompile"),
            compiles);
  mark_step();
  expect_close(total, oracle().tensors.at(std::string(c.name) + ".total"), "total");
  for (size_t j = 0; j < params.size(); ++j)
    expect_close(params[j].grad(), oracle().tensors.at(fmt::format("{}.g{}", c.name, j)),
                 fmt::format("grad {}", j));
}

INSTANTIATE_TEST_SUITE_P(Norms, ClipGradTest, ::testing::ValuesIn(kClipCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ClipGrad, NoGradsGiveZeroAndBadNormIsAnError) {
  Tensor p = zeros({3});
  p.requires_grad_();
  EXPECT_EQ(clip_grad_norm_({p}, 1.0).item().to_double(), 0.0);
  EXPECT_THROW(clip_grad_norm_({p}, 1.0, 0.0), Error);
}

}  // namespace
}  // namespace podsim::optim
