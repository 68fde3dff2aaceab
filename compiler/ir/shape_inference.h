// Shape inference: the result shape every opcode produces from its operands' shapes
// and attributes, following XLA's HLO semantics. Throws podsim::Error saying what is
// wrong (without location; the verifier adds it).
#pragma once

#include "compiler/ir/instruction.h"

namespace podsim::ir {

// Infers the shape of instruction from its operands, attributes and called
// computations. The layout of the result is not inferred.
Shape infer_shape(const Instruction& instruction);

}  // namespace podsim::ir
