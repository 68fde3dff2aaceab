// What the timed model can reach when the code lets it: a hand-scheduled bf16 GEMM on
// v4 (both TensorCores, four MXUs each, weight loads overlapping the passes) runs at
// >= 90% of the chip's MXU peak; a small copy costs the latency floor; a large copy runs
// at the HBM bandwidth. (Compiled code reaches less where its schedule waits: see the
// timing_fidelity_bench figures.)
#include <gtest/gtest.h>

#include "sim/timing/unit_latencies.h"
#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

// Per core: `rounds` of (mldw on m0..m3, then mmul on m0..m3 accumulating), then the
// four accumulators popped to four output tiles. All operands are in VMEM already (no
// DMA).
std::string resident_gemm(int rounds) {
  std::string text = ".chip v4\n";
  for (int c = 0; c < 2; ++c)
    text += ".region w" + std::to_string(c) + " vmem[" + std::to_string(c) +
            "] 0 32768\n.region a" + std::to_string(c) + " vmem[" + std::to_string(c) +
            "] 32768 32768\n.region o" + std::to_string(c) + " vmem[" + std::to_string(c) +
            "] 65536 262144\n";
  text += ".source 0 \"dot.0\" \"dot\" \"\" \"\" 0\n";
  for (int c = 0; c < 2; ++c) {
    std::string C = std::to_string(c);
    text +=
        ".program core " + C + "\n  sli s1, 256\n  sli s2, 128\n  sli s3, 512\n  sli s4, 65536\n";
    for (int r = 0; r < rounds; ++r) {
      for (int m = 0; m < 4; ++m)
        text += "  mldw.bf16 m" + std::to_string(m) + ", w" + C + "[s0], s1, s2 @0\n";
      for (int m = 0; m < 4; ++m)
        text += "  mmul.bf16 m" + std::to_string(m) + ", a" + C + "[s0], s1, " + (r ? "1" : "0") +
                " @0\n";
    }
    for (int m = 0; m < 4; ++m)
      text += "  smuli s5, s4, " + std::to_string(m) + "\n  mpop.f32 m" + std::to_string(m) +
              ", o" + C + "[s5], s3 @0\n";
    text += "  halt\n";
  }
  return text;
}

TEST(TimingFidelity, ScheduledGemmReachesNinetyPercentOfMxuPeak) {
  const int rounds = 96;
  isa::Executable exe = isa::assemble(resident_gemm(rounds));
  TimedRunResult r = run_timed(exe, {});
  const topology::ChipConfig& chip = exe.chip;
  double flops = 2.0 * 2 * 4 * rounds * 128.0 * 128 * 128;
  double peak_per_cycle =
      2.0 * chip.tensor_cores * chip.mxus_per_core * chip.mxu_rows * chip.mxu_cols;
  double utilisation = flops / (peak_per_cycle * static_cast<double>(r.cycles));
  std::cout << rounds << " rounds on 8 MXUs: " << r.cycles << " cycles, MXU utilisation "
            << utilisation << "\n";
  EXPECT_GE(utilisation, 0.90);
  EXPECT_LE(utilisation, 1.0);
  // The profile agrees: its MXU flops are the GEMM's.
  double profiled = 0;
  for (const traces::Track& t : r.profile.chips.at(0).tracks)
    for (const traces::Span& s : t.spans) profiled += t.category == "mxu" ? s.flops : 0;
  EXPECT_DOUBLE_EQ(profiled, flops);
  EXPECT_TRUE(well_formed(r.profile));
}

TEST(TimingFidelity, SmallCopyCostsTheLatencyFloor) {
  // 64 bytes HBM -> VMEM on the tiny chip: 100 ns HBM latency at 1 GHz dominates; the
  // rest is DMA setup (16), one channel cycle, the VMEM write (2) and the wait and halt.
  isa::Executable exe = isa::assemble(
      ".chip tiny\n.region src hbm 0 64\n.region dst vmem[0] 0 64\n"
      ".descriptor d0 src=src dst=dst elem=4 sizes=[16] src_strides=[4] dst_strides=[4]\n"
      ".program core 0\n  dma d0, s0, s0, q0\n  sem.wait q0, 1\n  halt\n");
  TimedRunResult r = run_timed(exe, {});
  const UnitLatencies l = unit_latencies(exe.chip);
  uint64_t floor = 100 + static_cast<uint64_t>(l.dma_setup + 2 + l.vmem + 2);
  EXPECT_GE(r.cycles, 100u + static_cast<uint64_t>(l.dma_setup));
  EXPECT_LE(r.cycles, floor + 2);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
