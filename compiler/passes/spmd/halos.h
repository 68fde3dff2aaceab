// Halos and padding on the pieces of split values (the SPMD partitioner's shifted
// slices and pads, and its partial sums over uneven splits).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/passes/spmd/emitter.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes::spmd {

// x (pieces under tiling t, dimension d split; the whole value has `size` elements
// there) with dimension d replaced on each device p by its window [lo[p], lo[p] + w) of
// the whole value: its own piece with halos from its neighbours along d (the edges they
// send it by collective-permute), cut at a per-device offset. Positions outside the
// value hold `fill` where it is given (else whatever the halo or padding held). nullopt
// where a window reaches past a neighbour's piece.
std::optional<ir::Instruction*> window(Emitter& e, ir::Instruction* x, const Tiling& t, int64_t d, int64_t size,
                                       const std::vector<int64_t>& lo, int64_t w, ir::Instruction* fill);

// An s32 array of `dims` holding, along dimension d, the position in the whole value of
// each element on device p, whose elements there start at position lo[p].
ir::Instruction* positions(Emitter& e, const std::vector<int64_t>& dims, int64_t d, const std::vector<int64_t>& lo);

// x where its dimension d, which on device p holds positions [lo[p], ...) of a value
// with `size` of them, holds positions of the value; `fill` (a scalar) elsewhere.
ir::Instruction* keep_inside(Emitter& e, ir::Instruction* x, int64_t d, const std::vector<int64_t>& lo, int64_t size,
                             ir::Instruction* fill);

// x, pieces of `whole` under t, with the padding of uneven splits along `dims` set to
// `fill` (a scalar: the reducer's identity), so that partial sums over them leave it
// out whatever it held.
ir::Instruction* mask_padding(Emitter& e, ir::Instruction* x, const Tiling& t, const ir::Shape& whole,
                              const std::vector<int64_t>& dims, ir::Instruction* fill);

}  // namespace podsim::passes::spmd
