// Gradient clipping by total norm without a host sync: torch.nn.utils.clip_grad_norm_
// in the form PyTorch/XLA uses. The total norm stays a device tensor and the clip
// factor min(max_norm / (total + 1e-6), 1) multiplies every grad, so no value is read
// back and the training step stays one graph.
#pragma once

#include <limits>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::optim {

// The norm (norm_type > 0, or infinity for the max norm) of all the parameters' grads
// taken together, computed before clipping. Parameters without a grad are skipped; with
// none at all the result is a host 0. The grads must be on one device.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, Loc loc = Loc::current());

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace podsim::optim
