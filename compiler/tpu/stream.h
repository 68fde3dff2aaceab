// Double buffering: tiles stream HBM -> VMEM through two slots so that the DMAs of
// tile t + 1 run while tile t is computed, and results leave through two output slots
// so that computing tile t + 1 overlaps the write-back of tile t. Every DMA is waited
// for on its slot's semaphore before the slot is read or reused. Internal to
// compiler/tpu.
#pragma once

#include <cstdint>
#include <functional>

#include "compiler/tpu/program_builder.h"

namespace podsim::tpu {

// For t in [0, tiles): issue(t, t % 2) emits tile t's input DMAs (each signalling
// kSemInput + slot) and returns how many; compute(t, t % 2) emits its computation.
// Order: issue(0); then per t: issue(t + 1), wait for tile t's DMAs, compute(t).
void stream_tiles(ProgramBuilder& pb, int64_t tiles, const std::function<int(int64_t tile, int slot)>& issue,
                  const std::function<void(int64_t tile, int slot)>& compute);

class OutputRing {
 public:
  explicit OutputRing(ProgramBuilder& pb) : pb_(pb) {}
  // The next output slot, once the DMAs that last read it have completed.
  int acquire();
  // `dmas` DMAs reading the slot were issued, signalling kSemOutput + slot.
  void release(int slot, int dmas) { pending_[slot] += dmas; }
  // Waits for every output DMA.
  void drain();

 private:
  ProgramBuilder& pb_;
  int next_ = 0;
  int64_t pending_[2] = {0, 0};
};

}  // namespace podsim::tpu
