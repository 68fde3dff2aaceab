// podsim::tanh_op (common/tanh.h), the f32 tanh every target shares: within 4 ulp of
// the correctly rounded value (double-precision tanh rounded to f32) over a sweep of
// every 61st positive float below infinity, odd, exactly +-1 where that value is +-1,
// x itself for tiny x, NaN for NaN.
#include "common/tanh.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace podsim {
namespace {

int64_t ulps_between(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
}

TEST(TanhOp, WithinFourUlpOfTheCorrectlyRoundedValue) {
  int64_t worst = 0;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 61) {
    const float x = std::bit_cast<float>(bits);
    const float want = static_cast<float>(std::tanh(static_cast<double>(x)));
    const float got = tanh_op(x);
    worst = std::max(worst, ulps_between(got, want));
    ASSERT_EQ(tanh_op(-x), -got) << x;
    if (want == 1.0f && x >= 9.1f) {
      ASSERT_EQ(got, 1.0f) << x;
    }
  }
  EXPECT_LE(worst, 4);
  EXPECT_EQ(tanh_op(1e-5f), 1e-5f);
  EXPECT_EQ(tanh_op(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_TRUE(std::isnan(tanh_op(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(tanh_op(0.5), std::tanh(0.5));  // f64 keeps the C library's
}

}  // namespace
}  // namespace podsim
