// The all-reduce combiner: independent all-reduces that reduce alike over the same
// devices become one tuple all-reduce; one that needs another's result, or reduces
// otherwise, stays apart; results are unchanged on every device.
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

}  // namespace
}  // namespace podsim::passes
