// Streaming through VMEM rings: tiles stream HBM -> VMEM through a ring of slots so that
// the DMAs of the next tiles are in flight while tile t is computed, and results leave
// through a ring of output slots so that computing goes on while earlier results are
// written back. The ring is as deep as the HBM latency at the core's share of the
// bandwidth requires (ring_depth), so that enough bytes are in flight to keep HBM busy.
// Every DMA is waited for on its slot's semaphore before the slot is read or reused.
// Internal to compiler/tpu.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/tpu/program_builder.h"

namespace podsim::tpu {

// Slots for a stream moving `tile_bytes` through HBM per tile (inputs and outputs) on one
// of `cores` cores sharing the bandwidth: enough tiles in flight to cover twice the HBM
// latency, at least 2 and at most kMaxRingSlots, and at most what `vmem_bytes` holds at
// `slot_bytes` of VMEM per slot.
int ring_depth(const topology::ChipConfig& chip, int64_t tile_bytes, int cores, int64_t slot_bytes,
               int64_t vmem_bytes);

// For t in [0, tiles): issue(t, t % slots) emits tile t's input DMAs (each signalling
// kSemInput + slot) and returns how many; compute(t, t % slots) emits its computation.
// Order: issue(0 .. slots - 2); then per t: issue(t + slots - 1) into tile t - 1's slot,
// wait for tile t's DMAs, compute(t).
void stream_tiles(ProgramBuilder& pb, int64_t tiles, int slots,
                  const std::function<int(int64_t tile, int slot)>& issue,
                  const std::function<void(int64_t tile, int slot)>& compute);
// Double buffering (two slots).
inline void stream_tiles(ProgramBuilder& pb, int64_t tiles,
                         const std::function<int(int64_t tile, int slot)>& issue,
                         const std::function<void(int64_t tile, int slot)>& compute) {
  stream_tiles(pb, tiles, 2, issue, compute);
}

class OutputRing {
 public:
  explicit OutputRing(ProgramBuilder& pb, int slots = 2);
  // The next output slot, once the DMAs that last read it have completed.
  int acquire();
  // `dmas` DMAs reading the slot were issued, signalling kSemOutput + slot.
  void release(int slot, int dmas) { pending_[static_cast<size_t>(slot)] += dmas; }
  // Waits for every output DMA.
  void drain();

 private:
  ProgramBuilder& pb_;
  int next_ = 0;
  std::vector<int64_t> pending_;
};

}  // namespace podsim::tpu
