// Async collectives to synchronous ones: the results stay those of the pairs (evaluated
// on every replica), and no start or done is left.
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using namespace testing;

TEST(AsyncCollectivesToSync, PairsBecomeTheirCollectivesWithTheSameResults) {
  // The all-gather start is also read for its operand (a tuple is rebuilt for it); a
  // control edge to the permute's done moves to the collective; the all-reduce's done
  // is the root.
  const std::string text = R"(HloModule m, replica_count=4
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[3,2] parameter(0)
  ags = (s32[3,2], s32[12,2]) all-gather-start(x), replica_groups={{0,1,2,3}}, dimensions={0}
  kept = s32[3,2] get-tuple-element(ags), index=0
  agd = s32[12,2] all-gather-done(ags)
  cps = (s32[3,2], s32[3,2], u32[], u32[]) collective-permute-start(kept), source_target_pairs={{0,2},{2,0},{1,3}}
  cpd = s32[3,2] collective-permute-done(cps)
  n = s32[12,2] negate(agd), control-predecessors={cpd}
  r = s32[12,2] reshape(n)
  ars = s32[3,2] all-reduce-start(cpd), replica_groups={{0,1},{2,3}}, to_apply=add
  ard = s32[3,2] all-reduce-done(ars)
  ROOT t = (s32[3,2], s32[12,2]) tuple(ard, r)
})";
  auto m = check_pass(text, make_async_collectives_to_sync());
  int collectives = 0;
  for (const auto& i : m->entry()->instructions()) {
    EXPECT_EQ(ir::collective_kind(i->opcode()), i->opcode()) << i->name();
    EXPECT_FALSE(ir::is_async_done(i->opcode())) << i->name();
    collectives += ir::is_collective(i->opcode());
  }
  EXPECT_EQ(collectives, 3);
  EXPECT_FALSE(make_async_collectives_to_sync()->run(*m)) << "nothing left to convert";
}

TEST(AsyncCollectivesToSync, GenericStartsBecomeTheOpTheyWrap) {
  // The shorthand and the generic form; an update in between; the all-to-all's start is
  // also read for its operands (a tuple of them is rebuilt).
  const std::string text = R"(HloModule m, replica_count=4
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
wrapped {
  p = s32[2] parameter(0)
  ROOT b = s32[2] collective-broadcast(p), replica_groups={{1,0,2,3}}
}
ENTRY e {
  x = s32[8] parameter(0)
  rss = ((s32[8]), s32[2]) reduce-scatter-start(x), replica_groups={}, dimensions={0}, to_apply=add
  rsu = ((s32[8]), s32[2]) reduce-scatter-update(rss)
  rsd = s32[2] reduce-scatter-done(rsu)
  a2s = ((s32[8]), s32[8], s32[]) all-to-all-start(x), dimensions={0}
  kept = (s32[8]) get-tuple-element(a2s), index=0
  k = s32[8] get-tuple-element(kept), index=0
  a2d = s32[8] all-to-all-done(a2s)
  bs = ((s32[2]), s32[2]) async-start(rsd), calls=wrapped
  bd = s32[2] async-done(bs)
  ROOT t = (s32[2], s32[8], s32[8]) tuple(bd, a2d, k)
})";
  auto m = check_pass(text, make_async_collectives_to_sync());
  int collectives = 0;
  for (const auto& i : m->entry()->instructions()) {
    EXPECT_NE(i->opcode(), ir::Opcode::kAsyncStart) << i->name();
    EXPECT_NE(i->opcode(), ir::Opcode::kAsyncUpdate) << i->name();
    EXPECT_NE(i->opcode(), ir::Opcode::kAsyncDone) << i->name();
    collectives += ir::is_collective(i->opcode());
  }
  EXPECT_EQ(collectives, 3);
  ASSERT_EQ(m->computations().size(), 2u) << "the wrapped computations went with their starts";
  EXPECT_EQ(m->computations()[0]->name(), "add");
}

}  // namespace
}  // namespace podsim::passes
