// Conv2d, MaxPool2d, AvgPool2d, BatchNorm2d and small CNNs against PyTorch 1.13 (nn_oracle.py conv):
// outputs and gradients with torch's parameters. Covers stride, padding, dilation,
// rectangular kernels, inputs the windows do not tile (the kernel gradient then needs
// negative padding), both max-pool backward forms (reshape mask for kernel == stride,
// select-and-scatter otherwise) with tied maxima (torch sends the gradient to the first).
// Tolerances: rtol 1e-4, atol 2e-5 (f32; summation order differs in the convolutions).
#include <gtest/gtest.h>

#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"
#include "tests/runtime/nn/nn_oracle.h"

namespace podsim::nn {
namespace {

using testing::Oracle;

constexpr testing::Tolerance kTol{1e-4, 2e-5};

class ConvTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { oracle_ = new Oracle(Oracle::run("conv")); }
  static void TearDownTestSuite() {
    delete oracle_;
    oracle_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(oracle_->error().empty()) << oracle_->error(); }
  void check(const std::string& name, Module& m) { testing::check_case(*oracle_, name, m, kTol); }
  static pjrt::Device& dev() { return podsim::device(); }
  static Oracle* oracle_;
};
Oracle* ConvTest::oracle_ = nullptr;

TEST_F(ConvTest, Conv2d) {
  Conv2d plain(3, 4, 3, 1, 0, 1, true, dev());
  check("conv", plain);
  Conv2d strided(3, 4, 3, 2, 1, 1, true, dev());
  check("conv_stride_pad", strided);
  Conv2d rect(2, 3, Int2(3, 2), Int2(2, 1), Int2(1, 0), Int2(1, 2), true, dev());
  check("conv_rect_dilated", rect);
  Conv2d remainder(2, 2, 2, 2, 0, 1, false, dev());
  check("conv_remainder", remainder);
}

TEST_F(ConvTest, MaxPool2d) {
  MaxPool2d tiles(2);
  check("max_pool", tiles);
  check("max_pool_ties", tiles);
  MaxPool2d overlap(3, 2, 1);
  check("max_pool_overlap", overlap);
  check("max_pool_overlap_ties", overlap);
  check("max_pool_remainder", tiles);
}

TEST_F(ConvTest, AvgPool2d) {
  AvgPool2d tiles(2);
  check("avg_pool", tiles);
  AvgPool2d overlap(3, 2, 1);
  check("avg_pool_overlap", overlap);
}

TEST_F(ConvTest, SmallCnn) {
  Sequential cnn{std::make_shared<Conv2d>(1, 4, 3, 1, 1, 1, true, dev()), std::make_shared<ReLU>(),
                 std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
                 std::make_shared<Linear>(64, 5, true, dev())};
  check("cnn", cnn);
}

TEST_F(ConvTest, BatchNorm2d) {
  BatchNorm2d bn(3, 1e-5, 0.1, dev());
  check("batch_norm", bn);
  // The running statistics as torch's forward left them (a second forward ran in check
  // for the gradients: compare after one).
  BatchNorm2d once(3, 1e-5, 0.1, dev());
  once.load_state_dict(oracle_->state("batch_norm"));
  once(oracle_->inputs("batch_norm", &dev()).at(0));
  for (const auto& [name, buffer] : once.named_buffers())
    testing::expect_close(buffer, oracle_->literal("batch_norm.after." + name), kTol, name);
  BatchNorm2d frozen(3, 1e-5, 0.1, dev());
  frozen.eval();
  check("batch_norm_eval", frozen);
  EXPECT_THROW(bn(zeros({2, 4, 3, 3}, dev())), Error);  // channel mismatch
}

TEST_F(ConvTest, SmallCnnWithBatchNorm) {
  Sequential cnn{std::make_shared<Conv2d>(1, 4, 3, 1, 1, 1, true, dev()), std::make_shared<BatchNorm2d>(4, 1e-5, 0.1, dev()),
                 std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
                 std::make_shared<Linear>(64, 5, true, dev())};
  check("cnn_batch_norm", cnn);
}

TEST_F(ConvTest, Errors) {
  Tensor x = zeros({1, 3, 4, 4}, dev());
  Tensor w = zeros({2, 4, 3, 3}, dev());
  EXPECT_THROW(functional::conv2d(x, w), Error);                           // channel mismatch
  EXPECT_THROW(functional::conv2d(x.flatten(), w), Error);                 // not 4-D
  EXPECT_THROW(functional::conv2d(x, zeros({2, 3, 5, 5}, dev())), Error);  // kernel too large
  EXPECT_THROW(functional::max_pool2d(x, 2, 2, 2), Error);  // padding over half the kernel
  EXPECT_THROW(functional::avg_pool2d(x, 0), Error);
  try {
    functional::conv2d(x, w);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_test.cc"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }
}

// Host tensors run each op at once on the reference evaluator (through the same
// lowering and the IR verifier): the same values and gradients as the CPU device.
TEST_F(ConvTest, HostEvaluatorMatchesDevice) {
  manual_seed(7);
  Tensor x_host = randn({1, 2, 7, 6});
  Tensor w_host = randn({3, 2, 3, 2});
  auto run = [&](pjrt::Device* device) {
    Tensor x = device ? x_host.to(*device) : x_host;
    Tensor w = device ? w_host.to(*device) : w_host;
    x.requires_grad_();
    w.requires_grad_();
    Tensor y = functional::conv2d(x, w, Tensor(), Int2(2, 1), Int2(1, 0), Int2(1, 2));
    Tensor z = functional::max_pool2d(y, 3, 2, 1).sum() +
               functional::avg_pool2d(y, Int2(2, 3), 1, 1).pow(2).sum();
    z.backward();
    return std::vector<std::vector<float>>{
        y.detach().to_vector<float>(), x.grad().to_vector<float>(), w.grad().to_vector<float>()};
  };
  auto host = run(nullptr);
  auto device = run(&dev());
  for (size_t i = 0; i < host.size(); ++i) {
    ASSERT_EQ(host[i].size(), device[i].size());
    for (size_t j = 0; j < host[i].size(); ++j)
      EXPECT_NEAR(host[i][j], device[i][j], 1e-4 * (1 + std::abs(host[i][j]))) << i << "," << j;
  }
}

TEST_F(ConvTest, TrainingStepCompilesOnce) {
  Sequential cnn{std::make_shared<Conv2d>(1, 2, 3, 1, 1, 1, true, dev()),
                 std::make_shared<MaxPool2d>(2), std::make_shared<AvgPool2d>(3, 1, 1),
                 std::make_shared<Flatten>()};
  mark_step();  // the initial parameters
  int64_t uncached = 0;
  for (int step = 0; step < 4; ++step) {
    Tensor x = randn({2, 1, 6, 6}, dev());
    cnn(x).pow(2).sum().backward();
    {
      NoGradGuard no_grad;
      for (Tensor p : cnn.parameters()) p -= mul(p.grad(), 0.1);
    }
    cnn.zero_grad();
    mark_step();
    wait_device_ops();
    if (step == 1) uncached = debug::counter_value("UncachedCompile");
  }
  EXPECT_EQ(debug::counter_value("UncachedCompile"), uncached);
}

}  // namespace
}  // namespace podsim::nn
