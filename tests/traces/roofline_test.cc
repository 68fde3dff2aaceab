// The analytic roofline (bench/roofline.h) against figures derived by hand for the v4
// preset: 2 TensorCores x 4 MXUs of 128x128 at 1.05 GHz = 275.2512 TFLOP/s bf16,
// 1200 GB/s HBM of which refresh (260 ns every 3900 ns) leaves 14/15: 1120 GB/s sustained,
// 500 ns HBM latency.
#include "bench/roofline.h"

#include <gtest/gtest.h>

namespace podsim::bench {
namespace {

const topology::ChipConfig kV4 = topology::preset("v4");

TEST(Roofline, PeakMatchesThePublishedFigureAndTopology) {
  // 2 * 4 * 128 * 128 MACs * 2 FLOPs * 1.05e9 = 2.752512e14.
  EXPECT_DOUBLE_EQ(roofline_peak_flops(kV4), 2.752512e14);
  EXPECT_DOUBLE_EQ(roofline_peak_flops(kV4), kV4.peak_bf16_flops());
}

TEST(Roofline, SustainedBandwidthIsWhatRefreshLeaves) {
  EXPECT_NEAR(sustained_hbm_bandwidth(kV4), 1.12e12, 1.0);
  topology::ChipConfig no_refresh = kV4;
  no_refresh.hbm_refresh_interval_ns = 0;
  EXPECT_DOUBLE_EQ(sustained_hbm_bandwidth(no_refresh), 1.2e12);
}

TEST(Roofline, BigBf16GemmIsComputeBound) {
  // 8192^3: 2 * 8192^3 = 1,099,511,627,776 FLOPs / 2.752512e14 = 3.994575238e-3 s.
  // Traffic 2 B * (8192^2 * 3) = 402,653,184 B / 1.12e12 = 3.595117714e-4 s.
  RooflineTime t = roofline_gemm_bf16(kV4, 8192, 8192, 8192);
  EXPECT_DOUBLE_EQ(t.flops, 1099511627776.0);
  EXPECT_DOUBLE_EQ(t.hbm_bytes, 402653184.0);
  EXPECT_NEAR(t.compute_seconds, 3.994575238e-3, 1e-12);
  EXPECT_NEAR(t.memory_seconds, 3.595117714e-4, 1e-13);
  EXPECT_NEAR(t.latency_seconds, 5e-7, 1e-18);
  EXPECT_NEAR(t.seconds, 3.995075238e-3, 1e-12);
  EXPECT_NEAR(t.cycles, 4194829.0, 1e-3);  // seconds * 1.05e9
  EXPECT_EQ(t.bound(), "compute");
  // A simulated time 10% over the compute time reaches 1/1.1 of peak.
  EXPECT_NEAR(roofline_fraction(t, t.compute_seconds * 1.1), 1 / 1.1, 1e-12);
}

TEST(Roofline, GemmWithF32OutputCountsFourBytesPerResult) {
  // 128x128x128 with an f32 result: 2*(2*16384) + 4*16384 = 131072 B -> 1.1703e-7 s;
  // 2*128^3 = 4194304 FLOPs -> 1.5238e-8 s: memory-bound, then the 500 ns latency on top.
  RooflineTime t = roofline_gemm_bf16(kV4, 128, 128, 128, 4);
  EXPECT_DOUBLE_EQ(t.hbm_bytes, 131072.0);
  EXPECT_NEAR(t.memory_seconds, 131072 / 1.12e12, 1e-18);
  EXPECT_NEAR(t.seconds, 131072 / 1.12e12 + 5e-7, 1e-18);
  EXPECT_EQ(t.bound(), "latency");
}

TEST(Roofline, ElementwiseIsMemoryBound) {
  // f32 add over 2^28 elements: read 2 x 4 B, write 4 B each: 3,221,225,472 B / 1.12e12 B/s
  // = 2.876094171e-3 s, plus 500 ns.
  RooflineTime t = roofline_elementwise(kV4, 3.0 * 4 * (1 << 28));
  EXPECT_NEAR(t.memory_seconds, 2.876094171e-3, 1e-12);
  EXPECT_NEAR(t.seconds, 2.876594171e-3, 1e-12);
  EXPECT_EQ(t.bound(), "memory");
  EXPECT_NEAR(roofline_fraction(t, 2.876094171e-3 / 0.85), 0.85, 1e-9);
}

TEST(Roofline, SmallOpsSitOnTheLatencyFloor) {
  // Read, then write back: each transfer 16 setup cycles / 1.05 GHz = 15.2381 ns, 500 ns
  // latency, and 2048 B through one of 32 channels of 1.2 TB/s (37.5 GB/s) = 54.6133 ns:
  // 2 x 569.8514 ns = 1139.7029 ns = 1196.688 cycles.
  RooflineTime t = roofline_small_op(kV4);
  EXPECT_NEAR(t.seconds, 2 * (16 / 1.05e9 + 5e-7 + 2048 / 37.5e9), 1e-18);
  EXPECT_NEAR(t.cycles, 1196.688, 1e-3);
  EXPECT_EQ(t.bound(), "latency");
}

TEST(Roofline, FollowsTheConfig) {
  // v5e: 1 core x 4 MXUs of 128x128 at 1.5 GHz = 196.608 TFLOP/s, 819 GB/s (14/15 of it
  // sustained).
  const topology::ChipConfig v5e = topology::preset("v5e");
  EXPECT_DOUBLE_EQ(roofline_peak_flops(v5e), 1.96608e14);
  EXPECT_NEAR(roofline_elementwise(v5e, 819e9 * 14 / 15).memory_seconds, 1.0, 1e-12);
}

}  // namespace
}  // namespace podsim::bench
