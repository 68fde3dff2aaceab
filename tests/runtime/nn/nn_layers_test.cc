// Linear, Embedding, LayerNorm, RMSNorm, the activations, Softmax, Flatten and a
// Sequential MLP against PyTorch 1.13 (tests/runtime/nn/oracle/nn_oracle.py layers):
// outputs and gradients with torch's parameters, on podsim::device().
// Tolerances: rtol 1e-4, atol 1e-5 (f32 on both sides; only summation order differs,
// and podsim's erf approximation, |error| < 2e-7).
#include <gtest/gtest.h>

#include "runtime/nn/nn.h"
#include "tests/runtime/nn/nn_oracle.h"

namespace podsim::nn {
namespace {

using testing::Oracle;

class LayersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { oracle_ = new Oracle(Oracle::run("layers")); }
  static void TearDownTestSuite() {
    delete oracle_;
    oracle_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(oracle_->error().empty()) << oracle_->error(); }
  void check(const std::string& name, Module& m, testing::Tolerance tol = {}) {
    testing::check_case(*oracle_, name, m, tol);
  }
  static pjrt::Device& dev() { return podsim::device(); }
  static Oracle* oracle_;
};
Oracle* LayersTest::oracle_ = nullptr;

TEST_F(LayersTest, Linear) {
  Linear with_bias(5, 4, true, dev());
  check("linear", with_bias);
  Linear no_bias(5, 4, false, dev());
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);
  check("linear_nobias", no_bias);
}

TEST_F(LayersTest, Embedding) {
  Embedding m(10, 4, dev());
  check("embedding", m);
}

TEST_F(LayersTest, LayerNorm) {
  LayerNorm one({6}, 1e-5, true, dev());
  check("layer_norm", one);
  LayerNorm two({3, 4}, 1e-5, true, dev());
  check("layer_norm_2d", two);
  LayerNorm plain({6}, 1e-5, false, dev());
  EXPECT_TRUE(plain.parameters().empty());
  check("layer_norm_plain", plain);
}

TEST_F(LayersTest, RMSNorm) {
  RMSNorm m({6}, std::nullopt, true, dev());
  check("rms_norm", m);
}

TEST_F(LayersTest, Activations) {
  ReLU relu_m;
  check("relu", relu_m);
  GELU gelu_m;
  check("gelu", gelu_m);
  GELU gelu_tanh(GeluApproximate::kTanh);
  check("gelu_tanh", gelu_tanh);
  SiLU silu_m;
  check("silu", silu_m);
  Tanh tanh_m;
  check("tanh", tanh_m);
  Softmax softmax_m(1);
  check("softmax", softmax_m);
  Flatten flatten_m;
  check("flatten", flatten_m);
}

TEST_F(LayersTest, SequentialMlp) {
  Sequential mlp{std::make_shared<Linear>(6, 8, true, dev()), std::make_shared<GELU>(),
                 std::make_shared<LayerNorm>(std::vector<int64_t>{8}, 1e-5, true, dev()),
                 std::make_shared<Linear>(8, 3, true, dev())};
  check("mlp", mlp);
}

}  // namespace
}  // namespace podsim::nn
