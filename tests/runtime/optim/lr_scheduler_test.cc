// StepLR and the cosine schedule with warmup against torch.optim.lr_scheduler (StepLR;
// LambdaLR with transformers' get_cosine_schedule_with_warmup lambda): the lr at every
// epoch, from the scheduler's construction on. Tolerance 1e-12 relative (double
// arithmetic in the same order as torch's).
#include "runtime/optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runtime/optim/sgd.h"
#include "tests/runtime/optim/oracle/torch_oracle.h"

namespace podsim::optim {
namespace {

constexpr const char* kCases = R"([
  {"name": "step", "kind": "schedule", "schedule": "StepLR", "lr": 0.1, "steps": 20,
   "step_size": 3, "gamma": 0.5},
  {"name": "cosine", "kind": "schedule", "schedule": "cosine", "lr": 0.003, "steps": 40,
   "warmup": 5, "total": 30},
  {"name": "cosine_cycles", "kind": "schedule", "schedule": "cosine", "lr": 1.0, "steps": 25,
   "warmup": 0, "total": 20, "num_cycles": 1.5}
])";

const testing::OracleResult& oracle() {
  static const testing::OracleResult* r =
      new testing::OracleResult(testing::run_torch_oracle("optim", {}, kCases));
  return *r;
}

std::vector<double> torch_lrs(const std::string& name) {
  EXPECT_EQ(oracle().error, "");
  if (!oracle().error.empty()) return {};
  const ir::Literal& lit = oracle().tensors.at(name + ".lrs");
  std::vector<double> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.get_as_double(i));
  return out;
}

// The lr after construction and after each of steps scheduler steps.
std::vector<double> lrs_of(Optimizer& opt, LRScheduler& schedule, int steps) {
  std::vector<double> out{opt.lr()};
  for (int i = 0; i < steps; ++i) {
    schedule.step();
    out.push_back(opt.lr());
    EXPECT_EQ(schedule.last_lr()[0], opt.lr());
  }
  return out;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * std::abs(want[i]) + 1e-15) << "epoch " << i;
}

class LrSchedulerTest : public ::testing::Test {
 protected:
  Tensor param = zeros({1});
};

TEST_F(LrSchedulerTest, StepLrMatchesTorch) {
  param.requires_grad_();
  SGD opt({param}, {.lr = 0.1});
  StepLR schedule(opt, 3, 0.5);
  expect_same(lrs_of(opt, schedule, 20), torch_lrs("step"));
  EXPECT_EQ(schedule.last_epoch(), 20);
  EXPECT_EQ(schedule.base_lrs(), std::vector<double>{0.1});
}

TEST_F(LrSchedulerTest, CosineWithWarmupMatchesTorch) {
  param.requires_grad_();
  SGD opt({param}, {.lr = 0.003});
  CosineWarmupLR schedule(opt, 5, 30);
  expect_same(lrs_of(opt, schedule, 40), torch_lrs("cosine"));
}

TEST_F(LrSchedulerTest, CosineWithCyclesMatchesTorch) {
  param.requires_grad_();
  SGD opt({param}, {.lr = 1.0});
  CosineWarmupLR schedule(opt, 0, 20, 1.5);
  expect_same(lrs_of(opt, schedule, 25), torch_lrs("cosine_cycles"));
}

// The formula by hand: warmup 0 -> 1 linearly, the peak, half-way down, the end.
TEST(CosineWarmupFactor, Formula) {
  EXPECT_DOUBLE_EQ(cosine_warmup_factor(0, 10, 110), 0.0);
  EXPECT_DOUBLE_EQ(cosine_warmup_factor(5, 10, 110), 0.5);
  EXPECT_DOUBLE_EQ(cosine_warmup_factor(10, 10, 110), 1.0);
  EXPECT_NEAR(cosine_warmup_factor(60, 10, 110), 0.5, 1e-15);
  EXPECT_NEAR(cosine_warmup_factor(110, 10, 110), 0.0, 1e-15);
  // A quarter of the way down: 0.5 * (1 + cos(pi / 4)).
  EXPECT_NEAR(cosine_warmup_factor(35, 10, 110), 0.5 * (1 + std::sqrt(0.5)), 1e-15);
}

TEST_F(LrSchedulerTest, EveryGroupIsScheduled) {
  Tensor other = zeros({2});
  param.requires_grad_();
  other.requires_grad_();
  SGD opt(std::vector<ParamGroup>{{{param}, {}}, {{other}, {{"lr", 1.0}}}}, {.lr = 0.1});
  StepLR schedule(opt, 1, 0.5);
  schedule.step();
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.05);
  EXPECT_DOUBLE_EQ(opt.lr(1), 0.5);
  EXPECT_EQ(schedule.base_lrs(), (std::vector<double>{0.1, 1.0}));
}

TEST_F(LrSchedulerTest, BadArgumentsAreErrors) {
  param.requires_grad_();
  SGD opt({param}, {.lr = 0.1});
  EXPECT_THROW(StepLR(opt, 0), Error);
  EXPECT_THROW(CosineWarmupLR(opt, -1, 10), Error);
  EXPECT_THROW(CosineWarmupLR(opt, 0, 0), Error);
}

}  // namespace
}  // namespace podsim::optim
