// Internal to the CPU target: the data-movement loops of the block engine, per
// element width (gathers, masked blends, iota, non-temporal copies), and the per-thread
// scratch memory its evaluations run in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compiler/ir/types.h"

namespace podsim::cpu {

// Scratch memory of the calling thread, at least `bytes` long, for use inside one
// TBB task body (which must not wait on other TBB work while using it).
std::byte* thread_scratch(size_t bytes);

// out[i] = base[indices[i]] for elements of `width` bytes.
void gather_bytes(const std::byte* base, const int64_t* indices, int64_t n, size_t width,
                  std::byte* out);
// out[i] = *value for n elements of `width` bytes.
void fill_bytes(const std::byte* value, int64_t n, size_t width, std::byte* out);
// out[i] = mask[i] ? v[i] : out[i] for elements of `width` bytes.
void blend_bytes(const std::byte* v, const uint8_t* mask, int64_t n, size_t width, std::byte* out);
// iota values (k / stride) % size of `type` at n indices k (consecutive from start when
// indices is null).
void iota_block(ir::PrimitiveType type, int64_t stride, int64_t size, int64_t start,
                const int64_t* indices, int64_t n, std::byte* out);
// dst = src, bypassing the caches where the destination is 16-byte aligned; call
// stream_fence() before the data is published to other threads.
void stream_copy(std::byte* dst, const std::byte* src, size_t bytes);
void stream_fence();

}  // namespace podsim::cpu
