// Resharding plans (reshard_plan.h).
#include "compiler/passes/spmd/reshard_plan.h"

#include <algorithm>

#include "compiler/ir/sharding.h"

namespace podsim::passes::spmd {
namespace {

// A split that moves from dimension a to dimension b over the same devices, in order.
std::optional<std::pair<int64_t, int64_t>> all_to_all_move(const Tiling& from, const Tiling& to) {
  for (int64_t a = 0; a < from.rank(); ++a)
    for (int64_t b = 0; b < from.rank(); ++b) {
      if (a == b || from.tiles(a) == 1 || from.tiles(b) != 1 || to.tiles(b) != from.tiles(a)) continue;
      std::vector<int64_t> map(static_cast<size_t>(from.rank()));
      for (int64_t d = 0; d < from.rank(); ++d) map[static_cast<size_t>(d)] = d;
      map[static_cast<size_t>(a)] = -1;
      map[static_cast<size_t>(b)] = a;
      if (from.remap(map) == to) return std::pair{a, b};
    }
  return std::nullopt;
}

}  // namespace

Interval interval(const Tiling& t, int64_t device, int64_t d, int64_t size) {
  const int64_t piece = (size + t.tiles(d) - 1) / t.tiles(d);  // the last pieces may be padded
  const int64_t begin = t.position(device)[static_cast<size_t>(d)] * piece;
  return {std::min(begin, size), std::min(begin + piece, size)};
}

ReshardPlan plan_reshard(const Tiling& from, const Tiling& to, const ir::Shape& whole) {
  ReshardPlan plan{std::nullopt, {}, from, false};
  // The all-to-all cuts pieces in equal blocks: splits that divide evenly only.
  if (from.divides(whole) && to.divides(whole)) plan.all_to_all = all_to_all_move(from, to);
  if (plan.all_to_all) return plan;
  Tiling& cur = plan.before_slice;
  while (!(cur == to)) {
    int64_t gather = -1;
    for (int64_t d = 0; d < whole.rank() && gather < 0; ++d) {
      if (cur.tiles(d) == 1) continue;
      for (int64_t p = 0; p < to.devices(); ++p) {
        const Interval a = interval(cur, p, d, whole.dim(d)), b = interval(to, p, d, whole.dim(d));
        if (b.begin < a.begin || b.end > a.end) {
          gather = d;
          break;
        }
      }
    }
    if (gather < 0) {
      plan.slice = true;
      break;
    }
    plan.gathers.push_back(gather);
    cur = cur.unsplit(gather);
  }
  return plan;
}

double plan_ns(const ReshardPlan& plan, const Tiling& from, const ir::Shape& whole, const CostModel& costs) {
  const auto piece = [&](const Tiling& t) { return static_cast<double>(ir::shard_shape(whole, t.sharding()).byte_size()); };
  if (plan.all_to_all) {
    const int64_t a = plan.all_to_all->first;
    const auto k = static_cast<double>(from.tiles(a));
    return costs.all_to_all(from.groups_along({a}), piece(from) / k * (k - 1));
  }
  double ns = 0;
  Tiling cur = from;
  for (int64_t d : plan.gathers) {
    const double before = piece(cur);
    const Groups groups = cur.groups_along({d});
    cur = cur.unsplit(d);
    ns += costs.all_gather(groups, piece(cur) - before);
  }
  return ns;
}

}  // namespace podsim::passes::spmd
