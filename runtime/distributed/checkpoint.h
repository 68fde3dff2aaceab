// Training checkpoints: a module's state_dict, an optimizer's state and the step count
// in one safetensors file (or, sharded, one per device: below) ("model.<name>", "optimizer.<name>", "step"), saved
// atomically through runtime/nn/serialize.h (an interrupted save leaves the previous
// checkpoint intact).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/nn/module.h"
#include "runtime/optim/optimizer.h"

namespace podsim::distributed {

// optimizer may be null (a model-only checkpoint).
void save_checkpoint(const nn::Module& module, const optim::Optimizer* optimizer, int64_t step,
                     const std::string& path);
// Loads into module (strict: every key must match) and, if given, optimizer, whose
// parameters must be the module's in the same groups as when saved. Returns the step.
int64_t load_checkpoint(nn::Module& module, optim::Optimizer* optimizer, const std::string& path);

// Sharded checkpoints of SPMD training (runtime/distributed/spmd.h): the directory `dir` gets one
// safetensors file per device ("device-D.safetensors") with the pieces that device holds
// (each distinct piece written once; replicated tensors and host tensors by device 0)
// and "index.json": every tensor's dtype, whole shape, sharding and where its pieces are.
// Loading puts each tensor together and gives it to the module and optimizer as
// load_checkpoint does, then splits it again as the tensor it replaces was split (or
// leaves it whole): a checkpoint saved on one mesh loads onto another. Pending values are
// computed first (mark_step).
void save_sharded_checkpoint(const nn::Module& module, const optim::Optimizer* optimizer, int64_t step,
                             const std::string& dir);
int64_t load_sharded_checkpoint(nn::Module& module, optim::Optimizer* optimizer, const std::string& dir);

}  // namespace podsim::distributed
