// Index-space helpers shared by the kernels: collapsing dimensions that every access
// walks contiguously, and strided DMA copies of any rank (split into DMAs of at most
// isa::kMaxDmaDims dimensions). Internal to compiler/tpu.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/tpu/program_builder.h"

namespace podsim::tpu {

struct Collapsed {
  std::vector<int64_t> dims;
  std::vector<int> labels;                     // per collapsed dim
  std::vector<std::vector<int64_t>> strides;   // per access, per collapsed dim
};

// Drops size-1 dimensions and merges adjacent dimensions d, d+1 with equal labels when
// every access has stride[d] == stride[d+1] * dims[d+1] (strides in elements; one
// vector per access, each of dims.size()).
Collapsed collapse(const std::vector<int64_t>& dims, const std::vector<int>& labels,
                   const std::vector<std::vector<int64_t>>& strides);

// Issues DMAs (each signalling `semaphore`) copying the elements of a sizes-shaped
// index space from src (byte offset + index . src_strides elements) to dst; returns
// how many. Nothing is issued for an empty space.
int issue_copy(ProgramBuilder& pb, int32_t src_region, int64_t src_offset, int32_t dst_region, int64_t dst_offset,
               int64_t element_bytes, const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
               const std::vector<int64_t>& dst_strides, int semaphore);
// A descriptor copying `bytes` contiguous bytes from src_region to dst_region (offsets
// given at issue), in the widest elements of up to 8 bytes that divide them.
int32_t contiguous_descriptor(ProgramBuilder& pb, int32_t src_region, int32_t dst_region, int64_t bytes);
// The same with a run-time part of an offset: src_reg / dst_reg name a scalar register
// holding bytes added to src_offset / dst_offset (-1: none).
int issue_copy(ProgramBuilder& pb, int32_t src_region, int src_reg, int64_t src_offset, int32_t dst_region,
               int dst_reg, int64_t dst_offset, int64_t element_bytes, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides, int semaphore);

}  // namespace podsim::tpu
