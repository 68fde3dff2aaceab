// Internal to the CPU target: a pass that lets BLAS read dot operands where they lie
// instead of copying them into a new layout first (XLA's CPU and GPU targets run a
// similar "transpose folding"). After the default pipeline, in the entry and the other
// non-fusion computations:
//  * transpose(dot(a, b)) whose permutation puts the rhs free dimensions before the lhs
//    ones (C^T of a matrix product) becomes dot(b, a): the product is computed
//    transposed, with no transpose of the result;
//  * a transpose feeding a dot is folded into the dot's dimension numbers when it
//    keeps the order of the operand's free dimensions (the dot's result is unchanged):
//    GEMM reads the operand with its transpose flag or strides;
//  * a fusion feeding a dot that only reshapes and transposes its one parameter is
//    replaced by the same reshapes and transposes outside a fusion, which the plan
//    runs as byte aliases and the rule above folds;
//  * a dot whose rhs is a broadcast over the batch dimensions (a linear layer applied
//    to a batch of sequences: the weights repeated per batch element) becomes a dot of
//    the unbroadcast rhs with the lhs batch dimensions as rows.
// The dot computes the same sums of the same products; only the GEMM's blocking (its
// summation order) may differ, within the documented dot accuracy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/passes/pass.h"

namespace podsim::cpu {

std::unique_ptr<passes::Pass> make_dot_folding();

// The dimensions of a dot operand of `rank` that are neither batch nor contracting, in order.
std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting);

}  // namespace podsim::cpu
