#include "compiler/tpu/stream.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "compiler/tpu/lowerer.h"

namespace podsim::tpu {

int ring_depth(const topology::ChipConfig& chip, int64_t tile_bytes, int cores, int64_t slot_bytes,
               int64_t vmem_bytes) {
  const double share = chip.hbm_bandwidth_bytes_per_s / std::max(cores, 1);  // bytes/s
  const double in_flight = 2.0 * chip.hbm_latency_ns * 1e-9 * share;
  int depth = 2 + static_cast<int>(
                      std::ceil(in_flight / static_cast<double>(std::max<int64_t>(tile_bytes, 1))));
  if (slot_bytes > 0) depth = std::min<int64_t>(depth, vmem_bytes / slot_bytes);
  return std::clamp(depth, 2, kMaxRingSlots);
}

void stream_tiles(ProgramBuilder& pb, int64_t tiles, int slots,
                  const std::function<int(int64_t tile, int slot)>& issue,
                  const std::function<void(int64_t tile, int slot)>& compute) {
  if (tiles <= 0) return;
  if (slots < 2 || slots > kMaxRingSlots) fail("internal: a ring of {} slots", slots);
  std::vector<int64_t> count(static_cast<size_t>(slots), 0);
  auto slot_of = [&](int64_t t) { return static_cast<int>(t % slots); };
  for (int64_t t = 0; t < std::min<int64_t>(slots - 1, tiles); ++t)
    count[static_cast<size_t>(t)] = issue(t, slot_of(t));
  for (int64_t t = 0; t < tiles; ++t) {
    const int slot = slot_of(t);
    // Tile t + slots - 1 goes to the slot of tile t - 1, whose compute was emitted (a
    // DMA waits at issue for earlier accesses to its bytes).
    const int64_t ahead = t + slots - 1;
    auto issue_ahead = [&] {
      if (ahead < tiles) count[static_cast<size_t>(slot_of(ahead))] = issue(ahead, slot_of(ahead));
    };
    issue_ahead();
    pb.wait(kSemInput + slot, count[static_cast<size_t>(slot)]);
    count[static_cast<size_t>(slot)] = 0;
    compute(t, slot);
  }
}

OutputRing::OutputRing(ProgramBuilder& pb, int slots)
    : pb_(pb), pending_(static_cast<size_t>(slots), 0) {
  if (slots < 1 || slots > kMaxRingSlots) fail("internal: an output ring of {} slots", slots);
}

int OutputRing::acquire() {
  int slot = next_;
  next_ = (next_ + 1) % static_cast<int>(pending_.size());
  pb_.wait(kSemOutput + slot, pending_[static_cast<size_t>(slot)]);
  pending_[static_cast<size_t>(slot)] = 0;
  return slot;
}

void OutputRing::drain() {
  for (size_t slot = 0; slot < pending_.size(); ++slot) {
    pb_.wait(kSemOutput + static_cast<int>(slot), pending_[slot]);
    pending_[slot] = 0;
  }
}

}  // namespace podsim::tpu
