// Vector unit semantics on the tiny chip (8 sublanes x 8 lanes), with expected values
// worked out by hand from the ISA's definitions (functional_model.h).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "tests/sim/functional/functional_test_util.h"

namespace podsim::sim {
namespace {

using testing::assemble;
using testing::bits_to_float;
using testing::float_to_bits;
using testing::tiny_chip;

constexpr int kLanes = 64;  // 8 x 8

// Loads a and b as raw 32-bit lanes into v0 and v1, runs `op` (which writes v2), and
// returns v2's raw lanes as stored back. Inputs shorter than a register repeat their last
// value.
std::vector<uint32_t> run_op(const std::string& op, std::vector<uint32_t> a,
                             std::vector<uint32_t> b = {0}) {
  a.resize(kLanes, a.back());
  b.resize(kLanes, b.back());
  FunctionalModel model(assemble(tiny_chip() + R"(
.region a vmem[0] 0 256
.region b vmem[0] 256 256
.region out vmem[0] 512 256
.param a a u32[8, 8]
.param b b u32[8, 8]
.output out out u32[8, 8]
.program core 0
  sli s2, 32
  vld.u32 v0, a[s1], s2
  vld.u32 v1, b[s1], s2
  )" + op + R"(
  vst.u32 out[s1], s2, v2
  halt
)"));
  model.set_parameter(0, testing::to_bytes(a));
  model.set_parameter(1, testing::to_bytes(b));
  model.run_to_completion(100);
  return testing::from_bytes<uint32_t>(model.read_output(0));
}

std::vector<uint32_t> f(std::initializer_list<float> values) {
  std::vector<uint32_t> out;
  for (float v : values) out.push_back(float_to_bits(v));
  return out;
}

std::vector<uint32_t> i(std::initializer_list<int64_t> values) {
  std::vector<uint32_t> out;
  for (int64_t v : values) out.push_back(static_cast<uint32_t>(v));
  return out;
}

float lane_f(const std::vector<uint32_t>& lanes, int k) {
  return bits_to_float(lanes[static_cast<size_t>(k)]);
}
int32_t lane_s(const std::vector<uint32_t>& lanes, int k) {
  return static_cast<int32_t>(lanes[static_cast<size_t>(k)]);
}

TEST(VectorOps, AddsTwoLoadedTiles) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.region x vmem[0] 0 256
.region y vmem[0] 256 256
.region z vmem[0] 512 256
.param x x f32[8, 8]
.param y y f32[8, 8]
.output z z f32[8, 8]
.program core 0
  sli s2, 32
  vld.f32 v0, x[s1], s2
  vld.f32 v1, y[s1], s2
  vadd.f32 v2, v0, v1
  vst.f32 z[s1], s2, v2
  halt
)"));
  std::vector<float> x(64), y(64);
  for (int k = 0; k < 64; ++k) x[k] = 0.5f * k, y[k] = 100.0f - k;
  model.set_parameter(0, testing::to_bytes(x));
  model.set_parameter(1, testing::to_bytes(y));
  RunStats stats = model.run_to_completion(100);
  EXPECT_EQ(stats.instructions, 6);
  auto z = testing::from_bytes<float>(model.read_output(0));
  for (int k = 0; k < 64; ++k) EXPECT_EQ(z[k], 100.0f - 0.5f * k) << k;
}

TEST(VectorOps, LoadAndStoreFollowRowStrides) {
  // A 16 x 8 s32 matrix m[r][c] = 100 r + c. Stride 0 repeats row 3; stride 64 takes
  // every other row; a store with stride -32 from the last row reverses the rows.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region m vmem[0] 0 512
.region out vmem[0] 1024 768
.param m m s32[16, 8]
.output out out s32[24, 8]
.program core 0
  sli s1, 96
  vld.s32 v0, m[s1], s0
  sli s2, 64
  vld.s32 v1, m[s0], s2
  sli s3, 32
  vst.s32 out[s0], s3, v0
  vst.s32 out[s3], s3, v1
  sli s4, 736
  sli s5, -32
  vst.s32 out[s4], s5, v1
  halt
)"));
  std::vector<int32_t> m(128);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) m[r * 8 + c] = 100 * r + c;
  model.set_parameter(0, testing::to_bytes(m));
  model.run_to_completion(100);
  auto out = testing::from_bytes<int32_t>(model.read_output(0));
  // Rows 0..7 of out: row 3 eight times, then the second store (at byte 32 = row 1)
  // overwrote rows 1..8 with rows 0, 2, ..., 14; the reversed store wrote rows 23..16.
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(out[c], 300 + c);
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(out[(1 + r) * 8 + c], 200 * r + c);
      EXPECT_EQ(out[(23 - r) * 8 + c], 200 * r + c);
    }
  }
}

TEST(VectorOps, Bf16StoreRoundsToNearestEven) {
  // bf16 keeps 7 fraction bits: 1 + 2^-8 is halfway between 1 (0x3f80) and 1 + 2^-7
  // (0x3f81) and goes to the even 0x3f80; 1 + 3 * 2^-8 is halfway between 0x3f81 and
  // 0x3f82 and goes to 0x3f82; a hair above halfway goes up; FLT_MAX overflows to inf.
  std::vector<float> in = {1.0f + 0x1p-8f,
                           1.0f + 3 * 0x1p-8f,
                           1.0f + 0x1p-8f + 0x1p-20f,
                           -(1.0f + 0x1p-8f),
                           std::numeric_limits<float>::max(),
                           0x1.fep0f,
                           -0.0f,
                           1.0f};
  FunctionalModel model(assemble(tiny_chip() + R"(
.region x vmem[0] 0 256
.region y vmem[0] 256 128
.region z vmem[0] 512 256
.param x x f32[8, 8]
.output y y bf16[8, 8]
.output z z f32[8, 8]
.program core 0
  sli s2, 32
  sli s3, 16
  vld.f32 v0, x[s0], s2
  vst.bf16 y[s0], s3, v0
  vld.bf16 v1, y[s0], s3
  vst.f32 z[s0], s2, v1
  halt
)"));
  std::vector<float> x(64, 1.0f);
  std::copy(in.begin(), in.end(), x.begin());
  model.set_parameter(0, testing::to_bytes(x));
  model.run_to_completion(100);
  auto y = testing::from_bytes<uint16_t>(model.read_output(0));
  std::vector<uint16_t> expected = {0x3f80, 0x3f82, 0x3f81, 0xbf80, 0x7f80, 0x3fff, 0x8000, 0x3f80};
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(y[k], expected[k]) << k;
  // Loading widens exactly: the value of each bf16 is its bits shifted up.
  auto z = testing::from_bytes<float>(model.read_output(1));
  EXPECT_EQ(z[1], 1.0f + 0x1p-6f);
  EXPECT_EQ(z[2], 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isinf(z[4]));
}

TEST(VectorOps, NarrowStoresAndLoads) {
  // Lanes go out as f16, s8 and pred and come back in.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region x vmem[0] 0 256
.region h vmem[0] 256 128
.region b vmem[0] 384 64
.region p vmem[0] 448 64
.region back vmem[0] 512 512
.param x x u32[8, 8]
.output h h f16[8, 8]
.output b b s8[8, 8]
.output p p pred[8, 8]
.output back back s32[16, 8]
.program core 0
  sli s2, 32
  sli s3, 16
  sli s4, 8
  sli s5, 256
  vld.u32 v0, x[s0], s2
  vst.f16 h[s0], s3, v0
  vst.s8 b[s0], s4, v0
  vst.pred p[s0], s4, v0
  vld.s8 v1, b[s0], s4
  vst.s32 back[s0], s2, v1
  vld.u8 v2, b[s0], s4
  vst.s32 back[s5], s2, v2
  halt
)"));
  // f16 (10 fraction bits): 1 + 2^-11 ties to 1 (0x3c00); 1 + 3 * 2^-11 ties to 1 + 2^-9
  // (0x3c02); 65520 is halfway past the largest finite 65504 and overflows; 65519 goes
  // down to 65504; 2^-25 is half the smallest subnormal and ties to 0; 3 * 2^-26 rounds
  // up to it (0x0001).
  std::vector<float> values = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, 65519.0f,
                               0x1p-25f,        3 * 0x1p-26f,        -2.0f};
  std::vector<uint32_t> x(kLanes, 0);
  for (size_t k = 0; k < values.size(); ++k) x[k] = float_to_bits(values[k]);
  // Row 1 holds integers: s8 keeps the low byte (300 -> 44, -1 -> 0xff, 128 -> -128).
  std::vector<int32_t> ints = {300, -1, 127, 128, 0, 5};
  for (size_t k = 0; k < ints.size(); ++k) x[8 + k] = static_cast<uint32_t>(ints[k]);
  model.set_parameter(0, testing::to_bytes(x));
  model.run_to_completion(100);

  auto h = testing::from_bytes<uint16_t>(model.read_output(0));
  std::vector<uint16_t> expected_h = {0x3c00, 0x3c02, 0x7c00, 0x7bff, 0x0000, 0x0001, 0xc000};
  for (size_t k = 0; k < expected_h.size(); ++k) EXPECT_EQ(h[k], expected_h[k]) << k;

  auto b = testing::from_bytes<int8_t>(model.read_output(1));
  std::vector<int8_t> expected_b = {44, -1, 127, -128, 0, 5};
  for (size_t k = 0; k < expected_b.size(); ++k) EXPECT_EQ(b[8 + k], expected_b[k]) << k;

  auto p = model.read_output(2);  // lane != 0
  std::vector<uint8_t> expected_p = {1, 1, 1, 1, 0, 1};
  for (size_t k = 0; k < expected_p.size(); ++k) EXPECT_EQ(p[8 + k], expected_p[k]) << k;
  EXPECT_EQ(p[4], 1);  // 2^-25 as f32 is nonzero
  EXPECT_EQ(p[16], 0);

  // s8 loads sign-extend, u8 loads zero-extend.
  auto back = testing::from_bytes<int32_t>(model.read_output(3));
  std::vector<int32_t> sign_extended = {44, -1, 127, -128, 0, 5};
  std::vector<int32_t> zero_extended = {44, 255, 127, 128, 0, 5};
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(back[8 + k], sign_extended[k]) << k;
    EXPECT_EQ(back[64 + 8 + k], zero_extended[k]) << k;
  }
}

TEST(VectorOps, PredLoadsAsZeroOrOne) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.region x vmem[0] 0 64
.region out vmem[0] 256 256
.param x x u8[8, 8]
.output out out s32[8, 8]
.program core 0
  sli s2, 8
  sli s3, 32
  vld.pred v0, x[s0], s2
  vst.s32 out[s0], s3, v0
  halt
)"));
  std::vector<uint8_t> raw(64, 0);
  raw[0] = 0xff, raw[1] = 7, raw[9] = 1;
  model.set_parameter(0, raw);
  model.run_to_completion(100);
  auto out = testing::from_bytes<int32_t>(model.read_output(0));
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[9], 1);
}

TEST(VectorOps, FloatArithmetic) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = f({6.0f, -3.0f, 2.0f, nan, 1.0f});
  auto b = f({4.0f, 0.5f, 10.0f, 1.0f, nan});
  auto sub = run_op("vsub.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(sub, 0), 2.0f);
  EXPECT_EQ(lane_f(sub, 1), -3.5f);
  auto mul = run_op("vmul.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(mul, 1), -1.5f);
  auto div = run_op("vdiv.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(div, 0), 1.5f);
  EXPECT_EQ(lane_f(div, 1), -6.0f);
  auto pow = run_op("vpow.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(pow, 2), 1024.0f);
  // max/min propagate NaN from either side.
  auto max = run_op("vmax.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(max, 0), 6.0f);
  EXPECT_EQ(lane_f(max, 1), 0.5f);
  EXPECT_TRUE(std::isnan(lane_f(max, 3)));
  EXPECT_TRUE(std::isnan(lane_f(max, 4)));
  auto min = run_op("vmin.f32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_f(min, 1), -3.0f);
  EXPECT_TRUE(std::isnan(lane_f(min, 3)));
  EXPECT_TRUE(std::isnan(lane_f(min, 4)));
}

TEST(VectorOps, FloatUnaryOps) {
  auto x = f({4.0f, -2.5f, 0.25f, 1.0f, 0.0f});
  EXPECT_EQ(lane_f(run_op("vneg.f32 v2, v0", x), 1), 2.5f);
  EXPECT_EQ(lane_f(run_op("vabs.f32 v2, v0", x), 1), 2.5f);
  EXPECT_EQ(lane_f(run_op("vsqrt.f32 v2, v0", x), 0), 2.0f);
  EXPECT_EQ(lane_f(run_op("vrsqrt.f32 v2, v0", x), 2), 2.0f);
  EXPECT_EQ(lane_f(run_op("vexp.f32 v2, v0", x), 4), 1.0f);
  EXPECT_EQ(lane_f(run_op("vlog.f32 v2, v0", x), 3), 0.0f);
  EXPECT_TRUE(std::isinf(lane_f(run_op("vlog.f32 v2, v0", x), 4)));
  EXPECT_EQ(lane_f(run_op("vtanh.f32 v2, v0", x), 4), 0.0f);
  EXPECT_EQ(lane_f(run_op("vlogistic.f32 v2, v0", x), 4), 0.5f);
  EXPECT_FLOAT_EQ(lane_f(run_op("vlogistic.f32 v2, v0", x), 0), 1.0f / (1.0f + std::exp(-4.0f)));
  EXPECT_FLOAT_EQ(lane_f(run_op("vtanh.f32 v2, v0", x), 3), std::tanh(1.0f));
  EXPECT_EQ(lane_f(run_op("vfloor.f32 v2, v0", x), 1), -3.0f);
  EXPECT_EQ(lane_f(run_op("vceil.f32 v2, v0", x), 1), -2.0f);
  EXPECT_EQ(lane_f(run_op("vceil.f32 v2, v0", x), 2), 1.0f);
}

TEST(VectorOps, IntegerArithmeticWrapsAndFollowsXla) {
  auto a = i({INT32_MAX, 7, INT32_MIN, -7, 3, 2, 1, -1});
  auto b = i({1, 0, -1, 2, 4, -1, -5, 1});
  auto add = run_op("vadd.s32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_s(add, 0), INT32_MIN);
  auto div = run_op("vdiv.s32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_s(div, 1), -1);         // x / 0: all bits set
  EXPECT_EQ(lane_s(div, 2), INT32_MIN);  // INT_MIN / -1
  EXPECT_EQ(lane_s(div, 3), -3);         // truncates toward zero
  auto udiv = run_op("vdiv.u32 v2, v0, v1", a, b);
  EXPECT_EQ(udiv[1], 0xffffffffu);
  auto pow = run_op("vpow.s32 v2, v0, v1", a, b);
  EXPECT_EQ(lane_s(pow, 4), 81);
  EXPECT_EQ(lane_s(pow, 5), 0);  // 2^-1
  EXPECT_EQ(lane_s(pow, 6), 1);  // 1^-5
  // -1 vs 1: signed max is 1, unsigned max is 0xffffffff.
  EXPECT_EQ(lane_s(run_op("vmax.s32 v2, v0, v1", a, b), 7), 1);
  EXPECT_EQ(run_op("vmax.u32 v2, v0, v1", a, b)[7], 0xffffffffu);
  EXPECT_EQ(lane_s(run_op("vmin.s32 v2, v0, v1", a, b), 7), -1);
  EXPECT_EQ(lane_s(run_op("vmul.s32 v2, v0, v1", a, b), 3), -14);
  EXPECT_EQ(lane_s(run_op("vsub.s32 v2, v0, v1", a, b), 2), INT32_MIN + 1);
  EXPECT_EQ(lane_s(run_op("vsub.s32 v2, v0, v1", i({INT32_MIN}), i({1})), 0), INT32_MAX);
  EXPECT_EQ(lane_s(run_op("vneg.s32 v2, v0", a), 2), INT32_MIN);
  EXPECT_EQ(lane_s(run_op("vabs.s32 v2, v0", a), 3), 7);
  EXPECT_EQ(lane_s(run_op("vabs.s32 v2, v0", a), 2), INT32_MIN);
}

TEST(VectorOps, BitwiseOps) {
  auto a = i({0xf0f0f0f0, 0x12345678});
  auto b = i({0xff00ff00, 0xffffffff});
  EXPECT_EQ(run_op("vand.u32 v2, v0, v1", a, b)[0], 0xf000f000u);
  EXPECT_EQ(run_op("vor.u32 v2, v0, v1", a, b)[0], 0xfff0fff0u);
  EXPECT_EQ(run_op("vxor.u32 v2, v0, v1", a, b)[1], 0xedcba987u);
  EXPECT_EQ(run_op("vnot.u32 v2, v0", a)[0], 0x0f0f0f0fu);
  // Bitwise ops on float lanes see the bits: clearing the sign bit is abs.
  EXPECT_EQ(lane_f(run_op("vand.f32 v2, v0, v1", f({-2.5f}), i({0x7fffffff})), 0), 2.5f);
}

// XLA's shifts: the amount is unsigned; 32 or more gives 0, or the sign everywhere for
// the arithmetic right shift.
TEST(VectorOps, Shifts) {
  auto a = i({0x80000001, 0x80000001, 0x80000001, 0x40000000});
  auto b = i({1, 31, 32, 0xffffffff});
  EXPECT_EQ(run_op("vshl.u32 v2, v0, v1", a, b)[0], 0x00000002u);
  EXPECT_EQ(run_op("vshl.u32 v2, v0, v1", a, b)[1], 0x80000000u);
  EXPECT_EQ(run_op("vshl.u32 v2, v0, v1", a, b)[2], 0u);
  EXPECT_EQ(run_op("vshrl.u32 v2, v0, v1", a, b)[0], 0x40000000u);
  EXPECT_EQ(run_op("vshrl.u32 v2, v0, v1", a, b)[2], 0u);
  EXPECT_EQ(run_op("vshra.u32 v2, v0, v1", a, b)[0], 0xc0000000u);
  EXPECT_EQ(run_op("vshra.u32 v2, v0, v1", a, b)[2], 0xffffffffu);
  EXPECT_EQ(run_op("vshra.u32 v2, v0, v1", a, b)[3], 0u);  // positive, shifted out
}

TEST(VectorOps, NarrowArithmeticRoundsOrWraps) {
  // bf16 add: 1 + 2^-8 is a bf16 tie and rounds to even (1.0); f32 keeps it.
  auto a = f({1.0f, 256.0f});
  auto b = f({0x1p-8f, 1.0f});
  EXPECT_EQ(lane_f(run_op("vadd.bf16 v2, v0, v1", a, b), 0), 1.0f);
  EXPECT_EQ(lane_f(run_op("vadd.bf16 v2, v0, v1", a, b), 1), 256.0f);  // 257 ties to 256
  EXPECT_EQ(lane_f(run_op("vadd.f32 v2, v0, v1", a, b), 0), 1.0f + 0x1p-8f);
  // s8: 100 + 100 = 200 wraps to -56; u8: 200 + 100 = 300 wraps to 44.
  EXPECT_EQ(lane_s(run_op("vadd.s8 v2, v0, v1", i({100}), i({100})), 0), -56);
  EXPECT_EQ(lane_s(run_op("vadd.u8 v2, v0, v1", i({200}), i({100})), 0), 44);
}

TEST(VectorOps, CompareAndSelect) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = f({1.0f, 2.0f, 3.0f, nan});
  auto b = f({2.0f, 2.0f, 2.0f, 1.0f});
  const uint32_t t = 0xffffffffu;
  // imm: 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE; NaN compares unequal to everything.
  std::vector<std::vector<uint32_t>> expected = {{0, t, 0, 0}, {t, 0, t, t}, {t, 0, 0, 0},
                                                 {t, t, 0, 0}, {0, 0, t, 0}, {0, t, t, 0}};
  for (int how = 0; how < 6; ++how) {
    auto mask = run_op("vcmp.f32 v2, v0, v1, " + std::to_string(how), a, b);
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(mask[k], expected[how][k]) << "cmp " << how << " lane " << k;
  }
  // -1 < 1 as s32, not as u32.
  EXPECT_EQ(run_op("vcmp.s32 v2, v0, v1, 2", i({-1}), i({1}))[0], t);
  EXPECT_EQ(run_op("vcmp.u32 v2, v0, v1, 2", i({-1}), i({1}))[0], 0u);
  // vsel: v2 = (v0 > v1) ? v0 : v1, i.e. max without NaN handling.
  auto sel =
      run_op("vcmp.f32 v3, v0, v1, 4\n  vsel.u32 v2, v3, v0, v1", f({1.0f, 5.0f}), f({3.0f, 4.0f}));
  EXPECT_EQ(lane_f(sel, 0), 3.0f);
  EXPECT_EQ(lane_f(sel, 1), 5.0f);
}

TEST(VectorOps, ConvertsBetweenLaneTypes) {
  // vcvt: imm is the source dtype (isa::DType numbering), the suffix the destination.
  auto from = [](isa::DType t) { return std::to_string(static_cast<int>(t)); };
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = f({2.7f, -2.7f, 3e9f, nan, -5.0f, 300.5f, -1000.0f, 0.5f});
  auto to_s32 = run_op("vcvt.s32 v2, v0, " + from(isa::DType::kF32), x);
  std::vector<int32_t> s32 = {2, -2, INT32_MAX, 0, -5, 300, -1000, 0};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(lane_s(to_s32, k), s32[k]) << k;
  auto to_u32 = run_op("vcvt.u32 v2, v0, " + from(isa::DType::kF32), x);
  EXPECT_EQ(to_u32[2], 3000000000u);
  EXPECT_EQ(to_u32[4], 0u);  // saturates at 0
  auto to_s8 = run_op("vcvt.s8 v2, v0, " + from(isa::DType::kF32), x);
  EXPECT_EQ(lane_s(to_s8, 5), 127);
  EXPECT_EQ(lane_s(to_s8, 6), -128);
  auto to_pred = run_op("vcvt.pred v2, v0, " + from(isa::DType::kF32), f({0.5f, 0.0f, -0.0f}));
  EXPECT_EQ(to_pred[0], 1u);
  EXPECT_EQ(to_pred[1], 0u);
  EXPECT_EQ(to_pred[2], 0u);
  // f32 -> bf16 rounds in place (1 + 2^-8 ties to 1).
  EXPECT_EQ(lane_f(run_op("vcvt.bf16 v2, v0, " + from(isa::DType::kF32), f({1.0f + 0x1p-8f})), 0),
            1.0f);

  // s32 -> f32 rounds to nearest even: 2^24 + 1 ties to 2^24.
  auto ints = i({16777217, -7, 16842753, 257, 300});
  EXPECT_EQ(lane_f(run_op("vcvt.f32 v2, v0, " + from(isa::DType::kS32), ints), 0), 16777216.0f);
  EXPECT_EQ(lane_f(run_op("vcvt.f32 v2, v0, " + from(isa::DType::kS32), ints), 1), -7.0f);
  // s32 -> bf16 rounds once: 2^24 + 2^16 + 1 is just above the bf16 tie 2^24 + 2^16, so
  // it goes up to 2^24 + 2^17 (going through f32 first would give 2^24). 257 ties to 256.
  auto to_bf16 = run_op("vcvt.bf16 v2, v0, " + from(isa::DType::kS32), ints);
  EXPECT_EQ(lane_f(to_bf16, 2), 16908288.0f);
  EXPECT_EQ(lane_f(to_bf16, 3), 256.0f);
  // s32 -> s8 wraps; u32 source reads the lane unsigned.
  EXPECT_EQ(lane_s(run_op("vcvt.s8 v2, v0, " + from(isa::DType::kS32), ints), 4), 44);
  EXPECT_EQ(lane_f(run_op("vcvt.f32 v2, v0, " + from(isa::DType::kU32), i({-1})), 0),
            4294967296.0f);
}

TEST(VectorOps, ReductionsBroadcastAlongTheReducedAxis) {
  // viota 0: lane (r, c) = 8 r + c. Sum over lanes: 64 r + 28; max over lanes: 8 r + 7;
  // sum over sublanes: 224 + 8 c; min over sublanes: c.
  auto red = [](const std::string& op) { return run_op("viota.s32 v3, 0\n  " + op, {0}); };
  auto sum_l = red("vredl.s32 v2, v3, 0");
  auto max_l = red("vredl.s32 v2, v3, 1");
  auto sum_s = red("vreds.s32 v2, v3, 0");
  auto min_s = red("vreds.s32 v2, v3, 2");
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      int k = r * 8 + c;
      EXPECT_EQ(lane_s(sum_l, k), 64 * r + 28);
      EXPECT_EQ(lane_s(max_l, k), 8 * r + 7);
      EXPECT_EQ(lane_s(sum_s, k), 224 + 8 * c);
      EXPECT_EQ(lane_s(min_s, k), c);
    }
  // f32: lanes 0.5 each sum to 4 per row; min over sublanes of a column with a NaN is NaN.
  auto halves = run_op("vredl.f32 v2, v0, 0", f({0.5f}));
  EXPECT_EQ(lane_f(halves, 63), 4.0f);
  auto with_nan = f({1.0f});
  with_nan.resize(kLanes, float_to_bits(1.0f));
  with_nan[8 * 5 + 2] = float_to_bits(std::numeric_limits<float>::quiet_NaN());
  auto mins = run_op("vreds.f32 v2, v0, 2", with_nan);
  EXPECT_TRUE(std::isnan(lane_f(mins, 2)));
  EXPECT_EQ(lane_f(mins, 3), 1.0f);
}

TEST(VectorOps, IotaAndBroadcasts) {
  auto iota0 = run_op("viota.s32 v2, 0", {0});
  auto iota1 = run_op("viota.s32 v2, 1", {0});
  auto iota2 = run_op("viota.s32 v2, 2", {0});
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(lane_s(iota0, r * 8 + c), r * 8 + c);
      EXPECT_EQ(lane_s(iota1, r * 8 + c), c);
      EXPECT_EQ(lane_s(iota2, r * 8 + c), r);
    }
  auto b = run_op("sli s5, 0x100000005\n  vbcast.s32 v2, s5", {0});
  auto bi = run_op("vbcasti.s32 v2, -1", {0});
  for (int k = 0; k < kLanes; ++k) {
    EXPECT_EQ(b[k], 5u);  // the low 32 bits
    EXPECT_EQ(bi[k], 0xffffffffu);
  }
}

TEST(VectorOps, InPlaceOpsAndOddRegisterSizes) {
  // 3 sublanes x 5 lanes = 15 lanes (not a multiple of the model's 8-lane blocks); the
  // result register is an operand in some ops. iota(r, c) = 5 r + c.
  FunctionalModel model(assemble(R"(
.chip_toml "odd" "3 x 5 registers"
base = "tiny"
vpu_sublanes = 3
vpu_lanes = 5
.end
.region out vmem[0] 0 180
.output out out s32[9, 5]
.program core 0
  sli s2, 20
  sli s3, 60
  sli s4, 120
  viota.s32 v0, 0
  vadd.s32 v1, v0, v0
  vadd.s32 v0, v0, v1
  vbcasti.f32 v2, 0x3fc00000
  vmul.f32 v2, v2, v2
  vcvt.s32 v2, v2, 0
  vst.s32 out[s0], s2, v1
  vst.s32 out[s3], s2, v0
  vst.s32 out[s4], s2, v2
  halt
)"));
  model.run_to_completion(100);
  auto out = testing::from_bytes<int32_t>(model.read_output(0));
  for (int k = 0; k < 15; ++k) {
    EXPECT_EQ(out[k], 2 * k) << k;
    EXPECT_EQ(out[15 + k], 3 * k) << k;
    EXPECT_EQ(out[30 + k], 2) << k;  // 1.5 * 1.5 = 2.25 -> 2
  }
}

TEST(VectorOps, TransposesOneRegisterBlock) {
  // 8 x 8: one register; out(r, c) = in(c, r) = 8 c + r. Source and destination may be
  // the same register.
  auto t = run_op("viota.s32 v2, 0\n  vxpose.s32 v2, v2", {0});
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(lane_s(t, r * 8 + c), 8 * c + r);
}

TEST(VectorOps, TransposesABlockSpreadOverRegisters) {
  // 8 sublanes x 16 lanes: the 16 x 16 block is two registers, rows 0..7 in the first.
  // v0 = iota (16 r + c), v1 = iota + 128 (rows 8..15), so block(R, C) = 16 R + C and
  // the transpose holds 16 C + R.
  FunctionalModel model(assemble(R"(
.chip_toml "wide" "16 lanes"
base = "tiny"
vpu_lanes = 16
.end
.region out vmem[0] 0 1024
.output out out s32[16, 16]
.program core 0
  viota.s32 v0, 0
  vbcasti.s32 v5, 128
  vadd.s32 v1, v0, v5
  vxpose.s32 v2, v0
  sli s2, 64
  sli s3, 512
  vst.s32 out[s0], s2, v2
  vst.s32 out[s3], s2, v3
  halt
)"));
  model.run_to_completion(100);
  auto out = testing::from_bytes<int32_t>(model.read_output(0));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(out[r * 16 + c], 16 * c + r) << r << "," << c;
}

TEST(VectorOps, LoadRejectsTypesAndGeometryItCannotRun) {
  auto load = [](const std::string& chip, const std::string& op) {
    return FunctionalModel(
        assemble(chip + ".region x vmem[0] 0 256\n.program core 0\n  " + op + "\n  halt\n"));
  };
  EXPECT_THROW(load(tiny_chip(), "vexp.s32 v0, v1"), Error);
  EXPECT_THROW(load(tiny_chip(), "vadd.pred v0, v1, v2"), Error);
  EXPECT_THROW(load(tiny_chip(), "vld.s64 v0, x[s0], s0"), Error);
  EXPECT_THROW(
      load(tiny_chip(), "vcvt.f32 v0, v1, " + std::to_string(static_cast<int>(isa::DType::kF64))),
      Error);
  try {
    load(".chip_toml \"odd\" \"12 lanes\"\nbase = \"tiny\"\nvpu_lanes = 12\n.end\n",
         "vxpose.f32 v0, v4");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of sublanes"), std::string::npos) << e.what();
  }
}

TEST(VectorOps, OutOfRegionAccessNamesEverything) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.region x vmem[0] 0 256
.program core 0
  sli s1, 8
  sli s2, 32
  vld.f32 v0, x[s1], s2
  halt
)"));
  try {
    model.run_to_completion(100);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    // Rows at 8 + 32 r, 32 bytes each: bytes [8, 264) of a 256-byte region.
    for (const char* part : {"core 0", "pc 2", "vld", "x", "[8, 264)", "256 bytes"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " missing from: " << m;
  }
}

}  // namespace
}  // namespace podsim::sim
