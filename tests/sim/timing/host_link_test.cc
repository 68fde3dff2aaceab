// The host link: parameters host -> device before the program and outputs device ->
// host after it, at ChipConfig::host_link_bandwidth_bytes_per_s, reported apart from the
// program's cycles and, on request, on a "Host link" track of the profile.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/sim/timing/timing_test_util.h"
#include "traces/summary.h"

namespace podsim::sim::timing::testing {
namespace {

// One transfer by hand: latency, then bytes at bandwidth / clock bytes per cycle,
// rounded up.
uint64_t transfer_cycles(const topology::ChipConfig& chip, int64_t bytes, int64_t latency) {
  double per_cycle = chip.host_link_bandwidth_bytes_per_s / chip.clock_hz;
  return static_cast<uint64_t>(latency) +
         static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / per_cycle));
}

TEST(HostLink, TransfersTakeTheirBytesAtTheLinkBandwidthApartFromTheProgram) {
  isa::Executable exe = testdata_kernel("vector_add.s");  // two f32[8,8] in, one out
  auto params = small_parameters(exe);
  TimingOptions o;
  TimedRunResult plain = run_timed(exe, params, o);
  // tiny: 8 GB/s at 1 GHz = 8 bytes per cycle; 256 bytes = 32 cycles after the latency.
  const topology::ChipConfig& chip = exe.chip;
  ASSERT_EQ(chip.host_link_bandwidth_bytes_per_s / chip.clock_hz, 8.0);
  EXPECT_EQ(plain.host_to_device_bytes, 512);
  EXPECT_EQ(plain.device_to_host_bytes, 256);
  EXPECT_EQ(plain.host_to_device_cycles, 2 * (1000 + 32u));
  EXPECT_EQ(plain.device_to_host_cycles, 1000 + 32u);

  exe.chip.host_link_latency_ns = 0;
  TimedRunResult no_latency = run_timed(exe, params, o);
  EXPECT_EQ(no_latency.host_to_device_cycles, 64u);
  EXPECT_EQ(no_latency.device_to_host_cycles, 32u);
  EXPECT_EQ(no_latency.cycles, plain.cycles);  // the program's own cycles do not move

  // A link and clock whose bytes per cycle are not whole (3 GB/s at 1.05 GHz), and a
  // latency of 20 ns = 21 cycles.
  exe.chip.clock_hz = 1.05e9;
  exe.chip.host_link_bandwidth_bytes_per_s = 3e9;
  exe.chip.host_link_latency_ns = 20;
  TimedRunResult odd = run_timed(exe, params, o);
  EXPECT_EQ(odd.host_to_device_cycles, 2 * transfer_cycles(exe.chip, 256, 21));
  EXPECT_EQ(odd.device_to_host_cycles, transfer_cycles(exe.chip, 256, 21));
  EXPECT_EQ(transfer_cycles(exe.chip, 256, 21), 21u + 90u);  // 256 / (3 / 1.05) = 89.6
}

TEST(HostLink, TheProfileShowsTheTransfersAroundTheProgram) {
  isa::Executable exe = testdata_kernel("vector_add.s");
  auto params = small_parameters(exe);
  TimingOptions o;
  o.instruction_trace = true;
  TimedRunResult plain = run_timed(exe, params, o);
  o.profile_host_link = true;
  TimedRunResult linked = run_timed(exe, params, o);

  EXPECT_EQ(linked.cycles, plain.cycles);
  EXPECT_EQ(format_instruction_trace(linked.trace, exe),
            format_instruction_trace(plain.trace, exe));
  const traces::ChipProfile& c = linked.profile.chips.at(0);
  uint64_t in = linked.host_to_device_cycles, out = linked.device_to_host_cycles;
  EXPECT_EQ(c.total_cycles, in + plain.cycles + out);
  EXPECT_TRUE(well_formed(linked.profile));

  const traces::Track* host = find_track(linked.profile, "Host link");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->category, "host");
  ASSERT_EQ(host->spans.size(), 3u);
  EXPECT_EQ(host->spans[0].name, "host->hbm x");
  EXPECT_EQ(host->spans[0].start, 0u);
  EXPECT_EQ(host->spans[1].name, "host->hbm y");
  EXPECT_EQ(host->spans[1].end, in);
  EXPECT_EQ(host->spans[2].name, "hbm->host z");
  EXPECT_EQ(host->spans[2].start, in + plain.cycles);
  EXPECT_EQ(host->spans[2].end, in + plain.cycles + out);
  EXPECT_EQ(host->spans[2].bytes, 256.0);
  EXPECT_EQ(find_track(plain.profile, "Host link"), nullptr);

  // Every program span moved by the uploads' cycles.
  const traces::Track* vpu = find_track(plain.profile, "TensorCore 0 / VPU");
  const traces::Track* shifted = find_track(linked.profile, "TensorCore 0 / VPU");
  ASSERT_NE(vpu, nullptr);
  ASSERT_NE(shifted, nullptr);
  ASSERT_EQ(vpu->spans.size(), shifted->spans.size());
  for (size_t i = 0; i < vpu->spans.size(); ++i) {
    EXPECT_EQ(shifted->spans[i].start, vpu->spans[i].start + in);
    EXPECT_EQ(shifted->spans[i].end, vpu->spans[i].end + in);
  }

  // The summary lists the track with its busy cycles: all but the program's.
  traces::Summary s = traces::summarize(linked.profile);
  bool listed = false;
  for (const traces::TrackBusy& t : s.chips.at(0).tracks)
    if (t.name == "Host link") {
      listed = true;
      EXPECT_EQ(t.busy_cycles, in + out);
    }
  EXPECT_TRUE(listed);
  EXPECT_NE(format_timing_summary(linked, exe.chip).find("outputs 256 bytes in"),
            std::string::npos);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
