#include "sim/functional/chip_state.h"

namespace podsim::sim {

ChipState::ChipState(const topology::ChipConfig& chip)
    : chip_(chip),
      lanes_per_register_(int64_t{chip.vpu_sublanes} * chip.vpu_lanes),
      hbm_(chip.hbm_bytes),
      cores_(static_cast<size_t>(chip.tensor_cores)) {
  for (CoreState& core : cores_) {
    core.vector.assign(static_cast<size_t>(chip.vector_registers * lanes_per_register_), 0);
    core.mxus.resize(static_cast<size_t>(chip.mxus_per_core));
    for (MxuState& mxu : core.mxus)
      mxu.weights.assign(static_cast<size_t>(int64_t{chip.mxu_rows} * chip.mxu_cols), 0.0f);
    core.vmem = SparseMemory(chip.vmem_bytes);
  }
}

int64_t ChipState::memory_host_bytes() const {
  int64_t total = hbm_.host_bytes();
  for (const CoreState& core : cores_) total += core.vmem.host_bytes();
  return total;
}

}  // namespace podsim::sim
