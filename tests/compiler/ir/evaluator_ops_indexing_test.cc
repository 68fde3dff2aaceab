// Tests of the evaluator's gather, scatter and sort (run directly through
// eval_indexing), and of whole modules using these ops through evaluate(). Expected
// values are derived by hand from the XLA semantics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "tests/compiler/ir/evaluator_ops_test_util.h"

namespace podsim::ir::ops_testing {
namespace {

// ---------------------------------------------------------------------------
// Gather, scatter, sort

TEST(EvaluatorGather, RowsWithClampedIndices) {
  Op op(
      "p = f32[3,2] parameter(0)\ni = s32[4] parameter(1)\n"
      "ROOT g = f32[4,2] gather(p, i), offset_dims={1}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}");
  // Index 5 clamps to 2 and -1 to 0.
  Literal r = op.run({f32({3, 2}, {1, 2, 3, 4, 5, 6}), s32({4}, {2, 0, 5, -1})});
  EXPECT_EQ(values(r), (std::vector<double>{5, 6, 1, 2, 5, 6, 1, 2}));
}

TEST(EvaluatorGather, WindowsClampToStayInBounds) {
  // 2x2 windows of a 3x3 operand at (row, col) pairs; (2, 2) clamps to (1, 1).
  Op op(
      "p = s32[3,3] parameter(0)\ni = s32[2,2] parameter(1)\n"
      "ROOT g = s32[2,2,2] gather(p, i), offset_dims={1,2}, collapsed_slice_dims={}, "
      "start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}");
  Literal r = op.run({s32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), s32({2, 2}, {0, 1, 2, 2})});
  EXPECT_EQ(values(r), (std::vector<double>{2, 3, 5, 6, 5, 6, 8, 9}));
}

TEST(EvaluatorGather, IndexVectorDimFirstAndOffsetDimFirst) {
  // Indices s32[1,2] with index_vector_dim=0: two single-component indices [2] and [0].
  // offset_dims={0}: the result is [2 (slice), 2 (batch)], i.e. columns are gathers.
  Op op(
      "p = f32[3,2] parameter(0)\ni = s32[1,2] parameter(1)\n"
      "ROOT g = f32[2,2] gather(p, i), offset_dims={0}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=0, slice_sizes={1,2}");
  Literal r = op.run({f32({3, 2}, {1, 2, 3, 4, 5, 6}), s32({1, 2}, {2, 0})});
  EXPECT_EQ(values(r), (std::vector<double>{5, 1, 6, 2}));
}

TEST(EvaluatorGather, BatchingDims) {
  // out[b] = operand[b][idx[b]].
  Op op(
      "p = f32[2,3] parameter(0)\ni = s32[2] parameter(1)\n"
      "ROOT g = f32[2] gather(p, i), offset_dims={}, collapsed_slice_dims={1}, "
      "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
      "index_vector_dim=1, slice_sizes={1,1}");
  EXPECT_EQ(values(op.run({f32({2, 3}, {1, 2, 3, 4, 5, 6}), s32({2}, {2, 1})})),
            (std::vector<double>{3, 5}));
}

TEST(EvaluatorScatter, AddWithDuplicateAndOutOfBoundsIndices) {
  Op op(
      "p = f32[4] parameter(0)\ni = s32[5,1] parameter(1)\nu = f32[5] parameter(2)\n"
      "ROOT s = f32[4] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32");
  // Index 1 twice; 4 and -1 are out of bounds and skipped.
  Literal r = op.run(
      {f32({4}, {1, 1, 1, 1}), s32({5, 1}, {1, 3, 1, 4, -1}), f32({5}, {10, 20, 30, 40, 50})});
  EXPECT_EQ(values(r), (std::vector<double>{1, 41, 1, 21}));
}

TEST(EvaluatorScatter, RowUpdates) {
  Op op(
      "p = f32[3,2] parameter(0)\ni = s32[2] parameter(1)\nu = f32[2,2] parameter(2)\n"
      "ROOT s = f32[3,2] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32");
  Literal r =
      op.run({f32({3, 2}, {1, 1, 1, 1, 1, 1}), s32({2}, {2, 0}), f32({2, 2}, {10, 20, 30, 40})});
  EXPECT_EQ(values(r), (std::vector<double>{31, 41, 1, 1, 11, 21}));
}

TEST(EvaluatorScatter, PartlyOutOfBoundsWindowIsSkippedWhole) {
  // Windows of 2 at 1 (fits) and at 3 (would cover 3 and 4: skipped entirely).
  Op op(
      "p = f32[4] parameter(0)\ni = s32[2,1] parameter(1)\nu = f32[2,2] parameter(2)\n"
      "ROOT s = f32[4] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32");
  Literal r = op.run({f32({4}, {0, 0, 0, 0}), s32({2, 1}, {1, 3}), f32({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(values(r), (std::vector<double>{0, 1, 2, 0}));
}

TEST(EvaluatorScatter, BatchingDims) {
  Op op(
      "p = f32[2,3] parameter(0)\ni = s32[2] parameter(1)\nu = f32[2] parameter(2)\n"
      "ROOT s = f32[2,3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={1}, "
      "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
      "scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add_f32");
  EXPECT_EQ(
      values(op.run({f32({2, 3}, std::vector<double>(6)), s32({2}, {2, 1}), f32({2}, {7, 8})})),
      (std::vector<double>{0, 0, 7, 0, 8, 0}));
}

TEST(EvaluatorScatter, Variadic) {
  Op op(
      "p = f32[3] parameter(0)\nq = s32[3] parameter(1)\ni = s32[3,1] parameter(2)\n"
      "u = f32[3] parameter(3)\nv = s32[3] parameter(4)\n"
      "ROOT s = (f32[3], s32[3]) scatter(p, q, i, u, v), update_window_dims={}, "
      "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
      "to_apply=add_and_max");
  Literal r = op.run({f32({3}, {0, 0, 0}), s32({3}, {5, 5, 5}), s32({3, 1}, {0, 2, 0}),
                      f32({3}, {1, 2, 3}), s32({3}, {9, 1, 4})});
  ASSERT_TRUE(r.shape().is_tuple());
  EXPECT_EQ(values(r.elements()[0]), (std::vector<double>{4, 0, 2}));
  EXPECT_EQ(values(r.elements()[1]), (std::vector<double>{9, 5, 5}));
}

TEST(EvaluatorSort, StableWithTies) {
  Op op(
      "k = s32[5] parameter(0)\nv = s32[5] parameter(1)\n"
      "ROOT s = (s32[5], s32[5]) sort(k, v), dimensions={0}, is_stable=true, "
      "to_apply=less_key_s32");
  Literal r = op.run({s32({5}, {3, 1, 3, 2, 1}), s32({5}, {0, 1, 2, 3, 4})});
  ASSERT_TRUE(r.shape().is_tuple());
  EXPECT_EQ(values(r.elements()[0]), (std::vector<double>{1, 1, 2, 3, 3}));
  EXPECT_EQ(values(r.elements()[1]), (std::vector<double>{1, 4, 3, 0, 2}));
}

TEST(EvaluatorSort, AlongLeadingDimension) {
  Op op(
      "k = s32[3,2] parameter(0)\n"
      "ROOT s = s32[3,2] sort(k), dimensions={0}, to_apply=less_s32");
  EXPECT_EQ(values(op.run({s32({3, 2}, {3, 1, 1, 2, 2, 0})})),
            (std::vector<double>{1, 0, 2, 1, 3, 2}));
}

TEST(EvaluatorSort, ErrorNamesOpAndComparator) {
  auto module = parse_module(std::string("HloModule bad\n") + kComputations + R"(
ENTRY e {
  k = s32[3] parameter(0)
  ROOT sorted = s32[3] sort(k), dimensions={0}, to_apply=bad_comparator
}
)");
  try {
    evaluate(*module, std::vector<Literal>{s32({3}, {3, 1, 2})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("sort of sorted"), std::string::npos) << message;
    EXPECT_NE(message.find("bad_comparator"), std::string::npos) << message;
  }
}

TEST(EvaluatorSort, NonPredComparatorIsError) {
  Op op(
      "k = s32[3] parameter(0)\nROOT s = s32[3] sort(k), dimensions={0}, to_apply=bad_comparator");
  EXPECT_THROW(op.run({s32({3}, {3, 1, 2})}), Error);
}

// ---------------------------------------------------------------------------
// Through the driver

TEST(EvaluatorOpsEndToEnd, ArgmaxThenGatherThenSort) {
  // Per row: argmax (first of equal maxima), the row's element after the argmax
  // (a gather with batching dims, clamped at the row end), and the sorted row.
  auto module =
      parse_module(std::string("HloModule e2e\n") + binary_computations() + kComputations + R"(
ENTRY e {
  p = f32[2,4] parameter(0)
  iota = s32[2,4] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[2], s32[2]) reduce(p, iota, ninf, zero), dimensions={1}, to_apply=argmax
  idx = s32[2] get-tuple-element(r), index=1
  one = s32[] constant(1)
  ones = s32[2] broadcast(one), dimensions={}
  next = s32[2] add(idx, ones)
  after = f32[2] gather(p, next), offset_dims={}, collapsed_slice_dims={1},
      start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0},
      index_vector_dim=1, slice_sizes={1,1}
  pi = s32[2,4] convert(p)
  sorted = s32[2,4] sort(pi), dimensions={1}, to_apply=less_s32
  ROOT t = (s32[2], f32[2], s32[2,4]) tuple(idx, after, sorted)
}
)");
  Literal r = evaluate(*module, std::vector<Literal>{f32({2, 4}, {3, 9, 9, 1, 2, 0, 5, 8})});
  ASSERT_TRUE(r.shape().is_tuple());
  EXPECT_EQ(values(r.elements()[0]), (std::vector<double>{1, 3}));
  EXPECT_EQ(values(r.elements()[1]), (std::vector<double>{9, 8}));  // row 1: 4 clamps to 3
  EXPECT_EQ(values(r.elements()[2]), (std::vector<double>{1, 3, 9, 9, 0, 2, 5, 8}));
}

TEST(EvaluatorOpsEndToEnd, ConvolutionPadReduceWindowAndDot) {
  auto module =
      parse_module(std::string("HloModule e2e\n") + binary_computations() + kComputations + R"(
ENTRY e {
  x = f32[1,4,1] parameter(0)
  w = f32[3,1,1] parameter(1)
  c = f32[1,4,1] convolution(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
  flat = f32[4] reshape(c)
  zero = f32[] constant(0)
  padded = f32[6] pad(flat, zero), padding=1_1
  ninf = f32[] constant(-inf)
  pooled = f32[3] reduce-window(padded, ninf), window={size=2 stride=2}, to_apply=max_f32
  ROOT d = f32[] dot(pooled, pooled), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)");
  // conv = [8,14,20,11] (see OneDimensionalByHand); padded [0,8,14,20,11,0];
  // pooled [8,20,11]; dot = 64 + 400 + 121.
  Literal r = evaluate(
      *module, std::vector<Literal>{f32({1, 4, 1}, {1, 2, 3, 4}), f32({3, 1, 1}, {1, 2, 3})});
  EXPECT_EQ(values(r), (std::vector<double>{585}));
}

}  // namespace
}  // namespace podsim::ir::ops_testing
