// Internal to the evaluator: helpers shared by the elementwise files and the driver.
// Not a public header.
#pragma once

#include <string>

#include "compiler/ir/eval/internal.h"

namespace podsim::ir::eval {

// "name (line N)" for error messages; just the name for instructions built in code.
std::string describe(const Instruction& instruction);

// Throws unless operand is an array with the instruction's dimensions (or a scalar
// where scalar_ok: clamp bounds and the select predicate broadcast).
void check_elementwise_operand(const Instruction& instruction, const Literal& operand, int64_t index,
                               bool scalar_ok);

// evaluator_convert.cc
Literal eval_compare(const Instruction& instruction, const Literal& a, const Literal& b);
Literal eval_convert(const Instruction& instruction, const Literal& a);
Literal eval_bitcast_convert(const Instruction& instruction, const Literal& a);

}  // namespace podsim::ir::eval
