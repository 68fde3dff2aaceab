// Which dimensions of an instruction's operands are dimensions of its result, so that a
// split of one is a split of the other and the instruction can run on pieces. Both SPMD
// passes read them: propagation carries shardings along them, the partitioner runs an
// instruction on the pieces they allow. Maps are `from` vectors for Tiling::remap.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/ir/instruction.h"

namespace podsim::passes::spmd {

// For each dimension of array operand `k`, the result dimension it is (-1: none: the
// instruction runs across it, or changes it, so a piece of it is not a piece of the
// result); nullopt where the instruction cannot run on pieces at all.
std::optional<std::vector<int64_t>> operand_dims_in_result(const ir::Instruction& instruction, int64_t k);

// As operand_dims_in_result, and also the dimensions a slice (stride 1) or a pad (no
// interior padding) shifts and the window dimensions of a convolution or reduce-window
// (window_dims): a split of one is a split of the other whose pieces differ by a few
// elements at their edges, which the partitioner exchanges with neighbours (halos).
// Sharding propagation follows these.
std::optional<std::vector<int64_t>> operand_dims_along_result(const ir::Instruction& instruction, int64_t k);

// The window dimensions of a convolution (one feature group) or a reduce-window (one
// input) that a split can follow by halos, as (result dimension, input dimension): those
// whose window is more than one element and whose base is not dilated.
std::vector<std::pair<int64_t, int64_t>> window_dims(const ir::Instruction& instruction);

// Whether operand `k` is the same along result dimension `d` (a broadcast's new
// dimensions, a gather table along the batch, a convolution's kernel along batch and
// space and its input along output features, a scalar along everything), so that a split
// of d needs no split of the operand.
bool operand_ignores_result_dim(const ir::Instruction& instruction, int64_t k, int64_t d);

// The inverse of such a map: for each of the `rank` dimensions of the other side, the
// dimension of this side that maps to it, or -1.
std::vector<int64_t> invert(const std::vector<int64_t>& map, int64_t rank);

}  // namespace podsim::passes::spmd
