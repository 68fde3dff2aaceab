// Internal interface between the evaluator's driver (evaluator.cc) and its per-op-group
// implementation files (evaluator_*.cc). Not a public header.
#pragma once

#include <fmt/core.h>

#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::ir::eval {

using Operands = std::span<const Literal* const>;

// Throws "OPCODE of NAME (line N): what", the form the driver recognizes as already
// located (it adds no second location).
template <typename... Args>
[[noreturn]] void op_fail(const Instruction& instruction, fmt::format_string<Args...> format,
                          Args&&... args) {
  std::string where = instruction.name();
  if (instruction.pos().line > 0) where += fmt::format(" (line {})", instruction.pos().line);
  fail("{} of {}: {}", opcode_name(instruction.opcode()), where,
       fmt::format(format, std::forward<Args>(args)...));
}

inline const Computation& called_computation(const Instruction& instruction, size_t i) {
  if (instruction.called().size() <= i || instruction.called()[i] == nullptr)
    op_fail(instruction, "missing called computation {}", i);
  return *instruction.called()[i];
}

// maximum / minimum of floats: NaN-propagating; on equal values (-0 vs +0 included) the
// first operand wins. Elementwise ops and reduction fast paths share them so that both
// agree bitwise.
template <typename C>
C float_max(C x, C y) {
  return (x >= y || std::isnan(x)) ? x : y;
}
template <typename C>
C float_min(C x, C y) {
  return (x <= y || std::isnan(x)) ? x : y;
}

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
// evaluator_indexing.cc: gather, scatter, sort, topk.
Literal eval_indexing(const Instruction& instruction, Operands operands, Context& context);
// convert.cc: reduce-precision.
Literal eval_reduce_precision(const Instruction& instruction, const Literal& x);
// batch_norm.cc: batch-norm-training, -inference, -grad.
Literal eval_batch_norm(const Instruction& instruction, Operands operands);
// evaluator_rng.cc: rng-bit-generator.
Literal eval_rng_bit_generator(const Instruction& instruction, Operands operands);

}  // namespace podsim::ir::eval
