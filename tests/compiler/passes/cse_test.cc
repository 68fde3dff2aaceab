// Common-subexpression elimination: identical instructions merge, anything that differs
// in opcode, operands, attributes, shape, layout or called computation does not, and
// side-effecting or random instructions never merge.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using ir::Opcode;
using testing::check_pass;
using testing::count;

std::string entry(const std::string& body) {
  return "HloModule m\n\nENTRY main {\n" + body + "}\n";
}

TEST(Cse, MergesIdenticalInstructionsAndTheirUsers) {
  auto after = check_pass(entry("  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n"
                                "  a = f32[4] add(x, y)\n  b = f32[4] add(x, y)\n"
                                "  ea = f32[4] exponential(a)\n  eb = f32[4] exponential(b)\n"
                                "  ROOT r = f32[4] multiply(ea, eb)\n"),
                          make_cse());
  EXPECT_EQ(count(*after, Opcode::kAdd), 1);
  EXPECT_EQ(count(*after, Opcode::kExp), 1);
  const ir::Instruction* root = after->entry()->root();
  EXPECT_EQ(root->operand(0), root->operand(1));
}

TEST(Cse, OperandOrderMatters) {
  auto after = check_pass(entry("  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n"
                                "  a = f32[4] subtract(x, y)\n  b = f32[4] subtract(y, x)\n"
                                "  ROOT r = (f32[4], f32[4]) tuple(a, b)\n"),
                          make_cse());
  EXPECT_EQ(count(*after, Opcode::kSubtract), 2);
}

TEST(Cse, MergesEqualConstantsOnly) {
  auto after = check_pass(
      entry("  a = f32[2] constant({1, 2})\n  b = f32[2] constant({1, 2})\n"
            "  c = f32[2] constant({1, 3})\n  z = f32[] constant(0)\n  nz = f32[] constant(-0)\n"
            "  ROOT r = (f32[2], f32[2], f32[2], f32[], f32[]) tuple(a, b, c, z, nz)\n"),
      make_cse());
  // a and b merge; c differs in one element; +0 and -0 differ in bits.
  EXPECT_EQ(count(*after, Opcode::kConstant), 4);
}

TEST(Cse, AttributesShapesAndLayoutsMustMatch) {
  auto after = check_pass(entry("  x = f32[3] parameter(0)\n"
                                "  a = f32[3,3] broadcast(x), dimensions={0}\n  b = f32[3,3] "
                                "broadcast(x), dimensions={1}\n"
                                "  c = f32[3,3]{1,0} broadcast(x), dimensions={0}\n  d = "
                                "f32[3,3]{0,1} broadcast(x), dimensions={0}\n"
                                "  e = s32[3] convert(x)\n  f = u32[3] convert(x)\n"
                                "  ROOT r = (f32[3,3], f32[3,3], f32[3,3], f32[3,3], s32[3], "
                                "u32[3]) tuple(a, b, c, d, e, f)\n"),
                          make_cse());
  // Every broadcast differs from the others in dimensions or in (the presence of) a layout.
  EXPECT_EQ(count(*after, Opcode::kBroadcast), 4);
  EXPECT_EQ(count(*after, Opcode::kConvert), 2);
}

TEST(Cse, CalledComputationsMustMatch) {
  const std::string text = R"(HloModule m

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

ENTRY main {
  x = f32[4,5] parameter(0)
  z = f32[] constant(0)
  s1 = f32[4] reduce(x, z), dimensions={1}, to_apply=add
  s2 = f32[4] reduce(x, z), dimensions={1}, to_apply=add
  m = f32[4] reduce(x, z), dimensions={1}, to_apply=max
  ROOT r = (f32[4], f32[4], f32[4]) tuple(s1, s2, m)
}
)";
  auto after = check_pass(text, make_cse());
  EXPECT_EQ(count(*after, Opcode::kReduce), 2);
}

TEST(Cse, NeverMergesRandomOrSideEffectingInstructions) {
  ir::register_custom_call(
      "cse_test_identity",
      [](const ir::Instruction&, std::span<const ir::Literal* const> ops) { return *ops[0]; });
  const std::string text = R"(HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  seed = u64[2] parameter(1)
  r1 = (u64[2], u32[4]) rng-bit-generator(seed), algorithm=rng_philox
  r2 = (u64[2], u32[4]) rng-bit-generator(seed), algorithm=rng_philox
  c1 = f32[4] custom-call(x), custom_call_target="cse_test_identity", custom_call_has_side_effect=true
  c2 = f32[4] custom-call(x), custom_call_target="cse_test_identity", custom_call_has_side_effect=true
  a1 = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  a2 = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ROOT r = ((u64[2], u32[4]), (u64[2], u32[4]), f32[4], f32[4], f32[4], f32[4]) tuple(r1, r2, c1, c2, a1, a2)
}
)";
  auto after = check_pass(text, make_cse());
  EXPECT_EQ(count(*after, Opcode::kRngBitGenerator), 2);
  EXPECT_EQ(count(*after, Opcode::kCustomCall), 2);
  EXPECT_EQ(count(*after, Opcode::kAllReduce), 2);
}

TEST(Cse, WorksInsideCalledComputationsButNotFusionBodies) {
  const std::string text = R"(HloModule m

branch {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] negate(p)
  ROOT r = f32[4] add(a, b)
}

fused {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] negate(p)
  ROOT r = f32[4] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  c = f32[4] call(x), to_apply=branch
  ROOT f = f32[4] fusion(c), kind=kLoop, calls=fused
}
)";
  auto after = check_pass(text, make_cse());
  EXPECT_EQ(after->find_computation("branch")->instruction_count(), 3);
  EXPECT_EQ(after->find_computation("fused")->instruction_count(), 4);
}

TEST(Cse, SecondRunChangesNothing) {
  auto after =
      check_pass(entry("  x = s32[4] parameter(0)\n  a = s32[4] negate(x)\n  b = s32[4] negate(x)\n"
                       "  ROOT r = s32[4] add(a, b)\n"),
                 make_cse());
  EXPECT_FALSE(make_cse()->run(*after));
}

// 100k copies of the same few instructions: a quadratic CSE would take minutes.
TEST(Cse, LinearInTheNumberOfInstructions) {
  std::string body = "  x = f32[2] parameter(0)\n  acc0 = f32[2] negate(x)\n";
  const int n = 50000;
  for (int k = 1; k <= n; ++k) {
    body += "  c" + std::to_string(k) + " = f32[2] constant({1, 2})\n";
    body += "  acc" + std::to_string(k) + " = f32[2] add(acc" + std::to_string(k - 1) + ", c" +
            std::to_string(k) + ")\n";
  }
  body += "  ROOT r = f32[2] copy(acc" + std::to_string(n) + ")\n";
  auto module = ir::parse_module(entry(body));
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(make_cse()->run(*module));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(count(*module, Opcode::kConstant), 1);
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace podsim::passes
