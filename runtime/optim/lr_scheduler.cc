#include "runtime/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"

namespace podsim::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (ParamGroup& group : optimizer_.param_groups()) {
    auto [it, inserted] = group.options.try_emplace("initial_lr", group.options.at("lr"));
    base_lrs_.push_back(it->second);
  }
}

void LRScheduler::initial_step() { step(); }

void LRScheduler::step() {
  ++last_epoch_;
  std::vector<ParamGroup>& groups = optimizer_.param_groups();
  if (groups.size() != base_lrs_.size())
    fail(
        "LRScheduler::step: the optimizer has {} parameter groups but had {} when the "
        "scheduler was made; make the scheduler after adding groups",
        groups.size(), base_lrs_.size());
  last_lr_.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    double lr = lr_of(g, groups[g].options.at("lr"));
    groups[g].options["lr"] = lr;
    last_lr_.push_back(lr);
  }
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size < 1) fail("StepLR: step_size {} must be at least 1", step_size);
  initial_step();
}

// torch's chainable form: the current lr times gamma at each boundary (so that an lr
// changed by hand carries on), which is what StepLR.step() computes.
double StepLR::lr_of(size_t, double current_lr) const {
  int64_t e = last_epoch();
  return e == 0 || e % step_size_ != 0 ? current_lr : current_lr * gamma_;
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lambda)
    : LRScheduler(optimizer), lambda_(std::move(lambda)) {
  if (!lambda_) fail("LambdaLR: the lambda is empty");
  initial_step();
}

double LambdaLR::lr_of(size_t group, double) const {
  return base_lrs()[group] * lambda_(last_epoch());
}

double cosine_warmup_factor(int64_t step, int64_t warmup_steps, int64_t total_steps,
                            double num_cycles) {
  if (step < warmup_steps)
    return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  double progress = static_cast<double>(step - warmup_steps) /
                    static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress)));
}

namespace {

std::function<double(int64_t)> cosine_warmup_lambda(int64_t warmup_steps, int64_t total_steps,
                                                    double num_cycles) {
  if (warmup_steps < 0 || total_steps < 1)
    fail("CosineWarmupLR: warmup_steps {} must be >= 0 and total_steps {} >= 1", warmup_steps,
         total_steps);
  return [=](int64_t step) {
    return cosine_warmup_factor(step, warmup_steps, total_steps, num_cycles);
  };
}

}  // namespace

CosineWarmupLR::CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                               double num_cycles)
    : LambdaLR(optimizer, cosine_warmup_lambda(warmup_steps, total_steps, num_cycles)) {}

}  // namespace podsim::optim
