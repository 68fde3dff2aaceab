// Saving and loading named tensors (a module's state_dict, an optimizer's state) as
// safetensors files, through the host. A save writes a temporary file, fsyncs it and
// renames it over the target (compiler/ir/safetensors.h), so an interrupted save leaves
// the previous file intact. Model + optimizer checkpoints: runtime/distributed/checkpoint.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::nn {

// Pending device tensors are computed first (one graph per device); names must be
// unique and non-empty.
void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path);
// The tensors of a file in the file's order, on device (nullptr: the host).
std::vector<std::pair<std::string, Tensor>> load(const std::string& path,
                                                 pjrt::Device* device = nullptr);

}  // namespace podsim::nn
