// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight
// decay: torch.optim.SGD (1.13). Per parameter with gradient g:
//   g += weight_decay * p
//   buf = g (first step) | momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf           (with momentum)
//   p -= lr * g
#pragma once

#include "runtime/optim/optimizer.h"

namespace podsim::optim {

struct SGDOptions {
  double lr = -1;  // required, as in torch (a negative value is rejected)
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  // Groups override the defaults by option name: "lr", "momentum", "dampening",
  // "weight_decay", "nesterov".
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults);

  void step(Loc loc = Loc::current()) override;

 protected:
  void check_options(const std::map<std::string, double>& options, size_t group) const override;
};

}  // namespace podsim::optim
