// Microarchitectural figures of the timing model that topology::ChipConfig does not
// carry (no TPU publishes them). All are assumptions, in cycles of the chip clock unless
// named otherwise; a value of 0 where "derived" is written means "derive from the
// ChipConfig" as the comment says. They live here rather than in ChipConfig because
// ChipConfig is part of the executable file format; see sim/timing/README.md.
#pragma once

#include <cstdint>

namespace podsim::sim::timing {

struct UnitLatencies {
  int64_t scalar = 1;                    // scalar ALU, branch, sem.signal
  int64_t vmem = 2;                      // vld/vst/sld/sst load-to-use
  int64_t vector = 2;                    // VPU arithmetic result latency
  int64_t transcendental = 8;            // exp, log, sqrt, rsqrt, tanh, logistic, pow, div
  int64_t transcendental_issue = 4;      // VPU issue cycles they occupy (1 for other ops)
  int64_t cross_lane = 4;                // vredl, vreds, vxpose latency
  int64_t mxu_fill_drain = 0;            // derived: mxu_rows + mxu_cols
  int64_t dma_setup = 16;                // descriptor processing before the first burst
  int64_t dma_burst_bytes = 2048;        // a transfer's unit of HBM / VMEM traffic, and
                                         // the HBM channel interleave
  int64_t hbm_turnaround = 8;            // extra cycles when a channel switches read/write
  int64_t vmem_dma_bytes_per_cycle = 0;  // derived: one vector register per cycle
  int64_t barrier = 8;                   // from the last core's arrival to release
};

}  // namespace podsim::sim::timing
