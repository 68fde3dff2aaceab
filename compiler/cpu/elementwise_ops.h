// Internal to the CPU target: one elementwise instruction applied to a block of
// elements. Common ops on every element type have tight loops over the native types
// that the compiler vectorizes; they compute exactly what the reference evaluator
// computes (the same expressions in the same types: 16-bit floats widen to float and
// round back after every op), so fused and unfused results agree bit for bit with the
// evaluator. Everything else evaluates the block through the evaluator's own
// elementwise implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "compiler/ir/instruction.h"

namespace podsim::cpu {

class ElementwiseOp {
 public:
  virtual ~ElementwiseOp() = default;
  // operands[k] points to n elements of operand k's type (a scalar operand of select
  // or clamp already repeated n times); out receives n elements and overlaps no operand.
  virtual void run(std::span<const void* const> operands, void* out, int64_t n) const = 0;
};

// `instruction` must be elementwise (ir::is_elementwise) with array operands.
std::unique_ptr<ElementwiseOp> make_elementwise_op(const ir::Instruction& instruction);

}  // namespace podsim::cpu
