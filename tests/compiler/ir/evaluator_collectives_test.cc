// Collectives of the reference evaluator over several devices (evaluate_spmd): group
// formation from replica_groups / channel_id / use_global_device_ids, the order of
// reduction, the data movement of each collective, and mismatched collectives failing
// fast instead of hanging. Expected values are derived by hand from the inputs.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include "tests/compiler/ir/evaluator_test_util.h"

namespace podsim::ir {
namespace {

using namespace testing_util;

std::vector<std::vector<Literal>> per_device(int devices, const std::function<std::vector<Literal>(int)>& args) {
  std::vector<std::vector<Literal>> out;
  for (int d = 0; d < devices; ++d) out.push_back(args(d));
  return out;
}

Literal s32_vec(std::vector<int32_t> v) { return vec<int32_t>(PrimitiveType::kS32, v); }

const char* const kSum = R"(
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
)";

std::string module(const std::string& header, const std::string& entry) {
  return "HloModule m, " + header + "\n" + kSum + entry;
}

TEST(EvaluatorCollectives, AllReduceOverAllReplicasAndSubgroups) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[2] parameter(0)
  all = s32[2] all-reduce(x), replica_groups={}, to_apply=sum
  pairs = s32[2] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=sum
  ROOT t = (s32[2], s32[2]) tuple(all, pairs)
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d, 10 * d})}; }));
  ASSERT_EQ(out.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{6, 60}));
    // {0,1}: 0 + 1; {2,3}: 2 + 3.
    int32_t pair = d < 2 ? 1 : 5;
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]), (std::vector<int32_t>{pair, 10 * pair}));
  }
}

TEST(EvaluatorCollectives, AllReduceCombinesInTheGroupsListedOrder) {
  // lin(a, b) = 2a + b is not commutative and not a single op, so it runs through the
  // called computation; subtract takes the whole-array path. Both fold left in the
  // order the group lists its devices: x_d = d + 1 and group {3, 2, 1, 0} gives
  // lin(lin(lin(4, 3), 2), 1) = 2 * (2 * (2 * 4 + 3) + 2) + 1 = 49; group {3, 1, 2, 0}
  // gives ((4 - 2) - 3) - 1 = -2.
  const std::string text = module("replica_count=4", R"(
lin {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  two = s32[] constant(2)
  twice = s32[] multiply(a, two)
  ROOT s = s32[] add(twice, b)
}
minus {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] subtract(a, b)
}
ENTRY main {
  x = s32[1] parameter(0)
  l = s32[1] all-reduce(x), replica_groups={{3,2,1,0}}, to_apply=lin
  m = s32[1] all-reduce(x), replica_groups={{3,1,2,0}}, to_apply=minus
  ROOT t = (s32[1], s32[1]) tuple(l, m)
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d + 1})}; }));
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{49}));
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]), (std::vector<int32_t>{-2}));
  }
}

TEST(EvaluatorCollectives, IotaReplicaGroups) {
  // [2,2]<=[4] is {{0,1},{2,3}}; [2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}.
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[1] parameter(0)
  a = s32[1] all-reduce(x), replica_groups=[2,2]<=[4], to_apply=sum
  b = s32[1] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=sum
  ROOT t = (s32[1], s32[1]) tuple(a, b)
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d})}; }));
  const int32_t rows[] = {1, 1, 5, 5};     // 0+1, 2+3
  const int32_t columns[] = {2, 4, 2, 4};  // 0+2, 1+3
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{rows[d]}));
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]), (std::vector<int32_t>{columns[d]}));
  }
}

TEST(EvaluatorCollectives, AllGatherConcatenatesInGroupOrder) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[2] parameter(0)
  y = s32[2,1] parameter(1)
  g = s32[8] all-gather(x), dimensions={0}, replica_groups={}
  h = s32[2,4] all-gather(y), dimensions={1}, replica_groups={}
  p = s32[4] all-gather(x), dimensions={0}, replica_groups={{2,3},{1,0}}
  ROOT t = (s32[8], s32[2,4], s32[4]) tuple(g, h, p)
})");
  auto out = run_spmd(text, per_device(4, [](int d) {
    return std::vector<Literal>{s32_vec({d, 10 * d}), make<int32_t>(PrimitiveType::kS32, {2, 1}, {d, 10 * d})};
  }));
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{0, 0, 1, 10, 2, 20, 3, 30}));
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]), (std::vector<int32_t>{0, 1, 2, 3, 0, 10, 20, 30}));
    std::vector<int32_t> pair = d >= 2 ? std::vector<int32_t>{2, 20, 3, 30} : std::vector<int32_t>{1, 10, 0, 0};
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[2]), pair);
  }
}

TEST(EvaluatorCollectives, ReduceScatterKeepsThisDevicesChunk) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[4] parameter(0)
  ROOT r = s32[1] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=sum
})");
  // x_d = {d, 10 + d, 20 + d, 30 + d}; the sum over d is {6, 46, 86, 126}.
  auto out = run_spmd(text, per_device(4, [](int d) {
    return std::vector<Literal>{s32_vec({d, 10 + d, 20 + d, 30 + d})};
  }));
  const int32_t sums[] = {6, 46, 86, 126};
  for (int d = 0; d < 4; ++d) EXPECT_EQ(values_of<int32_t>(out[d]), (std::vector<int32_t>{sums[d]}));
}

TEST(EvaluatorCollectives, AllToAllArrayAndTupleForms) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[4] parameter(0)
  y = s32[2,4] parameter(1)
  p0 = s32[] parameter(2)
  p1 = s32[] parameter(3)
  p2 = s32[] parameter(4)
  p3 = s32[] parameter(5)
  a = s32[4] all-to-all(x), dimensions={0}, replica_groups={}
  b = s32[2,4] all-to-all(y), dimensions={1}, replica_groups={}
  c = (s32[], s32[], s32[], s32[]) all-to-all(p0, p1, p2, p3), replica_groups={}
  ROOT t = (s32[4], s32[2,4], (s32[], s32[], s32[], s32[])) tuple(a, b, c)
})");
  // Device d sends element / column / operand i (= 10d + i, 100r + 10d + i) to device i.
  auto out = run_spmd(text, per_device(4, [](int d) {
    std::vector<Literal> args;
    args.push_back(s32_vec({10 * d, 10 * d + 1, 10 * d + 2, 10 * d + 3}));
    std::vector<int32_t> y;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c) y.push_back(100 * r + 10 * d + c);
    args.push_back(make<int32_t>(PrimitiveType::kS32, {2, 4}, y));
    for (int i = 0; i < 4; ++i) args.push_back(make<int32_t>(PrimitiveType::kS32, {}, {10 * d + i}));
    return args;
  }));
  for (int d = 0; d < 4; ++d) {
    // Received from member m: m's element d.
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{d, 10 + d, 20 + d, 30 + d}));
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]),
              (std::vector<int32_t>{d, 10 + d, 20 + d, 30 + d, 100 + d, 110 + d, 120 + d, 130 + d}));
    for (int m = 0; m < 4; ++m)
      EXPECT_EQ(values_of<int32_t>(out[d].elements()[2].elements()[m]), (std::vector<int32_t>{10 * m + d}));
  }
}

TEST(EvaluatorCollectives, CollectivePermuteSendsAlongPairsAndZeroFillsTheRest) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[2] parameter(0)
  shift = s32[2] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3}}
  ring = s32[2] collective-permute(x), source_target_pairs={{0,3},{1,0},{2,1},{3,2}}
  ROOT t = (s32[2], s32[2]) tuple(shift, ring)
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d + 1, -(d + 1)})}; }));
  for (int d = 0; d < 4; ++d) {
    // shift: device d gets device d-1's {d, -d}; device 0 receives nothing: zeros.
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[0]), (std::vector<int32_t>{d, -d}));
    int from = (d + 1) % 4;
    EXPECT_EQ(values_of<int32_t>(out[d].elements()[1]), (std::vector<int32_t>{from + 1, -(from + 1)}));
  }
}

TEST(EvaluatorCollectives, CollectiveBroadcastSendsTheFirstOfEachGroup) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[2] parameter(0)
  ROOT b = s32[2] collective-broadcast(x), replica_groups={{2,0},{1,3}}
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d, 10 * d})}; }));
  for (int d = 0; d < 4; ++d) {
    const int root = d % 2 == 0 ? 2 : 1;  // the first device listed in d's group
    EXPECT_EQ(values_of<int32_t>(out[d]), (std::vector<int32_t>{root, 10 * root})) << "device " << d;
  }
}

// Async pairs as XLA prints them (the starts' tuples hold the operands; the permute's
// older form adds two u32[] context words): each done equals its synchronous
// collective, the start's tuple holds the operand.
TEST(EvaluatorCollectives, AsyncPairsEqualTheirCollectives) {
  const std::string text = module("replica_count=4", R"(
ENTRY main {
  x = s32[2] parameter(0)
  ars = s32[2] all-reduce-start(x), replica_groups={{0,1},{2,3}}, to_apply=sum
  ard = s32[2] all-reduce-done(ars)
  ar = s32[2] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=sum
  ags = (s32[2], s32[8]) all-gather-start(x), replica_groups={}, dimensions={0}
  agd = s32[8] all-gather-done(ags)
  ag = s32[8] all-gather(x), replica_groups={}, dimensions={0}
  kept = s32[2] get-tuple-element(ags), index=0
  cps = (s32[2], s32[2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  cpd = s32[2] collective-permute-done(cps)
  cp = s32[2] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT t = (s32[2], s32[2], s32[8], s32[8], s32[2], s32[2], s32[2]) tuple(ard, ar, agd, ag, kept, cpd, cp)
})");
  auto out = run_spmd(text, per_device(4, [](int d) { return std::vector<Literal>{s32_vec({d + 1, 7 * d})}; }));
  for (int d = 0; d < 4; ++d) {
    const auto& e = out[d].elements();
    EXPECT_EQ(values_of<int32_t>(e[0]), values_of<int32_t>(e[1])) << "all-reduce, device " << d;
    EXPECT_EQ(values_of<int32_t>(e[2]), values_of<int32_t>(e[3])) << "all-gather, device " << d;
    EXPECT_EQ(values_of<int32_t>(e[4]), (std::vector<int32_t>{d + 1, 7 * d}));
    EXPECT_EQ(values_of<int32_t>(e[5]), values_of<int32_t>(e[6])) << "permute, device " << d;
    const int from = (d + 3) % 4;
    EXPECT_EQ(values_of<int32_t>(e[5]), (std::vector<int32_t>{from + 1, 7 * from}));
  }
}

// Generic async ops (XLA's `<op>-start` shorthand and async-start with calls=): each
// done equals the op run synchronously; updates pass the start on; the start's tuple
// holds the operands.
TEST(EvaluatorCollectives, GenericAsyncOpsEqualTheirOps) {
  const std::string text = module("replica_count=4", R"(
wrapped_broadcast {
  p = s32[2] parameter(0)
  ROOT b = s32[2] collective-broadcast(p), replica_groups={{1,0,2,3}}
}
ENTRY main {
  x = s32[8] parameter(0)
  rss = ((s32[8]), s32[2]) reduce-scatter-start(x), replica_groups={}, dimensions={0}, to_apply=sum
  rsu = ((s32[8]), s32[2]) reduce-scatter-update(rss)
  rsd = s32[2] reduce-scatter-done(rsu)
  rs = s32[2] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=sum
  a2s = ((s32[8]), s32[8], s32[]) all-to-all-start(x), replica_groups={}, dimensions={0}
  a2d = s32[8] all-to-all-done(a2s)
  a2 = s32[8] all-to-all(x), replica_groups={}, dimensions={0}
  kept = (s32[8]) get-tuple-element(a2s), index=0
  k = s32[8] get-tuple-element(kept), index=0
  bs = ((s32[2]), s32[2]) async-start(rsd), calls=wrapped_broadcast
  bd = s32[2] async-done(bs), calls=wrapped_broadcast
  b = s32[2] collective-broadcast(rsd), replica_groups={{1,0,2,3}}
  ROOT t = (s32[2], s32[2], s32[8], s32[8], s32[8], s32[2], s32[2]) tuple(rsd, rs, a2d, a2, k, bd, b)
})");
  auto out = run_spmd(text, per_device(4, [](int d) {
    return std::vector<Literal>{s32_vec({d, 2 * d, 3 * d, 5, 7 * d, 1, 11 * d, d * d})};
  }));
  for (int d = 0; d < 4; ++d) {
    const auto& e = out[d].elements();
    EXPECT_EQ(values_of<int32_t>(e[0]), values_of<int32_t>(e[1])) << "reduce-scatter, device " << d;
    EXPECT_EQ(values_of<int32_t>(e[2]), values_of<int32_t>(e[3])) << "all-to-all, device " << d;
    EXPECT_EQ(values_of<int32_t>(e[4]), (std::vector<int32_t>{d, 2 * d, 3 * d, 5, 7 * d, 1, 11 * d, d * d}));
    EXPECT_EQ(values_of<int32_t>(e[5]), values_of<int32_t>(e[6])) << "collective-broadcast, device " << d;
  }
  // Device 1's chunk 1 of the reduce-scatter, by hand: sum over d of (3d, 5) = (18, 20).
  EXPECT_EQ(values_of<int32_t>(out[1].elements()[0]), (std::vector<int32_t>{18, 20}));
}

TEST(EvaluatorCollectives, ReplicaAndPartitionGroupModes) {
  // Device d = 2r + p holds v = 10r + p.
  const std::string text = R"(
HloModule m, replica_count=2, num_partitions=2
sum {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT s = u32[] add(a, b)
}
ENTRY main {
  r = u32[] replica-id()
  p = u32[] partition-id()
  ten = u32[] constant(10)
  tens = u32[] multiply(r, ten)
  v = u32[] add(tens, p)
  a = u32[] all-reduce(v), channel_id=1, replica_groups={{0},{1}}, to_apply=sum
  b = u32[] all-reduce(v), channel_id=2, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=sum
  c = u32[] all-reduce(v), replica_groups={}, to_apply=sum
  e = u32[] collective-permute(v), channel_id=3, source_target_pairs={{0,1},{1,0}}
  ROOT t = (u32[], u32[], u32[], u32[]) tuple(a, b, c, e)
})";
  auto out = run_spmd(text, per_device(4, [](int) { return std::vector<Literal>{}; }));
  for (uint32_t d = 0; d < 4; ++d) {
    uint32_t r = d / 2, p = d % 2;
    SCOPED_TRACE(testing::Message() << "device " << d);
    // channel_id without use_global_device_ids: replica groups span all partitions.
    EXPECT_EQ(values_of<uint32_t>(out[d].elements()[0])[0], 20 * r + 1);
    // Flattened ids: {0, 2} hold 0 and 10, {1, 3} hold 1 and 11.
    EXPECT_EQ(values_of<uint32_t>(out[d].elements()[1])[0], p == 0 ? 10u : 12u);
    // No channel_id: across replicas within the partition: p + (10 + p).
    EXPECT_EQ(values_of<uint32_t>(out[d].elements()[2])[0], 10 + 2 * p);
    // collective-permute with a channel_id swaps partitions within the replica.
    EXPECT_EQ(values_of<uint32_t>(out[d].elements()[3])[0], 10 * r + (1 - p));
  }
}

TEST(EvaluatorCollectives, SingleDeviceEvaluateRunsCollectivesAsGroupOfOne) {
  const std::string text = module("replica_count=1", R"(
ENTRY main {
  x = s32[2] parameter(0)
  ar = s32[2] all-reduce(x), replica_groups={}, to_apply=sum
  id = u32[] replica-id()
  ROOT t = (s32[2], u32[]) tuple(ar, id)
})");
  Literal out = run(text, {s32_vec({3, 4})});
  EXPECT_EQ(values_of<int32_t>(out.elements()[0]), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(values_of<uint32_t>(out.elements()[1]), (std::vector<uint32_t>{0}));
}

// Replica 0 runs branch `zero`, the others branch `other` (both given as text).
std::string by_replica(const std::string& zero_body, const std::string& other_body) {
  return module("replica_count=2", R"(
zero {
  p = s32[] parameter(0)
)" + zero_body + R"(
}
other {
  p = s32[] parameter(0)
)" + other_body + R"(
}
ENTRY main {
  id = u32[] replica-id()
  z = u32[] constant(0)
  is_zero = pred[] compare(id, z), direction=EQ
  x = s32[] constant(5)
  ROOT c = s32[] conditional(is_zero, x, x), true_computation=zero, false_computation=other
})");
}

// Runs text on 2 replicas and returns the error, checking that it came fast.
std::string mismatch_error(const std::string& text) {
  auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { run_spmd(text, per_device(2, [](int) { return std::vector<Literal>{}; })); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  return message;
}

TEST(EvaluatorCollectives, ParticipantThatFinishedIsAMismatchNotAHang) {
  std::string message = mismatch_error(by_replica("ROOT r = s32[] all-reduce(p), replica_groups={}, to_apply=sum",
                                                  "ROOT n = s32[] negate(p)"));
  expect_contains(message, "mismatched collectives: device 0 at r (line");
  expect_contains(message, "device 1 finished");
}

TEST(EvaluatorCollectives, DifferentCollectivesAreAMismatch) {
  std::string message =
      mismatch_error(by_replica("ROOT r = s32[] all-reduce(p), replica_groups={}, to_apply=sum",
                                "ROOT q = s32[] all-reduce(p), replica_groups={}, to_apply=sum"));
  expect_contains(message, "mismatched collectives");
  expect_contains(message, "device 0 at r (line");
  expect_contains(message, "device 1 at q (line");
}

TEST(EvaluatorCollectives, StuckPairFailsWhileOtherDevicesLoopOverCollectives) {
  // Replicas 0 and 1 wait for each other at different all-reduces while 2 and 3 loop
  // forever over their own all-reduce: the pair is stuck although devices still run,
  // and the failure then stops the loop at its next collective.
  const std::string text = module("replica_count=4", R"(
x_branch {
  p = s32[] parameter(0)
  ROOT r = s32[] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum
}
y_branch {
  p = s32[] parameter(0)
  ROOT q = s32[] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum
}
forever {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
step {
  s = s32[] parameter(0)
  ROOT l = s32[] all-reduce(s), replica_groups={{0,1},{2,3}}, to_apply=sum
}
loop_branch {
  p = s32[] parameter(0)
  ROOT w = s32[] while(p), condition=forever, body=step
}
ENTRY main {
  id = u32[] replica-id()
  i = s32[] convert(id)
  x = s32[] constant(1)
  ROOT c = s32[] conditional(i, x, x, x), branch_computations={x_branch, y_branch, loop_branch}
})");
  auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { run_spmd(text, per_device(4, [](int) { return std::vector<Literal>{}; })); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  expect_contains(message, "mismatched collectives: device 0 at r (line");
  expect_contains(message, "device 1 at q (line");
}

TEST(EvaluatorCollectives, ErrorOnOneDeviceIsReportedOverTheCollectiveItAborted) {
  std::string message =
      mismatch_error(by_replica("ROOT r = s32[] all-reduce(p), replica_groups={}, to_apply=sum",
                                "ROOT q = s32[] custom-call(p), custom_call_target=\"podsim_missing_target\""));
  expect_contains(message, "device 1 (replica 1, partition 0)");
  expect_contains(message, "custom-call target 'podsim_missing_target' (line");
}

}  // namespace
}  // namespace podsim::ir
