// The architectural state of one chip, as the functional model sees it: HBM, and per
// TensorCore its VMEM, scalar and vector registers, MXUs (bf16 weights, f32
// accumulator), semaphores and control state. Plain data, sized from a ChipConfig; the
// functional model (functional_model.h) is what changes it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/sparse_memory.h"
#include "topology/chip_config.h"

namespace podsim::sim {

struct MxuState {
  // mxu_rows x mxu_cols, row-major; values are bf16-rounded floats, rows past
  // weight_rows are zero.
  std::vector<float> weights;
  int64_t weight_rows = 0;  // K of the last mldw; 0 while none has run
  // accumulator_rows x mxu_cols f32, row-major: one row per LHS row streamed by mmul
  // (mxu_rows, as mmul has no operand for M); 0 rows until the first mmul.
  std::vector<float> accumulator;
  int64_t accumulator_rows = 0;
};

struct CoreState {
  std::array<int64_t, isa::kScalarRegisters> scalar{};  // scalar[0] stays 0
  // vector_registers x (sublanes x lanes) 32-bit lanes, register-major, then
  // sublane-major.
  std::vector<uint32_t> vector;
  std::vector<MxuState> mxus;
  std::array<int64_t, isa::kSemaphores> semaphores{};
  SparseMemory vmem;
  int32_t pc = 0;
  bool has_program = false;
  bool halted = false;
  // Waiting at a barrier that opened generation barrier_generation + 1.
  bool at_barrier = false;
  uint64_t barrier_generation = 0;
};

class ChipState {
 public:
  explicit ChipState(const topology::ChipConfig& chip);

  const topology::ChipConfig& chip() const { return chip_; }
  int64_t lanes_per_register() const { return lanes_per_register_; }

  SparseMemory& hbm() { return hbm_; }
  const SparseMemory& hbm() const { return hbm_; }
  std::vector<CoreState>& cores() { return cores_; }
  const std::vector<CoreState>& cores() const { return cores_; }
  CoreState& core(int i) { return cores_[static_cast<size_t>(i)]; }
  const CoreState& core(int i) const { return cores_[static_cast<size_t>(i)]; }

  // The memory holding (space, core).
  SparseMemory& memory(isa::MemorySpace space, int core) {
    return space == isa::MemorySpace::kHbm ? hbm_ : cores_[static_cast<size_t>(core)].vmem;
  }

  uint32_t* vreg(int core, int64_t index) {
    return cores_[static_cast<size_t>(core)].vector.data() + index * lanes_per_register_;
  }

  // Host bytes used by all simulated memories (pages and directories).
  int64_t memory_host_bytes() const;

  // Barrier bookkeeping: cores with a program take part.
  int barrier_participants = 0;
  int barrier_arrived = 0;
  uint64_t barrier_generation = 0;

 private:
  topology::ChipConfig chip_;
  int64_t lanes_per_register_ = 0;
  SparseMemory hbm_;
  std::vector<CoreState> cores_;
};

}  // namespace podsim::sim
