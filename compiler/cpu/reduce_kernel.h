// Internal to the CPU target: reduce with a simple to_apply (add, multiply, maximum,
// minimum, and, or of its two parameters) over any dimensions, reading its input
// through a BlockProgram, so that the elementwise producers fused into it never
// materialize. Work is split into fixed tiles (independent of the thread count), so
// results are deterministic.
//
// Accumulation order. The evaluator folds each output's elements left to right in
// row-major order of the reduced dimensions, starting from init. Here:
//  * integers and pred: any order gives the same bits.
//  * 16-bit floats: exactly the evaluator's order (each step rounds to the type).
//  * f32/f64 when the innermost non-trivial input dimension is kept ("column" mode):
//    each output folds its elements in the evaluator's order, vectorized across
//    outputs - bit-exact - unless the reduced extent is split into groups (below).
//  * f32/f64 when the innermost dimension is reduced ("row" mode): element k of an
//    output's reduced sequence goes to lane k mod 16 of 16 accumulators that start
//    at the op's identity; the lanes combine pairwise (lane i with lane i+8, then +4,
//    +2, +1), and init is applied once: init op combined.
//  * Groups: when there are few outputs and many reduced elements, the reduced
//    sequence is cut into G consecutive groups whose sizes depend only on the shape;
//    each group is reduced as above from the identity, and the result is
//    (((init op g0) op g1) ... op g(G-1)).
// For sums this is a reassociation of the same terms, so the difference from the
// evaluator is within the usual bound 2 (R - 1) u sum|x| (R reduced elements, u the
// unit roundoff); max/min agree except for the sign of zero on ties of -0 and +0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compiler/cpu/block_program.h"
#include "compiler/cpu/index_map.h"

namespace podsim::cpu {

class ReduceKernel {
 public:
  // A single-input reduce with a simple to_apply on an array.
  static bool supported(const ir::Instruction& reduce);
  // Operand 0 and the init value (operand 1) are evaluated through BlockPrograms over
  // the sources numbered by source_index.
  ReduceKernel(const ir::Instruction& reduce, const BlockProgram::SourceIndex& source_index);
  ~ReduceKernel();

  void run(std::span<const std::byte* const> inputs, std::byte* out) const;

  struct Ops;  // typed accumulation loops

 private:
  struct Tile;
  void run_tile(int64_t task, std::span<const std::byte* const> inputs, const std::byte* invariants,
                const std::byte* start_value, std::byte* dest) const;

  std::unique_ptr<BlockProgram> input_;
  std::unique_ptr<BlockProgram> init_;
  const Ops* ops_ = nullptr;
  size_t width_ = 4;
  bool exact_ = false;  // fold in the evaluator's order (16-bit floats)
  bool row_mode_ = true;
  int64_t outputs_ = 0;                   // O
  int64_t reduced_ = 0;                   // R
  AffineMap out_map_;                     // output index -> input offset of its first element
  AffineMap reduced_map_;                 // reduced index -> offset from that element
  std::vector<int64_t> reduced_offsets_;  // reduced_map_ tabulated when R <= kBlockElements
  int64_t tile_outputs_ = 1;
  int64_t tiles_ = 0;
  int64_t groups_ = 1;
  int64_t group_size_ = 0;
};

}  // namespace podsim::cpu
