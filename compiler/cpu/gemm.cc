#include "compiler/cpu/gemm.h"

#include <cblas.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>

#include "common/error.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {
namespace {

blasint blas_int(int64_t v) {
  if (v < 0 || v > std::numeric_limits<blasint>::max())
    fail("a GEMM dimension of {} does not fit the BLAS integer type", v);
  return static_cast<blasint>(v);
}

template <typename G>
void gather_to(const std::byte* src, ir::PrimitiveType type, const int64_t* offsets, int64_t n,
               G* dst) {
  ir::visit_type(type, [&]<typename T>() {
    if constexpr (ir::is_float_v<T>) {
      const T* s = reinterpret_cast<const T*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<G>(ir::widen(s[offsets[i]]));
    } else {
      fail("internal: GEMM operand of type {}", ir::type_name(type));
    }
  });
}

// Products of at least this many multiply-adds are split into panels run as TBB
// tasks; smaller ones are cheaper on one thread than the hand-off.
constexpr int64_t kParallelMacs = int64_t{1} << 20;
// Panels are multiples of this many rows (or columns) and at most kMaxPanels per
// product, both independent of the thread count.
constexpr int64_t kPanelAlign = 16;
constexpr int64_t kMaxPanels = 8;

void blas_gemm(bool f64, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
               const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  if (f64) {
    cblas_dgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), 1.0,
                static_cast<const double*>(a), blas_int(lda), static_cast<const double*>(b),
                blas_int(ldb), 0.0, static_cast<double*>(c), blas_int(ldc));
  } else {
    cblas_sgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), 1.0f,
                static_cast<const float*>(a), blas_int(lda), static_cast<const float*>(b),
                blas_int(ldb), 0.0f, static_cast<float*>(c), blas_int(ldc));
  }
}

}  // namespace

void gemm(bool f64, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  // OpenBLAS's own pool would spin next to TBB's workers on the same cores.
  static std::once_flag single_threaded;
  std::call_once(single_threaded, [] { openblas_set_num_threads(1); });
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      std::memset(static_cast<std::byte*>(c) + static_cast<size_t>(i * ldc) * (f64 ? 8 : 4), 0,
                  static_cast<size_t>(n) * (f64 ? 8 : 4));
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  if (m * n * k < kParallelMacs || extent < 2 * kPanelAlign) {
    blas_gemm(f64, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  // Each panel is a GEMM of its own: every element sums the same products in the
  // same order whatever the panel, so results do not depend on the thread count.
  int64_t panel = (extent + kMaxPanels - 1) / kMaxPanels;
  panel = (panel + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
  const int64_t panels = (extent + panel - 1) / panel;
  const size_t width = f64 ? 8 : 4;
  tbb::parallel_for(int64_t{0}, panels, [&](int64_t p) {
    const int64_t first = p * panel, count = std::min(panel, extent - first);
    if (by_rows) {
      const auto* ap = static_cast<const std::byte*>(a) +
                       static_cast<size_t>(first * (trans_a ? 1 : lda)) * width;
      auto* cp = static_cast<std::byte*>(c) + static_cast<size_t>(first * ldc) * width;
      blas_gemm(f64, ta, tb, count, n, k, ap, lda, b, ldb, cp, ldc);
    } else {
      const auto* bp = static_cast<const std::byte*>(b) +
                       static_cast<size_t>(first * (trans_b ? ldb : 1)) * width;
      auto* cp = static_cast<std::byte*>(c) + static_cast<size_t>(first) * width;
      blas_gemm(f64, ta, tb, m, count, k, a, lda, bp, ldb, cp, ldc);
    }
  });
}

void gather_to_f32(const std::byte* src, ir::PrimitiveType type, const int64_t* offsets, int64_t n,
                   float* dst) {
  gather_to<float>(src, type, offsets, n, dst);
}

void gather_to_f64(const std::byte* src, ir::PrimitiveType type, const int64_t* offsets, int64_t n,
                   double* dst) {
  gather_to<double>(src, type, offsets, n, dst);
}

void store_from_f32(const float* src, int64_t n, ir::PrimitiveType type, std::byte* dst) {
  ir::visit_type(type, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else if constexpr (ir::is_half_v<T>) {
      T* d = reinterpret_cast<T*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = T(src[i]);
    } else {
      fail("internal: GEMM result of type {}", ir::type_name(type));
    }
  });
}

}  // namespace podsim::cpu
