// An analytic roofline model of one chip, from the same ChipConfig the simulator reads:
// the time an op cannot beat given the MXU peak, the HBM bandwidth and the HBM latency.
// The timing model's fidelity checks compare simulated times against it (issue 5: a big
// bf16 GEMM at >= 90% of MXU peak, a big elementwise op at >= 85% of HBM bandwidth, small
// ops at the latency floor, each within 5% of this model).
//
// Model: time = max(compute time at MXU peak, HBM traffic time at sustained bandwidth)
//             + one HBM latency (the first bytes must arrive before any work starts).
// (Sustained: the chip's HBM bandwidth less what refresh takes, sustained_hbm_bandwidth.)
// HBM traffic is the minimum an op needs: every operand read once, the result written once.
// Header-only so that tests and benchmarks can use it without another library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "topology/chip_config.h"

namespace podsim::bench {

struct RooflineTime {
  double flops = 0;      // arithmetic the op does (2 per multiply-add)
  double hbm_bytes = 0;  // minimum HBM traffic
  double compute_seconds = 0;
  double memory_seconds = 0;
  double latency_seconds = 0;
  double seconds = 0;  // max(compute, memory) + latency
  double cycles = 0;   // seconds at the chip's clock

  // What sets the time: "compute", "memory", or "latency" when the latency is longer than
  // both (a small op).
  std::string_view bound() const {
    if (latency_seconds >= std::max(compute_seconds, memory_seconds)) return "latency";
    return compute_seconds >= memory_seconds ? "compute" : "memory";
  }
};

// MXU peak in FLOP/s: every multiply-accumulate cell of every MXU of every TensorCore, each
// cycle, 2 FLOPs per MAC (topology computes the same figure as ChipConfig::peak_bf16_flops).
inline double roofline_peak_flops(const topology::ChipConfig& c) {
  return 2.0 * c.tensor_cores * c.mxus_per_core * c.mxu_rows * c.mxu_cols * c.clock_hz;
}

// HBM's sustained bandwidth: the chip's, less the time its channels spend refreshing.
inline double sustained_hbm_bandwidth(const topology::ChipConfig& c) {
  const double refreshing = c.hbm_refresh_interval_ns > 0
                                ? std::min(c.hbm_refresh_ns / c.hbm_refresh_interval_ns, 1.0)
                                : 0.0;
  return c.hbm_bandwidth_bytes_per_s * (1.0 - refreshing);
}

inline RooflineTime roofline_time(const topology::ChipConfig& c, double flops, double hbm_bytes) {
  RooflineTime t;
  t.flops = flops;
  t.hbm_bytes = hbm_bytes;
  t.compute_seconds = flops / roofline_peak_flops(c);
  t.memory_seconds = hbm_bytes / sustained_hbm_bandwidth(c);
  t.latency_seconds = c.hbm_latency_ns * 1e-9;
  t.seconds = std::max(t.compute_seconds, t.memory_seconds) + t.latency_seconds;
  t.cycles = t.seconds * c.clock_hz;
  return t;
}

// C[M,N] = A[M,K] x B[K,N] with bf16 operands; out_bytes per element of C (2 for a bf16
// result, 4 for f32 accumulation written out).
inline RooflineTime roofline_gemm_bf16(const topology::ChipConfig& c, int64_t m, int64_t k,
                                       int64_t n, int out_bytes = 2) {
  const double md = static_cast<double>(m), kd = static_cast<double>(k),
               nd = static_cast<double>(n);
  return roofline_time(c, 2.0 * md * kd * nd, 2.0 * (md * kd + kd * nd) + out_bytes * md * nd);
}

// The same GEMM with what a weight-stationary MXU cannot avoid: every output tile
// (mxu_rows x mxu_cols) is accumulated over K / mxu_rows passes (K cycles), and its
// accumulator is busy from its first pass until the array has drained (fill/drain,
// mxu_rows + mxu_cols cycles) and it has been popped (mxu_rows cycles). With A
// accumulators per MXU (ChipConfig::mxu_accumulators) an MXU takes a tile per
// max(K, (K + fill/drain + mxu_rows) / A) cycles: with one, every tile waits for the
// previous one's drain and pop (K / (K + 2 mxu_rows + mxu_cols) of the time computes);
// with two, the pop overlaps the next tile once K >= fill/drain + mxu_rows. A compiled
// GEMM is compared with this bound as well as with the peak (sim/timing's "systolic"
// MXU works this way).
inline double mxu_tile_cycles(const topology::ChipConfig& c, int64_t k) {
  const double kd = static_cast<double>(k);
  const double fill_drain = c.mxu_fill_drain_cycles > 0
                                ? static_cast<double>(c.mxu_fill_drain_cycles)
                                : static_cast<double>(c.mxu_rows + c.mxu_cols);
  const double accumulators = static_cast<double>(std::max<int64_t>(c.mxu_accumulators, 1));
  const double passes = kd + std::ceil(kd / c.mxu_rows) * static_cast<double>(std::max<int64_t>(
                                                              c.mxu_pass_overhead_cycles, 0));
  return std::max(passes, (passes + fill_drain + c.mxu_rows) / accumulators);
}

inline RooflineTime roofline_gemm_bf16_mxu(const topology::ChipConfig& c, int64_t m, int64_t k,
                                           int64_t n, int out_bytes = 2) {
  RooflineTime t = roofline_gemm_bf16(c, m, k, n, out_bytes);
  t.compute_seconds *= mxu_tile_cycles(c, k) / static_cast<double>(k);
  t.seconds = std::max(t.compute_seconds, t.memory_seconds) + t.latency_seconds;
  t.cycles = t.seconds * c.clock_hz;
  return t;
}

// An elementwise op that moves `bytes` through HBM in all (operands read plus result written):
// its arithmetic is negligible next to the traffic, so it is memory-bound.
inline RooflineTime roofline_elementwise(const topology::ChipConfig& c, double bytes) {
  return roofline_time(c, 0, bytes);
}

// A small op (each operand and the result at most one DMA burst per HBM channel): the
// latency floor. Its operands must arrive before it computes and its result must land
// before it completes, so two dependent HBM transfers, each a DMA's descriptor setup,
// the HBM latency and a burst's time through one channel (a burst is served by one
// channel, at hbm_bandwidth / hbm_channels). The arithmetic is negligible.
inline RooflineTime roofline_small_op(const topology::ChipConfig& c) {
  RooflineTime t = roofline_time(c, 0, 0);
  const double burst_seconds =
      static_cast<double>(c.dma_burst_bytes) * c.hbm_channels / c.hbm_bandwidth_bytes_per_s;
  const double transfer = static_cast<double>(c.dma_setup_cycles) / c.clock_hz +
                          c.hbm_latency_ns * 1e-9 + burst_seconds;
  t.latency_seconds = 2 * transfer;
  t.seconds = t.latency_seconds;
  t.cycles = t.seconds * c.clock_hz;
  return t;
}

// The fraction of a peak a simulated time achieves for the work the roofline counts:
// achieved_fraction(rt, simulated_seconds) = (roofline seconds without latency) / simulated.
inline double roofline_fraction(const RooflineTime& t, double simulated_seconds) {
  return std::max(t.compute_seconds, t.memory_seconds) / simulated_seconds;
}

}  // namespace podsim::bench
