// Emission of one TensorCore program together with the executable's tables: regions
// (unique identifier names), DMA descriptors (deduplicated), and the source op of every
// instruction for profile attribution. Internal to compiler/tpu.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/instruction.h"
#include "isa/isa.h"
#include "topology/chip_config.h"

namespace podsim::tpu {

class ProgramBuilder {
 public:
  ProgramBuilder(const topology::ChipConfig& chip, int core);

  const topology::ChipConfig& chip() const { return exe_.chip; }
  int core() const { return program_.core; }
  isa::Executable& executable() { return exe_; }

  // A region named after `name`, made a unique identifier.
  int32_t add_region(std::string_view name, isa::MemorySpace space, int64_t offset, int64_t size);
  isa::Region& region(int32_t index) { return exe_.regions[static_cast<size_t>(index)]; }
  // The index of an equal descriptor already in the table, or of a new one.
  int32_t descriptor(const isa::DmaDescriptor& d);

  // Instructions emitted from now on are attributed to `origin` (its name and metadata).
  void set_source(const ir::Instruction& origin);

  // A scalar register holding `value` (s0 for 0). Registers are a cache of constants:
  // valid because the code is straight-line. Eviction is least recently used, so the
  // registers of the last 30 calls stay valid (several calls may feed one instruction).
  int sreg(int64_t value);

  // A scalar register for a run-time value, kept from eviction until released.
  int hold_sreg();
  void release_sreg(int reg);
  // Control flow: the index of the next instruction; a join point (a branch target:
  // the register cache is forgotten); setting a branch's target once it is known.
  int64_t pc() const { return static_cast<int64_t>(program_.instructions.size()); }
  void begin_block();
  void set_branch_target(int64_t branch, int64_t target);

  void emit(isa::Opcode op, isa::DType dtype, std::initializer_list<int64_t> operands);

  // Conveniences; offsets and strides are bytes and go through sreg().
  void dma(int32_t descriptor, int64_t src_offset, int64_t dst_offset, int semaphore);
  void wait(int semaphore, int64_t count);
  void vld(int vd, int32_t region, int64_t offset, int64_t row_stride, isa::DType t);
  void vst(int32_t region, int64_t offset, int64_t row_stride, int vs, isa::DType t);
  void vimm(int vd, uint32_t bits);

  // Emission (and VMEM regions added) go to TensorCore `core`'s program from now on,
  // created on first use; each program keeps its own scalar register cache. A step that
  // splits its work over cores uses it (Lowerer::begin_parallel).
  void set_core(int core);

  // Chips whose device id is `devices` or more run nothing: every program (this one, and
  // each other core's when it is created) starts by branching to its final halt there.
  // Call before anything is emitted.
  void run_on_devices_below(int64_t devices);

  // Appends halt to every program and returns the executable (the builder is spent).
  isa::Executable finish();

 private:
  // The emission state of a program other than the current one.
  struct Parked {
    isa::Program program;
    std::array<int64_t, isa::kScalarRegisters> sreg_value{};
    std::array<bool, isa::kScalarRegisters> sreg_valid{};
    std::array<uint64_t, isa::kScalarRegisters> sreg_used{};
    std::array<bool, isa::kScalarRegisters> sreg_held{};
  };

  isa::Executable exe_;
  isa::Program program_;
  std::unordered_set<std::string> region_names_;
  std::map<std::vector<int64_t>, int32_t> descriptor_index_;
  std::unordered_map<const ir::Instruction*, int32_t> source_index_;
  int32_t source_ = -1;
  // Scalar register cache: value held by each register and when it was last handed out.
  std::array<int64_t, isa::kScalarRegisters> sreg_value_{};
  std::array<bool, isa::kScalarRegisters> sreg_valid_{};
  std::array<uint64_t, isa::kScalarRegisters> sreg_used_{};
  std::array<bool, isa::kScalarRegisters> sreg_held_{};
  uint64_t tick_ = 0;
  std::map<int, Parked> parked_;  // by core
  void emit_device_check();
  int64_t active_devices_ = 0;               // run_on_devices_below; 0: every chip runs
  std::map<int, int64_t> skip_branch_;       // per core: the branch to its final halt
};

}  // namespace podsim::tpu
