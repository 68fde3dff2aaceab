// Collectives compiled for a pod (lower_collectives.cc) against the reference evaluator:
// every module runs on the functional pod model, one replica per chip, on its own random
// inputs, and every chip's outputs must equal evaluate_spmd's. Inputs are small integers
// (exact in f32 and bf16 whatever order the sums take), so the comparison is exact.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/functional/pod_model.h"
#include "tests/sim/pod/pod_examples.h"
#include "topology/pod_config.h"

namespace podsim::tpu {
namespace {

ir::Literal small_integers(const ir::Shape& shape, std::mt19937& rng) {
  ir::Literal l(shape);
  std::uniform_int_distribution<int> value(-4, 4);
  for (int64_t k = 0; k < shape.num_elements(); ++k) l.set_from_double(k, value(rng));
  return l;
}

// Compiles `hlo` for the pod, runs it on every chip and compares with the evaluator;
// all-reduces with each algorithm in turn.
void check_on_pod(const std::string& hlo, const std::string& pod_name);

// devices > 0: the module's replicas run on the first `devices` chips, the others idle.
void check_on_pod(const std::string& hlo, const std::string& pod_name, Options::AllReduce algorithm,
                  int devices = 0) {
  SCOPED_TRACE(pod_name + " all-reduce algorithm " + std::to_string(static_cast<int>(algorithm)) +
               "\n" + hlo);
  const topology::PodConfig pod = topology::pod_config(pod_name);
  auto module = ir::parse_module(hlo);
  Options compile_options;
  compile_options.all_reduce = algorithm;
  const isa::Executable exe =
      compile(*module, devices > 0 ? Target(pod, devices, 1) : Target(pod), compile_options);
  sim::PodFunctionalModel model(exe);
  const int n = devices > 0 ? devices : model.chips();
  std::mt19937 rng(static_cast<unsigned>(n) * 7 + 1);
  std::vector<std::vector<ir::Literal>> inputs(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d)
    for (const ir::Instruction* p : module->entry()->parameters()) {
      ir::Literal x = small_integers(p->shape(), rng);
      auto bytes = x.bytes();
      model.chip(d).set_parameter(
          static_cast<int>(p->attrs().parameter_number),
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
      inputs[static_cast<size_t>(d)].push_back(std::move(x));
    }
  ir::EvalOptions options;
  options.replicas = n;
  const std::vector<ir::Literal> expected = ir::evaluate_spmd(*module, inputs, options);
  model.run_to_completion(int64_t{1} << 32);
  for (int d = 0; d < n; ++d) {
    const ir::Literal& want = expected[static_cast<size_t>(d)];
    std::vector<const ir::Literal*> outputs;
    if (want.shape().is_tuple())
      for (const ir::Literal& e : want.elements()) outputs.push_back(&e);
    else
      outputs.push_back(&want);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::vector<uint8_t> got = model.chip(d).read_output(static_cast<int>(k));
      auto bytes = outputs[k]->bytes();
      ASSERT_EQ(got.size(), bytes.size()) << "chip " << d << " output " << k;
      size_t at = 0;
      while (at < got.size() && got[at] == reinterpret_cast<const uint8_t*>(bytes.data())[at]) ++at;
      EXPECT_EQ(at, got.size()) << "chip " << d << " output " << k
                                << " differs from the evaluator first at byte " << at;
    }
  }
}

void check_on_pod(const std::string& hlo, const std::string& pod_name) {
  for (Options::AllReduce algorithm :
       {Options::AllReduce::kRing, Options::AllReduce::kOneShot, Options::AllReduce::kTwoShot})
    check_on_pod(hlo, pod_name, algorithm);
}

// The f32 sum every all-reduce and reduce-scatter here applies.
constexpr const char* kAdd = R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

class Collectives : public ::testing::TestWithParam<std::string> {
 protected:
  int chips() const { return topology::pod_config(GetParam()).chips(); }
};

TEST_P(Collectives, AllReduceSumsOverEveryChip) {
  // 300 x 70 elements do not fill whole chunks: the padded path.
  check_on_pod(std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[300,70] parameter(0)
  ROOT r = f32[300,70] all-reduce(x), to_apply=add
})",
               GetParam());
}

TEST_P(Collectives, AllReduceWithOtherReducersAndTypes) {
  check_on_pod(R"(HloModule m
mx {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] maximum(a, b)
}
sum {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}
ENTRY e {
  x = s32[2048] parameter(0)
  y = bf16[64,128] parameter(1)
  m = s32[2048] all-reduce(x), to_apply=mx
  s = bf16[64,128] all-reduce(y), to_apply=sum
  ROOT t = (s32[2048], bf16[64,128]) tuple(m, s)
})",
               GetParam());
}

TEST_P(Collectives, AllReduceOverReplicaGroups) {
  const int n = chips();
  if (n < 4) GTEST_SKIP() << "needs two groups of at least two chips";
  // Even and odd devices: groups that are not runs of device ids.
  check_on_pod(fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[16,128] parameter(0)
  ROOT r = f32[16,128] all-reduce(x), replica_groups=[2,{}]<=[{},2]T(1,0), to_apply=add
}})",
                           n / 2, n / 2, fmt::arg("add", kAdd)),
               GetParam());
}

TEST_P(Collectives, RowsThenColumnsThenAChipOrderOfNoBox) {
  // Groups along x (rings on one axis), then along y, then every chip in reverse device
  // order (no box of the torus: one ring in snake order); rows may run collectives ahead
  // of columns, whose handshakes must not mistake their flags.
  const topology::PodConfig pod = topology::pod_config(GetParam());
  const int n = chips(), dx = pod.dim_x, dy = pod.dim_y, dz = pod.dim_z * pod.slices;
  if (dx < 2 || dy < 2) GTEST_SKIP() << "needs two axes";
  std::string reversed;
  for (int d = n - 1; d >= 0; --d) reversed += fmt::format("{}{}", d == n - 1 ? "" : ",", d);
  check_on_pod(fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[{r},30] parameter(0)
  rows = f32[{r},30] all-reduce(x), replica_groups=[{},{}]<=[{}], to_apply=add
  cols = f32[{r},30] all-reduce(rows), replica_groups=[{},{}]<=[{},{},{}]T(0,2,1), to_apply=add
  rs = f32[{c},30] reduce-scatter(x), dimensions={{0}}, replica_groups=[{},{}]<=[{},{},{}]T(0,2,1), to_apply=add
  ag = f32[{r},30] all-gather(rs), dimensions={{0}}, replica_groups=[{},{}]<=[{},{},{}]T(0,2,1)
  all = f32[{r},30] all-reduce(cols), replica_groups={{{{{}}}}}, to_apply=add
  ROOT t = (f32[{r},30], f32[{r},30], f32[{c},30], f32[{r},30]) tuple(rows, all, rs, ag)
}})",
                           n / dx, dx, n, n / dy, dy, dz, dy, dx, n / dy, dy, dz, dy, dx, n / dy, dy, dz, dy,
                           dx, reversed, fmt::arg("r", 5 * dy), fmt::arg("c", 5), fmt::arg("add", kAdd)),
               GetParam());
}

TEST_P(Collectives, ReduceScatterAndAllGatherAlongAnyDimension) {
  const int n = chips();
  check_on_pod(fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[6,{},40] parameter(0)
  rs = f32[6,2,40] reduce-scatter(x), dimensions={{1}}, to_apply=add
  ag0 = f32[{},2,40] all-gather(rs), dimensions={{0}}
  ag1 = f32[6,{},40] all-gather(rs), dimensions={{1}}
  ROOT t = (f32[6,2,40], f32[{},2,40], f32[6,{},40]) tuple(rs, ag0, ag1)
}})",
                           2 * n, 6 * n, 2 * n, 6 * n, 2 * n, fmt::arg("add", kAdd)),
               GetParam());
}

TEST_P(Collectives, TupleAllReduceReducesEachOperand) {
  // PyTorch/XLA's all-reduce of a list of gradients: one instruction, several operands.
  check_on_pod(std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[300] parameter(0)
  y = f32[7,5] parameter(1)
  z = f32[] parameter(2)
  r = (f32[300], f32[7,5], f32[]) all-reduce(x, y, z), to_apply=add
  a = f32[300] get-tuple-element(r), index=0
  b = f32[7,5] get-tuple-element(r), index=1
  c = f32[] get-tuple-element(r), index=2
  ROOT t = (f32[7,5], f32[], f32[300]) tuple(b, c, a)
})",
               GetParam());
}

TEST_P(Collectives, LargeTupleAllReduceRunsInBuckets) {
  // 300 KiB operands: the TPU target splits the all-reduce into buckets (256 KiB each,
  // in the order the operands are computed), whose rings overlap the negations.
  check_on_pod(std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[256,300] parameter(0)
  y = f32[256,300] parameter(1)
  nx = f32[256,300] negate(x)
  ny = f32[256,300] negate(nx)
  r = (f32[256,300], f32[256,300], f32[256,300]) all-reduce(ny, x, nx), to_apply=add
  a = f32[256,300] get-tuple-element(r), index=0
  b = f32[256,300] get-tuple-element(r), index=2
  c = f32[256,300] add(a, b)
  ROOT t = (f32[256,300], f32[256,300], f32[256,300]) tuple(c, y, b)
})",
               GetParam());
}

TEST_P(Collectives, AllToAllAlongAnyDimensionAndOverGroups) {
  const int n = chips();
  std::string groups;  // pairs of chips swap blocks
  for (int d = 0; d + 1 < n; d += 2) groups += fmt::format("{}{{{},{}}}", d ? "," : "", d + 1, d);
  check_on_pod(fmt::format(R"(HloModule m
ENTRY e {{
  x = f32[3,{},5] parameter(0)
  y = s32[{},4] parameter(1)
  z = bf16[6,10] parameter(2)
  a = f32[3,{},5] all-to-all(x), dimensions={{1}}
  b = s32[{},4] all-to-all(y), dimensions={{0}}
  c = bf16[6,10] all-to-all(z), dimensions={{1}}, replica_groups={{{}}}
  ROOT t = (f32[3,{},5], s32[{},4], bf16[6,10]) tuple(a, b, c)
}})",
                           2 * n, n, 2 * n, n, groups, 2 * n, n),
               GetParam());
}

// Blocks of 128 KiB and more go in pieces, the peers taking turns piece by piece (a piece
// is part of every row of the block).
TEST_P(Collectives, LargeAllToAllBlocksGoInPieces) {
  const int n = chips();
  check_on_pod(fmt::format(R"(HloModule m
ENTRY e {{
  x = f32[2,{}] parameter(0)
  ROOT a = f32[2,{}] all-to-all(x), dimensions={{1}}
}})",
                           n * 16384, n * 16384),
               GetParam());
}

TEST_P(Collectives, TupleAllToAllSendsOperandKToTheKthDevice) {
  // Over every chip (an operand per chip), and over pairs (two operands, the pair in
  // reverse order: operand 0 goes to the pair's first listed chip).
  const int n = chips();
  std::string params, names, shapes, elements, groups;
  for (int d = 0; d < n; ++d) {
    params += fmt::format("  x{} = f32[3,5] parameter({})\n", d, d);
    names += fmt::format("{}x{}", d ? ", " : "", d);
    shapes += fmt::format("{}f32[3,5]", d ? ", " : "");
    elements += fmt::format("  a{} = f32[3,5] get-tuple-element(a), index={}\n", d, d);
  }
  for (int d = 0; d + 1 < n; d += 2) groups += fmt::format("{}{{{},{}}}", d ? "," : "", d + 1, d);
  check_on_pod(fmt::format(R"(HloModule m
ENTRY e {{
{}  a = ({}) all-to-all({})
{}  b = (f32[3,5], f32[3,5]) all-to-all(x0, x1), replica_groups={{{}}}
  b0 = f32[3,5] get-tuple-element(b), index=0
  b1 = f32[3,5] get-tuple-element(b), index=1
  ROOT t = ({}, f32[3,5], f32[3,5]) tuple({}, b0, b1)
}})",
                           params, shapes, names, elements, groups, shapes,
                           [&] {
                             std::string a;
                             for (int d = 0; d < n; ++d) a += fmt::format("{}a{}", d ? ", " : "", d);
                             return a;
                           }()),
               GetParam());
}

TEST_P(Collectives, CollectivePermuteShiftsAndZeroFills) {
  const int n = chips();
  // A cyclic shift (every chip sends and receives), then a swap of chips 0 and 1 and
  // a self-pair for the last chip (the others get zeros), in one module.
  std::string shift, swap = "{0,1},{1,0}";
  for (int d = 0; d < n; ++d) shift += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 1) % n);
  if (n > 2) swap += fmt::format(",{{{},{}}}", n - 1, n - 1);
  check_on_pod(fmt::format(R"(HloModule m
ENTRY e {{
  x = s32[3,50] parameter(0)
  y = bf16[700] parameter(1)
  a = s32[3,50] collective-permute(x), source_target_pairs={{{}}}
  b = bf16[700] collective-permute(y), source_target_pairs={{{}}}
  ROOT t = (s32[3,50], bf16[700]) tuple(a, b)
}})",
                           shift, swap),
               GetParam());
}

TEST_P(Collectives, CollectiveBroadcastFromEachGroupsFirstChip) {
  const int n = chips();
  // Every chip from the last one (the array does not fill whole chunks: padded), then
  // pairs whose roots are their second-numbered chips (the pods have even chip counts).
  std::string from_last = std::to_string(n - 1), pairs;
  for (int d = 0; d < n - 1; ++d) from_last += fmt::format(",{}", d);
  for (int d = 0; d + 1 < n; d += 2) pairs += fmt::format("{}{{{},{}}}", d ? "," : "", d + 1, d);
  check_on_pod(fmt::format(R"(HloModule m
ENTRY e {{
  x = f32[37,5] parameter(0)
  y = s32[64,8] parameter(1)
  a = f32[37,5] collective-broadcast(x), replica_groups={{{{{}}}}}
  b = s32[64,8] collective-broadcast(y), replica_groups={{{}}}
  ROOT t = (f32[37,5], s32[64,8]) tuple(a, b)
}})",
                           from_last, pairs),
               GetParam());
}

TEST_P(Collectives, AsyncPairsRunAsTheirCollectives) {
  const int n = chips();
  std::string shift;
  for (int d = 0; d < n; ++d) shift += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 1) % n);
  check_on_pod(fmt::format(R"(HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[40,8] parameter(0)
  ars = f32[40,8] all-reduce-start(x), to_apply=add
  ags = (f32[40,8], f32[{},8]) all-gather-start(x), dimensions={{0}}
  cps = (f32[40,8], f32[40,8]) collective-permute-start(x), source_target_pairs={{{}}}
  big = f32[{},8] parameter(1)
  rss = ((f32[{},8]), f32[40,8]) reduce-scatter-start(big), dimensions={{0}}, to_apply=add
  a2s = ((f32[{},8]), f32[{},8], s32[]) all-to-all-start(big), dimensions={{0}}
  y = f32[40,8] multiply(x, x)
  ard = f32[40,8] all-reduce-done(ars)
  agd = f32[{},8] all-gather-done(ags)
  cpd = f32[40,8] collective-permute-done(cps)
  rsu = ((f32[{},8]), f32[40,8]) reduce-scatter-update(rss)
  rsd = f32[40,8] reduce-scatter-done(rsu)
  a2d = f32[{},8] all-to-all-done(a2s)
  ROOT t = (f32[40,8], f32[{},8], f32[40,8], f32[40,8], f32[40,8], f32[{},8]) tuple(ard, agd, cpd, y, rsd, a2d)
}})",
                           40 * n, shift, 40 * n, 40 * n, 40 * n, 40 * n, 40 * n, 40 * n, 40 * n, 40 * n, 40 * n),
               GetParam());
}

TEST_P(Collectives, ReplicaIdIsTheDevice) {
  check_on_pod(R"(HloModule m
ENTRY e {
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (u32[], u32[]) tuple(r, p)
})",
               GetParam());
}

INSTANTIATE_TEST_SUITE_P(Pods, Collectives,
                         ::testing::Values("tiny:1x2", "tiny:2x2:mesh", "v5e:2x2", "v4:2x2x2",
                                           "v5e:4x4", "v5e:2x2:slices=2", "tiny:4x3", "tiny:3x2x2"),
                         podsim::testing::pod_test_name);

TEST(Collectives, ShapesThatTheGroupsDoNotFitAreAnError) {
  // Without replica_groups a collective spans every replica, known only at compile time.
  for (const char* op : {"f32[6,8] all-to-all(x), dimensions={0}", "f32[18,8] all-gather(x), dimensions={0}"}) {
    auto module = ir::parse_module(fmt::format("HloModule m\nENTRY e {{\n  x = f32[6,8] parameter(0)\n  ROOT r = {}\n}}\n", op));
    try {
      compile(*module, Target(topology::pod_config("v5e:2x2")));
      ADD_FAILURE() << op << " compiled for 4 chips";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("groups of 4 devices do not fit"), std::string::npos) << e.what();
    }
  }
}

TEST(Collectives, FewerReplicasThanChipsRunOnTheFirstChips) {
  // Two replicas on a 2x2 slice: chips 0 and 1 run them (a ring along x), chips 2 and 3
  // halt at once; the same with four replicas on a 2x2x2 slice.
  const std::string hlo = std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[64,40] parameter(0)
  s = f32[64,40] all-reduce(x), to_apply=add
  g = f32[128,40] all-gather(x), dimensions={0}
  ROOT t = (f32[64,40], f32[128,40]) tuple(s, g)
})";
  check_on_pod(hlo, "v5e:2x2", Options::AllReduce::kRing, 2);
  check_on_pod(hlo, "v5e:2x2", Options::AllReduce::kOneShot, 2);
  check_on_pod(std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[64,40] parameter(0)
  ROOT s = f32[64,40] all-reduce(x), to_apply=add
})",
               "v4:2x2x2", Options::AllReduce::kRing, 4);
}

TEST(Collectives, MoreReplicasThanChipsAreAnError) {
  try {
    Target(topology::pod_config("v5e:2x2"), 8, 1);
    ADD_FAILURE() << "8 replicas placed on 4 chips";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("need 8 devices; pod 'v5e:2x2' has 4 chips"), std::string::npos)
        << e.what();
  }
}

TEST(Collectives, OneChipNeedsNoPod) {
  auto module = ir::parse_module(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(x), to_apply=add
})");
  const isa::Executable exe = compile(*module, topology::preset("tiny"));
  EXPECT_FALSE(exe.pod.has_value());
}

}  // namespace
}  // namespace podsim::tpu
