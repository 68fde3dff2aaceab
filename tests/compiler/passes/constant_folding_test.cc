// Constant folding: what folds, what must not, and that folded modules give the same
// results as the originals.
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using ir::Opcode;
using testing::check_pass;
using testing::count;

std::string entry(const std::string& body) {
  return "HloModule m\n\nENTRY main {\n" + body + "}\n";
}

TEST(ConstantFolding, FoldsElementwiseOfConstants) {
  auto after =
      check_pass(entry("  a = s32[3] constant({1, 2, 3})\n  b = s32[3] constant({10, 20, 30})\n"
                       "  ROOT r = s32[3] add(a, b)\n"),
                 make_constant_folding());
  const ir::Instruction* root = after->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kConstant);
  // 1+10, 2+20, 3+30.
  EXPECT_EQ(root->attrs().literal->to_string(), "{11, 22, 33}");
  EXPECT_EQ(after->entry()->instruction_count(), 1);  // the operands went too
}

TEST(ConstantFolding, FoldsChainsInOneRun) {
  auto after = check_pass(
      entry("  x = f32[2] parameter(0)\n  a = f32[2] constant({1.5, -2})\n"
            "  n = f32[2] negate(a)\n  e = f32[2] exponential(n)\n  ROOT r = f32[2] add(x, e)\n"),
      make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kNegate), 0);
  EXPECT_EQ(count(*after, Opcode::kExp), 0);
  EXPECT_EQ(count(*after, Opcode::kAdd), 1);
}

TEST(ConstantFolding, FoldsReduceDotAndShapeOps) {
  const std::string text = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  x = f32[2] parameter(0)
  m = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  t = f32[3,2] transpose(m), dimensions={1,0}
  d = f32[2,2] dot(m, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  s = f32[2] reduce(d, z), dimensions={1}, to_apply=add
  ROOT r = f32[2] add(x, s)
}
)";
  auto after = check_pass(text, make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kDot), 0);
  EXPECT_EQ(count(*after, Opcode::kReduce), 0);
  const ir::Instruction* s = after->entry()->root()->operand(1);
  ASSERT_EQ(s->opcode(), Opcode::kConstant);
  // m m^T = {{14, 32}, {32, 77}}; row sums 46 and 109.
  EXPECT_EQ(s->attrs().literal->to_string(), "{46, 109}");
}

TEST(ConstantFolding, KeepsBroadcastOfScalarConstant) {
  auto after = check_pass(
      entry("  c = f32[] constant(2)\n  ROOT b = f32[512,512] broadcast(c), dimensions={}\n"),
      make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kBroadcast), 1);
}

TEST(ConstantFolding, FoldsSmallIotaOnly) {
  auto small =
      check_pass(entry("  ROOT i = s32[4,8] iota(), iota_dimension=1\n"), make_constant_folding());
  EXPECT_EQ(count(*small, Opcode::kIota), 0);
  auto large = check_pass(entry("  ROOT i = s32[64,64] iota(), iota_dimension=0\n"),
                          make_constant_folding(), 1);
  EXPECT_EQ(count(*large, Opcode::kIota), 1);
}

TEST(ConstantFolding, LeavesHugeResultsAlone) {
  // pad grows 1 element to 2^21 + 1 (over the 2^20 limit).
  auto after = check_pass(entry("  c = f32[1] constant({3})\n  z = f32[] constant(0)\n"
                                "  ROOT p = f32[2097153] pad(c, z), padding=0_2097152\n"),
                          make_constant_folding(), 1);
  EXPECT_EQ(count(*after, Opcode::kPad), 1);
}

TEST(ConstantFolding, LeavesNonPureAndDeviceDependentOpsAlone) {
  const std::string text = R"(HloModule m, replica_count=2

add {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT c = u32[] add(a, b)
}

ENTRY main {
  seed = u64[2] constant({1, 2})
  rng = (u64[2], u32[4]) rng-bit-generator(seed), algorithm=rng_three_fry
  bits = u32[4] get-tuple-element(rng), index=1
  id = u32[] replica-id()
  one = u32[] constant(1)
  sum = u32[] all-reduce(one), replica_groups={}, to_apply=add
  idb = u32[4] broadcast(id), dimensions={}
  sb = u32[4] broadcast(sum), dimensions={}
  a = u32[4] add(bits, idb)
  ROOT r = u32[4] add(a, sb)
}
)";
  auto after = check_pass(text, make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kRngBitGenerator), 1);
  EXPECT_EQ(count(*after, Opcode::kReplicaId), 1);
  EXPECT_EQ(count(*after, Opcode::kAllReduce), 1);
}

TEST(ConstantFolding, LeavesWhileWithConstantInputAlone) {
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
  z = s32[] constant(0)
  ROOT w = s32[] while(z), condition=cond, body=body
}
)";
  auto after = check_pass(text, make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kWhile), 1);
}

TEST(ConstantFolding, FoldsInsideCalledComputations) {
  const std::string text = R"(HloModule m

branch {
  p = f32[2] parameter(0)
  a = f32[2] constant({1, 2})
  b = f32[2] multiply(a, a)
  ROOT r = f32[2] add(p, b)
}

ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] call(x), to_apply=branch
}
)";
  auto after = check_pass(text, make_constant_folding());
  EXPECT_EQ(count(*after, Opcode::kMultiply), 0);
}

TEST(ConstantFolding, KeepsDivisionSemanticsOfTheEvaluator) {
  // Integer division by zero and overflow have defined results in the IR; folding
  // uses exactly those.
  auto after = check_pass(
      entry("  a = s32[3] constant({7, -2147483648, 5})\n  b = s32[3] constant({0, -1, 2})\n"
            "  ROOT r = s32[3] divide(a, b)\n"),
      make_constant_folding());
  EXPECT_EQ(after->entry()->root()->opcode(), Opcode::kConstant);
}

TEST(ConstantFolding, SecondRunChangesNothing) {
  auto after = check_pass(entry("  a = f32[2] constant({1, 2})\n  ROOT r = f32[2] sqrt(a)\n"),
                          make_constant_folding());
  EXPECT_FALSE(make_constant_folding()->run(*after));
}

}  // namespace
}  // namespace podsim::passes
