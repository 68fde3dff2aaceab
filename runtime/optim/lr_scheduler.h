// Learning-rate schedules, after torch.optim.lr_scheduler: a scheduler sets the lr of
// every parameter group of its optimizer at construction (epoch 0) and at each
// step(). The lr reaches the graph as a scalar parameter, so a schedule never
// recompiles the training step.
//
//   CosineWarmupLR schedule(optimizer, /*warmup_steps=*/100, /*total_steps=*/1000);
//   for (...) { ...; optimizer.step(); schedule.step(); mark_step(); }
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/optim/optimizer.h"

namespace podsim::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch (or step) and sets the groups' lr.
  void step();
  // The epoch the lrs were last computed for (0 after construction).
  int64_t last_epoch() const { return last_epoch_; }
  // The lrs last set, one per group (torch's get_last_lr()).
  const std::vector<double>& last_lr() const { return last_lr_; }
  // The lrs the schedule started from (each group's "initial_lr").
  const std::vector<double>& base_lrs() const { return base_lrs_; }

 protected:
  // Records each group's lr as its "initial_lr" (kept if already there, as torch does).
  explicit LRScheduler(Optimizer& optimizer);
  // Derived constructors call this last: it sets the lrs of epoch 0 (torch's
  // initial step).
  void initial_step();
  // The lr of a group at last_epoch(), given its current lr.
  virtual double lr_of(size_t group, double current_lr) const = 0;

 private:
  Optimizer& optimizer_;
  int64_t last_epoch_ = -1;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

// Multiplies the lr by gamma every step_size epochs (torch.optim.lr_scheduler.StepLR).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_of(size_t group, double current_lr) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = initial_lr * lambda(epoch) (torch.optim.lr_scheduler.LambdaLR).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lambda);

 protected:
  double lr_of(size_t group, double current_lr) const override;

 private:
  std::function<double(int64_t)> lambda_;
};

// The factor of transformers' get_cosine_schedule_with_warmup at a step: a linear
// warmup from 0 to 1 over warmup_steps, then a cosine from 1 to 0 over the remaining
// steps (num_cycles = 0.5: half a cosine wave), never below 0.
double cosine_warmup_factor(int64_t step, int64_t warmup_steps, int64_t total_steps,
                            double num_cycles = 0.5);

// get_cosine_schedule_with_warmup: LambdaLR with cosine_warmup_factor.
class CosineWarmupLR : public LambdaLR {
 public:
  CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                 double num_cycles = 0.5);
};

}  // namespace podsim::optim
