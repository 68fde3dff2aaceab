// 16-bit floating-point storage types (bfloat16 and IEEE half), shared by the compiler
// and the simulator. Arithmetic happens in float; converting back rounds to nearest, ties
// to even, as XLA and TPUs do. NaN stays NaN (quiet) and overflow goes to infinity.
#pragma once

#include <bit>
#include <cstdint>

namespace podsim {

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  explicit operator float() const { return std::bit_cast<float>(uint32_t{bits} << 16); }

  static BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }
  static uint16_t from_float(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding_bias) >> 16);
  }
};

struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }

  static Half from_bits(uint16_t b) {
    Half v;
    v.bits = b;
    return v;
  }

  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t{h & 0x8000u} << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf/NaN
    if (exp == 0) {
      // Zero or subnormal: value = mant * 2^-24, exact in float.
      float v = static_cast<float>(mant) * 0x1p-24f;
      return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  }

  static uint16_t from_float(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (a < 0x38800000u) {
      // Result is subnormal (or zero) in half: round a * 2^24 to an integer, ties to even.
      if (a < 0x33000000u) return sign;  // below half of the smallest subnormal
      uint32_t mant = (a & 0x7fffffu) | 0x800000u;
      int shift = 126 - static_cast<int>(a >> 23);  // 14..24
      uint32_t q = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
      return static_cast<uint16_t>(sign | q);
    }
    // Normal: rebias exponent, round 13 dropped mantissa bits to nearest even.
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((r - 0x38000000u) >> 13));
  }
};

}  // namespace podsim
