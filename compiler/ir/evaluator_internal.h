// Internal interface between the evaluator's driver (evaluator.cc) and its per-op-group
// implementation files (evaluator_*.cc). Not a public header.
#pragma once

#include <span>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::ir::eval {

using Operands = std::span<const Literal* const>;

// Per-device evaluation state that op implementations may use.
class Context {
 public:
  virtual ~Context() = default;
  // Evaluates a called computation (to_apply, branches, bodies) on args.
  virtual Literal call(const Computation& computation, std::vector<Literal> args) = 0;
  virtual int64_t replica_id() const = 0;
  virtual int64_t partition_id() const = 0;
};

// Each returns the instruction's value. Dispatch by opcode lives in evaluator.cc.
// evaluator_elementwise.cc: every opcode with is_elementwise() true (incl. compare,
// convert, bitcast-convert, clamp, select).
Literal eval_elementwise(const Instruction& instruction, Operands operands);
// evaluator_shape_ops.cc: broadcast, reshape, transpose, slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reverse, copy, bitcast, iota.
Literal eval_shape_op(const Instruction& instruction, Operands operands);
// evaluator_reduce.cc: reduce, reduce-window, select-and-scatter.
Literal eval_reduction(const Instruction& instruction, Operands operands, Context& context);
// evaluator_linalg.cc: dot, convolution.
Literal eval_linalg(const Instruction& instruction, Operands operands);
// evaluator_indexing.cc: gather, scatter, sort.
Literal eval_indexing(const Instruction& instruction, Operands operands, Context& context);
// evaluator_rng.cc: rng-bit-generator.
Literal eval_rng_bit_generator(const Instruction& instruction, Operands operands);

}  // namespace podsim::ir::eval
