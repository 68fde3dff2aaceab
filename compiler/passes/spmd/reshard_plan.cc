// Resharding plans (reshard_plan.h).
#include "compiler/passes/spmd/reshard_plan.h"

#include <algorithm>
#include <map>

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

// Where `to` cuts the same pieces as `from` and only the devices holding them differ:
// each device that lacks its new piece receives it from a holder (each holder sending
// once). Empty otherwise.
std::vector<std::pair<int64_t, int64_t>> permute_pieces(const Tiling& from, const Tiling& to) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (from.replication() != to.replication()) return pairs;
  for (int64_t d = 0; d < from.rank(); ++d)
    if (from.tiles(d) != to.tiles(d)) return pairs;
  auto piece = [](const Tiling& t, int64_t device) {
    std::vector<int64_t> p = t.position(device);
    p.pop_back();  // which copy
    return p;
  };
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;  // piece -> devices free to send it
  for (int64_t q = 0; q < from.devices(); ++q) holders[piece(from, q)].push_back(q);
  for (int64_t p = 0; p < to.devices(); ++p) {
    const std::vector<int64_t> want = piece(to, p);
    if (piece(from, p) == want) continue;
    std::vector<int64_t>& free = holders.at(want);
    pairs.emplace_back(free.front(), p);
    free.erase(free.begin());
  }
  return pairs;
}

ReshardPlan gather_plan(const Tiling& from, const Tiling& to, const ir::Shape& whole) {
  ReshardPlan plan{{}, std::nullopt, {}, from, false};
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

}  // namespace

Interval interval(const Tiling& t, int64_t device, int64_t d, int64_t size) {
  const int64_t piece = (size + t.tiles(d) - 1) / t.tiles(d);  // the last pieces may be padded
  const int64_t begin = t.position(device)[static_cast<size_t>(d)] * piece;
  return {std::min(begin, size), std::min(begin + piece, size)};
}

ReshardPlan plan_reshard(const Tiling& from, const Tiling& to, const ir::Shape& whole, const CostModel& costs) {
  ReshardPlan best = gather_plan(from, to, whole);
  if (from == to) return best;
  std::vector<ReshardPlan> others;
  if (auto pairs = permute_pieces(from, to); !pairs.empty())
    others.push_back({std::move(pairs), std::nullopt, {}, from, false});
  // The all-to-all cuts pieces in equal blocks: splits that divide evenly only.
  if (from.divides(whole) && to.divides(whole))
    if (auto move = all_to_all_move(from, to)) others.push_back({{}, move, {}, from, false});
  // On a tie the plan that moves fewer bytes (a permute or all-to-all moves each element
  // once, gathers bring every device the others' pieces).
  double least = plan_ns(best, from, whole, costs);
  for (ReshardPlan& p : others)
    if (const double ns = plan_ns(p, from, whole, costs); ns <= least) {
      least = ns;
      best = std::move(p);
    }
  return best;
}

double plan_ns(const ReshardPlan& plan, const Tiling& from, const ir::Shape& whole, const CostModel& costs) {
  const auto piece = [&](const Tiling& t) {
    return static_cast<double>(ir::shard_shape(whole, t.sharding()).byte_size());
  };
  if (!plan.permute.empty()) return costs.permute(plan.permute, piece(from));
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
