// Internal to the CPU target: row-major GEMM through OpenBLAS in f32 or f64, and the
// conversions that bring 16-bit (or mixed) float operands into the GEMM type.
//
// Threads: OpenBLAS runs single-threaded (its own pool would spin next to TBB's
// workers on the same cores); large products are split into panels of rows or columns,
// fixed by the shape, each one OpenBLAS call in a TBB task.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compiler/ir/types.h"

namespace podsim::cpu {

// C[M,N] = op(A)[M,K] * op(B)[K,N] with op(X) = X or X^T, row-major with leading
// dimensions lda/ldb/ldc; double when f64, else float.
void gemm(bool f64, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc);

// dst[i] = src[offsets[i]] converted from the float type `type` to float (or double).
void gather_to_f32(const std::byte* src, ir::PrimitiveType type, const int64_t* offsets, int64_t n,
                   float* dst);
void gather_to_f64(const std::byte* src, ir::PrimitiveType type, const int64_t* offsets, int64_t n,
                   double* dst);
// dst[i] = src[i] rounded to the float type `type` (f32 / bf16 / f16).
void store_from_f32(const float* src, int64_t n, ir::PrimitiveType type, std::byte* dst);

}  // namespace podsim::cpu
