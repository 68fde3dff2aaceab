// The functional pod model: chips that share one executable, remote DMA between them, the
// hand-written ring all-reduce and all-gather (examples/pods) against the reference
// evaluator's collectives, and deadlocks across chips.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "isa/isa.h"
#include "sim/functional/pod_model.h"
#include "tests/sim/pod/pod_examples.h"
#include "topology/torus.h"

namespace podsim::sim {
namespace {

isa::Executable example_on(const std::string& file, const std::string& pod) {
  return isa::assemble(testing::pod_example(file, pod), file);
}

std::string error_of(PodFunctionalModel& pod, int64_t max_steps = 1'000'000) {
  try {
    pod.run_to_completion(max_steps);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs an example on a pod with random small-integer x per chip (exact in f32 whatever
// the order of sums) and compares every chip's y with the evaluator's run of `hlo` (one
// replica per chip); returns the DMAs the pod ran.
int64_t check_against_evaluator(const std::string& example, const std::string& pod_name,
                                const std::string& hlo) {
  PodFunctionalModel pod(example_on(example, pod_name));
  const int n = pod.chips();
  auto module = ir::parse_module(hlo);
  std::mt19937 rng(static_cast<unsigned>(n));
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<std::vector<ir::Literal>> inputs(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    ir::Literal x(ir::Shape(ir::PrimitiveType::kF32, {512, 128}));
    for (float& v : x.data<float>()) v = static_cast<float>(small(rng)) * 0.25f;
    auto bytes = x.bytes();
    pod.chip(d).set_parameter(
        0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    inputs[static_cast<size_t>(d)].push_back(std::move(x));
  }
  std::vector<ir::Literal> expected = ir::evaluate_spmd(*module, inputs);
  RunStats stats = pod.run_to_completion(10'000'000);
  for (int d = 0; d < n; ++d) {
    std::vector<uint8_t> y = pod.chip(d).read_output(0);
    auto want = expected[static_cast<size_t>(d)].bytes();
    EXPECT_EQ(y.size(), want.size());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), std::min(y.size(), want.size())), 0)
        << example << " on " << pod_name << ", chip " << d;
  }
  return stats.dmas;
}

class Ring : public ::testing::TestWithParam<std::string> {};

// Every chip's y equals the evaluator's all-reduce (sum over all replicas) of the chips' x.
TEST_P(Ring, AllReduceEqualsTheEvaluators) {
  const int n = topology::pod_config(GetParam()).chips();
  int64_t dmas = check_against_evaluator("ring_all_reduce.s", GetParam(), fmt::format(R"(
HloModule ring, replica_count={}
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY main {{
  x = f32[512,128] parameter(0)
  ROOT y = f32[512,128] all-reduce(x), replica_groups={{}}, to_apply=add
}}
)", n));
  EXPECT_EQ(dmas, n * (1 + 2 * (n - 1) * (64 / n) + 1));
}

// Every chip's y equals the evaluator's all-gather of each replica's own chunk of x.
TEST_P(Ring, AllGatherEqualsTheEvaluators) {
  const int n = topology::pod_config(GetParam()).chips();
  const int rows = 512 / n;
  int64_t dmas = check_against_evaluator("ring_all_gather.s", GetParam(), fmt::format(R"(
HloModule gather, replica_count={0}
ENTRY main {{
  x = f32[512,128] parameter(0)
  r = u32[] replica-id()
  rows = u32[] constant({1})
  offset = u32[] multiply(r, rows)
  zero = u32[] constant(0)
  own = f32[{1},128] dynamic-slice(x, offset, zero), dynamic_slice_sizes={{{1},128}}
  ROOT y = f32[512,128] all-gather(own), replica_groups={{}}, dimensions={{0}}
}}
)", n, rows));
  EXPECT_EQ(dmas, n * (64 / n + (n - 1) * (64 / n) + 1));
}

INSTANTIATE_TEST_SUITE_P(Pods, Ring,
                         ::testing::Values("v5e:2x2", "v5e:4x4", "v5e:16x4", "v4:2x2x2",
                                           "v4:4x4x4", "v5e:2x2:slices=2"),
                         testing::pod_test_name);

constexpr std::string_view kRegions = R"(
.region a vmem[0] 0 256
.region b vmem[0] 256 256
.descriptor d0 src=a dst=b elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.program core 0
)";

TEST(PodFunctional, SdevTellsEachChipWhereItIs) {
  // Each chip stores its sdev values 0..5 in a; the host reads them back.
  std::string body;
  for (int k = 0; k < 6; ++k)
    body += fmt::format("  sdev s1, {}\n  sli s2, {}\n  sst a[s2], s1\n", k, 8 * k);
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:2x2:slices=2\"\n" + std::string(kRegions) +
                                       body + "  halt\n"));
  pod.run_to_completion(1000);
  topology::Torus torus(*pod.chip(0).executable().pod);
  for (int d = 0; d < pod.chips(); ++d) {
    std::vector<uint8_t> bytes = pod.chip(d).read_region(0, 0, 48);
    std::array<int64_t, 6> got;
    std::memcpy(got.data(), bytes.data(), 48);
    topology::ChipCoord c = torus.coord(d);
    EXPECT_EQ(got, (std::array<int64_t, 6>{d, c.xyz[0], c.xyz[1], c.xyz[2], c.slice, 8}))
        << "chip " << d;
  }
}

TEST(PodFunctional, ChipsShareOneExecutable) {
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:2x2\"\n" + std::string(kRegions) + "  halt\n"));
  EXPECT_EQ(&pod.chip(0).executable(), &pod.chip(3).executable());
}

TEST(PodFunctional, RemoteDmaSignalsBothEnds) {
  // Chip 0 sends a to chip 1's b; chip 1 waits for it and copies it into its own a.
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:1x2\"\n" + std::string(kRegions) + R"(
  sdev s1, 0
  bnz s1, receiver
  sli s2, 1
  dma.remote d0, s0, s0, s2, q1, q2
  sem.wait q1, 1
  halt
receiver:
  sem.wait q2, 1
  vld.f32 v0, b[s0], s0
  halt
)"));
  std::vector<uint8_t> data(256);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  pod.chip(0).write_region(0, 0, data);
  RunStats stats = pod.run_to_completion(100);
  EXPECT_EQ(stats.dmas, 1);
  EXPECT_EQ(pod.chip(1).read_region(1, 0, 256), data);
  EXPECT_EQ(pod.chip(0).read_region(1, 0, 256), std::vector<uint8_t>(256, 0));  // untouched
  for (int d = 0; d < 2; ++d)
    for (int64_t q : pod.chip(d).state().core(0).semaphores) EXPECT_EQ(q, 0) << "chip " << d;
}

TEST(PodFunctional, ASourceReadEarlyLandsTheBytesItRead) {
  // A timed model reads a remote transfer's source before it lands (source_read): the
  // sender's semaphore then, the destination's bytes and semaphore only at the landing,
  // with the bytes as they were read.
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:1x2\"\n" + std::string(kRegions) + R"(
  sli s2, 1
  dma.remote d0, s0, s0, s2, q1, q2
  halt
)"));
  std::vector<uint8_t> data(256);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  FunctionalModel& sender = pod.chip(0);
  FunctionalModel& receiver = pod.chip(1);
  sender.write_region(0, 0, data);
  sender.step(0);
  sender.step(0);
  ASSERT_EQ(sender.dmas_in_flight().size(), 1u);
  const uint64_t id = sender.dmas_in_flight().front().id;
  sender.source_read(id);
  EXPECT_EQ(sender.state().core(0).semaphores[1], 1);
  EXPECT_EQ(receiver.state().core(0).semaphores[2], 0);
  EXPECT_EQ(receiver.read_region(1, 0, 256), std::vector<uint8_t>(256, 0));  // not landed yet
  sender.write_region(0, 0, std::vector<uint8_t>(256, 0xff));  // the source, reused
  sender.complete_dma(id);
  EXPECT_EQ(receiver.read_region(1, 0, 256), data);
  EXPECT_EQ(receiver.state().core(0).semaphores[2], 1);
  EXPECT_EQ(sender.state().core(0).semaphores[1], 1);  // not signalled twice
  EXPECT_THROW(sender.source_read(id), Error);         // no longer in flight
}

TEST(PodFunctional, DeviceOutsideThePodIsARunTimeError) {
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:1x2\"\n" + std::string(kRegions) + R"(
  sli s2, 2
  dma.remote d0, s0, s0, s2, q1, q2
  halt
)"));
  std::string m = error_of(pod);
  EXPECT_NE(m.find("destination device s2 = 2 is not in the pod (devices 0..1)"),
            std::string::npos)
      << m;
}

TEST(PodFunctional, MismatchedProgramsDeadlockWithAClearError) {
  // Every chip waits for a landing from its neighbour, but odd chips never send: the even
  // chips wait forever. The report names each blocked chip, its place, pc and instruction.
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:2x2\"\n" + std::string(kRegions) + R"(
  sdev s1, 0
  sdev s2, 5
  saddi s3, s1, 1
  srem s3, s3, s2
  sli s4, 2
  srem s4, s1, s4
  bnz s4, odd
  dma.remote d0, s0, s0, s3, q1, q2
odd:
  sem.wait q2, 1
  halt
)"));
  std::string m = error_of(pod);
  EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
  for (const char* part :
       {"chip 0 (slice 0, x 0, y 0, z 0) core 0: pc 8 sem.wait q2, 1 (semaphore q2 is 0, needs 1; 0 "
        "DMA(s) in flight signal it)",
        "chip 2 (slice 0, x 0, y 1, z 0) core 0: pc 8 sem.wait q2, 1", "2 core(s) of the pod have halted"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\nmissing from:\n" << m;
  EXPECT_EQ(m.find("chip 1 ("), std::string::npos) << m;  // it halted
}

TEST(PodFunctional, ASpinningChipIsARunaway) {
  PodFunctionalModel pod(isa::assemble(".pod \"tiny:1x2\"\n" + std::string(kRegions) + R"(
loop:
  br loop
)"));
  std::string m = error_of(pod, 5000);
  EXPECT_NE(m.find("exceeded 5000 instructions"), std::string::npos) << m;
}

}  // namespace
}  // namespace podsim::sim
