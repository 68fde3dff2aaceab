#include "compiler/cpu/block_loops.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "compiler/cpu/simd.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {

using ir::PrimitiveType;

std::byte* thread_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < bytes) scratch.resize(bytes);
  return scratch.data();
}

namespace {

template <size_t W>
PODSIM_CPU_SIMD void gather(const std::byte* base, const int64_t* indices, int64_t n,
                            std::byte* out) {
  struct Unit {
    std::byte b[W];
  };
  const Unit* in = reinterpret_cast<const Unit*>(base);
  Unit* o = reinterpret_cast<Unit*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = in[indices[i]];
}

template <size_t W>
PODSIM_CPU_SIMD void blend(const std::byte* v, const uint8_t* mask, int64_t n, std::byte* out) {
  using U = std::conditional_t<
      W == 1, uint8_t,
      std::conditional_t<W == 2, uint16_t, std::conditional_t<W == 4, uint32_t, uint64_t>>>;
  const U* x = reinterpret_cast<const U*>(v);
  U* o = reinterpret_cast<U*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = mask[i] ? x[i] : o[i];
}

template <size_t W>
PODSIM_CPU_SIMD void fill(const std::byte* value, int64_t n, std::byte* out) {
  using U = std::conditional_t<
      W == 1, uint8_t,
      std::conditional_t<W == 2, uint16_t, std::conditional_t<W == 4, uint32_t, uint64_t>>>;
  U v;
  std::memcpy(&v, value, W);
  U* o = reinterpret_cast<U*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = v;
}

}  // namespace

void fill_bytes(const std::byte* value, int64_t n, size_t width, std::byte* out) {
  switch (width) {
    case 1:
      return fill<1>(value, n, out);
    case 2:
      return fill<2>(value, n, out);
    case 4:
      return fill<4>(value, n, out);
    default:
      return fill<8>(value, n, out);
  }
}

void blend_bytes(const std::byte* v, const uint8_t* mask, int64_t n, size_t width, std::byte* out) {
  switch (width) {
    case 1:
      return blend<1>(v, mask, n, out);
    case 2:
      return blend<2>(v, mask, n, out);
    case 4:
      return blend<4>(v, mask, n, out);
    default:
      return blend<8>(v, mask, n, out);
  }
}

void gather_bytes(const std::byte* base, const int64_t* indices, int64_t n, size_t width,
                  std::byte* out) {
  switch (width) {
    case 1:
      return gather<1>(base, indices, n, out);
    case 2:
      return gather<2>(base, indices, n, out);
    case 4:
      return gather<4>(base, indices, n, out);
    default:
      return gather<8>(base, indices, n, out);
  }
}

namespace {

template <typename T>
T iota_value(int64_t v) {
  if constexpr (ir::is_half_v<T>)
    return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else
    return static_cast<T>(v);
}

}  // namespace

void iota_block(PrimitiveType type, int64_t stride, int64_t size, int64_t start,
                const int64_t* indices, int64_t n, std::byte* out) {
  ir::visit_type(type, [&]<typename T>() {
    T* o = reinterpret_cast<T*>(out);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = indices ? indices[i] : start + i;
      o[i] = iota_value<T>((k / stride) % size);
    }
  });
}

void stream_copy(std::byte* dst, const std::byte* src, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  const size_t vectors = bytes / 16;
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = reinterpret_cast<const __m128i*>(src);
  for (size_t i = 0; i < vectors; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
  std::memcpy(dst + vectors * 16, src + vectors * 16, bytes - vectors * 16);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace podsim::cpu
