#include "compiler/tpu/buffer_assignment.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace podsim::tpu {
namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Placement place_buffers(const std::vector<BufferRequest>& requests, int64_t alignment) {
  if (alignment < 1) fail("buffer alignment must be positive, not {}", alignment);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first_step < requests[b].first_step;
  });

  Placement p;
  p.offsets.assign(requests.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of live-overlapping buffers
  for (size_t i : order) {
    const BufferRequest& r = requests[i];
    taken.clear();
    for (size_t j : placed) {
      const BufferRequest& o = requests[j];
      if (o.bytes == 0 || o.last_step < r.first_step || r.last_step < o.first_step) continue;
      taken.emplace_back(p.offsets[j], p.offsets[j] + o.bytes);
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + r.bytes <= begin) break;
      offset = std::max(offset, align_up(end, alignment));
    }
    p.offsets[i] = offset;
    p.total_bytes = std::max(p.total_bytes, offset + r.bytes);
    placed.push_back(i);
  }
  return p;
}

}  // namespace podsim::tpu
