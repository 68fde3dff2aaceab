// Instruction fusion: which groups form (loop and input fusions), what stays outside,
// the size limit, the documented output form, and identical results.
#include <gtest/gtest.h>

#include "tests/compiler/passes/fusion_contract_test_util.h"
#include "tests/compiler/passes/pass_test_util.h"
#include "tests/compiler/passes/random_module_test_util.h"

namespace podsim::passes {
namespace {

using ir::FusionKind;
using ir::Opcode;
using testing::check_pass;
using testing::count;
using testing::expect_fusion_contract;

std::string entry(const std::string& body) {
  return "HloModule m\n\nENTRY main {\n" + body + "}\n";
}

const std::string kReducers = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

)";

std::vector<const ir::Instruction*> fusions(const ir::Computation& c) {
  std::vector<const ir::Instruction*> out;
  for (const auto& i : c.instructions())
    if (i->opcode() == Opcode::kFusion) out.push_back(i.get());
  return out;
}

int64_t count_in(const ir::Computation& c, Opcode op) {
  int64_t n = 0;
  for (const auto& i : c.instructions()) n += i->opcode() == op;
  return n;
}

TEST(Fusion, ElementwiseChainBecomesOneLoopFusion) {
  auto after =
      check_pass(entry("  x = f32[4,5] parameter(0)\n  y = f32[4,5] parameter(1)\n"
                       "  a = f32[4,5] add(x, y)\n  e = f32[4,5] exponential(a)\n"
                       "  c = f32[] constant(2)\n  cb = f32[4,5] broadcast(c), dimensions={}\n"
                       "  ROOT m = f32[4,5] multiply(e, cb)\n"),
                 make_fusion());
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(after->entry()->root(), fs[0]);
  EXPECT_EQ(fs[0]->attrs().fusion_kind, FusionKind::kLoop);
  EXPECT_EQ(fs[0]->operand_count(), 2);
  const ir::Computation& body = *fs[0]->called(0);
  EXPECT_EQ(body.root()->opcode(), Opcode::kMultiply);
  EXPECT_EQ(count_in(body, Opcode::kBroadcast), 1);
  EXPECT_EQ(count_in(body, Opcode::kConstant), 1);
  EXPECT_EQ(after->entry()->instruction_count(), 3);  // x, y, fusion
  expect_fusion_contract(*after);
}

TEST(Fusion, ReduceOfElementwiseBecomesInputFusion) {
  auto after =
      check_pass(kReducers +
                     "ENTRY main {\n  x = f32[4,5] parameter(0)\n  y = f32[4,5] parameter(1)\n"
                     "  d = f32[4,5] subtract(x, y)\n  s = f32[4,5] multiply(d, d)\n"
                     "  z = f32[] constant(0)\n"
                     "  ROOT r = f32[4] reduce(s, z), dimensions={1}, to_apply=add\n}\n",
                 make_fusion());
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0]->attrs().fusion_kind, FusionKind::kInput);
  const ir::Computation& body = *fs[0]->called(0);
  EXPECT_EQ(body.root()->opcode(), Opcode::kReduce);
  EXPECT_EQ(body.root()->called(0), after->find_computation("add"));  // shared, not copied
  EXPECT_EQ(count_in(body, Opcode::kMultiply), 1);
  EXPECT_EQ(count_in(body, Opcode::kSubtract), 1);
  expect_fusion_contract(*after);
}

TEST(Fusion, ReduceWithComplexReducerIsNotInputFused) {
  const std::string text = R"(HloModule m

add_twice {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] add(a, b)
  ROOT d = f32[] add(c, b)
}

ENTRY main {
  x = f32[4,5] parameter(0)
  e = f32[4,5] exponential(x)
  n = f32[4,5] negate(e)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(n, z), dimensions={1}, to_apply=add_twice
}
)";
  auto after = check_pass(text, make_fusion());
  EXPECT_EQ(count(*after, Opcode::kReduce), 1);  // outside any fusion
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0]->attrs().fusion_kind, FusionKind::kLoop);
  expect_fusion_contract(*after);
}

TEST(Fusion, SharedExpensiveProducerIsComputedOnce) {
  // e feeds two consumers that cannot join one group (one is a dot): e must not be
  // duplicated into the other consumer's fusion.
  auto after = check_pass(
      entry("  x = f32[4,4] parameter(0)\n  e = f32[4,4] exponential(x)\n"
            "  d = f32[4,4] dot(e, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
            "  n = f32[4,4] negate(e)\n  a = f32[4,4] add(n, d)\n  ROOT t = f32[4,4] tanh(a)\n"),
      make_fusion());
  EXPECT_EQ(count(*after, Opcode::kExp), 1);
  for (const ir::Instruction* f : fusions(*after->entry()))
    EXPECT_EQ(count_in(*f->called(0), Opcode::kExp), 0);
  EXPECT_EQ(count(*after, Opcode::kDot), 1);
  expect_fusion_contract(*after);
}

TEST(Fusion, DiamondInsideOneGroup) {
  auto after = check_pass(
      entry("  x = f32[8] parameter(0)\n  e = f32[8] exponential(x)\n"
            "  a = f32[8] negate(e)\n  b = f32[8] abs(e)\n  ROOT r = f32[8] add(a, b)\n"),
      make_fusion());
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(count_in(*fs[0]->called(0), Opcode::kExp), 1);
  EXPECT_EQ(after->entry()->instruction_count(), 2);
  expect_fusion_contract(*after);
}

TEST(Fusion, CheapBroadcastIsDuplicatedIntoEachConsumer) {
  auto after = check_pass(
      entry("  x = f32[8] parameter(0)\n  y = f32[8] parameter(1)\n  b = f32[] parameter(2)\n"
            "  bb = f32[8] broadcast(b), dimensions={}\n"
            "  p = f32[8] multiply(x, bb)\n  q = f32[8] multiply(y, bb)\n"
            "  d = f32[] dot(p, q), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
            "  ep = f32[8] exponential(p)\n  eq = f32[8] exponential(q)\n"
            "  ROOT t = (f32[], f32[8], f32[8]) tuple(d, ep, eq)\n"),
      make_fusion());
  EXPECT_EQ(count(*after, Opcode::kBroadcast), 0);  // only inside fusions now
  expect_fusion_contract(*after);
}

TEST(Fusion, NeverFusesBarriers) {
  const std::string text = kReducers + R"(ENTRY main {
  x = f32[4,4] parameter(0)
  i = s32[2,1] parameter(1)
  n = f32[4,4] negate(x)
  d = f32[4,4] dot(n, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[4,4] exponential(d)
  g = f32[2,4] gather(e, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  a = f32[2,4] abs(g)
  k = s32[2,4] convert(a)
  s = s32[2,4] sort(k), dimensions={1}, to_apply=lt
  ROOT t = s32[2,4] negate(s)
}

lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
)";
  auto after = check_pass(text, make_fusion());
  EXPECT_EQ(count(*after, Opcode::kDot), 1);
  EXPECT_EQ(count(*after, Opcode::kGather), 1);
  EXPECT_EQ(count(*after, Opcode::kSort), 1);
  EXPECT_EQ(count(*after, Opcode::kFusion), 1);  // abs + convert between gather and sort
  EXPECT_EQ(count_in(*after->find_computation("lt"), Opcode::kFusion), 0);
  expect_fusion_contract(*after);
}

TEST(Fusion, CheapUnaryOfParameterIsDuplicated) {
  auto after =
      check_pass(entry("  x = s32[8] parameter(0)\n  c = f32[8] convert(x)\n"
                       "  d = f32[] dot(c, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
                       "  e = f32[8] exponential(c)\n"
                       "  ROOT t = (f32[], f32[8]) tuple(d, e)\n"),
                 make_fusion());
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(count_in(*fs[0]->called(0), Opcode::kConvert), 1);
  EXPECT_EQ(count(*after, Opcode::kConvert), 1);  // the dot still reads the original
  expect_fusion_contract(*after);
}

TEST(Fusion, RespectsMaxFusedInstructions) {
  std::string body = "  x0 = f32[16] parameter(0)\n";
  for (int k = 1; k <= 20; ++k)
    body += "  x" + std::to_string(k) + " = f32[16] " + (k % 2 ? "negate" : "exponential") + "(x" +
            std::to_string(k - 1) + ")\n";
  body += "  ROOT r = f32[16] abs(x20)\n";
  FusionOptions options;
  options.max_fused_instructions = 5;
  auto after = check_pass(entry(body), make_fusion(options));
  auto fs = fusions(*after->entry());
  EXPECT_GE(fs.size(), 4u);  // 21 ops in groups of at most 5
  for (const ir::Instruction* f : fs)
    EXPECT_LE(f->called(0)->instruction_count() - f->called(0)->parameter_count(), 5);
  expect_fusion_contract(*after, 5);
}

TEST(Fusion, FusesInsideLoopBodiesNotReducers) {
  const std::string text = R"(HloModule m

cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8] get-tuple-element(s), index=1
  e = f32[8] exponential(x)
  h = f32[] constant(0.5)
  hb = f32[8] broadcast(h), dimensions={}
  y = f32[8] multiply(e, hb)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[8]) tuple(j, y)
}

ENTRY main {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT g = f32[8] get-tuple-element(w), index=1
}
)";
  auto after = check_pass(text, make_fusion());
  EXPECT_EQ(fusions(*after->find_computation("body")).size(), 1u);
  expect_fusion_contract(*after);
}

TEST(Fusion, LeavesControlLinkedInstructionsAndExistingFusionsAlone) {
  const std::string text = R"(HloModule m

fused {
  p = f32[8] parameter(0)
  n = f32[8] negate(p)
  ROOT e = f32[8] exponential(n)
}

ENTRY main {
  x = f32[8] parameter(0)
  f = f32[8] fusion(x), kind=kLoop, calls=fused
  a = f32[8] abs(f)
  b = f32[8] negate(a), control-predecessors={f}
  ROOT t = f32[8] tanh(b)
}
)";
  auto after = check_pass(text, make_fusion());
  EXPECT_EQ(after->find_computation("fused")->instruction_count(), 3);
  EXPECT_EQ(count(*after, Opcode::kNegate), 1);  // b stays: it has a control predecessor
  expect_fusion_contract(*after, 64, {"fused"});
}

TEST(Fusion, DataMovementFusesIntoLoops) {
  auto after = check_pass(
      entry(
          "  x = f32[4,6] parameter(0)\n  y = f32[6,4] parameter(1)\n"
          "  t = f32[6,4] transpose(x), dimensions={1,0}\n  a = f32[6,4] add(t, y)\n"
          "  r = f32[24] reshape(a)\n  v = f32[24] reverse(r), dimensions={0}\n"
          "  s = f32[20] slice(v), slice={[2:22]}\n  z = f32[] constant(0)\n"
          "  p = f32[26] pad(s, z), padding=3_3\n  c = f32[46] concatenate(p, s), dimensions={0}\n"
          "  i = f32[46] iota(), iota_dimension=0\n  ROOT m = f32[46] multiply(c, i)\n"),
      make_fusion());
  auto fs = fusions(*after->entry());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(after->entry()->instruction_count(), 3);
  expect_fusion_contract(*after);
}

TEST(Fusion, SecondRunChangesNothing) {
  auto after = check_pass(
      entry(
          "  x = f32[8] parameter(0)\n  e = f32[8] exponential(x)\n  ROOT n = f32[8] negate(e)\n"),
      make_fusion());
  EXPECT_FALSE(make_fusion()->run(*after));
}

TEST(Fusion, RandomModulesKeepResults) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string text = testing::RandomModule(seed).build(40);
    FusionOptions options;
    options.max_fused_instructions = seed % 3 == 0 ? 4 : 64;
    auto after = check_pass(text, make_fusion(options), 2);
    expect_fusion_contract(*after, options.max_fused_instructions);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace podsim::passes
