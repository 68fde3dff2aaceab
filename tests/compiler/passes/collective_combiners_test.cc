// The collective combiners: independent all-reduces that reduce alike over the same
// devices become one tuple all-reduce; all-gathers (reduce-scatters) over the same
// devices become one of their data laid out device-major, whatever dimension each
// gathers (scatters); one that needs another's result, or works otherwise, stays apart;
// results are unchanged on every device.
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using testing::check_pass;
using testing::count;

constexpr const char* kModule = R"(HloModule m, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
add.1 {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] add(p, q)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[4,2] parameter(1)
  ax = f32[8] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add
  ay = f32[4,2] all-reduce(y), replica_groups={{0,1},{2,3}}, to_apply=add.1
  mx = f32[8] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=max
  wide = f32[8] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=add
  n = f32[8] negate(ax)
  an = f32[8] all-reduce(n), replica_groups={{0,1},{2,3}}, to_apply=add
  ROOT t = (f32[8], f32[4,2], f32[8], f32[8], f32[8]) tuple(ax, ay, mx, wide, an)
}
)";

TEST(AllReduceCombiner, CombinesIndependentAllReducesThatReduceAlike) {
  auto m = check_pass(kModule, make_all_reduce_combiner());
  // ax and ay (one reduction over the same pairs, in computations of their own)
  // become one; mx (another reducer), wide (other groups) and an (needs ax) stay.
  EXPECT_EQ(count(*m, ir::Opcode::kAllReduce), 4) << ir::print_module(*m);
  int tuples = 0;
  for (const auto& i : m->entry()->instructions())
    if (i->opcode() == ir::Opcode::kAllReduce && i->shape().is_tuple()) {
      ++tuples;
      EXPECT_EQ(i->operand_count(), 2);
    }
  EXPECT_EQ(tuples, 1);
  // Nothing more to combine.
  EXPECT_FALSE(make_all_reduce_combiner()->run(*m));
}

// FSDP's pattern over 4 devices in pairs: weight pieces gathered along different
// dimensions, and gradients reduce-scattered along different dimensions.
constexpr const char* kGathers = R"(HloModule m, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  w1 = f32[3,5] parameter(0)
  w2 = f32[4,2,3] parameter(1)
  b = f32[7] parameter(2)
  g1 = f32[6,5] all-gather(w1), dimensions={0}, channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true
  g2 = f32[4,4,3] all-gather(w2), dimensions={1}, channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true
  g3 = f32[14] all-gather(b), dimensions={0}, channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true
  wide = f32[12,5] all-gather(w1), dimensions={0}, channel_id=4, replica_groups={{0,1,2,3}}, use_global_device_ids=true
  n = f32[6,5] negate(g1)
  again = f32[12,5] all-gather(n), dimensions={0}, channel_id=5, replica_groups={{0,1},{2,3}}, use_global_device_ids=true
  r1 = f32[3,5] reduce-scatter(g1), dimensions={0}, channel_id=6, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  r2 = f32[4,2,3] reduce-scatter(g2), dimensions={1}, channel_id=7, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  r3 = f32[2,4,3] reduce-scatter(g2), dimensions={0}, channel_id=8, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[6,5], f32[4,4,3], f32[14], f32[12,5], f32[12,5], f32[3,5], f32[4,2,3], f32[2,4,3]) tuple(g1, g2, g3, wide, again, r1, r2, r3)
}
)";

TEST(CollectiveCombiners, IndependentGathersAndReduceScattersOverTheSameDevicesBecomeOne) {
  auto m = check_pass(kGathers, make_all_gather_combiner());
  // g1, g2, g3 become one; wide (other groups) and again (needs g1) stay.
  EXPECT_EQ(count(*m, ir::Opcode::kAllGather), 3) << ir::print_module(*m);
  EXPECT_FALSE(make_all_gather_combiner()->run(*m));
  m = check_pass(kGathers, make_reduce_scatter_combiner());
  // r1, r2 and r3 (of the gathers' results, but not of each other) become one.
  EXPECT_EQ(count(*m, ir::Opcode::kReduceScatter), 1) << ir::print_module(*m);
}

}  // namespace
}  // namespace podsim::passes
