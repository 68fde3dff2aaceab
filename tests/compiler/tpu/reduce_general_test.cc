// reduce with reducers the cross-lane units cannot fold, on the functional model against
// the reference evaluator: variadic argmax / argmin (index-aware comparators as XLA and
// the lazy runtime emit them, and "first extreme wins" comparators that ignore the index,
// so that only reducing in index order gives the evaluator's answer), over every subset
// of dims, with ties and NaNs; three operands; multiply / and / or / xor reducers;
// init values that are parameters; empty reductions and reductions of no dims; fused
// operands; several chips.
#include <fmt/format.h>

#include <limits>

#include "tests/compiler/tpu/reduce_test_util.h"
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

using ir::PrimitiveType;

std::vector<std::vector<int64_t>> subsets(size_t rank) {
  std::vector<std::vector<int64_t>> out;
  for (size_t mask = 1; mask < (size_t{1} << rank); ++mask) {
    std::vector<int64_t> s;
    for (size_t d = 0; d < rank; ++d)
      if (mask & (size_t{1} << d)) s.push_back(static_cast<int64_t>(d));
    out.push_back(s);
  }
  return out;
}

enum class Comparator {
  kIndexAware,  // ties go to the lower index (XLA's and the lazy runtime's argmax)
  kFirstWins,   // ties keep the accumulated pair: right only in index order
};

// The reducer of (value, index) pairs: the larger (smaller) value wins, NaN beats any
// number; ties as `cmp` says.
std::string arg_reducer(const std::string& type, bool is_max, Comparator cmp) {
  const char* dir = is_max ? "GT" : "LT";
  std::string body = fmt::format(R"(arg {{
  va = {0}[] parameter(0)
  ia = s32[] parameter(1)
  vb = {0}[] parameter(2)
  ib = s32[] parameter(3)
  better = pred[] compare(va, vb), direction={1}
  nan_a = pred[] compare(va, va), direction=NE
  nan_b = pred[] compare(vb, vb), direction=NE
  not_nan_b = pred[] not(nan_b)
  only_a_nan = pred[] and(nan_a, not_nan_b)
  wins = pred[] or(better, only_a_nan)
)",
                                 type, dir);
  if (cmp == Comparator::kIndexAware) {
    body += R"(  eq = pred[] compare(va, vb), direction=EQ
  both_nan = pred[] and(nan_a, nan_b)
  equal = pred[] or(eq, both_nan)
  lower = pred[] compare(ia, ib), direction=LT
  tie = pred[] and(equal, lower)
  take_a = pred[] or(wins, tie)
)";
  } else {
    // a is kept unless b is strictly better (or b is the first NaN).
    body += fmt::format(R"(  b_better = pred[] compare(vb, va), direction={0}
  not_nan_a = pred[] not(nan_a)
  only_b_nan = pred[] and(nan_b, not_nan_a)
  b_wins = pred[] or(b_better, only_b_nan)
  take_a = pred[] not(b_wins)
)",
                        dir);
  }
  body += fmt::format(R"(  v = {0}[] select(take_a, va, vb)
  i = s32[] select(take_a, ia, ib)
  ROOT r = ({0}[], s32[]) tuple(v, i)
}}
)",
                      type);
  return body;
}

std::string arg_module(const std::string& type, const std::vector<int64_t>& dims, const std::vector<int64_t>& reduced,
                       bool is_max, Comparator cmp) {
  std::string init = type == "s32" ? (is_max ? "-2147483648" : "2147483647") : (is_max ? "-inf" : "inf");
  std::vector<int64_t> kept = kept_dims(dims, reduced);
  return fmt::format(R"(HloModule m
{0}
ENTRY e {{
  x = {1}[{2}] parameter(0)
  io = s32[{2}] iota(), iota_dimension={3}
  init = {1}[] constant({4})
  none = s32[] constant(2147483647)
  ROOT r = ({1}[{5}], s32[{5}]) reduce(x, io, init, none), dimensions={{{6}}}, to_apply=arg
}})",
                     arg_reducer(type, is_max, cmp), type, join(dims), reduced.back(), init, join(kept), join(reduced));
}

// Small whole numbers (many ties) with about nan_fraction NaNs.
ir::Literal tied_values(const ir::Shape& shape, std::mt19937_64& rng, double nan_fraction) {
  ir::Literal l = random_literal(shape, rng, -3, 3, true);
  if (ir::is_float(shape.type()))
    for (int64_t i = 0; i < l.num_elements(); ++i)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < nan_fraction)
        l.set_from_double(i, std::numeric_limits<double>::quiet_NaN());
  return l;
}

// Compiles (after the default passes when fuse), runs and compares every output with
// the evaluator, exactly.
void check_exact(const std::string& hlo, const std::string& chip, const std::vector<ir::Literal>& args,
                 bool fuse = false) {
  SCOPED_TRACE(hlo + " on " + chip);
  auto reference = ir::parse_module(hlo);
  std::vector<ir::Literal> expected;
  flatten_into(ir::evaluate(*reference, args), expected);
  isa::Executable exe = compile_text(hlo, chip, fuse);
  std::vector<ir::Literal> actual = run_executable(exe, args, flat_shapes(reference->entry()->root()->shape()));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) EXPECT_TRUE(near(actual[k], expected[k], 0, 0)) << "output " << k;
}

void check_arg(const std::string& type, const std::vector<int64_t>& dims, const std::vector<int64_t>& reduced,
               bool is_max, Comparator cmp, const std::string& chip, uint64_t seed, double nan_fraction) {
  std::string hlo = arg_module(type, dims, reduced, is_max, cmp);
  std::mt19937_64 rng(seed);
  PrimitiveType t = type == "f32" ? PrimitiveType::kF32 : type == "bf16" ? PrimitiveType::kBF16 : PrimitiveType::kS32;
  check_exact(hlo, chip, {tied_values(ir::Shape(t, dims), rng, nan_fraction)});
}

const std::vector<std::vector<int64_t>> kShapes = {{7}, {9, 13}, {4, 5, 6}, {3, 17, 5, 2}, {1, 19, 1}};

TEST(TpuReduceGeneral, ArgmaxAndArgminOverEveryDimSubsetWithTiesAndNans) {
  uint64_t seed = 1;
  for (const char* type : {"f32", "bf16", "s32"})
    for (const auto& dims : kShapes)
      for (const auto& reduced : subsets(dims.size()))
        for (bool is_max : {true, false})
          for (Comparator cmp : {Comparator::kIndexAware, Comparator::kFirstWins})
            check_arg(type, dims, reduced, is_max, cmp, "tiny", seed++, 0.1);
}

TEST(TpuReduceGeneral, ArgmaxOnLargeRowsColumnsAndFlatOnV5e) {
  // Not multiples of the 8 x 128 registers: blocks of several steps per position, steps
  // that fill one position fewer, outer reduced groups.
  struct Shape {
    std::vector<int64_t> dims, reduced;
  };
  const std::vector<Shape> shapes = {{{5, 1000}, {1}}, {{1000, 7}, {0}}, {{3001}, {0}},
                                     {{3, 300, 5}, {0, 1}}, {{2, 130, 3}, {0, 2}}, {{9, 1025}, {1}}};
  uint64_t seed = 100;
  for (const Shape& s : shapes)
    for (Comparator cmp : {Comparator::kIndexAware, Comparator::kFirstWins}) {
      check_arg("f32", s.dims, s.reduced, true, cmp, "v5e", seed++, 0.001);
      check_arg("s32", s.dims, s.reduced, false, cmp, "v5e", seed++, 0);
    }
}

TEST(TpuReduceGeneral, AllNanRowsAndSingleNanPickTheFirstNan) {
  std::string hlo = arg_module("f32", {4, 9}, {1}, true, Comparator::kIndexAware);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  ir::Literal x = literal<double>(PrimitiveType::kF32, {4, 9},
                                  {nan, nan, nan, nan, nan, nan, nan, nan, nan,  //
                                   1,   2,   nan, 3,   nan, 2,   1,   0,   9,    //
                                   -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf,
                                   5,   5,   5,   5,   5,   5,   5,   5,   5});
  check_exact(hlo, "tiny", {x});
  // By hand: first NaN of row 0 is 0, of row 1 is 2; row 2 all -inf: index 0 (ties with
  // the init go to the lower index); row 3: index 0.
  auto reference = ir::parse_module(hlo);
  std::vector<ir::Literal> out =
      run_executable(compile_text(hlo, "tiny"), {x}, flat_shapes(reference->entry()->root()->shape()));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].get_as_int64(0), 0);
  EXPECT_EQ(out[1].get_as_int64(1), 2);
  EXPECT_EQ(out[1].get_as_int64(2), 0);
  EXPECT_EQ(out[1].get_as_int64(3), 0);
}

TEST(TpuReduceGeneral, ThreeOperandsMaxWithItsIndexAndASecondPayload) {
  std::string hlo = R"(HloModule m
f {
  va = f32[] parameter(0)
  ia = s32[] parameter(1)
  ca = s32[] parameter(2)
  vb = f32[] parameter(3)
  ib = s32[] parameter(4)
  cb = s32[] parameter(5)
  gt = pred[] compare(va, vb), direction=GT
  eq = pred[] compare(va, vb), direction=EQ
  lt = pred[] compare(ia, ib), direction=LT
  tie = pred[] and(eq, lt)
  take_a = pred[] or(gt, tie)
  v = f32[] select(take_a, va, vb)
  i = s32[] select(take_a, ia, ib)
  count = s32[] add(ca, cb)
  ROOT r = (f32[], s32[], s32[]) tuple(v, i, count)
}
ENTRY e {
  x = f32[6,45] parameter(0)
  io = s32[6,45] iota(), iota_dimension=1
  one = s32[] constant(1)
  ones = s32[6,45] broadcast(one), dimensions={}
  init = f32[] constant(-inf)
  none = s32[] constant(2147483647)
  zero = s32[] constant(0)
  ROOT r = (f32[6], s32[6], s32[6]) reduce(x, io, ones, init, none, zero), dimensions={1}, to_apply=f
})";
  std::mt19937_64 rng(7);
  check_exact(hlo, "tiny", {tied_values(ir::Shape(PrimitiveType::kF32, {6, 45}), rng, 0)});
}

TEST(TpuReduceGeneral, MultiplyAndBitwiseReducersOverEveryDimSubset) {
  uint64_t seed = 1000;
  for (const auto& dims : kShapes)
    for (const auto& reduced : subsets(dims.size())) {
      // Products of +-1 and +-2 are exact in any order (or overflow to inf in every order).
      std::mt19937_64 rng(seed++);
      ir::Literal x(ir::Shape(PrimitiveType::kF32, dims));
      const double choices[] = {-2, -1, 1, 2};
      for (int64_t k = 0; k < x.num_elements(); ++k)
        x.set_from_double(k, choices[std::uniform_int_distribution<int>(0, 3)(rng)]);
      check_exact(reduce_module("f32", dims, reduced, "multiply", "1"), "tiny", {x});
      // Integer products wrap, which is associative.
      ir::Literal n = random_literal(ir::Shape(PrimitiveType::kS32, dims), rng, -1000, 1000);
      check_exact(reduce_module("s32", dims, reduced, "multiply", "3"), "tiny", {n});
      check_exact(reduce_module("s32", dims, reduced, "and", "-1"), "tiny", {n});
      check_exact(reduce_module("s32", dims, reduced, "or", "0"), "tiny", {n});
      check_exact(reduce_module("s32", dims, reduced, "xor", "5"), "tiny", {n});
    }
}

TEST(TpuReduceGeneral, ParameterInitsEmptyReductionsAndNoReducedDims) {
  std::string hlo = arg_reducer("f32", true, Comparator::kIndexAware);
  hlo = "HloModule m\n" + hlo + R"(
ENTRY e {
  x = f32[5,6] parameter(0)
  v0 = f32[] parameter(1)
  i0 = s32[] parameter(2)
  io = s32[5,6] iota(), iota_dimension=1
  r = (f32[5], s32[5]) reduce(x, io, v0, i0), dimensions={1}, to_apply=arg
  y = f32[5,0] parameter(3)
  yio = s32[5,0] iota(), iota_dimension=1
  empty = (f32[5], s32[5]) reduce(y, yio, v0, i0), dimensions={1}, to_apply=arg
  none = (f32[5,6], s32[5,6]) reduce(x, io, v0, i0), dimensions={}, to_apply=arg
  r0 = f32[5] get-tuple-element(r), index=0
  r1 = s32[5] get-tuple-element(r), index=1
  e0 = f32[5] get-tuple-element(empty), index=0
  e1 = s32[5] get-tuple-element(empty), index=1
  n0 = f32[5,6] get-tuple-element(none), index=0
  n1 = s32[5,6] get-tuple-element(none), index=1
  ROOT t = (f32[5], s32[5], f32[5], s32[5], f32[5,6], s32[5,6]) tuple(r0, r1, e0, e1, n0, n1)
})";
  std::mt19937_64 rng(3);
  ir::Literal x = tied_values(ir::Shape(PrimitiveType::kF32, {5, 6}), rng, 0.1);
  // The init value 1 beats some rows' elements and ties others (index 3 is then lower or
  // higher than the element's).
  ir::Literal v0 = literal<double>(PrimitiveType::kF32, {}, {1});
  ir::Literal i0 = literal<int64_t>(PrimitiveType::kS32, {}, {3});
  ir::Literal y(ir::Shape(PrimitiveType::kF32, {5, 0}));
  check_exact(hlo, "tiny", {x, v0, i0, y});
}

TEST(TpuReduceGeneral, FusedOperandsAfterThePasses) {
  std::string hlo = "HloModule m\n" + arg_reducer("f32", false, Comparator::kIndexAware) + R"(
ENTRY e {
  x = f32[7,50] parameter(0)
  b = f32[7,50] parameter(1)
  s = f32[7,50] multiply(x, b)
  io = s32[7,50] iota(), iota_dimension=1
  init = f32[] constant(inf)
  none = s32[] constant(2147483647)
  r = (f32[7], s32[7]) reduce(s, io, init, none), dimensions={1}, to_apply=arg
  ROOT i = s32[7] get-tuple-element(r), index=1
})";
  std::mt19937_64 rng(11);
  ir::Shape shape(PrimitiveType::kF32, {7, 50});
  std::vector<ir::Literal> args = {tied_values(shape, rng, 0.05), tied_values(shape, rng, 0)};
  check_exact(hlo, "tiny", args, true);
  check_exact(hlo, "v4", args, true);
}

TEST(TpuReduceGeneral, ReducersThatAreNotElementwiseAreNamed) {
  std::string hlo = R"(HloModule m
g {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] call(a, b), to_apply=g
}
ENTRY e {
  x = f32[4,5] parameter(0)
  i = f32[] constant(0)
  ROOT r = f32[4] reduce(x, i), dimensions={1}, to_apply=f
})";
  std::string message = error_of([&] { compile_text(hlo, "tiny"); });
  EXPECT_NE(message.find("not supported on the TPU target: reduce"), std::string::npos) << message;
  EXPECT_NE(message.find("only elementwise ops on scalars"), std::string::npos) << message;
}

}  // namespace
}  // namespace podsim::tpu::testing
