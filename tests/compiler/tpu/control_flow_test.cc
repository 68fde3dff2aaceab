// while and conditional lowered to branches, run on the functional model.
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

TEST(TpuControlFlow, WhileLoopCountsAndUpdatesState) {
  const std::string hlo = R"(HloModule m
cond {
  p = (s32[], f32[5,7]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[5,7]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[5,7] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[5,7] broadcast(h), dimensions={}
  x1 = f32[5,7] multiply(x, hb)
  c = f32[] constant(1)
  cb = f32[5,7] broadcast(c), dimensions={}
  x2 = f32[5,7] add(x1, cb)
  ROOT t = (s32[], f32[5,7]) tuple(i1, x2)
}
ENTRY e {
  x = f32[5,7] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[5,7]) tuple(zero, x)
  w = (s32[], f32[5,7]) while(t), condition=cond, body=body
  ROOT r = f32[5,7] get-tuple-element(w), index=1
})";
  check(Case{hlo});
  check(Case{hlo, "tiny", 0, 0, /*fuse=*/true});
  check(Case{hlo, "v5e"});
}

TEST(TpuControlFlow, WhileWithADotAndLoopInvariantWeights) {
  // The body returns the weights unchanged, so their state buffer is read in every
  // iteration but never rewritten: nothing inside the loop may reuse it after the dot.
  Case c{R"(HloModule m
cond {
  p = (s32[], f32[6,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[6,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[6,8] get-tuple-element(p), index=1
  w = f32[8,8] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  d = f32[6,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[6,8] tanh(d)
  ROOT t = (s32[], f32[6,8], f32[8,8]) tuple(i1, y, w)
}
ENTRY e {
  x = f32[6,8] parameter(0)
  w = f32[8,8] parameter(1)
  w2 = f32[8,8] exponential(w)
  zero = s32[] constant(0)
  t = (s32[], f32[6,8], f32[8,8]) tuple(zero, x, w2)
  l = (s32[], f32[6,8], f32[8,8]) while(t), condition=cond, body=body
  ROOT r = f32[6,8] get-tuple-element(l), index=1
})"};
  c.bf16_dots = true;
  c.rel = 1e-5;
  c.abs = 1e-6;
  check(c);
}

TEST(TpuControlFlow, WhileBodySwappingItsStateAndZeroIterations) {
  const std::string hlo = R"(HloModule m
cond {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[3] get-tuple-element(p), index=1
  b = f32[3] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[3], f32[3]) tuple(i1, b, a)
}
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  start = s32[] constant(START)
  t = (s32[], f32[3], f32[3]) tuple(start, a, b)
  ROOT l = (s32[], f32[3], f32[3]) while(t), condition=cond, body=body
})";
  for (const char* start : {"0", "1", "7"}) {  // 3, 2 and 0 iterations: odd and even swaps, no body
    std::string text = hlo;
    text.replace(text.find("START"), 5, start);
    check(Case{text});
  }
}

TEST(TpuControlFlow, NestedWhileLoops) {
  check(Case{R"(HloModule m
icond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ibody {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x1 = f32[4] add(x, x)
  ROOT t = (s32[], f32[4]) tuple(i1, x1)
}
ocond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
obody {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  zero = s32[] constant(0)
  t0 = (s32[], f32[4]) tuple(zero, x)
  inner = (s32[], f32[4]) while(t0), condition=icond, body=ibody
  y = f32[4] get-tuple-element(inner), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c = f32[] constant(1)
  cb = f32[4] broadcast(c), dimensions={}
  y1 = f32[4] subtract(y, cb)
  ROOT t = (s32[], f32[4]) tuple(i1, y1)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[4]) tuple(zero, x)
  l = (s32[], f32[4]) while(t), condition=ocond, body=obody
  ROOT r = f32[4] get-tuple-element(l), index=1
})"});
}

TEST(TpuControlFlow, ConditionalOnAPredicate) {
  const std::string hlo = R"(HloModule m
yes {
  p = f32[6] parameter(0)
  ROOT e = f32[6] exponential(p)
}
no {
  p = f32[6] parameter(0)
  ROOT n = f32[6] negate(p)
}
ENTRY e {
  x = f32[6] parameter(0)
  y = f32[6] parameter(1)
  s = f32[] parameter(2)
  zero = f32[] constant(0)
  c = pred[] compare(s, zero), direction=GT
  ROOT r = f32[6] conditional(c, x, y), true_computation=yes, false_computation=no
})";
  for (uint64_t seed : {1, 2, 3, 4}) {  // s is drawn from [-1, 1): both branches run
    Case c{hlo, "tiny", 1e-6, 0};
    c.seed = seed;
    check(c);
  }
}

TEST(TpuControlFlow, ConditionalOnABranchIndexIncludingOutOfRange) {
  const std::string hlo = R"(HloModule m
b0 {
  p = f32[5] parameter(0)
  ROOT r = f32[5] negate(p)
}
b1 {
  p = f32[5] parameter(0)
  ROOT r = f32[5] add(p, p)
}
b2 {
  p = f32[5] parameter(0)
  ROOT r = f32[5] multiply(p, p)
}
ENTRY e {
  x = f32[5] parameter(0)
  i = s32[] constant(INDEX)
  ROOT r = f32[5] conditional(i, x, x, x), branch_computations={b0, b1, b2}
})";
  for (const char* index : {"-1", "0", "1", "2", "3"}) {
    std::string text = hlo;
    text.replace(text.find("INDEX"), 5, index);
    check(Case{text});
  }
}

}  // namespace
}  // namespace podsim::tpu::testing
