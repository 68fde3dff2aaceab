// MXU semantics on the tiny chip (8 x 8 MXU): results against a naive product of
// bf16-rounded inputs computed here, with bf16 rounding written independently of sim/.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <string>

#include "common/error.h"
#include "tests/sim/functional/functional_test_util.h"

namespace podsim::sim {
namespace {

using testing::assemble;
using testing::tiny_chip;

constexpr int kRows = 8;
constexpr int kCols = 8;

// Round to 8 significant bits, ties to even (the default rounding mode of nearbyint).
float bf16(float x) {
  if (x == 0.0f || !std::isfinite(x)) return x;
  int e;
  float m = std::frexp(x, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

using Matrix = std::vector<float>;  // row-major

// acc[i][j] + sum_k bf16(a[i][k]) * bf16(w[k][j]) for an m x k by k x n product,
// adding in k order.
Matrix naive(const Matrix& a, const Matrix& w, int k, Matrix acc = Matrix(kRows * kCols, 0.0f),
             int m = kRows, int n = kCols) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int kk = 0; kk < k; ++kk) acc[i * n + j] += bf16(a[i * k + kk]) * bf16(w[kk * n + j]);
  return acc;
}

Matrix pattern(int n, float scale, float offset) {
  Matrix m(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) m[i] = std::sin(scale * static_cast<float>(i) + offset) * 3.0f;
  return m;
}

// One mldw (K rows), one mmul (overwrite), one mpop, all f32 in memory.
std::string single_pass(int k) {
  std::string ks = std::to_string(k);
  return tiny_chip() +
         ".region a vmem[0] 0 1024\n.region w vmem[0] 1024 1024\n.region c vmem[0] 2048 256\n" +
         ".param a a f32[8, " + ks + "]\n.param w w f32[" + ks + ", 8]\n.output c c f32[8, 8]\n" +
         ".program core 0\n  sli s1, " + std::to_string(4 * k) + "\n  sli s2, 32\n  sli s3, " + ks +
         "\n  mldw.f32 m0, w[s0], s2, s3\n  mmul.f32 m0, a[s0], s1, 0\n  mpop.f32 m0, c[s0], s2\n  "
         "halt\n";
}

TEST(Mxu, MatchesNaiveProductOfBf16RoundedInputs) {
  for (int k : {8, 5, 1}) {  // K < 8 zero-pads the weights
    FunctionalModel model(assemble(single_pass(k)));
    Matrix a = pattern(kRows * k, 0.37f, 0.1f), w = pattern(k * kCols, 0.91f, 0.7f);
    model.set_parameter(0, testing::to_bytes(a));
    model.set_parameter(1, testing::to_bytes(w));
    model.run_to_completion(100);
    auto c = testing::from_bytes<float>(model.read_output(0));
    Matrix expected = naive(a, w, k);
    for (int i = 0; i < kRows * kCols; ++i)
      EXPECT_EQ(c[i], expected[i]) << "K " << k << " element " << i;
  }
}

TEST(Mxu, WideMxuMatchesToo) {
  // A 20 x 20 MXU: column blocks of the model's inner loop plus a remainder.
  constexpr int kWide = 20, kK = 13;
  FunctionalModel model(assemble(R"(
.chip_toml "wide" "20 x 20 MXU"
base = "tiny"
mxu_rows = 20
mxu_cols = 20
.end
.region a vmem[0] 0 1040
.region w vmem[0] 2048 1040
.region c vmem[0] 4096 1600
.param a a f32[20, 13]
.param w w f32[13, 20]
.output c c f32[20, 20]
.program core 0
  sli s1, 52
  sli s2, 80
  sli s3, 13
  mldw.f32 m0, w[s0], s2, s3
  mmul.f32 m0, a[s0], s1, 0
  mpop.f32 m0, c[s0], s2
  halt
)"));
  Matrix a = pattern(kWide * kK, 0.21f, 0.4f), w = pattern(kK * kWide, 0.83f, 0.2f);
  model.set_parameter(0, testing::to_bytes(a));
  model.set_parameter(1, testing::to_bytes(w));
  model.run_to_completion(100);
  auto c = testing::from_bytes<float>(model.read_output(0));
  Matrix expected = naive(a, w, kK, Matrix(kWide * kWide, 0.0f), kWide, kWide);
  for (int i = 0; i < kWide * kWide; ++i) EXPECT_EQ(c[i], expected[i]) << i;
}

TEST(Mxu, DefaultPrecisionDropsLowBits) {
  // 1 + 2^-10 is not a bf16 value: one MXU pass sees 1, so 1 x 1 = 1 exactly.
  FunctionalModel model(assemble(single_pass(1)));
  model.set_parameter(0, testing::to_bytes(Matrix(kRows, 1.0f + 0x1p-10f)));
  model.set_parameter(1, testing::to_bytes(Matrix(kCols, 1.0f)));
  model.run_to_completion(100);
  auto c = testing::from_bytes<float>(model.read_output(0));
  for (float v : c) EXPECT_EQ(v, 1.0f);
}

TEST(Mxu, AccumulatesAcrossPassesAndPopsBf16) {
  // C = A1 W1 + A2 W2 with K = 8 and then K = 3; popped as f32 and as bf16.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region a1 vmem[0] 0 256
.region w1 vmem[0] 256 256
.region a2 vmem[0] 512 96
.region w2 vmem[0] 1024 96
.region c vmem[0] 2048 256
.region h vmem[0] 4096 128
.param a1 a1 f32[8, 8]
.param w1 w1 f32[8, 8]
.param a2 a2 f32[8, 3]
.param w2 w2 bf16[3, 8]
.output c c f32[8, 8]
.output h h bf16[8, 8]
.program core 0
  sli s1, 32
  sli s2, 8
  sli s3, 12
  sli s4, 3
  sli s5, 16
  mldw.f32 m0, w1[s0], s1, s2
  mmul.f32 m0, a1[s0], s1, 0
  mldw.bf16 m0, w2[s0], s5, s4
  mmul.f32 m0, a2[s0], s3, 1
  mpop.f32 m0, c[s0], s1
  mpop.bf16 m0, h[s0], s5
  halt
)"));
  Matrix a1 = pattern(64, 0.3f, 0.0f), w1 = pattern(64, 0.7f, 1.0f), a2 = pattern(24, 1.3f, 2.0f);
  Matrix w2 = pattern(24, 0.5f, 3.0f);
  std::vector<uint16_t> w2_bits;
  for (float& v : w2) {
    v = bf16(v);  // exactly representable, so its bf16 encoding is the top half
    w2_bits.push_back(static_cast<uint16_t>(testing::float_to_bits(v) >> 16));
  }
  model.set_parameter(0, testing::to_bytes(a1));
  model.set_parameter(1, testing::to_bytes(w1));
  model.set_parameter(2, testing::to_bytes(a2));
  model.set_parameter(3, testing::to_bytes(w2_bits));
  model.run_to_completion(100);
  Matrix expected = naive(a2, w2, 3, naive(a1, w1, 8));
  auto c = testing::from_bytes<float>(model.read_output(0));
  auto h = testing::from_bytes<uint16_t>(model.read_output(1));
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(c[i], expected[i]) << i;
    EXPECT_EQ(testing::bits_to_float(uint32_t{h[i]} << 16), bf16(expected[i])) << i;
  }
}

TEST(Mxu, EffectsReportRowsAndRanges) {
  FunctionalModel model(assemble(single_pass(5)));
  Effect e = model.step(0);  // sli s1
  for (int i = 0; i < 2; ++i) e = model.step(0);
  e = model.step(0);  // mldw
  EXPECT_EQ(e.unit, isa::Unit::kMxu);
  EXPECT_EQ(e.rows, 5);
  ASSERT_TRUE(e.has_read);
  EXPECT_EQ(e.read.space, isa::MemorySpace::kVmem);
  EXPECT_EQ(e.read.begin, 1024);
  EXPECT_EQ(e.read.end, 1024 + 4 * 32 + 32);  // 5 rows of 8 f32 at stride 32
  e = model.step(0);                          // mmul
  EXPECT_EQ(e.rows, 8);
  EXPECT_EQ(e.read.begin, 0);
  EXPECT_EQ(e.read.end, 7 * 20 + 20);  // 8 rows of 5 f32 at stride 20
  e = model.step(0);                   // mpop
  EXPECT_EQ(e.rows, 8);
  ASSERT_TRUE(e.has_write);
  EXPECT_FALSE(e.has_read);
  EXPECT_EQ(e.write.begin, 2048);
  EXPECT_EQ(e.write.end, 2048 + 256);
}

void expect_error(const std::string& body, const std::string& needle) {
  FunctionalModel model(assemble(
      tiny_chip() + ".region x vmem[0] 0 1024\n.program core 0\n  sli s1, 32\n  sli s2, 8\n" +
      body + "\n  halt\n"));
  try {
    model.run_to_completion(100);
    FAIL() << "expected an error for " << body;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Mxu, MisuseIsAnError) {
  expect_error("  mmul.f32 m0, x[s0], s1, 0", "no weights");
  expect_error("  mldw.f32 m0, x[s0], s1, s2\n  mmul.f32 m0, x[s0], s1, 1", "holds no result");
  expect_error("  mpop.f32 m0, x[s0], s1", "accumulator is empty");
  expect_error("  mldw.f32 m0, x[s0], s1, s0", "K = 0");
  expect_error("  sli s3, 9\n  mldw.f32 m0, x[s0], s1, s3", "K = 9");
  // 8 rows at stride 256 from offset 0 end at 7 * 256 + 32 = 1824 > 1024.
  expect_error("  sli s4, 256\n  mldw.f32 m0, x[s0], s4, s2", "[0, 1824)");
}

}  // namespace
}  // namespace podsim::sim
