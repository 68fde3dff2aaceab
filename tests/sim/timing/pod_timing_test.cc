// The timed pod: remote DMA over ICI links and DCN, the hand-written ring all-reduce and
// all-gather (examples/pods) against the functional pod model, hazards and deadlocks across chips,
// and link timing against latency + bytes / bandwidth worked out from the pod's figures.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "bench/pod_flows.h"
#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "isa/isa.h"
#include "sim/functional/pod_model.h"
#include "sim/timing/timed_chip.h"
#include "tests/sim/pod/pod_examples.h"
#include "tests/sim/timing/timing_test_util.h"
#include "topology/torus.h"

namespace podsim::sim::timing {
namespace {

// Random f32 parameters for every chip (small integers: exact whatever the order of sums).
std::vector<std::vector<std::vector<uint8_t>>> random_parameters(const isa::Executable& e,
                                                                 int chips) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<std::vector<std::vector<uint8_t>>> out(static_cast<size_t>(chips));
  for (auto& chip : out)
    for (const isa::Binding& b : e.parameters) {
      int64_t n = 1;
      for (int64_t d : b.dims) n *= d;
      std::vector<float> values(static_cast<size_t>(n));
      for (float& v : values) v = static_cast<float>(small(rng));
      const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
      chip.emplace_back(bytes, bytes + values.size() * sizeof(float));
    }
  return out;
}

class TimedRing : public ::testing::TestWithParam<std::string> {};

// The timed pod computes what the functional pod computes (which equals the evaluator's
// collectives: tests/sim/pod), with no hazard, and every chip's ring finishes.
TEST_P(TimedRing, MatchesTheFunctionalPodWithoutHazards) {
  for (const char* example : {"ring_all_reduce.s", "ring_all_gather.s"}) {
    SCOPED_TRACE(example);
    isa::Executable exe = isa::assemble(podsim::testing::pod_example(example, GetParam()));
    const int n = exe.pod->chips();
    auto params = random_parameters(exe, n);

    PodFunctionalModel functional(exe);
    for (int d = 0; d < n; ++d)
      functional.chip(d).set_parameter(0, params[static_cast<size_t>(d)][0]);
    functional.run_to_completion(100'000'000);

    TimingOptions options;
    options.check_hazards = options.hazards_are_errors = true;
    PodRunResult r = run_timed_pod(exe, params, options);
    ASSERT_EQ(r.chips.size(), static_cast<size_t>(n));
    for (int d = 0; d < n; ++d)
      EXPECT_EQ(r.chips[static_cast<size_t>(d)].outputs.at(0), functional.chip(d).read_output(0))
          << "chip " << d;
    EXPECT_TRUE(r.hazards.empty());
    EXPECT_EQ(r.profile.chips.size(), static_cast<size_t>(n));
    // Every chip receives the N - 1 chunks of 256 KiB / N it does not own, once (all-gather)
    // or twice (all-reduce), each over at least one link.
    const double floor_bytes =
        (std::string(example) == "ring_all_reduce.s" ? 2.0 : 1.0) * (n - 1) * 262144.0;
    EXPECT_GE(r.ici_bytes + r.dcn_bytes / 4, floor_bytes);  // a DCN byte crosses 4 links
    EXPECT_EQ(r.dcn_bytes > 0, exe.pod->slices > 1);
    // Every chip sends: its profile has link tracks and a link bandwidth counter that
    // adds up to the bytes on its tracks.
    for (const traces::ChipProfile& chip : r.profile.chips) {
      double track_bytes = 0, counter_bytes = 0;
      for (const traces::Track& t : chip.tracks)
        if (t.category == "ici" || t.category == "dcn")
          for (const traces::Span& span : t.spans) track_bytes += span.bytes;
      for (const traces::Counter& c : chip.counters)
        if (c.name == "link bandwidth out")
          for (size_t i = 0; i + 1 < c.samples.size(); ++i)
            counter_bytes += c.samples[i].value / chip.clock_hz *
                             static_cast<double>(c.samples[i + 1].cycle - c.samples[i].cycle);
      EXPECT_GT(track_bytes, 0) << chip.name;
      EXPECT_NEAR(counter_bytes / track_bytes, 1.0, 1e-6)
          << chip.name << ": " << track_bytes << " bytes on its link tracks";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pods, TimedRing,
                         ::testing::Values("v5e:2x2", "v5e:4x4", "v4:2x2x2", "v4:4x4x4",
                                           "v5e:2x2:slices=2"),
                         podsim::testing::pod_test_name);

// The f32 sum every all-reduce and reduce-scatter here applies.
constexpr const char* kAdd = R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

class TimedCollectives : public ::testing::TestWithParam<std::string> {};

// Runs `hlo` compiled for the pod on the functional and the timed pod (hazards checked)
// and expects the same outputs on every chip; returns the timed run.
PodRunResult expect_timed_matches_functional(const std::string& hlo, const topology::PodConfig& pod,
                                              tpu::Options::AllReduce algorithm, bool overlap = true,
                                              int devices = 0) {
  const int n = pod.chips();
  tpu::Options compile_options;
  compile_options.all_reduce = algorithm;
  compile_options.overlap_collectives = overlap;
  const tpu::Target target = devices > 0 ? tpu::Target(pod, devices, 1) : tpu::Target(pod);
  const isa::Executable exe = tpu::compile(*ir::parse_module(hlo), target, compile_options);
  auto params = random_parameters(exe, n);
  PodFunctionalModel functional(exe);
  for (int d = 0; d < n; ++d)
    for (size_t k = 0; k < params[0].size(); ++k)
      functional.chip(d).set_parameter(static_cast<int>(k), params[static_cast<size_t>(d)][k]);
  functional.run_to_completion(100'000'000);

  TimingOptions options;
  options.check_hazards = options.hazards_are_errors = true;
  PodRunResult r = run_timed_pod(exe, params, options);
  EXPECT_TRUE(r.hazards.empty());
  for (int d = 0; d < n; ++d)
    for (size_t k = 0; k < exe.outputs.size(); ++k)
      EXPECT_EQ(r.chips[static_cast<size_t>(d)].outputs.at(k), functional.chip(d).read_output(static_cast<int>(k)))
          << "chip " << d << " output " << k;
  return r;
}

// Collectives the compiler lowered (tests/compiler/tpu/collectives_test.cc checks them
// against the evaluator on the functional pod) compute the same on the timed pod, with
// no hazard; the all-reduce takes at least what its algorithm needs to move its bytes.
TEST_P(TimedCollectives, CompiledRingsMatchTheFunctionalPodWithoutHazards) {
  const topology::PodConfig pod = topology::pod_config(GetParam());
  const int n = pod.chips();
  const std::string hlo = fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[300,70] parameter(0)
  y = f32[6,{},40] parameter(1)
  ar = f32[300,70] all-reduce(x), to_apply=add
  rs = f32[6,2,40] reduce-scatter(y), dimensions={{1}}, to_apply=add
  ag = f32[6,{},40] all-gather(rs), dimensions={{1}}
  cp = f32[300,70] collective-permute(x), source_target_pairs={{{{0,1}},{{1,0}}}}
  aa = f32[6,{},40] all-to-all(y), dimensions={{1}}
  cb = f32[300,70] collective-broadcast(x), replica_groups={{}}
  ROOT t = (f32[300,70], f32[6,2,40], f32[6,{},40], f32[300,70], f32[6,{},40], f32[300,70]) tuple(ar, rs, ag, cp, aa, cb)
}})",
                                      2 * n, 2 * n, 2 * n, 2 * n, 2 * n, fmt::arg("add", kAdd));
  for (tpu::Options::AllReduce algorithm :
       {tpu::Options::AllReduce::kRing, tpu::Options::AllReduce::kOneShot, tpu::Options::AllReduce::kTwoShot}) {
    SCOPED_TRACE(algorithm == tpu::Options::AllReduce::kRing      ? "ring all-reduce"
                 : algorithm == tpu::Options::AllReduce::kOneShot ? "one-shot all-reduce"
                                                                  : "two-shot all-reduce");
    const PodRunResult r = expect_timed_matches_functional(hlo, pod, algorithm);
    // A ring or two-shot all-reduce sends 2 (n - 1) / n of the array out of every chip
    // over its links; the one-shot sends n - 1 arrays out of every chip, over at most its
    // 6 links.
    const double bytes = 300 * 70 * 4;
    const double bound = algorithm == tpu::Options::AllReduce::kOneShot
                             ? (n - 1) * bytes / (6 * pod.ici_link_bandwidth_bytes_per_s)
                             : 2.0 * (n - 1) / n * bytes / (6 * pod.ici_link_bandwidth_bytes_per_s);
    EXPECT_GT(r.seconds, bound);
  }
}

// Rows run their collectives ahead of columns (chip 0 runs at a fifth of the speed, and
// its row with it), so chips of a row flag chips still in an earlier handshake: the
// results are still right, with no hazard.
TEST_P(TimedCollectives, RowsAheadOfColumnsKeepTheirHandshakesApart) {
  topology::PodConfig pod = topology::pod_config(GetParam());
  pod.slow_chip = 0;
  pod.slow_chip_speed = 0.2;
  const int n = pod.chips(), dx = pod.dim_x, dy = pod.dim_y, dz = pod.dim_z * pod.slices;
  if (dx < 2 || dy < 2) GTEST_SKIP() << "needs two axes";
  const std::string hlo = fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[{r},32] parameter(0)
  r1 = f32[{r},32] all-reduce(x), replica_groups=[{},{}]<=[{}], to_apply=add
  r2 = f32[{r},32] all-reduce(r1), replica_groups=[{},{}]<=[{}], to_apply=add
  c = f32[{r},32] all-reduce(r2), replica_groups=[{},{}]<=[{},{},{}]T(0,2,1), to_apply=add
  a = f32[{r},32] all-to-all(c), dimensions={{0}}
  ROOT t = (f32[{r},32], f32[{r},32]) tuple(c, a)
}})",
                                      n / dx, dx, n, n / dx, dx, n, n / dy, dy, dz, dy, dx, fmt::arg("r", 4 * n), fmt::arg("add", kAdd));
  expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kRing);
}

// One-shot all-reduces, reduce-scatters and all-gathers, and small all-to-alls and
// collective-permutes, land in every chip's mailbox without a handshake first: back to
// back, in a loop and beside all-reduces over other groups (which keep their
// handshakes), with chip 0 at a fifth of the speed, so that the others reach each use of
// its mailbox long before it has read the last one. A chip sends only once the credits of
// the chips it sends to count their earlier uses: the results are the functional pod's,
// with no hazard (without the credits, later arrays land on chip 0 while it still reads
// earlier ones).
TEST_P(TimedCollectives, MailboxUsesFollowOneAnotherByCredits) {
  topology::PodConfig pod = topology::pod_config(GetParam());
  pod.slow_chip = 0;
  pod.slow_chip_speed = 0.2;
  const int n = pod.chips();
  if (n % 2 != 0) GTEST_SKIP() << "pairs of chips";
  std::string shift;  // every chip to the next in device order
  for (int d = 0; d < n; ++d) shift += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 1) % n);
  const std::string hlo = fmt::format(R"(HloModule m
{add}body {{
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[64] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  r = f32[64] all-reduce(v), to_apply=add
  ROOT t = (s32[], f32[64]) tuple(next, r)
}}
cond {{
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}}
ENTRY e {{
  x = f32[64] parameter(0)
  y = f32[{chunks}] parameter(1)
  r1 = f32[64] all-reduce(x), to_apply=add
  r2 = f32[64] all-reduce(r1), to_apply=add
  pairs = f32[64] all-reduce(r2), replica_groups=[{half},2]<=[{n}], to_apply=add
  rs = f32[8] reduce-scatter(y), dimensions={{0}}, to_apply=add
  aa = f32[{chunks}] all-to-all(y), dimensions={{0}}
  ag = f32[{chunks}] all-gather(rs), dimensions={{0}}
  cp = f32[64] collective-permute(r2), source_target_pairs={{{shift}}}
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, pairs)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  looped = f32[64] get-tuple-element(w), index=1
  r3 = f32[64] all-reduce(looped), to_apply=add
  ROOT t = (f32[64], f32[64], f32[{chunks}], f32[{chunks}], f32[64], f32[64]) tuple(r2, pairs, ag, aa, cp, r3)
}})",
                                      fmt::arg("add", kAdd), fmt::arg("chunks", 8 * n), fmt::arg("half", n / 2),
                                      fmt::arg("n", n), fmt::arg("shift", shift));
  expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kOneShot);
  // Two-shot all-reduces: both exchanges are one use of the mailbox.
  expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kTwoShot);
}

// Latency hiding: the dots and the add depend on neither all-reduce (written last, each
// is lowered as soon as its operand is), so their steps run between the rings' steps.
// Same results, no hazard (the interleaved steps keep off the rings' VMEM, semaphores
// and buffers), and less time than running each collective alone.
TEST_P(TimedCollectives, IndependentStepsRunWhileTheRingsAreInFlight) {
  const topology::PodConfig pod = topology::pod_config(GetParam());
  // The tiny test chip's HBM (two channels, 64 GB/s) is so slow that the rings'
  // transfers slow the dots beside them by as much as they hide.
  if (pod.chip.name == "tiny") GTEST_SKIP() << "a v4 or v5e chip";
  const std::string hlo = fmt::format(R"(HloModule m
{add}ENTRY e {{
  g = f32[256,512] parameter(0)
  a = f32[256,256] parameter(1)
  b = f32[256,256] parameter(2)
  d1 = f32[256,256] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  d2 = f32[256,256] dot(d1, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  s = f32[256,256] add(d2, a)
  d3 = f32[256,256] dot(s, a), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  h2 = f32[256,512] multiply(g, g)
  ar = f32[256,512] all-reduce(g), to_apply=add
  ar2 = f32[256,512] all-reduce(h2), to_apply=add
  ROOT t = (f32[256,512], f32[256,512], f32[256,256]) tuple(ar, ar2, d3)
}})",
                                      fmt::arg("add", kAdd));
  const PodRunResult overlapped = expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kRing);
  const PodRunResult alone = expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kRing, false);
  EXPECT_LT(overlapped.seconds, alone.seconds);
}

// Replicas on the first chips only: the idle chips halt at once, the others' rings
// complete without them, with no hazard.
// A long run reports its progress on the calling thread, in cycles that only grow; the
// run's results are those of a run without it.
TEST(TimedPod, ProgressIsReportedWithoutChangingTheRun) {
  const topology::PodConfig pod = topology::pod_config("v5e:4x4");
  const isa::Executable exe = tpu::compile(
      *ir::parse_module(fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[1048576] parameter(0)\n"
                                    "  ROOT r = f32[1048576] all-reduce(x), to_apply=add\n}}\n",
                                    kAdd)),
      tpu::Target(pod));
  TimingOptions options;
  options.timing_only = true;
  const PodRunResult quiet = run_timed_pod(exe, {}, options);
  std::vector<uint64_t> seen;
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  options.progress = [&](uint64_t cycles) {
    seen.push_back(cycles);
    on_caller = on_caller && std::this_thread::get_id() == caller;
  };
  options.progress_interval_s = 1e-3;
  const PodRunResult reported = run_timed_pod(exe, {}, options);
  EXPECT_EQ(reported.cycles, quiet.cycles);
  EXPECT_EQ(reported.instructions, quiet.instructions);
  ASSERT_FALSE(seen.empty()) << "the run took less than a millisecond";
  EXPECT_TRUE(on_caller);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST(TimedPod, IdleChipsPastTheReplicasHaltAtOnce) {
  const std::string hlo = fmt::format(R"(HloModule m
{add}ENTRY e {{
  x = f32[64,40] parameter(0)
  ROOT s = f32[64,40] all-reduce(x), to_apply=add
}})",
                                      fmt::arg("add", kAdd));
  const topology::PodConfig pod = topology::pod_config("v4:2x2x2");
  const PodRunResult r = expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kRing, true, 4);
  const PodRunResult all = expect_timed_matches_functional(hlo, pod, tpu::Options::AllReduce::kRing);
  EXPECT_LT(r.chips.back().instructions * 10, all.chips.back().instructions) << "chip 7 ran the all-reduce";
}

INSTANTIATE_TEST_SUITE_P(Pods, TimedCollectives,
                         ::testing::Values("tiny:1x2", "v5e:2x2", "v4:2x2x2", "v5e:2x2:slices=2", "tiny:4x3"),
                         podsim::testing::pod_test_name);

TEST(TimedPod, AMissingWaitIsAHazardNamingBothChips) {
  // Without the wait for the previous chip's tiles, the add reads `recv` while the remote
  // DMA that writes it may still be in flight.
  std::string text = podsim::testing::pod_example("ring_all_reduce.s", "v5e:2x2");
  size_t at = text.find("rs_wait:");
  ASSERT_NE(at, std::string::npos);
  size_t wait = text.find("sem.wait q2, 1", at);
  text.replace(wait, 14, "sem.signal q2, 0");
  isa::Executable exe = isa::assemble(text);
  TimingOptions options;
  options.check_hazards = true;
  PodRunResult r = run_timed_pod(exe, random_parameters(exe, 4), options);
  ASSERT_FALSE(r.hazards.empty());
  const Hazard& h = r.hazards.front();
  EXPECT_EQ(h.kind, "read-after-write") << h.message;
  EXPECT_NE(h.message.find("dma.remote d1 from chip"), std::string::npos) << h.message;
  EXPECT_NE(h.message.find("vld"), std::string::npos) << h.message;
  EXPECT_EQ(h.message.rfind("chip ", 0), 0u) << h.message;  // names the receiving chip
}

constexpr std::string_view kRegions = R"(
.region a vmem[0] 0 1048576
.region b vmem[0] 1048576 1048576
.descriptor d0 src=a dst=b elem=4 sizes=[256] src_strides=[4] dst_strides=[4]
.program core 0
)";

TEST(TimedPod, MismatchedProgramsDeadlockWithAClearError) {
  isa::Executable exe = isa::assemble(".pod \"v5e:2x2\"\n" + std::string(kRegions) + R"(
  sdev s1, 0
  bnz s1, wait
  sli s2, 1
  dma.remote d0, s0, s0, s2, q1, q2
wait:
  sem.wait q2, 1
  halt
)");
  try {
    run_timed_pod(exe, {{}, {}, {}, {}});
    FAIL() << "expected a deadlock";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("deadlock at cycle"), std::string::npos) << m;
    EXPECT_NE(m.find("of every chip"), std::string::npos) << m;
    EXPECT_NE(m.find("chip 0 (slice 0, x 0, y 0, z 0) core 0: pc 4 sem.wait q2, 1"), std::string::npos) << m;
    EXPECT_NE(m.find("chip 3 (slice 0, x 1, y 1, z 0) core 0: pc 4 sem.wait q2, 1"), std::string::npos) << m;
    EXPECT_EQ(m.find("chip 1 ("), std::string::npos) << m;  // it received and halted
  }
}

TEST(TimedPod, TheSenderMayReuseItsSourceOnceItHasBeenRead) {
  // Chip 0 sends 64 KiB of x to chip 10 of a v5e:4x4 (4 hops), waits for its own
  // semaphore (the source has been read) and overwrites the source with zeros; chip 10
  // waits for the landing and writes what landed to y.
  isa::Executable exe = isa::assemble(R"(.pod "v5e:4x4"
.region x hbm 0 65536
.region y hbm 65536 65536
.region a vmem[0] 0 65536
.region b vmem[0] 65536 65536
.descriptor d0 src=x dst=a elem=4 sizes=[16384] src_strides=[4] dst_strides=[4]
.descriptor d1 src=a dst=b elem=4 sizes=[16384] src_strides=[4] dst_strides=[4]
.descriptor d2 src=b dst=a elem=4 sizes=[16384] src_strides=[4] dst_strides=[4]
.descriptor d3 src=b dst=y elem=4 sizes=[16384] src_strides=[4] dst_strides=[4]
.param x x f32[16384]
.output y y f32[16384]
.program core 0
  sdev s1, 0
  sli s2, 10
  bz s1, send
  seq s3, s1, s2
  bz s3, done
  sem.wait q2, 1
  dma d3, s0, s0, q0
  sem.wait q0, 1
  br done
send:
  dma d0, s0, s0, q0
  sem.wait q0, 1
  dma.remote d1, s0, s0, s2, q1, q2
  sem.wait q1, 1
  dma d2, s0, s0, q0
  sem.wait q0, 1
done:
  halt
)");
  TimingOptions options;
  options.check_hazards = options.hazards_are_errors = true;
  options.instruction_trace = true;
  PodRunResult r = run_timed_pod(exe, random_parameters(exe, 16), options);
  EXPECT_TRUE(r.hazards.empty());
  // What landed is the source as it was read, not the zeros written over it afterwards.
  std::vector<std::vector<std::vector<uint8_t>>> params = random_parameters(exe, 16);
  EXPECT_EQ(r.chips[10].outputs.at(0), params[0][0]);
  auto wait_returned = [&](int device, int pc) {
    for (const InstructionRecord& in : r.chips[static_cast<size_t>(device)].trace)
      if (in.pc == pc) return in.start;
    ADD_FAILURE() << "chip " << device << " pc " << pc << " not traced";
    return uint64_t{0};
  };
  const topology::PodConfig& pod = *exe.pod;
  const double hop = pod.ici_link_latency_ns * pod.chip.clock_hz / 1e9;
  const uint64_t read = wait_returned(0, 12), landed = wait_returned(10, 5);
  EXPECT_GT(static_cast<double>(landed), static_cast<double>(read) + 3 * hop)
      << "the sender's semaphore came " << read << ", the landing " << landed;
}

TEST(TimedPod, ALargeAllReduceOnAMegacorePodRunsTimingOnly) {
  // 32 MiB over v4:2x2x2 (two TensorCores a chip): a remote transfer's bursts come back
  // from HBM out of order, so its last burst handed over may land before the source is
  // read to the end; the sender still hears of the read once, then of the landing.
  const std::string hlo = std::string("HloModule m\n") + kAdd + R"(ENTRY e {
  x = f32[8388608] parameter(0)
  ROOT r = f32[8388608] all-reduce(x), to_apply=add
})";
  const topology::PodConfig pod = topology::pod_config("v4:2x2x2");
  const isa::Executable exe = tpu::compile(*ir::parse_module(hlo), tpu::Target(pod));
  TimingOptions options;
  options.timing_only = true;
  const PodRunResult r = run_timed_pod(exe, {}, options);
  // At least a ring all-reduce's bytes over the chip's three links out (one neighbour
  // on each axis of two chips), and not far above it.
  const double floor_s = 2.0 * 7 / 8 * 33554432 / (3 * pod.ici_link_bandwidth_bytes_per_s);
  EXPECT_GT(r.seconds, floor_s);
  EXPECT_LT(r.seconds, 1.5 * floor_s);
}

// A reduce-scatter moves the bytes of an all-gather over the same rings; what it adds
// per ring step (loading what landed, reducing it) overlaps the step's transfers once a
// step's block goes in several sub-blocks, and where blocks are small, once no load waits
// in program order for a landing the timeline expects much later. 4 MiB over v5e:4x4
// (column blocks of 16 KiB a stream) took 1.45x the all-gather's time with blocks sent
// whole; over v5e:16x16 (30 steps of blocks of at most 64 KiB a stream) 1.85x with loads
// ungated.
TEST(TimedPod, AMidSizeReduceScatterOverlapsItsReductionsWithItsTransfers) {
  for (const char* name : {"v5e:4x4", "v5e:16x16"}) {
    SCOPED_TRACE(name);
    const topology::PodConfig pod = topology::pod_config(name);
    const int n = pod.chips();
    const int64_t elements = (int64_t{4} << 20) / 4;
    auto seconds = [&](const std::string& hlo) {
      TimingOptions options;
      options.timing_only = true;
      options.profile = false;
      return run_timed_pod(tpu::compile(*ir::parse_module(hlo), tpu::Target(pod)), {}, options).seconds;
    };
    const double reduce_scatter = seconds(fmt::format(R"(HloModule m
{}ENTRY e {{
  x = f32[{}] parameter(0)
  ROOT r = f32[{}] reduce-scatter(x), dimensions={{0}}, to_apply=add
}})",
                                                      kAdd, elements, elements / n));
    const double all_gather = seconds(fmt::format(R"(HloModule m
ENTRY e {{
  x = f32[{}] parameter(0)
  ROOT r = f32[{}] all-gather(x), dimensions={{0}}
}})",
                                                  elements / n, elements));
    EXPECT_LT(reduce_scatter, 1.25 * all_gather) << reduce_scatter << " s vs " << all_gather << " s";
  }
}

TEST(TimedPod, RunTimedRefusesAPodOfSeveralChips) {
  isa::Executable exe = isa::assemble(".pod \"v5e:2x2\"\n" + std::string(kRegions) + "  halt\n");
  try {
    run_timed(exe, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run_timed_pod"), std::string::npos) << e.what();
  }
}

TEST(TimedPod, LinksTakeLatencyPlusBytesOverBandwidth) {
  // v5e: 50 GB/s per link direction, 1 us per hop (assumed), 1.5 GHz.
  const topology::PodConfig pod = topology::pod_config("v5e:4x4");
  const double cycles_per_byte = pod.chip.clock_hz / pod.ici_link_bandwidth_bytes_per_s;
  const double hop = pod.ici_link_latency_ns * pod.chip.clock_hz / 1e9;
  for (int64_t bytes : {int64_t{4096}, int64_t{1} << 20}) {
    for (int to : {1, 2, 10}) {  // 1, 2 and 4 hops (x then y) from chip 0
      const int hops = topology::Torus(pod).hops(0, to);
      const double analytic = hops * hop + static_cast<double>(bytes) * cycles_per_byte;
      const double simulated =
          static_cast<double>(bench::flow_cycles("v5e:4x4", bytes, {{0, to}})[0]);
      EXPECT_NEAR(simulated / analytic, 1.0, 0.05)
          << bytes << " bytes over " << hops << " hops: " << simulated << " vs " << analytic;
    }
  }
  // Two flows sharing the link 1 -> 2 (from chip 0 and chip 1 to chip 2 and chip 3): flow
  // 1->3 has it alone until flow 0->2's head arrives one hop later; then each gets half,
  // and both land one hop after the link has sent both flows' bytes.
  const int64_t bytes = 1 << 20;
  const double shared = 2.0 * static_cast<double>(bytes) * cycles_per_byte + hop;
  const std::vector<uint64_t> both = bench::flow_cycles("v5e:4x4", bytes, {{0, 2}, {1, 3}});
  for (uint64_t cycles : both)
    EXPECT_NEAR(static_cast<double>(cycles) / shared, 1.0, 0.05) << cycles << " vs " << shared;
}

// A buffer smaller than the credit loop throttles its link: each burst's credit comes back
// when the burst has landed (its serialisation and the hop) plus the credit latency, so the
// link sends a buffer's worth of bursts per loop.
TEST(TimedPod, CreditsTakeTheirLatencyToComeBack) {
  topology::PodConfig pod = topology::pod_config("v5e:4x4");
  pod.ici_buffer_packets = 16;  // 4 KiB: two bursts
  const double clock = pod.chip.clock_hz;
  const double burst = static_cast<double>(pod.chip.dma_burst_bytes);
  const double buffer = static_cast<double>(pod.ici_buffer_packets * pod.ici_packet_bytes);
  const double serial = std::ceil(burst * clock / pod.ici_link_bandwidth_bytes_per_s);
  const double hop = pod.ici_link_latency_ns * clock / 1e9;
  const int64_t bytes = 1 << 20;
  std::vector<double> simulated;
  for (double credit_ns : {0.0, 1000.0, 3000.0}) {
    pod.ici_credit_latency_ns = credit_ns;
    const double loop = serial + hop + credit_ns * clock / 1e9;
    const double analytic = static_cast<double>(bytes) / buffer * loop;
    simulated.push_back(static_cast<double>(bench::flow_cycles(pod, bytes, {{0, 1}})[0]));
    EXPECT_NEAR(simulated.back() / analytic, 1.0, 0.05)
        << "credit latency " << credit_ns << " ns: " << simulated.back() << " vs " << analytic;
  }
  // The preset's buffers cover the loop: the credit latency costs nothing there.
  const topology::PodConfig preset = topology::pod_config("v5e:4x4");
  ASSERT_GT(preset.ici_credit_latency_ns, 0);
  const double free_running = hop + static_cast<double>(bytes) * clock / preset.ici_link_bandwidth_bytes_per_s;
  EXPECT_NEAR(static_cast<double>(bench::flow_cycles(preset, bytes, {{0, 1}})[0]) / free_running,
              1.0, 0.05);
}

// On a ring of eight chips, each sending to the chip three hops ahead (+, the shorter way)
// through buffers of one burst: with one virtual channel every buffer fills with a burst
// that waits for the next buffer, around the ring, and nothing moves again; with dateline
// channels the burst that has crossed the wraparound link waits in the second channel, and
// all land.
TEST(TimedPod, DatelineChannelsKeepARingOfFullBuffersMoving) {
  isa::Executable exe = testing::ring_shift(3);
  exe.pod->dim_x = 8;  // a ring of eight tiny chips (no named tiny pod is that long)
  exe.pod->wrap_x = 1;
  exe.replicas = 8;
  exe.pod->ici_buffer_packets = 1;  // smaller than a burst: one burst at a time
  exe.pod->ici_credit_latency_ns = 0;
  TimingOptions options;
  options.timing_only = true;
  exe.pod->ici_virtual_channels = 1;
  try {
    run_timed_pod(exe, {}, options);
    FAIL() << "expected the ring of full buffers to deadlock";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock at cycle"), std::string::npos) << e.what();
  }
  exe.pod->ici_virtual_channels = 2;
  const PodRunResult r = run_timed_pod(exe, {}, options);
  ASSERT_EQ(r.chips.size(), 8u);
  // Each chip's 8 KiB crossed three links.
  EXPECT_DOUBLE_EQ(r.ici_bytes, 8 * 3 * 8192.0);
}

TEST(TimedPod, AStragglerComputesAtItsSpeed) {
  // Every chip runs the same vector loop (VPU- and issue-bound); chip 1 runs at half speed
  // and takes about twice as long; the others are unaffected.
  const std::string body = R"(
.region a vmem[0] 0 4096
.program core 0
  sli s1, 2000
  sli s2, 512
loop:
  vld.f32 v0, a[s0], s2
  vadd.f32 v1, v0, v0
  vmul.f32 v2, v1, v0
  vst.f32 a[s0], s2, v2
  saddi s1, s1, -1
  bnz s1, loop
  halt
)";
  auto cycles = [&](const std::string& pod) {
    TimingOptions options;
    options.profile = false;
    PodRunResult r = run_timed_pod(isa::assemble(pod + body), {{}, {}, {}, {}}, options);
    std::vector<double> out;
    for (const auto& c : r.chips) out.push_back(static_cast<double>(c.cycles));
    return out;
  };
  std::vector<double> even = cycles(".pod \"v5e:2x2\"\n");
  std::vector<double> slow = cycles(
      ".pod_toml\nbase = \"v5e:2x2\"\nslow_chip = 1\nslow_chip_speed = 0.5\n.end\n");
  EXPECT_NEAR(slow[1] / even[1], 2.0, 0.1);
  for (int d : {0, 2, 3}) EXPECT_EQ(slow[static_cast<size_t>(d)], even[static_cast<size_t>(d)]);
}

TEST(TimedPod, AStragglerDelaysTheWholeRing) {
  const std::string ring = podsim::testing::pod_example("ring_all_reduce.s");
  isa::Executable even = isa::assemble(ring);
  isa::Executable slow = isa::assemble(podsim::testing::pod_example("ring_all_reduce.s", "v5e:2x2"));
  slow.pod->slow_chip = 2;
  slow.pod->slow_chip_speed = 0.25;
  auto params = random_parameters(even, 4);
  TimingOptions options;
  options.profile = false;
  PodRunResult a = run_timed_pod(even, params, options);
  PodRunResult b = run_timed_pod(slow, params, options);
  for (int d = 0; d < 4; ++d)  // the same sums
    EXPECT_EQ(a.chips[static_cast<size_t>(d)].outputs, b.chips[static_cast<size_t>(d)].outputs);
  // The straggler's adds take four times as long: it ends later, and so does the pod; no
  // chip ends earlier.
  EXPECT_GT(b.chips[2].cycles, a.chips[2].cycles);
  EXPECT_GT(b.cycles, a.cycles);
  for (int d = 0; d < 4; ++d)
    EXPECT_GE(b.chips[static_cast<size_t>(d)].cycles, a.chips[static_cast<size_t>(d)].cycles)
        << "chip " << d;
}

}  // namespace
}  // namespace podsim::sim::timing
