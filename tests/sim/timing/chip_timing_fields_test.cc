// The timing model's figures are ChipConfig fields: optional in TOML (older files keep
// working), carried by executables (older files read the defaults), and what a run uses.
#include <gtest/gtest.h>

#include <sstream>

#include "common/error.h"
#include "sim/timing/unit_latencies.h"
#include "tests/sim/timing/timing_test_util.h"
#include "topology/chip_config.h"

namespace podsim::sim::timing::testing {
namespace {

const char* kTimingFields[] = {"scalar_latency_cycles",
                               "vmem_latency_cycles",
                               "vector_latency_cycles",
                               "transcendental_latency_cycles",
                               "transcendental_issue_cycles",
                               "cross_lane_latency_cycles",
                               "mxu_fill_drain_cycles",
                               "mxu_accumulators",
                               "dma_setup_cycles",
                               "dma_burst_bytes",
                               "hbm_turnaround_cycles",
                               "vmem_dma_bytes_per_cycle",
                               "vmem_ports",
                               "vmem_banks",
                               "vmem_bank_bytes",
                               "barrier_cycles",
                               "host_link_latency_ns"};

TEST(ChipTimingFields, TomlWithoutThemGetsTheDefaults) {
  topology::ChipConfig tiny = topology::preset("tiny");
  // Every field of the tiny preset but the timing ones, without `base`: as files written
  // before the timing fields existed.
  std::istringstream in(topology::to_toml(tiny));
  std::string line, toml;
  int dropped = 0;
  while (std::getline(in, line)) {
    bool timing = false;
    for (const char* f : kTimingFields)
      timing = timing || line.rfind(std::string(f) + " =", 0) == 0;
    if (timing)
      ++dropped;
    else
      toml += line + "\n";
  }
  EXPECT_EQ(dropped, 17);
  EXPECT_EQ(topology::parse_chip_config(toml, "old.toml"), tiny);
  // And a file may set them.
  topology::ChipConfig c =
      topology::parse_chip_config("base = \"tiny\"\nvmem_ports = 1\ndma_setup_cycles = 100\n", "t");
  EXPECT_EQ(c.vmem_ports, 1);
  EXPECT_EQ(c.dma_setup_cycles, 100);
  EXPECT_THROW(topology::parse_chip_config("base = \"tiny\"\nvmem_ports = 0\n", "t"),
               podsim::Error);
}

TEST(ChipTimingFields, ExecutablesCarryThem) {
  isa::Executable exe = testdata_kernel("vector_add.s");
  exe.chip.vmem_ports = 3;
  exe.chip.host_link_latency_ns = 250;
  exe.chip.mxu_fill_drain_cycles = 5;
  exe.chip.mxu_accumulators = 3;
  std::vector<uint8_t> bytes = isa::serialize(exe);
  isa::Executable back = isa::deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(back.chip, exe.chip);
}

TEST(ChipTimingFields, DerivedFiguresFollowTheChip) {
  topology::ChipConfig v4 = topology::preset("v4");
  UnitLatencies l = unit_latencies(v4);
  EXPECT_EQ(l.mxu_fill_drain, v4.mxu_rows + v4.mxu_cols);
  EXPECT_EQ(l.vmem_banks, v4.vpu_sublanes);
  EXPECT_EQ(l.vmem_bank_bytes, v4.vpu_lanes * 4);
  EXPECT_EQ(l.vmem_dma_bytes_per_cycle, int64_t{v4.vpu_sublanes} * v4.vpu_lanes * 4);
  // 1000 ns at 1.05 GHz.
  EXPECT_EQ(l.host_link_latency, 1050);
  v4.mxu_fill_drain_cycles = 7;
  EXPECT_EQ(unit_latencies(v4).mxu_fill_drain, 7);
}

TEST(ChipTimingFields, ARunUsesTheExecutablesFigures) {
  // One DMA and its wait: a longer setup moves the end by exactly the difference.
  isa::Executable exe = isa::assemble(
      ".chip tiny\n.region src hbm 0 64\n.region dst vmem[0] 0 64\n"
      ".descriptor d0 src=src dst=dst elem=4 sizes=[16] src_strides=[4] dst_strides=[4]\n"
      ".program core 0\n  dma d0, s0, s0, q0\n  sem.wait q0, 1\n  halt\n");
  uint64_t base = run_timed(exe, {}).cycles;
  exe.chip.dma_setup_cycles += 100;
  EXPECT_EQ(run_timed(exe, {}).cycles, base + 100);
  exe.chip.hbm_latency_ns += 50;  // 1 GHz: 50 cycles more on the read
  EXPECT_EQ(run_timed(exe, {}).cycles, base + 150);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
