// Halos and padding on the pieces of split values (the SPMD partitioner's shifted
// slices and pads, and its partial sums over uneven splits).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/passes/spmd/emitter.h"
#include "compiler/passes/spmd/reshard_plan.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes::spmd {

// How windows [lo[p], lo[p] + w) along dimension d, split under t in pieces of n
// elements of a value of `size`, are formed: a collective-permute per shift k (each
// device receiving part of the piece k positions along d from its own) of widths[i]
// elements for shifts[i]. kNeighbours: every window lies within its piece and its
// neighbours', whose edges (`left` and `right` wide) each device takes. kWithinPieces:
// every window (where it meets the value) lies within one piece, which sends it whole
// to its device. kParts: each device receives the part of each piece its window needs
// and places them by position.
struct WindowExchange {
  enum class Kind { kNeighbours, kWithinPieces, kParts };
  Kind kind = Kind::kNeighbours;
  int64_t left = 0, right = 0;
  std::vector<int64_t> shifts;
  std::vector<int64_t> widths;
  std::vector<int64_t> pieces;  // kWithinPieces: each device's window's piece (-1: none)
  // Instructions that forming them runs on each device (slices, pads, selects, tables of
  // offsets), each costed as a copy of a window (on TPU-like chips each such step costs
  // at least HBM's latency both ways), for the partitioner's cost of the choice.
  int64_t copies = 0;
};
WindowExchange window_exchange(const Tiling& t, int64_t d, int64_t n, int64_t size, const std::vector<int64_t>& lo,
                               int64_t w, int64_t devices);

// x (pieces under tiling t, dimension d split; the whole value has `size` elements
// there) with dimension d replaced on each device p by its window [lo[p], lo[p] + w) of
// the whole value, formed as window_exchange says. Positions outside the value hold
// `fill` where it is given (else whatever the halo or padding held).
ir::Instruction* window(Emitter& e, ir::Instruction* x, const Tiling& t, int64_t d, int64_t size,
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
