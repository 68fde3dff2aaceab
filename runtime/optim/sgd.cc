#include "runtime/optim/sgd.h"

#include "common/error.h"
#include "runtime/autograd/autograd.h"

namespace podsim::optim {
namespace {

std::map<std::string, double> option_map(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{{std::move(params), {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer("SGD", std::move(groups), option_map(defaults)) {
  check_groups();
}

void SGD::check_options(const std::map<std::string, double>& o, size_t group) const {
  double lr = o.at("lr"), momentum = o.at("momentum"), dampening = o.at("dampening");
  if (!(lr >= 0))
    fail(
        "SGD: invalid learning rate {} in group {} (set SGDOptions::lr: it has no default, as "
        "in torch)",
        lr, group);
  if (!(momentum >= 0)) fail("SGD: invalid momentum {} in group {}", momentum, group);
  if (!(o.at("weight_decay") >= 0))
    fail("SGD: invalid weight_decay {} in group {}", o.at("weight_decay"), group);
  if (o.at("nesterov") != 0 && (momentum <= 0 || dampening != 0))
    fail(
        "SGD: Nesterov momentum requires a momentum and zero dampening (group {} has momentum "
        "{}, dampening {})",
        group, momentum, dampening);
}

void SGD::step(Loc loc) {
  NoGradGuard no_grad;
  size_t index = 0;
  for (ParamGroup& group : param_groups()) {
    double lr = group.options.at("lr"), momentum = group.options.at("momentum");
    double dampening = group.options.at("dampening");
    double weight_decay = group.options.at("weight_decay");
    bool nesterov = group.options.at("nesterov") != 0;
    for (Tensor& p : group.params) {
      ParamState& st = state(index++);
      Tensor d = p.grad();
      if (!d.defined()) continue;
      if (weight_decay != 0) d = add(d, mul(p, weight_decay, loc), loc);
      if (momentum != 0) {
        auto it = st.tensors.find("momentum_buffer");
        Tensor buf;
        if (it == st.tensors.end()) {
          buf = d.detach();
          st.tensors.emplace("momentum_buffer", buf);
        } else {
          buf = it->second;
          buf.copy_(add(mul(buf, momentum, loc), mul(d, 1 - dampening, loc), loc), loc);
        }
        d = nesterov ? add(d, mul(buf, momentum, loc), loc) : buf;
      }
      p.copy_(sub(p, mul(d, lr, loc), loc), loc);
    }
  }
}

}  // namespace podsim::optim
