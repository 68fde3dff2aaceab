// How memory element types live in the 32-bit lanes of vector registers, and the
// conversions between them. Floats (f32, bf16, f16) live as f32 values, signed integers
// (s8, s16, s32) sign-extended, unsigned ones (u8, u16, u32, pred) zero-extended; pred
// loads as 0 or 1 and stores lane != 0. Going to a narrower type rounds to nearest even
// (bf16, f16) or wraps (integers), as XLA's convert does for values already in range.
// 64-bit types have no lane form. Internal to sim/functional.
#pragma once

#include <bit>
#include <cstdint>

#include "isa/isa.h"

namespace podsim::sim::lanes {

enum class Kind : uint8_t { kFloat, kSigned, kUnsigned, kNone };

constexpr Kind kind(isa::DType t) {
  switch (t) {
    case isa::DType::kF32:
    case isa::DType::kBF16:
    case isa::DType::kF16:
      return Kind::kFloat;
    case isa::DType::kS32:
    case isa::DType::kS16:
    case isa::DType::kS8:
      return Kind::kSigned;
    case isa::DType::kU32:
    case isa::DType::kU16:
    case isa::DType::kU8:
    case isa::DType::kPred:
      return Kind::kUnsigned;
    default:
      return Kind::kNone;
  }
}

// True when lanes of kind(t) hold every value of t unchanged (no rounding needed).
constexpr bool is_full_width(isa::DType t) {
  return t == isa::DType::kF32 || t == isa::DType::kS32 || t == isa::DType::kU32;
}

inline float to_float(uint32_t lane) { return std::bit_cast<float>(lane); }
inline uint32_t from_float(float f) { return std::bit_cast<uint32_t>(f); }

// n elements of type t at src (packed, dtype_bytes(t) each) into n lanes.
void load_row(isa::DType t, const uint8_t* src, uint32_t* dst, int64_t n);
// n lanes into n packed elements of type t.
void store_row(isa::DType t, const uint32_t* src, uint8_t* dst, int64_t n);
// Rounds n lanes (of kind(t)) to the values of t, kept in lane form: f32 -> bf16 -> f32,
// s32 -> s8 -> s32, and so on. Nothing to do for the full-width types.
void narrow_lanes(isa::DType t, uint32_t* lanes, int64_t n);
// XLA convert from lane type `from` to lane type `to`: float -> integer truncates toward
// zero and saturates (NaN -> 0), integer -> float rounds once to nearest even, integer ->
// integer wraps, anything -> pred is != 0.
void convert_lanes(isa::DType from, isa::DType to, const uint32_t* src, uint32_t* dst, int64_t n);

float round_to_bf16(float f);

}  // namespace podsim::sim::lanes
