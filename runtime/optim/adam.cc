#include "runtime/optim/adam.h"

#include <cmath>

#include "common/error.h"
#include "runtime/autograd/autograd.h"

namespace podsim::optim {
namespace {

std::map<std::string, double> option_map(const AdamOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0}};
}

AdamOptions adam_options(const AdamWOptions& o) {
  return {.lr = o.lr,
          .beta1 = o.beta1,
          .beta2 = o.beta2,
          .eps = o.eps,
          .weight_decay = o.weight_decay,
          .amsgrad = o.amsgrad};
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam("Adam", std::vector<ParamGroup>{{std::move(params), {}}}, options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam("Adam", std::move(groups), defaults, false) {}

Adam::Adam(std::string name, std::vector<ParamGroup> groups, const AdamOptions& defaults,
           bool decoupled_weight_decay)
    : Optimizer(std::move(name), std::move(groups), option_map(defaults)),
      decoupled_weight_decay_(decoupled_weight_decay) {
  check_groups();
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Adam("AdamW", std::vector<ParamGroup>{{std::move(params), {}}}, adam_options(options), true) {
}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam("AdamW", std::move(groups), adam_options(defaults), true) {}

void Adam::check_options(const std::map<std::string, double>& o, size_t group) const {
  if (!(o.at("lr") >= 0))
    fail("{}: invalid learning rate {} in group {}", name(), o.at("lr"), group);
  if (!(o.at("eps") >= 0)) fail("{}: invalid epsilon {} in group {}", name(), o.at("eps"), group);
  for (const char* beta : {"beta1", "beta2"})
    if (!(o.at(beta) >= 0 && o.at(beta) < 1))
      fail("{}: invalid {} {} in group {} (it must be in [0, 1))", name(), beta, o.at(beta), group);
  if (!(o.at("weight_decay") >= 0))
    fail("{}: invalid weight_decay {} in group {}", name(), o.at("weight_decay"), group);
}

void Adam::step(Loc loc) {
  NoGradGuard no_grad;
  size_t index = 0;
  for (ParamGroup& group : param_groups()) {
    double lr = group.options.at("lr"), beta1 = group.options.at("beta1");
    double beta2 = group.options.at("beta2"), eps = group.options.at("eps");
    double weight_decay = group.options.at("weight_decay");
    bool amsgrad = group.options.at("amsgrad") != 0;
    for (Tensor& p : group.params) {
      ParamState& st = state(index++);
      Tensor g = p.grad();
      if (!g.defined()) continue;
      auto zeros_like_p = [&] { return zeros(p.shape(), {p.dtype(), p.device()}); };
      if (!st.step) {
        st.step = 0;
        st.tensors.emplace("exp_avg", zeros_like_p());
        st.tensors.emplace("exp_avg_sq", zeros_like_p());
      }
      if (!st.tensors.contains("exp_avg") || !st.tensors.contains("exp_avg_sq"))
        fail(
            "{}::step: parameter {} has a step count but no exp_avg / exp_avg_sq (a state "
            "loaded from an incomplete state_dict)",
            name(), index - 1);
      if (amsgrad && !st.tensors.contains("max_exp_avg_sq"))
        st.tensors.emplace("max_exp_avg_sq", zeros_like_p());
      int64_t step = ++*st.step;

      if (weight_decay != 0) {
        if (decoupled_weight_decay_)
          p.copy_(mul(p, 1 - lr * weight_decay, loc), loc);
        else
          g = add(g, mul(p, weight_decay, loc), loc);
      }
      Tensor& m = st.tensors.at("exp_avg");
      Tensor& v = st.tensors.at("exp_avg_sq");
      m.copy_(add(mul(m, beta1, loc), mul(g, 1 - beta1, loc), loc), loc);
      v.copy_(add(mul(v, beta2, loc), mul(mul(g, g, loc), 1 - beta2, loc), loc), loc);
      // Host scalars that change every step: graph parameters, so no recompilation.
      auto t = static_cast<double>(step);
      double bias_correction1 = 1 - std::pow(beta1, t);
      double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, t));
      double step_size = lr / bias_correction1;
      Tensor second = v;
      if (amsgrad) {
        Tensor& v_max = st.tensors.at("max_exp_avg_sq");
        v_max.copy_(maximum(v_max, v, loc), loc);
        second = v_max;
      }
      Tensor denom = add(div(sqrt(second, loc), bias_correction2_sqrt, loc), eps, loc);
      p.copy_(sub(p, mul(div(m, denom, loc), step_size, loc), loc), loc);
    }
  }
}

}  // namespace podsim::optim
