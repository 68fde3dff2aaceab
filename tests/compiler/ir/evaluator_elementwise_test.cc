// Hand-derived edge cases of the reference evaluator's elementwise ops: integer
// wraparound and XLA's rules for division by zero and over-wide shifts, IEEE totalOrder,
// round-to-nearest-even of 16-bit floats, saturating and bit-exact conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "tests/compiler/ir/evaluator_test_util.h"

namespace podsim::ir {
namespace {

using namespace testing_util;

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();

// ---------------------------------------------------------------- integer edge cases

TEST(EvaluatorElementwise, SignedDivideRemainderEdgeCases) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = s32[6] parameter(0)
  b = s32[6] parameter(1)
  d = s32[6] divide(a, b)
  r = s32[6] remainder(a, b)
  ROOT t = (s32[6], s32[6]) tuple(d, r)
})";
  Literal out = run(text, {vec<int32_t>(PrimitiveType::kS32, {7, -7, 5, kMin32, 7, -1}),
                           vec<int32_t>(PrimitiveType::kS32, {2, 2, 0, -1, -3, -3})});
  // Truncating division; x / 0 = -1; INT_MIN / -1 = INT_MIN.
  EXPECT_EQ(values_of<int32_t>(out.elements()[0]), (std::vector<int32_t>{3, -3, -1, kMin32, -2, 0}));
  // Sign of the dividend; x % 0 = x; INT_MIN % -1 = 0.
  EXPECT_EQ(values_of<int32_t>(out.elements()[1]), (std::vector<int32_t>{1, -1, 5, 0, 1, -1}));
}

TEST(EvaluatorElementwise, UnsignedDivideByZero) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = u32[3] parameter(0)
  b = u32[3] parameter(1)
  d = u32[3] divide(a, b)
  r = u32[3] remainder(a, b)
  ROOT t = (u32[3], u32[3]) tuple(d, r)
})";
  Literal out = run(text, {vec<uint32_t>(PrimitiveType::kU32, {5, 5, 0}), vec<uint32_t>(PrimitiveType::kU32, {0, 2, 0})});
  EXPECT_EQ(values_of<uint32_t>(out.elements()[0]), (std::vector<uint32_t>{4294967295u, 2, 4294967295u}));
  EXPECT_EQ(values_of<uint32_t>(out.elements()[1]), (std::vector<uint32_t>{5, 1, 0}));
}

TEST(EvaluatorElementwise, IntegerPowerWrapsAndNegativeExponents) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = s32[8] parameter(0)
  b = s32[8] parameter(1)
  ROOT p = s32[8] power(a, b)
})";
  Literal out = run(text, {vec<int32_t>(PrimitiveType::kS32, {3, 2, 2, 1, -1, -1, 5, -2}),
                           vec<int32_t>(PrimitiveType::kS32, {4, 31, 32, -5, -3, -2, -1, 3})});
  // 2^31 wraps to INT_MIN, 2^32 to 0; negative exponents (XLA): 1 -> 1, else 0.
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{81, kMin32, 0, 1, 0, 0, 0, -8}));
}

TEST(EvaluatorElementwise, ShiftsByWidthOrMore) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = s8[8] parameter(0)
  b = s8[8] parameter(1)
  l = s8[8] shift-left(a, b)
  rl = s8[8] shift-right-logical(a, b)
  ra = s8[8] shift-right-arithmetic(a, b)
  ROOT t = (s8[8], s8[8], s8[8]) tuple(l, rl, ra)
})";
  // The amount -1 is 255 as unsigned: out of range like 8 and 9.
  Literal out = run(text, {vec<int8_t>(PrimitiveType::kS8, {1, 1, -128, -128, 64, 5, -1, -2}),
                           vec<int8_t>(PrimitiveType::kS8, {7, 8, 1, 8, 9, -1, 0, 1})});
  EXPECT_EQ(values_of<int8_t>(out.elements()[0]), (std::vector<int8_t>{-128, 0, 0, 0, 0, 0, -1, -4}));
  EXPECT_EQ(values_of<int8_t>(out.elements()[1]), (std::vector<int8_t>{0, 0, 64, 0, 0, 0, -1, 127}));
  EXPECT_EQ(values_of<int8_t>(out.elements()[2]), (std::vector<int8_t>{0, 0, -64, -1, 0, 0, -1, -1}));
}

TEST(EvaluatorElementwise, WraparoundArithmetic) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = s8[2] parameter(0)
  b = s8[2] parameter(1)
  add = s8[2] add(a, b)
  sub = s8[2] subtract(a, b)
  mul = s8[2] multiply(a, b)
  neg = s8[2] negate(a)
  abs = s8[2] abs(a)
  sign = s8[2] sign(a)
  ROOT t = (s8[2], s8[2], s8[2], s8[2], s8[2], s8[2]) tuple(add, sub, mul, neg, abs, sign)
})";
  Literal out = run(text, {vec<int8_t>(PrimitiveType::kS8, {127, -128}), vec<int8_t>(PrimitiveType::kS8, {1, -1})});
  EXPECT_EQ(values_of<int8_t>(out.elements()[0]), (std::vector<int8_t>{-128, 127}));   // 128, -129 wrap
  EXPECT_EQ(values_of<int8_t>(out.elements()[1]), (std::vector<int8_t>{126, -127}));
  EXPECT_EQ(values_of<int8_t>(out.elements()[2]), (std::vector<int8_t>{127, -128}));   // -128 * -1 wraps
  EXPECT_EQ(values_of<int8_t>(out.elements()[3]), (std::vector<int8_t>{-127, -128}));  // -(-128) wraps
  EXPECT_EQ(values_of<int8_t>(out.elements()[4]), (std::vector<int8_t>{127, -128}));   // abs(INT_MIN)
  EXPECT_EQ(values_of<int8_t>(out.elements()[5]), (std::vector<int8_t>{1, -1}));

  const std::string u16 = R"(
HloModule m
ENTRY main {
  a = u16[1] parameter(0)
  ROOT m = u16[1] multiply(a, a)
})";
  // 65535^2 = 2^32 - 2^17 + 1 = 1 mod 2^16.
  EXPECT_EQ(values_of<uint16_t>(run(u16, {vec<uint16_t>(PrimitiveType::kU16, {65535})})),
            (std::vector<uint16_t>{1}));
}

TEST(EvaluatorElementwise, PredLogic) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = pred[4] parameter(0)
  b = pred[4] parameter(1)
  and = pred[4] and(a, b)
  or = pred[4] or(a, b)
  xor = pred[4] xor(a, b)
  not = pred[4] not(a)
  ROOT t = (pred[4], pred[4], pred[4], pred[4]) tuple(and, or, xor, not)
})";
  Literal out = run(text, {vec<bool>(PrimitiveType::kPred, {false, false, true, true}),
                           vec<bool>(PrimitiveType::kPred, {false, true, false, true})});
  EXPECT_EQ(values_of<bool>(out.elements()[0]), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values_of<bool>(out.elements()[1]), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(values_of<bool>(out.elements()[2]), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(out.elements()[3]), (std::vector<bool>{true, true, false, false}));
}

// ---------------------------------------------------------------- floats

TEST(EvaluatorElementwise, TotalOrderAndFloatCompare) {
  const float nan = std::bit_cast<float>(0x7FC00000u);
  const float negative_nan = std::bit_cast<float>(0xFFC00000u);
  const float inf = std::numeric_limits<float>::infinity();
  // Ascending in IEEE totalOrder.
  const std::vector<float> ordered = {negative_nan, -inf, -1.0f, -0.0f, 0.0f, 1.0f, inf, nan};
  const size_t n = ordered.size();
  std::vector<float> a, b;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      a.push_back(ordered[i]);
      b.push_back(ordered[j]);
    }
  const std::string text = R"(
HloModule m
ENTRY main {
  a = f32[64] parameter(0)
  b = f32[64] parameter(1)
  tlt = pred[64] compare(a, b), direction=LT, type=TOTALORDER
  teq = pred[64] compare(a, b), direction=EQ, type=TOTALORDER
  flt = pred[64] compare(a, b), direction=LT
  feq = pred[64] compare(a, b), direction=EQ
  fne = pred[64] compare(a, b), direction=NE
  ROOT t = (pred[64], pred[64], pred[64], pred[64], pred[64]) tuple(tlt, teq, flt, feq, fne)
})";
  Literal out = run(text, {vec<float>(PrimitiveType::kF32, a), vec<float>(PrimitiveType::kF32, b)});
  auto is_nan = [](size_t i) { return i == 0 || i == 7; };
  auto is_zero = [](size_t i) { return i == 3 || i == 4; };
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      size_t k = i * n + j;
      SCOPED_TRACE(testing::Message() << "pair " << i << ", " << j);
      EXPECT_EQ(out.elements()[0].data<bool>()[k], i < j);
      EXPECT_EQ(out.elements()[1].data<bool>()[k], i == j);
      bool unordered = is_nan(i) || is_nan(j);
      bool ieee_equal = !unordered && (i == j || (is_zero(i) && is_zero(j)));
      EXPECT_EQ(out.elements()[2].data<bool>()[k], !unordered && !ieee_equal && i < j);
      EXPECT_EQ(out.elements()[3].data<bool>()[k], ieee_equal);
      EXPECT_EQ(out.elements()[4].data<bool>()[k], !ieee_equal);
    }
}

TEST(EvaluatorElementwise, Bf16TotalOrderOfZeros) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = bf16[2] parameter(0)
  b = bf16[2] parameter(1)
  ROOT lt = pred[2] compare(a, b), direction=LT, type=TOTALORDER
})";
  // {-0 < +0, -NaN(0xFFC0) < -inf(0xFF80)}
  Literal out = run(text, {vec<uint16_t>(PrimitiveType::kBF16, {0x8000, 0xFFC0}),
                           vec<uint16_t>(PrimitiveType::kBF16, {0x0000, 0xFF80})});
  EXPECT_EQ(values_of<bool>(out), (std::vector<bool>{true, true}));
}

TEST(EvaluatorElementwise, SixteenBitArithmeticRoundsTiesToEven) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = bf16[3] parameter(0)
  b = bf16[3] parameter(1)
  ROOT s = bf16[3] add(a, b)
})";
  // bf16 keeps 7 fraction bits: 1 + 2^-8 is halfway between 1 (even) and 1 + 2^-7;
  // (1 + 2^-7) + 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  // Bits: 1.0 = 0x3F80, 1 + 2^-7 = 0x3F81, 1 + 2^-6 = 0x3F82, 2^-8 = 0x3B80, -1 = 0xBF80.
  Literal out = run(text, {vec<uint16_t>(PrimitiveType::kBF16, {0x3F80, 0x3F81, 0xBF80}),
                           vec<uint16_t>(PrimitiveType::kBF16, {0x3B80, 0x3B80, 0xBB80})});
  EXPECT_EQ(bits16(out), (std::vector<uint16_t>{0x3F80, 0x3F82, 0xBF80}));

  const std::string half = R"(
HloModule m
ENTRY main {
  a = f16[2] parameter(0)
  b = f16[2] parameter(1)
  ROOT s = f16[2] add(a, b)
})";
  // f16 keeps 10 fraction bits: 1 = 0x3C00, 1 + 2^-10 = 0x3C01, 2^-11 = 0x1000.
  Literal h = run(half, {vec<uint16_t>(PrimitiveType::kF16, {0x3C00, 0x3C01}),
                         vec<uint16_t>(PrimitiveType::kF16, {0x1000, 0x1000})});
  EXPECT_EQ(bits16(h), (std::vector<uint16_t>{0x3C00, 0x3C02}));
}

TEST(EvaluatorElementwise, ConvertRoundsOnceToSixteenBits) {
  const std::string text = R"(
HloModule m
ENTRY main {
  d = f64[3] parameter(0)
  i = s32[2] parameter(1)
  j = s32[4] parameter(2)
  db = bf16[3] convert(d)
  ib = bf16[2] convert(i)
  jh = f16[4] convert(j)
  ROOT t = (bf16[3], bf16[2], f16[4]) tuple(db, ib, jh)
})";
  // 1 + 2^-8 + 2^-40 is just above the bf16 halfway point: rounds up (0x3F81). Going
  // through float first would lose 2^-40 and round the tie down to 1.0.
  const double d0 = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  const double d1 = 1.0 + std::ldexp(1.0, -8);
  const double d2 = 1.0 + 3 * std::ldexp(1.0, -8);
  // 2^24 + 2^16 + 1 is above halfway between 2^24 and 2^24 + 2^17 (0x4B80, 0x4B81);
  // 2^24 + 2^16 is exactly halfway and goes to the even 2^24.
  // f16: 2049 -> 2048 (0x6800), 2051 -> 2052 (0x6802), 65519 -> 65504 (0x7BFF),
  // 65520 -> halfway to 65536, even, which overflows to inf (0x7C00).
  Literal out = run(text, {vec<double>(PrimitiveType::kF64, {d0, d1, d2}),
                           vec<int32_t>(PrimitiveType::kS32, {(1 << 24) + (1 << 16) + 1, (1 << 24) + (1 << 16)}),
                           vec<int32_t>(PrimitiveType::kS32, {2049, 2051, 65519, 65520})});
  EXPECT_EQ(bits16(out.elements()[0]), (std::vector<uint16_t>{0x3F81, 0x3F80, 0x3F82}));
  EXPECT_EQ(bits16(out.elements()[1]), (std::vector<uint16_t>{0x4B81, 0x4B80}));
  EXPECT_EQ(bits16(out.elements()[2]), (std::vector<uint16_t>{0x6800, 0x6802, 0x7BFF, 0x7C00}));
}

TEST(EvaluatorElementwise, ConvertSaturatesTruncatesAndMapsPred) {
  const std::string text = R"(
HloModule m
ENTRY main {
  f = f32[7] parameter(0)
  g = f32[4] parameter(1)
  i = s32[2] parameter(2)
  p = pred[2] parameter(3)
  fs = s32[7] convert(f)
  gu = u8[4] convert(g)
  gp = pred[4] convert(g)
  is = s8[2] convert(i)
  ps = s32[2] convert(p)
  ROOT t = (s32[7], u8[4], pred[4], s8[2], s32[2]) tuple(fs, gu, gp, is, ps)
})";
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Literal out = run(text, {vec<float>(PrimitiveType::kF32, {3e9f, -3e9f, nan, -1.5f, 2.7f, inf, -inf}),
                           vec<float>(PrimitiveType::kF32, {-1.5f, 300.0f, -0.0f, nan}),
                           vec<int32_t>(PrimitiveType::kS32, {300, -129}),
                           vec<bool>(PrimitiveType::kPred, {true, false})});
  EXPECT_EQ(values_of<int32_t>(out.elements()[0]), (std::vector<int32_t>{kMax32, kMin32, 0, -1, 2, kMax32, kMin32}));
  EXPECT_EQ(values_of<uint8_t>(out.elements()[1]), (std::vector<uint8_t>{0, 255, 0, 0}));
  EXPECT_EQ(values_of<bool>(out.elements()[2]), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(values_of<int8_t>(out.elements()[3]), (std::vector<int8_t>{44, 127}));  // 300 - 256, -129 + 256
  EXPECT_EQ(values_of<int32_t>(out.elements()[4]), (std::vector<int32_t>{1, 0}));
}

TEST(EvaluatorElementwise, BitcastConvertAcrossWidthsIsLittleEndian) {
  const std::string text = R"(
HloModule m
ENTRY main {
  f = f32[2] parameter(0)
  bytes = u8[2,4] bitcast-convert(f)
  back = f32[2] bitcast-convert(bytes)
  bits = u32[2] bitcast-convert(f)
  ROOT t = (u8[2,4], f32[2], u32[2]) tuple(bytes, back, bits)
})";
  Literal out = run(text, {vec<float>(PrimitiveType::kF32, {1.0f, -2.0f})});
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000; element [i, 0] is the low byte.
  EXPECT_EQ(values_of<uint8_t>(out.elements()[0]), (std::vector<uint8_t>{0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0}));
  EXPECT_EQ(values_of<float>(out.elements()[1]), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(values_of<uint32_t>(out.elements()[2]), (std::vector<uint32_t>{0x3F800000u, 0xC0000000u}));
}

TEST(EvaluatorElementwise, FloatSpecialCases) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  max = f32[4] maximum(a, b)
  min = f32[4] minimum(a, b)
  sign = f32[4] sign(a)
  even = f32[4] round-nearest-even(b)
  afz = f32[4] round-nearest-afz(b)
  rem = f32[4] remainder(b, a)
  fin = pred[4] is-finite(a)
  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], pred[4]) tuple(max, min, sign, even, afz, rem, fin)
})";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Literal out = run(text, {vec<float>(PrimitiveType::kF32, {nan, -0.0f, -3.0f, inf}),
                           vec<float>(PrimitiveType::kF32, {1.0f, 2.5f, -2.5f, 3.5f})});
  auto got = [&](int i) { return values_of<float>(out.elements()[static_cast<size_t>(i)]); };
  EXPECT_TRUE(std::isnan(got(0)[0]));  // NaN propagates through maximum / minimum
  EXPECT_TRUE(std::isnan(got(1)[0]));
  EXPECT_EQ(got(0)[2], -2.5f);
  EXPECT_EQ(got(1)[3], 3.5f);
  EXPECT_TRUE(std::isnan(got(2)[0]));
  EXPECT_TRUE(got(2)[1] == 0.0f && std::signbit(got(2)[1]));  // sign(-0) = -0
  EXPECT_EQ(got(2)[2], -1.0f);
  EXPECT_EQ(got(2)[3], 1.0f);
  EXPECT_EQ(got(3), (std::vector<float>{1.0f, 2.0f, -2.0f, 4.0f}));
  EXPECT_EQ(got(4), (std::vector<float>{1.0f, 3.0f, -3.0f, 4.0f}));
  EXPECT_TRUE(std::isnan(got(5)[0]));
  EXPECT_TRUE(std::isnan(got(5)[1]));  // fmod(2.5, -0) is NaN
  EXPECT_EQ(got(5)[2], -2.5f);  // fmod(-2.5, -3) = -2.5: sign of the dividend
  EXPECT_EQ(got(5)[3], 3.5f);   // fmod(3.5, inf) = 3.5
  EXPECT_EQ(values_of<bool>(out.elements()[6]), (std::vector<bool>{false, true, true, false}));
}

TEST(EvaluatorElementwise, ClampAndSelectBroadcastScalars) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[3] parameter(0)
  p = pred[] parameter(1)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  c = f32[3] clamp(lo, x, hi)
  s = f32[3] select(p, x, c)
  ROOT t = (f32[3], f32[3]) tuple(c, s)
})";
  Literal x = vec<float>(PrimitiveType::kF32, {-1.0f, 0.5f, 2.0f});
  Literal yes = run(text, {x, make<bool>(PrimitiveType::kPred, {}, {true})});
  EXPECT_EQ(values_of<float>(yes.elements()[0]), (std::vector<float>{0.0f, 0.5f, 1.0f}));
  EXPECT_EQ(values_of<float>(yes.elements()[1]), (std::vector<float>{-1.0f, 0.5f, 2.0f}));
  Literal no = run(text, {x, make<bool>(PrimitiveType::kPred, {}, {false})});
  EXPECT_EQ(values_of<float>(no.elements()[1]), (std::vector<float>{0.0f, 0.5f, 1.0f}));
}

}  // namespace
}  // namespace podsim::ir
