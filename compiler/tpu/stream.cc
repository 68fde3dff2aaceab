#include "compiler/tpu/stream.h"

#include "compiler/tpu/lowerer.h"

namespace podsim::tpu {

void stream_tiles(ProgramBuilder& pb, int64_t tiles, const std::function<int(int64_t tile, int slot)>& issue,
                  const std::function<void(int64_t tile, int slot)>& compute) {
  if (tiles <= 0) return;
  int64_t count[2] = {issue(0, 0), 0};
  for (int64_t t = 0; t < tiles; ++t) {
    int slot = static_cast<int>(t % 2);
    if (t + 1 < tiles) count[1 - slot] = issue(t + 1, 1 - slot);
    pb.wait(kSemInput + slot, count[slot]);
    count[slot] = 0;
    compute(t, slot);
  }
}

int OutputRing::acquire() {
  int slot = next_;
  next_ ^= 1;
  pb_.wait(kSemOutput + slot, pending_[slot]);
  pending_[slot] = 0;
  return slot;
}

void OutputRing::drain() {
  for (int slot = 0; slot < 2; ++slot) {
    pb_.wait(kSemOutput + slot, pending_[slot]);
    pending_[slot] = 0;
  }
}

}  // namespace podsim::tpu
