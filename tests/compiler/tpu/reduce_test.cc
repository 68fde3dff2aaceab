// reduce on the vector unit: every subset of dims of several shapes, add / max / min,
// f32 (whole numbers, so that any summation order is exact), s32, bf16, fused inputs.
#include <fmt/format.h>

#include "tests/compiler/tpu/reduce_test_util.h"
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

// Every subset of the dims of shape.
std::vector<std::vector<int64_t>> subsets(size_t rank) {
  std::vector<std::vector<int64_t>> out;
  for (size_t mask = 0; mask < (size_t{1} << rank); ++mask) {
    std::vector<int64_t> s;
    for (size_t d = 0; d < rank; ++d)
      if (mask & (size_t{1} << d)) s.push_back(static_cast<int64_t>(d));
    out.push_back(s);
  }
  return out;
}

const std::vector<std::vector<int64_t>> kShapes = {{7}, {9, 13}, {4, 5, 6}, {3, 17, 5, 2}, {1, 19, 1}};

TEST(TpuReduce, F32SumOverEveryDimSubsetIsExactForWholeNumbers) {
  for (const auto& dims : kShapes)
    for (const auto& reduced : subsets(dims.size())) {
      Case c{reduce_module("f32", dims, reduced, "add", "3")};
      c.integral_floats = true;
      c.lo = -9;
      c.hi = 9;
      check(c);
    }
}

TEST(TpuReduce, MaxAndMinOverEveryDimSubset) {
  for (const auto& dims : kShapes)
    for (const auto& reduced : subsets(dims.size())) {
      check(Case{reduce_module("f32", dims, reduced, "maximum", "-inf")});
      check(Case{reduce_module("f32", dims, reduced, "minimum", "inf")});
    }
}

TEST(TpuReduce, IntegerReductions) {
  for (const auto& dims : kShapes)
    for (const auto& reduced : subsets(dims.size())) {
      Case c{reduce_module("s32", dims, reduced, "add", "0")};
      c.lo = -100;
      c.hi = 100;
      check(c);
      c.hlo = reduce_module("s32", dims, reduced, "maximum", "-2147483648");
      check(c);
    }
}

TEST(TpuReduce, AllAndAnyOfPredicates) {
  for (const auto& dims : kShapes)
    for (const auto& reduced : subsets(dims.size())) {
      check(Case{reduce_module("pred", dims, reduced, "and", "true")});
      check(Case{reduce_module("pred", dims, reduced, "or", "false")});
    }
}

TEST(TpuReduce, OnV5eAndV4) {
  for (const char* chip : {"v5e", "v4"})
    for (const auto& reduced : subsets(3)) {
      Case c{reduce_module("f32", {5, 130, 9}, reduced, "add", "0"), chip};
      c.integral_floats = true;
      c.lo = -9;
      c.hi = 9;
      check(c);
    }
}

TEST(TpuReduce, LargeFlatSumOfRandomFloatsWithinTheReorderingBound) {
  // N = 3001 terms in [0, 1): |error| <= N * 2^-24 * sum|x| <= 3001 * 2^-24 * 3001.
  Case c{reduce_module("f32", {3001}, {0}, "add", "0")};
  c.lo = 0;
  c.abs = 3001.0 * 3001.0 / (1 << 24);
  check(c);
}

TEST(TpuReduce, Bf16AccumulatesInF32) {
  // The evaluator rounds each bf16 partial sum; the TPU target rounds once. Whole
  // numbers below 2^8 keep every partial sum exact in bf16, so the results agree.
  Case c{reduce_module("bf16", {6, 7}, {1}, "add", "0")};
  c.integral_floats = true;
  c.lo = -4;
  c.hi = 4;
  check(c);
  check(Case{reduce_module("bf16", {6, 7, 3}, {0, 2}, "maximum", "-inf")});
}

TEST(TpuReduce, NonConstantInitAndEmptyReductions) {
  Case c{R"(HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[5,6] parameter(0)
  i = f32[] parameter(1)
  r = f32[5] reduce(x, i), dimensions={1}, to_apply=f
  y = f32[5,0] parameter(2)
  empty = f32[5] reduce(y, i), dimensions={1}, to_apply=f
  none = f32[5,6] reduce(x, i), dimensions={}, to_apply=f
  ROOT t = (f32[5], f32[5], f32[5,6]) tuple(r, empty, none)
})"};
  c.integral_floats = true;
  c.lo = -9;
  c.hi = 9;
  check(c);
}

TEST(TpuReduce, FusedInputReductionsSoftmaxDenominator) {
  Case c{R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[11,37] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[11] reduce(x, ninf), dimensions={1}, to_apply=max
  bm = f32[11,37] broadcast(m), dimensions={0}
  d = f32[11,37] subtract(x, bm)
  ex = f32[11,37] exponential(d)
  zero = f32[] constant(0)
  s = f32[11] reduce(ex, zero), dimensions={1}, to_apply=add
  bs = f32[11,37] broadcast(s), dimensions={0}
  ROOT r = f32[11,37] divide(ex, bs)
})"};
  // 37 terms in (0, 1]: the reordered sum differs by at most 37 * 2^-24 * 37
  // relative to terms of size <= 1; the quotient's relative error is about as large.
  c.rel = 37.0 * 37.0 / (1 << 24);
  c.abs = 1e-7;
  check(c);
  c.fuse = true;
  check(c);
}

}  // namespace
}  // namespace podsim::tpu::testing
