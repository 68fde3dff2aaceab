// Dead-code elimination: unused instructions and computations go; roots, parameters,
// side effects and the entry stay.
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using ir::Opcode;
using testing::check_pass;
using testing::count;

TEST(Dce, RemovesUnusedInstructionsButKeepsParameters) {
  const std::string text = R"(HloModule m

ENTRY main {
  x = f32[4] parameter(0)
  unused = f32[4] parameter(1)
  a = f32[4] exponential(x)
  b = f32[4] negate(a)
  dead = f32[4] add(a, b)
  ROOT r = f32[4] sqrt(a)
}
)";
  auto after = check_pass(text, make_dce());
  EXPECT_EQ(after->entry()->instruction_count(), 4);  // x, unused, a, r
  EXPECT_EQ(after->entry()->parameter_count(), 2);
  EXPECT_EQ(count(*after, Opcode::kNegate), 0);
  EXPECT_FALSE(make_dce()->run(*after));
}

TEST(Dce, KeepsSideEffectsAndWhatTheyUse) {
  ir::register_custom_call(
      "dce_test_sink",
      [](const ir::Instruction&, std::span<const ir::Literal* const> ops) { return *ops[0]; });
  const std::string text = R"(HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

effect {
  p = f32[4] parameter(0)
  ROOT s = f32[4] custom-call(p), custom_call_target="dce_test_sink", custom_call_has_side_effect=true
}

ENTRY main {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  sink = f32[4] custom-call(n), custom_call_target="dce_test_sink", custom_call_has_side_effect=true
  pure = f32[4] custom-call(x), custom_call_target="dce_test_sink"
  sum = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  called = f32[4] call(x), to_apply=effect
  ROOT r = f32[4] abs(x)
}
)";
  auto after = check_pass(text, make_dce());
  // The side-effecting custom-call (and the negate it reads), the all-reduce and the
  // call of a computation with a side effect stay; the pure custom-call goes.
  EXPECT_EQ(count(*after, Opcode::kCustomCall), 2);  // in main and in effect
  EXPECT_EQ(count(*after, Opcode::kNegate), 1);
  EXPECT_EQ(count(*after, Opcode::kAllReduce), 1);
  EXPECT_EQ(count(*after, Opcode::kCall), 1);
  EXPECT_NE(after->find_computation("effect"), nullptr);
}

TEST(Dce, RemovesComputationsNothingCalls) {
  const std::string text = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

never_called {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}

ENTRY main {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  dead = f32[] reduce(x, z), dimensions={0}, to_apply=add
  ROOT r = f32[4] negate(x)
}
)";
  auto after = check_pass(text, make_dce());
  EXPECT_EQ(after->computations().size(), 1u);
  EXPECT_EQ(after->entry()->name(), "main");
}

TEST(Dce, KeepsCalledComputationsAndTheirParameters) {
  const std::string text = R"(HloModule m

add_first {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  unused = f32[] multiply(a, b)
  ROOT c = f32[] add(a, a)
}

ENTRY main {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[] reduce(x, z), dimensions={0}, to_apply=add_first
}
)";
  auto after = check_pass(text, make_dce());
  const ir::Computation* reducer = after->find_computation("add_first");
  ASSERT_NE(reducer, nullptr);
  EXPECT_EQ(reducer->parameter_count(), 2);
  EXPECT_EQ(reducer->instruction_count(), 3);
}

TEST(Dce, RemovesDeadWhileAndItsComputations) {
  const std::string text = R"(HloModule m

cond {
  s = s32[] parameter(0)
  n = s32[] constant(5)
  ROOT lt = pred[] compare(s, n), direction=LT
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(s, one)
}

ENTRY main {
  x = s32[] parameter(0)
  z = s32[] constant(0)
  w = s32[] while(z), condition=cond, body=body
  ROOT r = s32[] negate(x)
}
)";
  auto after = check_pass(text, make_dce());
  EXPECT_EQ(count(*after, Opcode::kWhile), 0);
  EXPECT_EQ(after->computations().size(), 1u);
}

}  // namespace
}  // namespace podsim::passes
