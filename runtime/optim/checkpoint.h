// Training checkpoints: a module's state_dict, an optimizer's state and the step count
// in one safetensors file ("model.<name>", "optimizer.<name>", "step"), saved
// atomically through runtime/nn/serialize.h (an interrupted save leaves the previous
// checkpoint intact).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/nn/module.h"
#include "runtime/optim/optimizer.h"

namespace podsim::optim {

// optimizer may be null (a model-only checkpoint).
void save_checkpoint(const nn::Module& module, const Optimizer* optimizer, int64_t step,
                     const std::string& path);
// Loads into module (strict: every key must match) and, if given, optimizer, whose
// parameters must be the module's in the same groups as when saved. Returns the step.
int64_t load_checkpoint(nn::Module& module, Optimizer* optimizer, const std::string& path);

}  // namespace podsim::optim
