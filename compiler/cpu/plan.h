// Internal to the CPU target: the executable plan of one computation - its steps in
// definition order (a topological order), each a kernel with the buffers it reads
// and writes, and the buffer assignment.
//
// Buffers: every array produced by a step is a "virtual buffer". Parameters and
// constants are used in place; a tuple is the list of its elements' buffers and
// get-tuple-element picks from that list, so neither copies; reshape, copy, row-major
// bitcast, bitcast-convert and opt-barrier reuse their operand's buffers. Buffers that
// end up in the result are written straight into the result literals. All others get
// a slot of one arena: slots are assigned greedily in step order and a slot is free
// again after the last step that reads it (best fit among free slots, else the largest
// free slot grows, else a new slot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compiler/cpu/kernel.h"
#include "compiler/ir/module.h"

namespace podsim::cpu {

struct BufferRef {
  enum class Kind : uint8_t { kArgument, kConstant, kSlot, kOutput };
  Kind kind = Kind::kSlot;
  int32_t index = 0;  // argument leaf (all parameters' leaves in order), slot, or output leaf
  const std::byte* constant = nullptr;
};

struct PlanStep {
  const ir::Instruction* instruction = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<BufferRef> operands;  // leaves of every operand, in order
  std::vector<BufferRef> outputs;   // leaves of the result
};

// A result leaf that is not written by a step (an argument, a constant, or a buffer
// that appears twice in the result): copied at the end.
struct OutputCopy {
  BufferRef from;
  int32_t to = 0;
  size_t bytes = 0;
};

// Uninitialized, 64-byte aligned memory (at least one byte) for arenas and loop states.
struct AlignedDelete {
  void operator()(std::byte* p) const;
};
using AlignedBuffer = std::unique_ptr<std::byte[], AlignedDelete>;
AlignedBuffer allocate_aligned(size_t bytes);

// Plans of nested computations (while bodies, branches, calls) are built while another
// plan is being built; past this depth the instruction runs through the evaluator
// instead (a computation that calls itself).
inline constexpr int kMaxPlanDepth = 32;
int plan_depth();

class Plan {
 public:
  explicit Plan(const ir::Computation& computation);

  // Runs the steps. arguments: the leaves of every parameter, in parameter order;
  // outputs: the result leaves; arena: arena_bytes() bytes, 64-byte aligned.
  void execute(std::span<const std::byte* const> arguments, std::span<std::byte* const> outputs,
               std::byte* arena) const;
  size_t argument_leaves() const { return argument_leaves_; }
  size_t output_leaves() const { return output_leaves_; }

  const std::vector<PlanStep>& steps() const { return steps_; }
  const std::vector<OutputCopy>& copies() const { return copies_; }
  // Arena offset of each slot and the arena's size.
  const std::vector<size_t>& slot_offsets() const { return slot_offsets_; }
  size_t arena_bytes() const { return arena_bytes_; }
  // The result literals' shapes: the root tuple's elements, or the root's shape.
  const std::vector<ir::Shape>& result_shapes() const { return result_shapes_; }
  bool tuple_result() const { return tuple_result_; }
  int64_t output_bytes() const { return output_bytes_; }
  // Bytes of result leaves that are arguments passed through unchanged.
  int64_t alias_bytes() const { return alias_bytes_; }
  int64_t fusions() const { return fusions_; }

 private:
  size_t argument_leaves_ = 0;
  size_t output_leaves_ = 0;
  std::vector<PlanStep> steps_;
  std::vector<OutputCopy> copies_;
  std::vector<size_t> slot_offsets_;
  size_t arena_bytes_ = 0;
  std::vector<ir::Shape> result_shapes_;
  bool tuple_result_ = false;
  int64_t output_bytes_ = 0;
  int64_t alias_bytes_ = 0;
  int64_t fusions_ = 0;
};

}  // namespace podsim::cpu
