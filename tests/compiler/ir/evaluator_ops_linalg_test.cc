// Tests of the evaluator's dot and convolution. Expected values are derived by hand
// from the XLA semantics, or checked against naive loops and against relations
// (a grouped convolution is the concatenation of per-group convolutions).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/compiler/ir/evaluator_ops_test_util.h"

namespace podsim::ir::ops_testing {
namespace {

// ---------------------------------------------------------------------------
// Dot and convolution

// Naive dot for lhs [K=4, B=2, M=3] (batch dim 1, contracting dim 0) and
// rhs [B=2, N=5, K=4] (batch dim 0, contracting dim 2): out [B, M, N].
TEST(EvaluatorDot, GeneralDimensionsMatchNaiveLoop) {
  std::mt19937 rng(1);
  Literal lhs = random_ints(PT::kF32, {4, 2, 3}, rng);
  Literal rhs = random_ints(PT::kF32, {2, 5, 4}, rng);
  Op op(
      "a = f32[4,2,3] parameter(0)\nb = f32[2,5,4] parameter(1)\n"
      "ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={0}, "
      "rhs_batch_dims={0}, rhs_contracting_dims={2}");
  Literal r = op.run({lhs, rhs});
  for (int b = 0; b < 2; ++b)
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 5; ++n) {
        double sum = 0;
        for (int k = 0; k < 4; ++k)
          sum += lhs.get_as_double((k * 2 + b) * 3 + m) * rhs.get_as_double((b * 5 + n) * 4 + k);
        EXPECT_EQ(r.get_as_double((b * 3 + m) * 5 + n), sum) << b << m << n;
      }
}

TEST(EvaluatorDot, TwoContractingDimensions) {
  // out[m][n] = sum_{k1,k2} lhs[k2][m][k1] * rhs[k1][n][k2].
  std::mt19937 rng(2);
  Literal lhs = random_ints(PT::kS32, {2, 3, 4}, rng);
  Literal rhs = random_ints(PT::kS32, {4, 5, 2}, rng);
  Op op(
      "a = s32[2,3,4] parameter(0)\nb = s32[4,5,2] parameter(1)\n"
      "ROOT d = s32[3,5] dot(a, b), lhs_contracting_dims={2,0}, rhs_contracting_dims={0,2}");
  Literal r = op.run({lhs, rhs});
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n) {
      int64_t sum = 0;
      for (int k1 = 0; k1 < 4; ++k1)
        for (int k2 = 0; k2 < 2; ++k2)
          sum += lhs.get_as_int64((k2 * 3 + m) * 4 + k1) * rhs.get_as_int64((k1 * 5 + n) * 2 + k2);
      EXPECT_EQ(r.get_as_int64(m * 5 + n), sum);
    }
}

TEST(EvaluatorDot, F32AccumulatesInDouble) {
  // In float, 1e8 + 1 rounds back to 1e8 and the result would be 0.
  Op op(
      "a = f32[3] parameter(0)\nb = f32[3] parameter(1)\n"
      "ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_EQ(values(op.run({f32({3}, {1e8, 1, -1e8}), f32({3}, {1, 1, 1})})),
            (std::vector<double>{1}));
}

TEST(EvaluatorDot, Bf16AccumulatesInFloatAndRoundsOnce) {
  // 300 ones: bf16 steps would stall at 256 (257 rounds to 256); 300 is exact in bf16.
  std::vector<double> ones(300, 1.0);
  Op op(
      "a = bf16[300] parameter(0)\nb = bf16[300] parameter(1)\n"
      "ROOT d = bf16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_EQ(values(op.run({make(PT::kBF16, {300}, ones), make(PT::kBF16, {300}, ones)})),
            (std::vector<double>{300}));
  Op wide(
      "a = bf16[2] parameter(0)\nb = bf16[2] parameter(1)\n"
      "ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  // 1.5 * 1.5 + 0.5 * 0.25 = 2.375, exact in f32.
  EXPECT_EQ(values(wide.run({make(PT::kBF16, {2}, {1.5, 0.5}), make(PT::kBF16, {2}, {1.5, 0.25})})),
            (std::vector<double>{2.375}));
}

TEST(EvaluatorDot, IntegersWrapInResultType) {
  // 100 * 100 + 100 * 100 = 20000 = 78 * 256 + 32 -> 32 in s8.
  Op op(
      "a = s8[2] parameter(0)\nb = s8[2] parameter(1)\n"
      "ROOT d = s8[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_EQ(values(op.run({make(PT::kS8, {2}, {100, 100}), make(PT::kS8, {2}, {100, 100})})),
            (std::vector<double>{32}));
  Op widened(
      "a = s8[2] parameter(0)\nb = s8[2] parameter(1)\n"
      "ROOT d = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}");
  EXPECT_EQ(values(widened.run({make(PT::kS8, {2}, {100, -100}), make(PT::kS8, {2}, {100, 100})})),
            (std::vector<double>{0}));
}

TEST(EvaluatorDot, ResultShapeMismatchIsError) {
  Op op(
      "a = f32[2,3] parameter(0)\nb = f32[3,4] parameter(1)\n"
      "ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  EXPECT_THROW(op.run({f32({2, 3}, std::vector<double>(6)), f32({3, 4}, std::vector<double>(12))}),
               Error);
}

// 1-D convolution, batch 1, one feature: x = [1,2,3,4], w = [1,2,3];
// out[j] = sum_k p[j*stride + k*rhs_dilation] * w[k] over the padded, dilated input p.
TEST(EvaluatorConvolution, OneDimensionalByHand) {
  struct Case {
    std::string window;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {"size=3", {14, 20}},                 // 1+4+9, 2+6+12
      {"size=3 pad=1_1", {8, 14, 20, 11}},  // [0,1,2,3,4,0]
      {"size=3 stride=2 pad=1_1", {8, 20}},
      {"size=3 pad=1_1 rhs_dilate=2", {16, 7}},    // p[0]+2p[2]+3p[4], p[1]+2p[3]+3p[5]
      {"size=3 lhs_dilate=2", {7, 4, 11, 6, 15}},  // [1,0,2,0,3,0,4]
      {"size=3 rhs_reversal=1", {10, 16}},         // kernel read as [3,2,1]
      {"size=3 pad=-1_0", {20}},                   // [2,3,4]
  };
  for (const Case& c : cases) {
    std::string out = "f32[1," + std::to_string(c.expected.size()) + ",1]";
    Op op("x = f32[1,4,1] parameter(0)\nw = f32[3,1,1] parameter(1)\nROOT c = " + out +
          " convolution(x, w), window={" + c.window + "}, dim_labels=b0f_0io->b0f");
    EXPECT_EQ(values(op.run({f32({1, 4, 1}, {1, 2, 3, 4}), f32({3, 1, 1}, {1, 2, 3})})), c.expected)
        << c.window;
  }
}

TEST(EvaluatorConvolution, FeaturesAndBatchAcrossLayouts) {
  // Two input features, two output features, batch 2, dim_labels bf0_oi0->bf0; a
  // 1-wide kernel makes it a per-position matrix product: out[b][o][x] =
  // sum_i w[o][i] * in[b][i][x].
  Op op(
      "x = f32[2,2,3] parameter(0)\nw = f32[2,2,1] parameter(1)\n"
      "ROOT c = f32[2,2,3] convolution(x, w), window={size=1}, dim_labels=bf0_oi0->bf0");
  std::mt19937 rng(3);
  Literal x = random_ints(PT::kF32, {2, 2, 3}, rng), w = random_ints(PT::kF32, {2, 2, 1}, rng);
  Literal r = op.run({x, w});
  for (int b = 0; b < 2; ++b)
    for (int o = 0; o < 2; ++o)
      for (int p = 0; p < 3; ++p) {
        double sum = 0;
        for (int i = 0; i < 2; ++i)
          sum += w.get_as_double(o * 2 + i) * x.get_as_double((b * 2 + i) * 3 + p);
        EXPECT_EQ(r.get_as_double((b * 2 + o) * 3 + p), sum);
      }
}

// Copies the [start, start + size) range of dimension dim of l.
Literal slice_dim(const Literal& l, int64_t dim, int64_t start, int64_t size) {
  std::vector<int64_t> dims = l.shape().dims();
  dims[static_cast<size_t>(dim)] = size;
  Literal out(Shape(l.type(), dims));
  int64_t o = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> src = index;
    src[static_cast<size_t>(dim)] += start;
    out.set_from_double(o++, l.get_as_double(linear_index(l.shape().dims(), src)));
  });
  return out;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "f32[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Runs an ungrouped bf0_oi0->bf0 convolution with window size 3, padding 1_1.
Literal plain_conv(const Literal& x, const Literal& w) {
  std::vector<int64_t> out = {x.shape().dim(0), w.shape().dim(0), x.shape().dim(2)};
  Op op("x = " + shape_text(x.shape().dims()) + " parameter(0)\nw = " +
        shape_text(w.shape().dims()) + " parameter(1)\nROOT c = " + shape_text(out) +
        " convolution(x, w), window={size=3 pad=1_1}, dim_labels=bf0_oi0->bf0");
  return op.run({x, w});
}

// Expects r == concatenation of parts along dimension 1.
void expect_feature_concat(const Literal& r, const std::vector<Literal>& parts) {
  int64_t offset = 0;
  for (const Literal& part : parts) {
    EXPECT_TRUE(slice_dim(r, 1, offset, part.shape().dim(1)) == part)
        << r.to_string() << " vs " << part.to_string();
    offset += part.shape().dim(1);
  }
  EXPECT_EQ(offset, r.shape().dim(1));
}

TEST(EvaluatorConvolution, FeatureGroupsEqualConcatenatedGroupConvolutions) {
  // 4 input features in 2 groups of 2; 6 output features, 3 per group.
  std::mt19937 rng(4);
  Literal x = random_ints(PT::kF32, {2, 4, 5}, rng), w = random_ints(PT::kF32, {6, 2, 3}, rng);
  Op op(
      "x = f32[2,4,5] parameter(0)\nw = f32[6,2,3] parameter(1)\n"
      "ROOT c = f32[2,6,5] convolution(x, w), window={size=3 pad=1_1}, "
      "dim_labels=bf0_oi0->bf0, feature_group_count=2");
  Literal r = op.run({x, w});
  expect_feature_concat(r, {plain_conv(slice_dim(x, 1, 0, 2), slice_dim(w, 0, 0, 3)),
                            plain_conv(slice_dim(x, 1, 2, 2), slice_dim(w, 0, 3, 3))});
}

TEST(EvaluatorConvolution, DepthwiseFeatureGroups) {
  // feature_group_count = input features: each output feature sees one input feature.
  std::mt19937 rng(5);
  Literal x = random_ints(PT::kF32, {1, 3, 4}, rng), w = random_ints(PT::kF32, {3, 1, 3}, rng);
  Op op(
      "x = f32[1,3,4] parameter(0)\nw = f32[3,1,3] parameter(1)\n"
      "ROOT c = f32[1,3,4] convolution(x, w), window={size=3 pad=1_1}, "
      "dim_labels=bf0_oi0->bf0, feature_group_count=3");
  Literal r = op.run({x, w});
  std::vector<Literal> parts;
  for (int g = 0; g < 3; ++g)
    parts.push_back(plain_conv(slice_dim(x, 1, g, 1), slice_dim(w, 0, g, 1)));
  expect_feature_concat(r, parts);
}

TEST(EvaluatorConvolution, BatchGroupsEqualConcatenatedGroupConvolutions) {
  // Batch 4 in 2 groups of 2; output batch 2; 6 output features, 3 per batch group.
  std::mt19937 rng(6);
  Literal x = random_ints(PT::kF32, {4, 2, 5}, rng), w = random_ints(PT::kF32, {6, 2, 3}, rng);
  Op op(
      "x = f32[4,2,5] parameter(0)\nw = f32[6,2,3] parameter(1)\n"
      "ROOT c = f32[2,6,5] convolution(x, w), window={size=3 pad=1_1}, "
      "dim_labels=bf0_oi0->bf0, batch_group_count=2");
  Literal r = op.run({x, w});
  expect_feature_concat(r, {plain_conv(slice_dim(x, 0, 0, 2), slice_dim(w, 0, 0, 3)),
                            plain_conv(slice_dim(x, 0, 2, 2), slice_dim(w, 0, 3, 3))});
}

TEST(EvaluatorConvolution, BadGroupCountIsError) {
  Op op(
      "x = f32[1,3,4] parameter(0)\nw = f32[4,1,3] parameter(1)\n"
      "ROOT c = f32[1,4,4] convolution(x, w), window={size=3 pad=1_1}, "
      "dim_labels=bf0_oi0->bf0, feature_group_count=2");
  EXPECT_THROW(
      op.run({f32({1, 3, 4}, std::vector<double>(12)), f32({4, 1, 3}, std::vector<double>(12))}),
      Error);
}

}  // namespace
}  // namespace podsim::ir::ops_testing
