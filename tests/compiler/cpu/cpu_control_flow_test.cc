// while, conditional and call on the CPU target (nested plans) against the evaluator:
// loops with zero and several iterations, state elements passed through unchanged,
// s32 and pred selectors (out-of-range indices run the last branch), nesting, and
// fusions and dots inside bodies.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::leaves;
using testing::pointers;
using testing::random_literal;

void check(const std::string& text, const std::vector<ir::Literal>& args,
           const testing::Bound& bound = nullptr) {
  SCOPED_TRACE(text);
  std::unique_ptr<ir::Module> module = ir::parse_module(text, "<test>");
  const ir::Literal want = ir::evaluate(*module, args);
  for (bool passes : {false, true}) {
    SCOPED_TRACE(passes ? "with passes" : "without passes");
    CompileOptions options;
    options.run_passes = passes;
    const std::vector<ir::Literal> got = compile(*module, options)->run(pointers(args));
    const auto g = leaves(got), w = leaves(want);
    ASSERT_EQ(g.size(), w.size());
    for (size_t k = 0; k < g.size(); ++k)
      EXPECT_TRUE(arrays_match(*g[k], *w[k], bound, passes)) << "leaf " << k;
  }
}

constexpr const char* kLoop = R"(HloModule loop
cond {
  s = (s32[], f32[8,16], f32[16,16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=3
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,16], f32[16,16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[8,16] get-tuple-element(s), index=1
  w = f32[16,16] get-tuple-element(s), index=2
  n = s32[] get-tuple-element(s), index=3
  one = s32[] constant(1)
  j = s32[] add(i, one)
  hw = f32[8,16] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sum = f32[8,16] add(hw, h)
  half = f32[] constant(0.5)
  hb = f32[8,16] broadcast(half), dimensions={}
  scaled = f32[8,16] multiply(sum, hb)
  t = f32[8,16] tanh(scaled)
  ROOT next = (s32[], f32[8,16], f32[16,16], s32[]) tuple(j, t, w, n)
}
ENTRY main {
  h0 = f32[8,16] parameter(0)
  w = f32[16,16] parameter(1)
  n = s32[] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[16,16], s32[]) tuple(zero, h0, w, n)
  loop = (s32[], f32[8,16], f32[16,16], s32[]) while(init), condition=cond, body=body
  h = f32[8,16] get-tuple-element(loop), index=1
  i = s32[] get-tuple-element(loop), index=0
  ROOT out = (f32[8,16], s32[]) tuple(h, i)
})";

std::vector<ir::Literal> loop_args(int32_t iterations) {
  std::mt19937_64 rng(static_cast<uint64_t>(iterations) + 1);
  return {random_literal(ir::parse_shape("f32[8,16]"), rng),
          random_literal(ir::parse_shape("f32[16,16]"), rng, -0.3, 0.3),
          ir::Literal::scalar(ir::PrimitiveType::kS32, iterations)};
}

TEST(ControlFlow, WhileLoopWithDotsAndFusionsInItsBody) {
  // Each iteration: tanh((h w + h) / 2) with K = 16 terms of magnitude below 0.3 in the
  // dot: float vs double accumulation differs by at most 17 * 2^-24 * 16 * 0.3 ~ 5e-6
  // per step, and tanh and the halving do not amplify differences; 6 steps < 1e-4.
  check(kLoop, loop_args(6), [](int64_t) { return 1e-4; });
}

TEST(ControlFlow, WhileLoopThatNeverIteratesReturnsItsInitialState) { check(kLoop, loop_args(0)); }

TEST(ControlFlow, ConditionalWithIndexSelector) {
  const std::string text = R"(HloModule cond
b0 {
  x = f32[1000] parameter(0)
  ROOT n = f32[1000] negate(x)
}
b1 {
  x = f32[1000] parameter(0)
  e = f32[1000] exponential(x)
  ROOT m = f32[1000] multiply(e, x)
}
b2 {
  t = (f32[1000], s32[]) parameter(0)
  ROOT x = f32[1000] get-tuple-element(t), index=0
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[1000] parameter(1)
  k = s32[] constant(7)
  t = (f32[1000], s32[]) tuple(x, k)
  ROOT c = f32[1000] conditional(i, x, x, t), branch_computations={b0, b1, b2}
})";
  std::mt19937_64 rng(9);
  const ir::Literal x = random_literal(ir::parse_shape("f32[1000]"), rng);
  for (int32_t i : {0, 1, 2, 3, -1})
    check(text, {ir::Literal::scalar(ir::PrimitiveType::kS32, i), x});
}

TEST(ControlFlow, PredConditionalCallingALoopAndACall) {
  const std::string text = R"(HloModule nested
double {
  x = f32[300] parameter(0)
  ROOT d = f32[300] add(x, x)
}
cond {
  s = (s32[], f32[300]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
body {
  s = (s32[], f32[300]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[300] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[300] call(v), to_apply=double
  c = f32[] constant(0.25)
  cb = f32[300] broadcast(c), dimensions={}
  w = f32[300] subtract(d, cb)
  ROOT t = (s32[], f32[300]) tuple(j, w)
}
on_true {
  v = f32[300] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[300]) tuple(zero, v)
  l = (s32[], f32[300]) while(init), condition=cond, body=body
  ROOT r = f32[300] get-tuple-element(l), index=1
}
on_false {
  v = f32[300] parameter(0)
  ROOT r = f32[300] call(v), to_apply=double
}
ENTRY main {
  p = pred[] parameter(0)
  x = f32[300] parameter(1)
  ROOT c = f32[300] conditional(p, x, x), true_computation=on_true, false_computation=on_false
})";
  std::mt19937_64 rng(11);
  const ir::Literal x = random_literal(ir::parse_shape("f32[300]"), rng);
  for (bool p : {true, false}) check(text, {ir::Literal::scalar(ir::PrimitiveType::kPred, p), x});
}

}  // namespace
}  // namespace podsim::cpu
