// Tests of the evaluator's data-movement ops and reductions (reduce, reduce-window,
// select-and-scatter), each run directly through its eval_* function. Expected values
// are derived by hand from the XLA semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/compiler/ir/evaluator_ops_test_util.h"

namespace podsim::ir::ops_testing {
namespace {

// ---------------------------------------------------------------------------
// Shape ops

TEST(EvaluatorShapeOps, Transpose2x3) {
  Op op("p = f32[2,3] parameter(0)\nROOT t = f32[3,2] transpose(p), dimensions={1,0}");
  Literal r = op.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(r.shape().dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(EvaluatorShapeOps, Transpose3d) {
  // out[i][j][k] = in[j][k][i] for dimensions={2,0,1}; in is 2x3x4, out 4x2x3.
  Op op("p = s32[2,3,4] parameter(0)\nROOT t = s32[4,2,3] transpose(p), dimensions={2,0,1}");
  std::vector<double> in(24);
  for (int i = 0; i < 24; ++i) in[static_cast<size_t>(i)] = i;
  Literal r = op.run({s32({2, 3, 4}, in)});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(r.get_as_int64((i * 2 + j) * 3 + k), (j * 3 + k) * 4 + i);
}

TEST(EvaluatorShapeOps, Broadcast) {
  Op rows("p = f32[3] parameter(0)\nROOT b = f32[2,3] broadcast(p), dimensions={1}");
  EXPECT_EQ(values(rows.run({f32({3}, {1, 2, 3})})), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  Op cols("p = f32[3] parameter(0)\nROOT b = f32[3,2] broadcast(p), dimensions={0}");
  EXPECT_EQ(values(cols.run({f32({3}, {1, 2, 3})})), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  Op scalar("p = f32[] parameter(0)\nROOT b = f32[2,2] broadcast(p), dimensions={}");
  EXPECT_EQ(values(scalar.run({f32({}, {7})})), (std::vector<double>{7, 7, 7, 7}));
}

TEST(EvaluatorShapeOps, ReshapeKeepsRowMajorOrder) {
  Op op("p = f32[2,3] parameter(0)\nROOT r = f32[3,2] reshape(p)");
  EXPECT_EQ(values(op.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(EvaluatorShapeOps, SliceWithStrides) {
  Op op("p = f32[3,4] parameter(0)\nROOT s = f32[2,2] slice(p), slice={[0:3:2], [1:4:2]}");
  // Rows 0 and 2, columns 1 and 3 of [[0,1,2,3],[4,5,6,7],[8,9,10,11]].
  std::vector<double> in(12);
  for (int i = 0; i < 12; ++i) in[static_cast<size_t>(i)] = i;
  EXPECT_EQ(values(op.run({f32({3, 4}, in)})), (std::vector<double>{1, 3, 9, 11}));
}

TEST(EvaluatorShapeOps, SliceOutOfRangeIsError) {
  Op op("p = f32[4] parameter(0)\nROOT s = f32[3] slice(p), slice={[2:5]}");
  EXPECT_THROW(op.run({f32({4}, {0, 1, 2, 3})}), Error);
}

TEST(EvaluatorShapeOps, DynamicSliceClampsStart) {
  Op op(
      "p = f32[5] parameter(0)\ni = s32[] parameter(1)\n"
      "ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}");
  Literal in = f32({5}, {0, 1, 2, 3, 4});
  EXPECT_EQ(values(op.run({in, s32({}, {1})})), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(op.run({in, s32({}, {3})})), (std::vector<double>{2, 3, 4}));  // 3 -> 2
  EXPECT_EQ(values(op.run({in, s32({}, {-5})})), (std::vector<double>{0, 1, 2}));
  Op u(
      "p = f32[5] parameter(0)\ni = u32[] parameter(1)\n"
      "ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}");
  EXPECT_EQ(values(u.run({in, make(PT::kU32, {}, {4294967295.0})})),
            (std::vector<double>{2, 3, 4}));
}

TEST(EvaluatorShapeOps, DynamicSlice2d) {
  Op op(
      "p = s32[3,3] parameter(0)\ni = s32[] parameter(1)\nj = s32[] parameter(2)\n"
      "ROOT d = s32[2,2] dynamic-slice(p, i, j), dynamic_slice_sizes={2,2}");
  Literal r = op.run({s32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), s32({}, {1}), s32({}, {0})});
  EXPECT_EQ(values(r), (std::vector<double>{4, 5, 7, 8}));
}

TEST(EvaluatorShapeOps, DynamicUpdateSliceClampsStart) {
  Op op(
      "p = f32[5] parameter(0)\nu = f32[2] parameter(1)\ni = s32[] parameter(2)\n"
      "ROOT d = f32[5] dynamic-update-slice(p, u, i)");
  Literal in = f32({5}, {0, 0, 0, 0, 0});
  EXPECT_EQ(values(op.run({in, f32({2}, {1, 2}), s32({}, {1})})),
            (std::vector<double>{0, 1, 2, 0, 0}));
  EXPECT_EQ(values(op.run({in, f32({2}, {1, 2}), s32({}, {4})})),  // 4 -> 3
            (std::vector<double>{0, 0, 0, 1, 2}));
}

TEST(EvaluatorShapeOps, DynamicSliceRejectsFloatIndex) {
  Op op(
      "p = f32[5] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}");
  EXPECT_THROW(op.run({f32({5}, {0, 1, 2, 3, 4}), f32({}, {1})}), Error);
}

TEST(EvaluatorShapeOps, Concatenate) {
  Op op(
      "a = f32[2,2] parameter(0)\nb = f32[2,1] parameter(1)\nc = f32[2,2] parameter(2)\n"
      "ROOT r = f32[2,5] concatenate(a, b, c), dimensions={1}");
  Literal r = op.run({f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {5, 6}), f32({2, 2}, {7, 8, 9, 10})});
  EXPECT_EQ(values(r), (std::vector<double>{1, 2, 5, 7, 8, 3, 4, 6, 9, 10}));
  Op rows(
      "a = f32[1,2] parameter(0)\nb = f32[2,2] parameter(1)\n"
      "ROOT r = f32[3,2] concatenate(a, b), dimensions={0}");
  EXPECT_EQ(values(rows.run({f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})})),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(EvaluatorShapeOps, PadWithInteriorAndNegativeEdges) {
  // [1,2,3] with interior 1 -> [1,x,2,x,3]; low -1 drops the first, high 1 appends x.
  Op op(
      "p = f32[3] parameter(0)\nv = f32[] parameter(1)\n"
      "ROOT r = f32[5] pad(p, v), padding=-1_1_1");
  EXPECT_EQ(values(op.run({f32({3}, {1, 2, 3}), f32({}, {9})})),
            (std::vector<double>{9, 2, 9, 3, 9}));
  // Rows [r0,r1]: interior 1 -> [r0,x,r1], low 1 -> [x,r0,x,r1], high -1 -> [x,r0,x].
  Op op2(
      "p = f32[2,2] parameter(0)\nv = f32[] parameter(1)\n"
      "ROOT r = f32[3,4] pad(p, v), padding=1_-1_1x2_0_0");
  EXPECT_EQ(values(op2.run({f32({2, 2}, {1, 2, 3, 4}), f32({}, {0})})),
            (std::vector<double>{0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0}));
}

TEST(EvaluatorShapeOps, Reverse) {
  Op one("p = f32[2,3] parameter(0)\nROOT r = f32[2,3] reverse(p), dimensions={1}");
  EXPECT_EQ(values(one.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})),
            (std::vector<double>{3, 2, 1, 6, 5, 4}));
  Op both("p = f32[2,3] parameter(0)\nROOT r = f32[2,3] reverse(p), dimensions={0,1}");
  EXPECT_EQ(values(both.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})),
            (std::vector<double>{6, 5, 4, 3, 2, 1}));
}

TEST(EvaluatorShapeOps, Iota) {
  Op ints("ROOT i = s32[2,3] iota(), iota_dimension=1");
  EXPECT_EQ(values(ints.run({})), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  Op floats("ROOT i = bf16[2,3] iota(), iota_dimension=0");
  EXPECT_EQ(values(floats.run({})), (std::vector<double>{0, 0, 0, 1, 1, 1}));
}

TEST(EvaluatorShapeOps, CopyAndPlainBitcast) {
  Op copy("p = f32[2] parameter(0)\nROOT c = f32[2] copy(p)");
  EXPECT_EQ(values(copy.run({f32({2}, {1, 2})})), (std::vector<double>{1, 2}));
  Op bitcast("p = f32[2,3] parameter(0)\nROOT b = f32[6] bitcast(p)");
  EXPECT_EQ(values(bitcast.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(EvaluatorShapeOps, BitcastHonoursLayouts) {
  // Same physical bytes: {1,0} row-major [[1,2,3],[4,5,6]] read as f32[3,2]{0,1}
  // (dimension 0 minor) is its transpose.
  Op op("p = f32[2,3]{1,0} parameter(0)\nROOT b = f32[3,2]{0,1} bitcast(p)");
  EXPECT_EQ(values(op.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})),
            (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

// ---------------------------------------------------------------------------
// Reductions

TEST(EvaluatorReduce, SumOverDimensions) {
  Op rows(
      "p = f32[2,3] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT r = f32[2] reduce(p, i), dimensions={1}, to_apply=add_f32");
  Literal in = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values(rows.run({in, f32({}, {0})})), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(rows.run({in, f32({}, {10})})), (std::vector<double>{16, 25}));
  Op cols(
      "p = f32[2,3] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT r = f32[3] reduce(p, i), dimensions={0}, to_apply=add_f32_slow");
  EXPECT_EQ(values(cols.run({in, f32({}, {0})})), (std::vector<double>{5, 7, 9}));
  Op all(
      "p = f32[2,3] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT r = f32[] reduce(p, i), dimensions={0,1}, to_apply=add_s32");
  // add_s32 does not fit f32 inputs: the general path reports the bad result type.
  EXPECT_THROW(all.run({in, f32({}, {0})}), Error);
}

TEST(EvaluatorReduce, VariadicArgmax) {
  Op op(
      "v = f32[2,4] parameter(0)\ni = s32[2,4] parameter(1)\n"
      "vi = f32[] parameter(2)\nii = s32[] parameter(3)\n"
      "ROOT r = (f32[2], s32[2]) reduce(v, i, vi, ii), dimensions={1}, to_apply=argmax");
  const double inf = std::numeric_limits<double>::infinity();
  Literal r = op.run({f32({2, 4}, {3, 7, 7, 1, -2, -5, -1, -1}),
                      s32({2, 4}, {0, 1, 2, 3, 0, 1, 2, 3}), f32({}, {-inf}), s32({}, {0})});
  ASSERT_TRUE(r.shape().is_tuple());
  // Row 0: max 7 first at index 1. Row 1: max -1 first at index 2.
  EXPECT_EQ(values(r.elements()[0]), (std::vector<double>{7, -1}));
  EXPECT_EQ(values(r.elements()[1]), (std::vector<double>{1, 2}));
  EXPECT_EQ(op.context.calls, 8);
}

// Bitwise equality, except that any two NaNs are equal: the sign and payload of a NaN
// from arithmetic on NaNs depend on operand order, which C++ compilers may swap.
bool same_up_to_nan_payload(const Literal& a, const Literal& b) {
  if (!a.shape().compatible(b.shape())) return false;
  const auto size = static_cast<size_t>(type_byte_size(a.type()));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (is_float(a.type()) && std::isnan(a.get_as_double(i)) && std::isnan(b.get_as_double(i)))
      continue;
    const size_t at = static_cast<size_t>(i) * size;
    if (!std::equal(a.bytes().begin() + static_cast<std::ptrdiff_t>(at),
                    a.bytes().begin() + static_cast<std::ptrdiff_t>(at + size),
                    b.bytes().begin() + static_cast<std::ptrdiff_t>(at)))
      return false;
  }
  return true;
}

// The typed fast path must agree bitwise (NaN payloads aside) with the general
// Context::call path for every reducer and element type, including NaN, infinities,
// signed zeros and integer wraparound. NAME_TYPE_slow differs from NAME_TYPE only by a dead
// instruction, which keeps it off the fast path.
TEST(EvaluatorReduce, FastPathMatchesGeneralPath) {
  std::mt19937_64 rng(7);
  const std::vector<std::pair<PT, std::string>> types = {
      {PT::kPred, "pred"}, {PT::kS8, "s8"},   {PT::kS32, "s32"},
      {PT::kU8, "u8"},     {PT::kU64, "u64"}, {PT::kF16, "f16"},
      {PT::kBF16, "bf16"}, {PT::kF32, "f32"}, {PT::kF64, "f64"}};
  const double specials[] = {std::nan(""), -0.0, 0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  for (const auto& entry : types) {
    const PT type = entry.first;
    const std::string& type_text = entry.second;
    Literal in(Shape(type, {6, 50}));
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      if (is_float(type))
        in.set_from_double(i, i % 17 < 5 ? specials[i % 17]
                                         : std::uniform_real_distribution<double>(-100, 100)(rng));
      else
        in.set_from_uint64(i, rng());
    }
    Literal init = scalar_at_for_test(in, 7);
    for (std::string op_name : {"add", "mul", "max", "min", "and", "or"}) {
      const bool logical = op_name == "and" || op_name == "or";
      if ((logical && is_float(type)) ||
          (type == PT::kPred && !logical && op_name != "max" && op_name != "min"))
        continue;  // not defined for this type
      for (std::string dims : {"{1}", "{0}"}) {
        const std::string out = type_text + (dims == "{1}" ? "[6]" : "[50]");
        auto text = [&](const std::string& fn) {
          return "p = " + type_text + "[6,50] parameter(0)\ni = " + type_text +
                 "[] parameter(1)\nROOT r = " + out + " reduce(p, i), dimensions=" + dims +
                 ", to_apply=" + fn;
        };
        const std::string fn = op_name + "_" + type_text;
        Op fast(text(fn)), slow(text(fn + "_slow"));
        Literal a = fast.run({in, init});
        Literal b = slow.run({in, init});
        EXPECT_EQ(slow.context.calls, 300);
        if (type != PT::kPred || logical) {
          EXPECT_EQ(fast.context.calls, 0) << fn;
        }
        EXPECT_TRUE(same_up_to_nan_payload(a, b))
            << fn << " " << dims << ": " << a.to_string() << " vs " << b.to_string();
      }
    }
  }
}

TEST(EvaluatorReduceWindow, DilationAndPadding) {
  // x = [1,2,3,4], base dilation 2: [1,_,2,_,3,_,4]; pad low 1. A size-2 window with
  // window dilation 2 at stride 1 covers base positions j-1 and j+1 for output j:
  //   j=0: pad, hole -> init; j=1: 1,2; j=2: holes; j=3: 2,3; j=4: holes; j=5: 3,4.
  for (std::string fn : {"add_f32", "add_f32_slow"}) {
    Op op(
        "p = f32[4] parameter(0)\ni = f32[] parameter(1)\n"
        "ROOT r = f32[6] reduce-window(p, i), window={size=2 stride=1 pad=1_0 lhs_dilate=2 "
        "rhs_dilate=2}, to_apply=" +
        fn);
    EXPECT_EQ(values(op.run({f32({4}, {1, 2, 3, 4}), f32({}, {10})})),
              (std::vector<double>{10, 13, 10, 15, 10, 17}))
        << fn;
  }
}

TEST(EvaluatorReduceWindow, MaxPoolWithPadding) {
  Op op(
      "p = f32[3,3] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT r = f32[3,3] reduce-window(p, i), window={size=2x2 pad=0_1x0_1}, to_apply=max_f32");
  Literal r = op.run({f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                      f32({}, {-std::numeric_limits<double>::infinity()})});
  EXPECT_EQ(values(r), (std::vector<double>{5, 6, 6, 8, 9, 9, 8, 9, 9}));
}

// Random 2-D windows (negative padding, both dilations) against the definition: the
// input spread out by base dilation and padded, each window summing the real elements
// it covers, plus the init value once.
TEST(EvaluatorReduceWindow, RandomWindowsMatchDefinition) {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    int64_t dims[2], size[2], stride[2], low[2], high[2], ld[2], rd[2], out[2];
    bool empty = false;
    for (int d = 0; d < 2; ++d) {
      dims[d] = pick(1, 5), size[d] = pick(1, 3), stride[d] = pick(1, 3);
      low[d] = pick(-1, 2), high[d] = pick(-1, 2), ld[d] = pick(1, 3), rd[d] = pick(1, 2);
      const int64_t padded = low[d] + (dims[d] - 1) * ld[d] + 1 + high[d];
      const int64_t extent = (size[d] - 1) * rd[d] + 1;
      out[d] = padded < extent ? 0 : (padded - extent) / stride[d] + 1;
      empty = empty || out[d] == 0;
    }
    if (empty) continue;
    Literal in = random_ints(PT::kS32, {dims[0], dims[1]}, rng);
    auto field = [&](const char* key, const int64_t* a, const int64_t* b = nullptr) {
      std::string f = std::string(key) + "=";
      for (int d = 0; d < 2; ++d)
        f += (d ? "x" : "") + std::to_string(a[d]) + (b ? "_" + std::to_string(b[d]) : "");
      return f;
    };
    Op op("p = s32[" + std::to_string(dims[0]) + "," + std::to_string(dims[1]) +
          "] parameter(0)\ni = s32[] parameter(1)\nROOT r = s32[" + std::to_string(out[0]) + "," +
          std::to_string(out[1]) + "] reduce-window(p, i), window={" + field("size", size) + " " +
          field("stride", stride) + " " + field("pad", low, high) + " " + field("lhs_dilate", ld) +
          " " + field("rhs_dilate", rd) + "}, to_apply=add_s32");
    Literal r = op.run({in, s32({}, {1000})});
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1) {
        int64_t sum = 1000;
        for (int64_t w0 = 0; w0 < size[0]; ++w0)
          for (int64_t w1 = 0; w1 < size[1]; ++w1) {
            // Position in the padded, base-dilated input; real elements sit at
            // multiples of the base dilation.
            const int64_t p0 = o0 * stride[0] + w0 * rd[0] - low[0];
            const int64_t p1 = o1 * stride[1] + w1 * rd[1] - low[1];
            if (p0 < 0 || p1 < 0 || p0 % ld[0] || p1 % ld[1]) continue;
            if (p0 / ld[0] >= dims[0] || p1 / ld[1] >= dims[1]) continue;
            sum += in.get_as_int64(p0 / ld[0] * dims[1] + p1 / ld[1]);
          }
        EXPECT_EQ(r.get_as_int64(o0 * out[1] + o1), sum) << op.instruction().name() << trial;
      }
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(EvaluatorReduceWindow, HugePaddedWindowVisitsOnlyRealElements) {
  // One window of 10^12 positions, all padding but two: must finish at once.
  Op op(
      "p = f32[2] parameter(0)\ni = f32[] parameter(1)\n"
      "ROOT r = f32[1] reduce-window(p, i), window={size=1000000000000 "
      "pad=500000000000_499999999998}, to_apply=add_f32_slow");
  EXPECT_EQ(values(op.run({f32({2}, {1, 2}), f32({}, {0})})), (std::vector<double>{3}));
  EXPECT_EQ(op.context.calls, 2);
}

TEST(EvaluatorReduceWindow, StridedAndVariadic) {
  Op op(
      "a = f32[5] parameter(0)\nb = f32[5] parameter(1)\n"
      "ia = f32[] parameter(2)\nib = f32[] parameter(3)\n"
      "ROOT r = (f32[2], f32[2]) reduce-window(a, b, ia, ib), window={size=3 stride=2}, "
      "to_apply=pair_add");
  Literal r = op.run(
      {f32({5}, {1, 2, 3, 4, 5}), f32({5}, {10, 20, 30, 40, 50}), f32({}, {0}), f32({}, {1})});
  ASSERT_TRUE(r.shape().is_tuple());
  EXPECT_EQ(values(r.elements()[0]), (std::vector<double>{6, 12}));
  EXPECT_EQ(values(r.elements()[1]), (std::vector<double>{61, 121}));
}

TEST(EvaluatorSelectAndScatter, MaxPoolGradient) {
  // Windows [1,5] [3,2] [8,4]: maxima at 1, 2 and 4 receive the source values.
  Op op(
      "p = f32[6] parameter(0)\ns = f32[3] parameter(1)\ni = f32[] parameter(2)\n"
      "ROOT r = f32[6] select-and-scatter(p, s, i), window={size=2 stride=2}, "
      "select=ge_f32, scatter=add_f32");
  EXPECT_EQ(values(op.run({f32({6}, {1, 5, 3, 2, 8, 4}), f32({3}, {10, 20, 30}), f32({}, {0})})),
            (std::vector<double>{0, 10, 20, 0, 30, 0}));
}

TEST(EvaluatorSelectAndScatter, OverlappingWindowsAccumulateAndTiesPickFirst) {
  // Windows [1,5,3] and [5,3,2] both select index 1; [2,2] ties select the first.
  Op op(
      "p = f32[4] parameter(0)\ns = f32[2] parameter(1)\ni = f32[] parameter(2)\n"
      "ROOT r = f32[4] select-and-scatter(p, s, i), window={size=3 stride=1}, "
      "select=ge_f32, scatter=add_f32");
  EXPECT_EQ(values(op.run({f32({4}, {1, 5, 3, 2}), f32({2}, {10, 20}), f32({}, {1})})),
            (std::vector<double>{1, 31, 1, 1}));
  Op ties(
      "p = f32[4] parameter(0)\ns = f32[2] parameter(1)\ni = f32[] parameter(2)\n"
      "ROOT r = f32[4] select-and-scatter(p, s, i), window={size=2 stride=2}, "
      "select=ge_f32, scatter=add_f32");
  EXPECT_EQ(values(ties.run({f32({4}, {2, 2, 7, 7}), f32({2}, {10, 20}), f32({}, {0})})),
            (std::vector<double>{10, 0, 20, 0}));
}

TEST(EvaluatorSelectAndScatter, PaddedWindows2d) {
  // 3x3 operand, 2x2 windows at stride 2 with high padding 1: four windows,
  // {1,2,4,5} {3,6} {7,8} {9}; maxima 5, 6, 8, 9.
  Op op(
      "p = f32[3,3] parameter(0)\ns = f32[2,2] parameter(1)\ni = f32[] parameter(2)\n"
      "ROOT r = f32[3,3] select-and-scatter(p, s, i), window={size=2x2 stride=2x2 "
      "pad=0_1x0_1}, select=ge_f32, scatter=add_f32");
  Literal r =
      op.run({f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), f32({2, 2}, {1, 2, 3, 4}), f32({}, {0})});
  EXPECT_EQ(values(r), (std::vector<double>{0, 0, 0, 0, 1, 2, 0, 3, 4}));
}

}  // namespace
}  // namespace podsim::ir::ops_testing
