#include "compiler/cpu/gemm.h"

#include <cblas.h>

#include <cstring>
#include <limits>

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

}  // namespace

void gemm(bool f64, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      std::memset(static_cast<std::byte*>(c) + static_cast<size_t>(i * ldc) * (f64 ? 8 : 4), 0,
                  static_cast<size_t>(n) * (f64 ? 8 : 4));
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
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
