// Adam and AdamW: torch.optim.Adam / AdamW (1.13, single-tensor path). Per parameter
// with gradient g at step t (counted per parameter):
//   Adam:  g += weight_decay * p          AdamW: p *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v)                 (amsgrad; v_max replaces v below)
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The step count is host state, and the bias corrections reach the graph as scalar
// parameters, so successive steps reuse one compiled graph.
#pragma once

#include "runtime/optim/optimizer.h"

namespace podsim::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // AdamW's default is 1e-2 (AdamWOptions)
  bool amsgrad = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  // Groups override the defaults by option name: "lr", "beta1", "beta2", "eps",
  // "weight_decay", "amsgrad".
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

  void step(Loc loc = Loc::current()) override;

 protected:
  Adam(std::string name, std::vector<ParamGroup> groups, const AdamOptions& defaults,
       bool decoupled_weight_decay);
  void check_options(const std::map<std::string, double>& options, size_t group) const override;

 private:
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
};

}  // namespace podsim::optim
