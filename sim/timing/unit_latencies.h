// The timing model's microarchitectural figures, in cycles of the chip clock, resolved
// from the ChipConfig's timing fields (topology/chip_config.h: assumptions no TPU
// publishes, the same in every preset but v6e's MXU pass overhead): the "0: derive" ones
// worked out, the ns ones converted. Internal to sim/timing; to change a figure for a
// run, change the executable's ChipConfig (or the chip's TOML file).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "topology/chip_config.h"

namespace podsim::sim::timing {

struct UnitLatencies {
  int64_t scalar = 1;                    // scalar ALU, branch, sem.signal
  int64_t vmem = 2;                      // vld/vst/sld/sst load-to-use
  int64_t vector = 2;                    // VPU arithmetic result latency
  int64_t transcendental = 8;            // exp, log, sqrt, rsqrt, tanh, logistic, pow, div
  int64_t transcendental_issue = 4;      // VPU issue cycles they occupy (1 for other ops)
  int64_t cross_lane = 4;                // vredl, vreds, vxpose latency
  int64_t mxu_fill_drain = 0;            // mxu_rows + mxu_cols unless set
  int64_t mxu_accumulators = 2;          // accumulator buffers per MXU
  int64_t mxu_pass_overhead = 0;         // a pass's cycles beyond its rows
  int64_t dma_setup = 16;                // descriptor processing before the first burst
  int64_t dma_burst_bytes = 2048;        // a transfer's unit of traffic; HBM channel interleave
  int64_t hbm_turnaround = 8;            // extra cycles when a channel switches read/write
  int64_t hbm_refresh_interval = 0;      // a channel's refreshes start this far apart (0: none)
  int64_t hbm_refresh = 0;               // a refresh's length
  int64_t vmem_dma_bytes_per_cycle = 0;  // one vector register unless set
  int64_t vmem_ports = 2;                // VMEM accesses per cycle (vld/vst/sld/sst, DMA)
  int64_t vmem_banks = 0;                // vpu_sublanes unless set
  int64_t vmem_bank_bytes = 0;           // vpu_lanes * 4 unless set
  int64_t barrier = 8;                   // from the last core's arrival to release
  int64_t host_link_latency = 1000;      // a host transfer's start to its first byte
};

// Nanoseconds as whole cycles of a clock, rounded up.
inline int64_t ns_to_cycles(double ns, double clock_hz) {
  return static_cast<int64_t>(std::ceil(ns * clock_hz / 1e9 - 1e-9));
}

inline UnitLatencies unit_latencies(const topology::ChipConfig& c) {
  auto derived = [](int64_t value, int64_t otherwise) { return value > 0 ? value : otherwise; };
  UnitLatencies l;
  l.scalar = c.scalar_latency_cycles;
  l.vmem = c.vmem_latency_cycles;
  l.vector = c.vector_latency_cycles;
  l.transcendental = c.transcendental_latency_cycles;
  l.transcendental_issue = c.transcendental_issue_cycles;
  l.cross_lane = c.cross_lane_latency_cycles;
  l.mxu_fill_drain = derived(c.mxu_fill_drain_cycles, int64_t{c.mxu_rows} + c.mxu_cols);
  l.mxu_accumulators = std::max<int64_t>(c.mxu_accumulators, 1);
  l.mxu_pass_overhead = c.mxu_pass_overhead_cycles;
  l.dma_setup = c.dma_setup_cycles;
  l.dma_burst_bytes = std::max<int64_t>(c.dma_burst_bytes, 1);
  l.hbm_turnaround = c.hbm_turnaround_cycles;
  l.hbm_refresh_interval = ns_to_cycles(c.hbm_refresh_interval_ns, c.clock_hz);
  l.hbm_refresh = l.hbm_refresh_interval > 0 ? ns_to_cycles(c.hbm_refresh_ns, c.clock_hz) : 0;
  l.vmem_dma_bytes_per_cycle =
      derived(c.vmem_dma_bytes_per_cycle, int64_t{c.vpu_sublanes} * c.vpu_lanes * 4);
  l.vmem_ports = std::clamp<int64_t>(c.vmem_ports, 1, 255);
  l.vmem_banks = derived(c.vmem_banks, std::max(c.vpu_sublanes, 1));
  l.vmem_bank_bytes = derived(c.vmem_bank_bytes, int64_t{std::max(c.vpu_lanes, 1)} * 4);
  l.barrier = c.barrier_cycles;
  l.host_link_latency = ns_to_cycles(c.host_link_latency_ns, c.clock_hz);
  return l;
}

}  // namespace podsim::sim::timing
