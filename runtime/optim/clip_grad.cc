#include "runtime/optim/clip_grad.h"

#include <cmath>

#include "common/error.h"
#include "runtime/autograd/autograd.h"

namespace podsim::optim {
namespace {

Tensor vector_norm(const Tensor& x, double norm_type, Loc loc) {
  if (std::isinf(norm_type)) return podsim::max(abs(x, loc), {}, false, loc);
  if (norm_type == 2) return sqrt(sum(mul(x, x, loc), {}, false, loc), loc);
  if (norm_type == 1) return sum(abs(x, loc), {}, false, loc);
  return pow(sum(pow(abs(x, loc), norm_type, loc), {}, false, loc), 1.0 / norm_type, loc);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       Loc loc) {
  if (!(norm_type > 0))
    fail("{}:{}: clip_grad_norm_: norm_type {} must be positive (or infinity)", loc.file_name(),
         loc.line(), norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    if (!p.defined())
      fail("{}:{}: clip_grad_norm_: a parameter is undefined", loc.file_name(), loc.line());
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!grads.empty() && g.device() != grads[0].device())
      fail("{}:{}: clip_grad_norm_: grads on {} and {}; all must be on one device", loc.file_name(),
           loc.line(), grads[0].device_name(), g.device_name());
    grads.push_back(std::move(g));
  }
  if (grads.empty()) return zeros({});
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor& g : grads) norms.push_back(vector_norm(g, norm_type, loc));
  Tensor total = norms.size() == 1 ? norms[0] : vector_norm(stack(norms, 0, loc), norm_type, loc);
  Tensor coefficient = clamp(div(max_norm, add(total, 1e-6, loc), loc), std::nullopt, 1.0, loc);
  for (Tensor& g : grads) g.copy_(mul(g, coefficient, loc), loc);
  return total;
}

}  // namespace podsim::optim
