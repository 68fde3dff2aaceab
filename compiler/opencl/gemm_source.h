// Internal to the OpenCL target: the target's own GEMM kernel, C[b] = A[b] x B[b] for
// row-major A (M x K, or K x M when trans_a), B (K x N, or N x K when trans_b) and C
// (M x N), in a few tilings. Each work-group computes a tile_m x tile_n tile of C from
// tile_k-deep slabs of A and B staged in local memory; each work-item accumulates a
// reg_m x reg_n block in registers. Any M, N, K work (edge tiles are guarded); sizes are
// compile-time constants of the source.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "compiler/ir/types.h"

namespace podsim::opencl {

struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  ir::PrimitiveType a_type = ir::PrimitiveType::kF32;
  ir::PrimitiveType b_type = ir::PrimitiveType::kF32;
  ir::PrimitiveType c_type = ir::PrimitiveType::kF32;

  double flops() const {
    return 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
           static_cast<double>(k);
  }
};

struct GemmTiling {
  int tile_m, tile_n, tile_k, reg_m, reg_n;
  // Double-buffered local tiles filled from registers loaded a slab ahead, 16-byte loads
  // and stores everywhere, fused multiply-adds: f32 only, for shapes whose tiles all lie
  // inside the matrices.
  bool pipelined = false;
  int threads() const { return (tile_m / reg_m) * (tile_n / reg_n); }
};

// The general tilings first - 128x128 (8x8 per work-item), 128x64 (8x4), 64x64 (4x4),
// 32x32 (2x2), any shape and type - then pipelined ones.
inline constexpr std::array<GemmTiling, 10> kGemmTilings = {{
    {128, 128, 16, 8, 8},
    {128, 64, 16, 8, 4},
    {64, 64, 16, 4, 4},
    {32, 32, 16, 2, 2},
    {128, 128, 16, 8, 8, true},
    {128, 128, 8, 8, 8, true},
    {128, 64, 16, 8, 4, true},
    {128, 64, 8, 8, 4, true},
    {64, 64, 16, 4, 4, true},
    {64, 64, 8, 4, 4, true},
}};

// Whether tiling has a kernel for shape (a pipelined one needs f32 and whole tiles).
bool gemm_tiling_fits(const GemmShape& shape, const GemmTiling& tiling);

// Source of kernel `name` (arguments: A, B, C buffers) for shape with tiling.
std::string gemm_source(const GemmShape& shape, const GemmTiling& tiling, const std::string& name);

// The launch of that kernel: global and local work sizes in three dimensions.
struct Launch3 {
  std::array<int64_t, 3> global{1, 1, 1};
  std::array<int64_t, 3> local{1, 1, 1};
};
Launch3 gemm_launch(const GemmShape& shape, const GemmTiling& tiling);

// GEMMs below this many flops run in the default tiling, untimed (only that tiling's
// kernel is generated); larger ones get every tiling, and the runtime times them.
inline constexpr double kTimedGemmFlops = double(int64_t{1} << 26);

// The tiling used when speeds were not measured: the largest general one whose tiles keep
// enough work-groups busy.
int default_gemm_tiling(const GemmShape& shape);

}  // namespace podsim::opencl
