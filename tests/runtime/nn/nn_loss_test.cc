// cross_entropy (mean / sum / none, label smoothing, ignore_index, spatial and unbatched
// inputs), nll_loss and mse_loss, functional and module forms, against PyTorch 1.13
// (nn_oracle.py losses): values and input gradients. Tolerances: rtol 1e-4, atol 1e-5.
#include <gtest/gtest.h>

#include "runtime/nn/nn.h"
#include "tests/runtime/nn/nn_oracle.h"

namespace podsim::nn {
namespace {

using testing::Oracle;

class LossTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { oracle_ = new Oracle(Oracle::run("losses")); }
  static void TearDownTestSuite() {
    delete oracle_;
    oracle_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(oracle_->error().empty()) << oracle_->error(); }
  template <typename F>
  void check(const std::string& name, F&& loss) {
    Sequential none;
    testing::check_case(*oracle_, name, none,
                        [&](const std::vector<Tensor>& x) { return loss(x.at(0), x.at(1)); });
  }
  static Oracle* oracle_;
};
Oracle* LossTest::oracle_ = nullptr;

TEST_F(LossTest, CrossEntropy) {
  using functional::cross_entropy;
  check("ce_mean", [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); });
  check("ce_sum",
        [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, Reduction::kSum); });
  check("ce_none",
        [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, Reduction::kNone); });
  CrossEntropyLoss smoothing(Reduction::kMean, 0.1);
  check("ce_smoothing", [&](const Tensor& x, const Tensor& t) { return smoothing(x, t); });
  check("ce_ignore", [](const Tensor& x, const Tensor& t) {
    return cross_entropy(x, t, Reduction::kMean, 0.2);
  });
  check("ce_spatial", [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); });
  check("ce_unbatched", [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); });
}

TEST_F(LossTest, NllLoss) {
  NLLLoss mean;
  check("nll_mean", [&](const Tensor& x, const Tensor& t) { return mean(x, t); });
  check("nll_ignore_sum", [](const Tensor& x, const Tensor& t) {
    return functional::nll_loss(x, t, Reduction::kSum);
  });
}

TEST_F(LossTest, MseLoss) {
  MSELoss mean;
  check("mse_mean", [&](const Tensor& x, const Tensor& y) { return mean(x, y); });
  check("mse_sum", [](const Tensor& x, const Tensor& y) {
    return functional::mse_loss(x, y, Reduction::kSum);
  });
  check("mse_none", [](const Tensor& x, const Tensor& y) {
    return functional::mse_loss(x, y, Reduction::kNone);
  });
}

TEST_F(LossTest, Errors) {
  pjrt::Device& dev = podsim::device();
  Tensor logits = zeros({4, 3}, dev);
  Tensor targets = zeros({4}, {kInt64, dev});
  EXPECT_THROW(functional::cross_entropy(logits, zeros({4}, dev)), Error);  // float targets
  EXPECT_THROW(functional::cross_entropy(logits, zeros({3}, {kInt64, dev})), Error);
  EXPECT_THROW(functional::cross_entropy(logits, targets, Reduction::kMean, 1.5), Error);
  EXPECT_THROW(functional::mse_loss(logits, zeros({3, 4}, dev)), Error);
  try {
    functional::cross_entropy(logits, zeros({3}, {kInt64, dev}));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss_test.cc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace podsim::nn
