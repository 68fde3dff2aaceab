// The CPU target's executable: serialize -> compile_serialized round trips, run() from
// several threads at once, several devices in process (run_devices), buffer assignment
// statistics, thread options and argument errors.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "common/error.h"
#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::leaves;
using testing::pointers;
using testing::random_literal;

// A small MLP layer with softmax: dots, broadcasts, fusible elementwise chains,
// reductions, and a tuple result.
constexpr const char* kModel = R"(HloModule mlp
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[64,300] parameter(0)
  w = f32[300,129] parameter(1)
  bias = f32[129] parameter(2)
  h = f32[64,129] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,129] broadcast(bias), dimensions={1}
  hb = f32[64,129] add(h, bb)
  zero = f32[] constant(0)
  zb = f32[64,129] broadcast(zero), dimensions={}
  relu = f32[64,129] maximum(hb, zb)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(relu, ninf), dimensions={1}, to_apply=max
  mxb = f32[64,129] broadcast(mx), dimensions={0}
  sh = f32[64,129] subtract(relu, mxb)
  e = f32[64,129] exponential(sh)
  s = f32[64] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[64,129] broadcast(s), dimensions={0}
  p = f32[64,129] divide(e, sb)
  ROOT out = (f32[64,129], f32[64]) tuple(p, s)
})";

std::vector<ir::Literal> model_args(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return {random_literal(ir::parse_shape("f32[64,300]"), rng),
          random_literal(ir::parse_shape("f32[300,129]"), rng),
          random_literal(ir::parse_shape("f32[129]"), rng)};
}

void expect_identical(const std::vector<ir::Literal>& a, const std::vector<ir::Literal>& b) {
  const auto x = leaves(a), y = leaves(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t k = 0; k < x.size(); ++k) EXPECT_TRUE(*x[k] == *y[k]) << "leaf " << k << " differs";
}

TEST(CpuExecutable, SerializeRoundTripGivesTheSameResults) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kModel);
  std::unique_ptr<Executable> compiled = compile(*module);
  const std::string text = compiled->serialize();
  EXPECT_NE(text.find("fusion("), std::string::npos) << "the default pipeline fuses the softmax:\n"
                                                     << text;
  std::unique_ptr<Executable> restored = compile_serialized(text);
  EXPECT_EQ(restored->serialize(), text);
  EXPECT_EQ(restored->stats().fusions, compiled->stats().fusions);
  const std::vector<ir::Literal> args = model_args(1);
  expect_identical(compiled->run(pointers(args)), restored->run(pointers(args)));
}

TEST(CpuExecutable, CompileSerializedRejectsBadText) {
  EXPECT_THROW(
      compile_serialized("HloModule broken\nENTRY main {\n  ROOT x = f32[2] add(y, z)\n}\n"),
      Error);
}

TEST(CpuExecutable, ResultsMatchTheEvaluator) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kModel);
  const std::vector<ir::Literal> args = model_args(2);
  const ir::Literal want = ir::evaluate(*module, args);
  const std::vector<ir::Literal> got = compile(*module)->run(pointers(args));
  const auto g = leaves(got), w = leaves(want);
  ASSERT_EQ(g.size(), 2u);
  // Softmax values are within [0, 1]; sums of 129 terms of at most 1 after a dot of 300
  // terms: float accumulation keeps them well within 1e-4 relative.
  for (size_t k = 0; k < 2; ++k)
    EXPECT_TRUE(testing::arrays_match(
        *g[k], *w[k], [&](int64_t i) { return 1e-4 * (1 + std::abs(w[k]->get_as_double(i))); }));
}

TEST(CpuExecutable, ConcurrentRunsGiveIdenticalResults) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kModel);
  for (bool passes : {false, true}) {
    CompileOptions options;
    options.run_passes = passes;
    std::unique_ptr<Executable> executable = compile(*module, options);
    std::vector<std::vector<ir::Literal>> args, expected;
    for (uint64_t t = 0; t < 4; ++t) {
      args.push_back(model_args(10 + t));
      expected.push_back(executable->run(pointers(args.back())));
    }
    std::vector<std::vector<std::vector<ir::Literal>>> results(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 5; ++i) results[t].push_back(executable->run(pointers(args[t])));
      });
    for (std::thread& t : threads) t.join();
    for (size_t t = 0; t < 4; ++t)
      for (const auto& r : results[t]) expect_identical(r, expected[t]);
  }
}

// Four devices (2 replicas x 2 partitions) in process: a loop whose body all-reduces
// over the replicas (a collective run from a nested plan), a cross-partition
// collective-permute, replica-id and partition-id. Halving keeps the values exact, so
// the plans' results equal the evaluator's bit for bit.
constexpr const char* kDevices = R"(HloModule devices, replica_count=2, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  s = (s32[], f32[16,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[16,8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  sum = f32[16,8] all-reduce(x), replica_groups={{0,1}}, to_apply=add
  half = f32[] constant(0.5)
  halves = f32[16,8] broadcast(half), dimensions={}
  y = f32[16,8] multiply(sum, halves)
  ROOT t = (s32[], f32[16,8]) tuple(next, y)
}
ENTRY e {
  x = f32[16,8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[16,8]) tuple(zero, x)
  loop = (s32[], f32[16,8]) while(init), condition=cond, body=body
  mean = f32[16,8] get-tuple-element(loop), index=1
  swapped = f32[16,8] collective-permute(mean), channel_id=1, source_target_pairs={{0,1},{1,0}}
  replica = u32[] replica-id()
  partition = u32[] partition-id()
  ROOT r = (f32[16,8], f32[16,8], u32[], u32[]) tuple(mean, swapped, replica, partition)
})";

TEST(CpuExecutable, DevicesRunTogetherWithTheEvaluatorsCollectives) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kDevices);
  std::mt19937_64 rng(5);
  std::vector<std::vector<ir::Literal>> args(4);
  std::vector<std::vector<const ir::Literal*>> device_args;
  for (auto& a : args) a.push_back(random_literal(ir::Shape(ir::PrimitiveType::kF32, {16, 8}), rng));
  for (const auto& a : args) device_args.push_back(pointers(a));
  const std::vector<ir::Literal> want = ir::evaluate_spmd(*module, args);
  const std::vector<std::vector<ir::Literal>> got = compile(*module)->run_devices(device_args);
  ASSERT_EQ(got.size(), 4u);
  for (size_t d = 0; d < 4; ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    expect_identical(got[d], want[d].elements());
    EXPECT_EQ(got[d][2].get_as_int64(0), static_cast<int64_t>(d / 2));  // replica-id
    EXPECT_EQ(got[d][3].get_as_int64(0), static_cast<int64_t>(d % 2));  // partition-id
  }
  EXPECT_THROW(compile(*module)->run_devices({device_args[0]}), Error);
}

TEST(CpuExecutable, DevicesThatMissACollectiveFailInsteadOfHanging) {
  // Only replica 0 takes the branch with the all-reduce: replica 1 finishes without it.
  std::unique_ptr<ir::Module> module = ir::parse_module(R"(HloModule mismatch, replica_count=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
reduce {
  p = f32[4] parameter(0)
  ROOT sum = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}
keep {
  p = f32[4] parameter(0)
  ROOT c = f32[4] copy(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT r = f32[4] conditional(first, x, x), true_computation=reduce, false_computation=keep
})");
  const ir::Literal x(ir::Shape(ir::PrimitiveType::kF32, {4}));
  try {
    compile(*module)->run_devices({{&x}, {&x}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mismatched collectives: device 0 at sum"), std::string::npos) << e.what();
  }
}

TEST(CpuExecutable, ThreadCountDoesNotChangeResults) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kModel);
  const std::vector<ir::Literal> args = model_args(3);
  CompileOptions one;
  one.threads = 1;
  expect_identical(compile(*module)->run(pointers(args)),
                   compile(*module, one)->run(pointers(args)));
}

TEST(CpuExecutable, IntermediateBuffersAreReusedByLiveness) {
  // Six unfused ops in a chain: each value dies at the next op, so two buffers of
  // 4 KiB alternate; the last op writes the result directly.
  std::unique_ptr<ir::Module> module = ir::parse_module(R"(HloModule chain
ENTRY main {
  x = f32[1024] parameter(0)
  a = f32[1024] negate(x)
  b = f32[1024] exponential(a)
  c = f32[1024] add(b, x)
  d = f32[1024] multiply(c, c)
  e = f32[1024] tanh(d)
  ROOT f = f32[1024] subtract(e, x)
})");
  CompileOptions options;
  options.run_passes = false;
  std::unique_ptr<Executable> executable = compile(*module, options);
  const ExecutableStats& stats = executable->stats();
  EXPECT_EQ(stats.steps, 6);
  EXPECT_EQ(stats.fusions, 0);
  EXPECT_EQ(stats.argument_bytes, 4096);
  EXPECT_EQ(stats.output_bytes, 4096);
  EXPECT_EQ(stats.alias_bytes, 0);
  EXPECT_EQ(stats.intermediate_bytes, 2 * 4096);
  EXPECT_GT(stats.program_bytes, 0);
  // With passes the chain is one fusion without intermediates.
  std::unique_ptr<Executable> fused = compile(*module);
  EXPECT_EQ(fused->stats().fusions, 1);
  EXPECT_EQ(fused->stats().intermediate_bytes, 0);
  std::mt19937_64 rng(4);
  std::vector<ir::Literal> args{random_literal(ir::parse_shape("f32[1024]"), rng)};
  expect_identical(executable->run(pointers(args)), fused->run(pointers(args)));
}

TEST(CpuExecutable, TuplesAndPassThroughArgumentsAreNotCopiedInThePlan) {
  std::unique_ptr<ir::Module> module = ir::parse_module(R"(HloModule tuples
ENTRY main {
  x = f32[100] parameter(0)
  y = f32[100] parameter(1)
  s = f32[100] add(x, y)
  t = (f32[100], f32[100]) tuple(s, x)
  g = f32[100] get-tuple-element(t), index=0
  r = f32[10,10] reshape(g)
  ROOT out = (f32[10,10], f32[100], (f32[100], f32[100])) tuple(r, y, t)
})");
  CompileOptions options;
  options.run_passes = false;
  std::unique_ptr<Executable> executable = compile(*module, options);
  EXPECT_EQ(executable->stats().steps, 1);  // only the add computes
  EXPECT_EQ(executable->stats().intermediate_bytes, 0);
  EXPECT_EQ(executable->stats().alias_bytes, 2 * 400);  // y and x pass through
  std::mt19937_64 rng(5);
  std::vector<ir::Literal> args{random_literal(ir::parse_shape("f32[100]"), rng),
                                random_literal(ir::parse_shape("f32[100]"), rng)};
  const std::vector<ir::Literal> got = executable->run(pointers(args));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[2].shape().is_tuple());
  const ir::Literal want = ir::evaluate(*module, args);
  const auto g = leaves(got), w = leaves(want);
  ASSERT_EQ(g.size(), w.size());
  for (size_t k = 0; k < g.size(); ++k) EXPECT_TRUE(*g[k] == *w[k]) << "leaf " << k;
}

TEST(CpuExecutable, ArgumentErrorsAreReported) {
  std::unique_ptr<ir::Module> module = ir::parse_module(kModel);
  std::unique_ptr<Executable> executable = compile(*module);
  std::vector<ir::Literal> args = model_args(6);
  std::vector<const ir::Literal*> too_few = {&args[0]};
  EXPECT_THROW(executable->run(too_few), Error);
  ir::Literal wrong(ir::parse_shape("f32[64,301]"));
  std::vector<const ir::Literal*> bad = {&wrong, &args[1], &args[2]};
  try {
    executable->run(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32[64,301]"), std::string::npos) << e.what();
  }
}

TEST(CpuExecutable, InvalidModulesAreRejectedAtCompileTime) {
  std::unique_ptr<ir::Module> module = ir::parse_module(R"(HloModule bad
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[5] negate(x)
})");
  EXPECT_THROW(compile(*module), Error);
}

TEST(CpuExecutable, OpsWithoutNativeKernelsRunThroughTheEvaluator) {
  // while, gather, sort, pad, concatenate, dynamic-update-slice and a custom call.
  ir::register_custom_call("cpu_test_double",
                           [](const ir::Instruction&, std::span<const ir::Literal* const> ops) {
                             ir::Literal out = *ops[0];
                             for (int64_t i = 0; i < out.num_elements(); ++i)
                               out.set_from_double(i, 2 * out.get_as_double(i));
                             return out;
                           });
  std::unique_ptr<ir::Module> module = ir::parse_module(R"(HloModule misc
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[8] multiply(v, v)
  ROOT t = (s32[], f32[8]) tuple(j, w)
}
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, x)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body
  v = f32[8] get-tuple-element(loop), index=1
  sorted = f32[8] sort(x), dimensions={0}, to_apply=less
  pz = f32[] constant(0)
  padded = f32[12] pad(sorted, pz), padding=2_2
  cat = f32[20] concatenate(padded, v), dimensions={0}
  two = s32[] constant(2)
  dus = f32[20] dynamic-update-slice(cat, x, two)
  cc = f32[20] custom-call(dus), custom_call_target="cpu_test_double"
  ROOT r = f32[20] add(cc, cat)
})");
  std::mt19937_64 rng(7);
  std::vector<ir::Literal> args{random_literal(ir::parse_shape("f32[8]"), rng, 0.5, 1.5)};
  const ir::Literal want = ir::evaluate(*module, args);
  for (bool passes : {false, true}) {
    CompileOptions options;
    options.run_passes = passes;
    const std::vector<ir::Literal> got = compile(*module, options)->run(pointers(args));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(testing::arrays_match(got[0], want, nullptr, passes))
        << (passes ? "with passes" : "without");
  }
}

}  // namespace
}  // namespace podsim::cpu
