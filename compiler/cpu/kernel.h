// Internal to the CPU target: the kernel interface every plan step runs, and the
// factory that picks a kernel for an instruction. A kernel reads its operands and
// writes its result as flat lists of array buffers ("leaves": an array value is one
// leaf, a tuple value the leaves of its elements in order), row-major, of the shapes
// the instruction declares. Kernels are immutable after construction; run() may be
// called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::cpu {

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(std::span<const std::byte* const> operands,
                   std::span<std::byte* const> outputs) const = 0;
};

// A kernel computing `instruction` from buffers of its operands. Opcodes without a
// native kernel (gather, scatter, sort, windows, collectives, custom calls, ...) run
// through the reference evaluator. Not for parameter, constant,
// tuple, get-tuple-element and the pure aliases (the plan handles those without code).
std::unique_ptr<Kernel> make_kernel(const ir::Instruction& instruction);

// The evaluator as a kernel: any instruction, evaluated by podsim::ir::evaluate on a
// one-instruction module that calls the original called computations.
std::unique_ptr<Kernel> make_evaluator_kernel(const ir::Instruction& instruction);

// fusion: every stage of the fused computation (kernel.cc dispatches here).
std::unique_ptr<Kernel> make_fusion_kernel(const ir::Instruction& fusion);
// dot / convolution through BLAS where the types allow, otherwise the evaluator.
std::unique_ptr<Kernel> make_dot_kernel(const ir::Instruction& dot);
std::unique_ptr<Kernel> make_convolution_kernel(const ir::Instruction& convolution);
// while / conditional / call: their computations as nested plans.
std::unique_ptr<Kernel> make_control_flow_kernel(const ir::Instruction& instruction);

// The leaf shapes of shape, flattened in tuple order (an array is its own leaf).
void flatten_shape(const ir::Shape& shape, std::vector<ir::Shape>& leaves);
std::vector<ir::Shape> leaf_shapes(const ir::Shape& shape);

// Whether a value of `shape` may be reinterpreted without moving bytes: no layout, or
// the row-major one.
bool is_row_major(const ir::Shape& shape);

// Whether `instruction` (array result) only renames the bytes of its single operand:
// reshape, copy, row-major bitcast, bitcast-convert, opt-barrier of an array.
bool is_byte_alias(const ir::Instruction& instruction);

}  // namespace podsim::cpu
