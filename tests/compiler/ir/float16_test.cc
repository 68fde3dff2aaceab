// bf16 and f16 conversions: exhaustive over every 16-bit pattern, with the rounding of
// every midpoint between neighbours derived in double arithmetic.
#include "compiler/ir/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace podsim::ir {
namespace {

template <typename T>
void check_exhaustive() {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    T v = T::from_bits(static_cast<uint16_t>(h));
    float f = static_cast<float>(v);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(T(f)))) << h;
      continue;
    }
    // Every representable value converts back to itself.
    ASSERT_EQ(T(f).bits, h) << std::hex << h;
    // Midpoint to the next value of larger magnitude (same sign) rounds to the one whose
    // last mantissa bit is 0; just inside the midpoint rounds to the nearer one.
    uint16_t next_bits = static_cast<uint16_t>(h + 1);
    if ((h & 0x7fff) == 0x7fff) continue;
    float next = static_cast<float>(T::from_bits(next_bits));
    if (std::isinf(f) || !std::isfinite(next)) continue;  // overflow is checked below
    double mid = (static_cast<double>(f) + static_cast<double>(next)) / 2;
    float midf = static_cast<float>(mid);
    if (static_cast<double>(midf) != mid) continue;  // midpoint not exact in f32
    uint16_t even = (h & 1) ? next_bits : static_cast<uint16_t>(h);
    EXPECT_EQ(T(midf).bits, even) << std::hex << h;
    float below = std::nextafter(midf, f);
    float above = std::nextafter(midf, next);
    EXPECT_EQ(T(below).bits, h) << std::hex << h;
    EXPECT_EQ(T(above).bits, next_bits) << std::hex << h;
  }
}

TEST(Float16, BFloat16RoundsToNearestEvenEverywhere) { check_exhaustive<BFloat16>(); }
TEST(Float16, HalfRoundsToNearestEvenEverywhere) { check_exhaustive<Half>(); }

TEST(Float16, HalfKnownValues) {
  // Values from the IEEE 754 binary16 definition.
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);                 // largest finite
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);                 // rounds to infinity
  EXPECT_EQ(Half(std::ldexp(1.0f, -24)).bits, 0x0001);    // smallest subnormal
  EXPECT_EQ(Half(std::ldexp(1.0f, -25)).bits, 0x0000);    // tie to even: zero
  EXPECT_EQ(Half(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
}

TEST(Float16, BFloat16KnownValues) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds up to inf
  EXPECT_EQ(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);         // tie to even
  EXPECT_EQ(BFloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);     // tie to even, up
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lies only in the low bits must stay NaN, not become infinity.
  float low_nan;
  uint32_t bits = 0x7f800001u;
  std::memcpy(&low_nan, &bits, 4);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(low_nan))));
}

}  // namespace
}  // namespace podsim::ir
