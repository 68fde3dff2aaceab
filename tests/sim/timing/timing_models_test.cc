// The models' declarations (parameters read by name, statistics) and their statistics
// against what the run shows otherwise: the instruction trace, the profile, the links.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "sim/timing/unit_models.h"
#include "tests/sim/timing/timing_test_util.h"
#include "topology/pod_config.h"
#include "traces/summary.h"

namespace podsim::sim::timing {
namespace {

// Totals per "model/statistic".
std::map<std::string, double> totals(const std::vector<StatisticValue>& statistics) {
  std::map<std::string, double> out;
  for (const StatisticValue& s : statistics) out[s.model + "/" + s.name] += s.value;
  return out;
}

TEST(Models, EveryModelDeclaresFieldsThePodAndChipHave) {
  for (const char* pod : {"v5e-8", "v4:2x2x2", "tiny:1x2"}) {
    const std::vector<ModelInfo> models = describe_models(topology::pod_config(pod));
    for (const char* kind : {"mxu", "vpu", "dma", "hbm", "interconnect"})
      EXPECT_EQ(std::count_if(models.begin(), models.end(),
                              [&](const ModelInfo& m) { return m.kind == kind && m.is_default; }),
                1)
          << kind;
    for (const ModelInfo& m : models) {
      EXPECT_FALSE(m.parameters.empty()) << m.name;
      EXPECT_FALSE(m.statistics.empty()) << m.name;
      for (const ModelInfo::Parameter& p : m.parameters)
        EXPECT_NE(p.meaning, "(no such field)") << m.name << " " << p.name;
    }
  }
  const std::vector<ModelInfo> v5e = describe_models(topology::pod_config("v5e-8"));
  auto torus = std::find_if(v5e.begin(), v5e.end(), [](const ModelInfo& m) { return m.name == "torus"; });
  ASSERT_NE(torus, v5e.end());
  auto bandwidth = std::find_if(torus->parameters.begin(), torus->parameters.end(), [](const auto& p) {
    return p.name == "ici_link_bandwidth_bytes_per_s";
  });
  ASSERT_NE(bandwidth, torus->parameters.end());
  EXPECT_EQ(bandwidth->value, "50 GB/s");
}

TEST(Models, ParametersAreTheDeclaredFieldsOnly) {
  const topology::PodConfig pod = topology::pod_config("v5e-8");
  const ModelDeclaration declared{"test", {"clock_hz", "ici_link_latency_ns"}, {}};
  const Parameters p(pod, "test model", declared);
  EXPECT_EQ(p["clock_hz"], pod.chip.clock_hz);
  EXPECT_EQ(p.ns_as_cycles("ici_link_latency_ns"), 1500);  // 1 us at 1.5 GHz
  try {
    (void)p["hbm_channels"];
    FAIL() << "read an undeclared field";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test model reads 'hbm_channels', which it does not declare"),
              std::string::npos)
        << e.what();
  }
  const ModelDeclaration unknown{"test", {"no_such_field"}, {}};
  EXPECT_THROW(Parameters(pod, "test model", unknown), Error);
}

// A compiled GEMM on one chip: the MXU, VPU and DMA statistics count what the instruction
// trace shows, the HBM's bytes are the profile's.
TEST(Models, ChipStatisticsAgreeWithTheTraceAndProfile) {
  const char* hlo = R"(HloModule g
ENTRY e {
  a = f32[96,80] parameter(0)
  b = f32[80,72] parameter(1)
  d = f32[96,72] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[96,72] tanh(d)
})";
  const isa::Executable exe = tpu::compile(*ir::parse_module(hlo), topology::preset("tiny"));
  TimingOptions options;
  options.timing_only = true;
  options.instruction_trace = true;
  const TimedRunResult r = run_timed(exe, {}, options);
  std::map<std::string, double> by_mnemonic;
  double vpu_ops = 0;
  for (const InstructionRecord& x : r.trace) {
    ++by_mnemonic[std::string(isa::mnemonic(x.opcode))];
    if (x.unit == "vpu") ++vpu_ops;
  }
  std::map<std::string, double> t = totals(r.statistics);
  EXPECT_GT(t["MXU systolic/passes"], 0);
  EXPECT_EQ(t["MXU systolic/passes"], by_mnemonic["mmul"]);
  EXPECT_EQ(t["MXU systolic/weight_loads"], by_mnemonic["mldw"]);
  EXPECT_EQ(t["MXU systolic/pops"], by_mnemonic["mpop"]);
  EXPECT_GT(t["VPU inorder/transcendental_ops"], 0);  // the tanh
  EXPECT_EQ(t["VPU inorder/memory_ops"] + t["VPU inorder/simple_ops"] +
                t["VPU inorder/transcendental_ops"] + t["VPU inorder/cross_lane_ops"],
            vpu_ops);
  EXPECT_EQ(t["DMA engine pipelined/transfers"], static_cast<double>(r.dmas));
  const traces::Summary summary = traces::summarize(r.profile);
  EXPECT_EQ(t["HBM request-time/read_bytes"] + t["HBM request-time/write_bytes"],
            summary.chips.at(0).hbm_bytes);
  // One value per declared statistic of every unit: 1 HBM, and per core a VPU, the MXUs
  // and the DMA engines.
  const topology::ChipConfig& chip = exe.chip;
  const size_t units = 1 + static_cast<size_t>(chip.tensor_cores) *
                               (1 + static_cast<size_t>(chip.mxus_per_core + chip.dma_engines));
  std::map<std::string, int> components;
  for (const StatisticValue& s : r.statistics) ++components[s.component];
  EXPECT_EQ(components.size(), units);
}

// On a pod, the HBM's bytes are still the profile's: the writes of transfers landing from
// other chips are on the receiving chip's HBM track. Each remote transfer is a flow from
// the engine that sent it to the receiving chip's incoming track.
TEST(Models, PodStatisticsAgreeWithTheProfile) {
  const char* hlo = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[262144] parameter(0)
  ROOT r = f32[65536] reduce-scatter(x), dimensions={0}, to_apply=add
})";
  const topology::PodConfig pod = topology::pod_config("v5e:2x2");
  TimingOptions options;
  options.timing_only = true;
  const PodRunResult r = run_timed_pod(tpu::compile(*ir::parse_module(hlo), tpu::Target(pod)), {}, options);
  std::map<std::string, double> t = totals(r.statistics);
  const traces::Summary summary = traces::summarize(r.profile);
  double hbm = 0;
  for (const traces::ChipSummary& c : summary.chips) hbm += c.hbm_bytes;
  EXPECT_GT(t["DMA engine pipelined/remote_transfers"], 0);
  EXPECT_EQ(t["HBM request-time/read_bytes"] + t["HBM request-time/write_bytes"], hbm);
  ASSERT_EQ(static_cast<double>(r.profile.flows.size()), t["DMA engine pipelined/remote_transfers"]);
  for (const traces::Flow& f : r.profile.flows) {
    const traces::ChipProfile& from = r.profile.chips.at(static_cast<size_t>(f.from.chip));
    const traces::ChipProfile& to = r.profile.chips.at(static_cast<size_t>(f.to.chip));
    EXPECT_NE(f.from.chip, f.to.chip);
    EXPECT_EQ(from.tracks.at(static_cast<size_t>(f.from.track)).category, "dma");
    EXPECT_EQ(to.tracks.at(static_cast<size_t>(f.to.track)).name, "DMA in from other chips");
    EXPECT_LT(f.from.cycle, f.to.cycle);  // it lands after it left
  }
  // With local flows, also one from the engine of each transfer that touched HBM on its
  // own chip to the HBM track.
  options.profile_local_flows = true;
  const PodRunResult all = run_timed_pod(tpu::compile(*ir::parse_module(hlo), tpu::Target(pod)), {}, options);
  EXPECT_EQ(all.cycles, r.cycles);
  size_t local = 0;
  for (const traces::Flow& f : all.profile.flows) {
    if (f.from.chip != f.to.chip) continue;
    ++local;
    const traces::ChipProfile& chip = all.profile.chips.at(static_cast<size_t>(f.from.chip));
    EXPECT_EQ(chip.tracks.at(static_cast<size_t>(f.from.track)).category, "dma");
    EXPECT_EQ(chip.tracks.at(static_cast<size_t>(f.to.track)).name, "HBM");
  }
  EXPECT_EQ(all.profile.flows.size() - local, r.profile.flows.size());
  EXPECT_GT(local, 0u);
}

// The interconnect's counts: the bytes are the links', the second channel carries what
// crossed a wraparound link, and a buffer too small for the credit loop makes links wait.
TEST(Models, InterconnectStatisticsCountTheLinksTraffic) {
  topology::PodConfig ring = topology::pod_config("tiny:4x1");
  ASSERT_TRUE(ring.wrap_x);
  ASSERT_EQ(ring.ici_virtual_channels, 2);
  TimingOptions options;
  options.timing_only = true;
  const PodRunResult r = run_timed_pod(testing::ring_shift(1), {}, options);
  std::map<std::string, double> t = totals(r.statistics);
  EXPECT_EQ(t["interconnect torus/ici_bytes"], r.ici_bytes);
  EXPECT_EQ(t["interconnect torus/ici_bytes"], 4 * 8192.0);  // one hop each
  EXPECT_EQ(t["interconnect torus/bursts"], 4 * 8192.0 / static_cast<double>(ring.chip.dma_burst_bytes));
  // Only chip 3's transfer crosses the wraparound link (3 -> 0): its bursts' one hop.
  EXPECT_EQ(t["interconnect torus/second_channel_hops"], 8192.0 / static_cast<double>(ring.chip.dma_burst_bytes));
  EXPECT_EQ(t["DMA engine pipelined/remote_transfers"], 4);
  EXPECT_EQ(t["interconnect torus/credit_wait_cycles"], 0);  // the preset's buffers suffice

  topology::PodConfig tight = topology::pod_config("v5e:4x4");
  tight.ici_buffer_packets = 16;
  isa::Executable flow = isa::assemble(R"(.pod "v5e:4x4"
.region a vmem[0] 0 1048576
.region b vmem[0] 1048576 1048576
.descriptor d0 src=a dst=b elem=4 sizes=[262144] src_strides=[4] dst_strides=[4]
.program core 0
  sdev s1, 0
  bnz s1, receive
  sli s4, 1
  dma.remote d0, s0, s0, s4, q1, q2
  sem.wait q1, 1
  halt
receive:
  sli s2, 1
  seq s3, s1, s2
  bnz s3, wait
  halt
wait:
  sem.wait q2, 1
  halt
)");
  flow.pod = tight;
  t = totals(run_timed_pod(flow, {}, options).statistics);
  EXPECT_GT(t["interconnect torus/credit_wait_cycles"], 0);
}

}  // namespace
}  // namespace podsim::sim::timing
