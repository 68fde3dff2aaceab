// Placement of buffers in one address space by liveness: buffers whose live ranges
// (inclusive step intervals) overlap get disjoint bytes; the others may share. Used for
// HBM, where every parameter, output, constant and intermediate array is a buffer.
// Internal to compiler/tpu.
#pragma once

#include <cstdint>
#include <vector>

namespace podsim::tpu {

struct BufferRequest {
  int64_t bytes = 0;
  int64_t first_step = 0;  // live from the start of this step
  int64_t last_step = 0;   // to the end of this one
};

struct Placement {
  std::vector<int64_t> offsets;  // one per request, multiples of the alignment
  int64_t total_bytes = 0;       // end of the highest buffer
};

// Largest buffers first, each at the lowest aligned offset that no live-overlapping
// buffer placed before it occupies (XLA's "decreasing size, first fit" heap).
Placement place_buffers(const std::vector<BufferRequest>& requests, int64_t alignment);

}  // namespace podsim::tpu
