#include "compiler/passes/spmd/cost_model.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "topology/pod_config.h"
#include "topology/torus.h"

namespace podsim::passes::spmd {

CostModel::CostModel(const topology::PodConfig* pod) {
  const topology::PodConfig figures = pod ? *pod : topology::pod_config("v5e-4");
  if (pod) torus_ = std::make_unique<topology::Torus>(*pod);
  link_bytes_per_ns_ = figures.ici_link_bandwidth_bytes_per_s * 1e-9;
  hop_ns_ = figures.ici_link_latency_ns;
  hbm_ns_ = figures.chip.hbm_latency_ns;
  hbm_bytes_per_ns_ = figures.chip.hbm_bandwidth_bytes_per_s * 1e-9;
  burst_bytes_ = static_cast<double>(figures.chip.dma_burst_bytes);
  dcn_ns_ = figures.dcn_latency_ns + 2 * figures.chip.host_link_latency_ns;
  dcn_host_bytes_per_ns_ = figures.dcn_host_bandwidth_bytes_per_s * 1e-9;
  host_link_bytes_per_ns_ = figures.chip.host_link_bandwidth_bytes_per_s * 1e-9;
}

CostModel::~CostModel() = default;

bool CostModel::across_slices(int64_t a, int64_t b) const {
  return torus_ && torus_->coord(static_cast<int>(a)).slice != torus_->coord(static_cast<int>(b)).slice;
}

double CostModel::route_ns(int64_t a, int64_t b) const {
  if (a == b) return 0;
  if (!torus_) return hop_ns_;
  if (across_slices(a, b)) return dcn_ns_;
  return torus_->hops(static_cast<int>(a), static_cast<int>(b)) * hop_ns_;
}

const CostModel::Ring& CostModel::ring(const Groups& groups) const {
  const auto it = rings_.find(groups);
  if (it != rings_.end()) return it->second;
  const std::vector<int64_t>& first = groups.at(0);
  Ring r;  // without a pod: a step per device, one hop each
  r.step_ns = hop_ns_ + 2 * hbm_ns_;
  r.steps = static_cast<double>(first.size()) + 1;
  r.ici_bytes_per_ns = link_bytes_per_ns_;
  if (torus_) {
    // A ring along each torus axis the group spans inside a slice, at once (a step per
    // chip along each, and a handshake); both ways round an axis that wraps where the
    // group covers all of it, as the TPU lowering's rings go.
    const topology::PodConfig& pod = torus_->pod();
    std::map<int, std::set<int64_t>> slices;
    std::map<int, int> on_host;
    int most_on_host = 1;
    for (int64_t d : first) {
      slices[torus_->coord(static_cast<int>(d)).slice].insert(d);
      most_on_host = std::max(most_on_host, ++on_host[torus_->host(static_cast<int>(d))]);
    }
    double links = 0, steps = 1;
    int gap = 1;  // hops between a chip and the next along an axis
    for (size_t a = 0; a < 3; ++a) {
      std::set<int> along;
      for (int64_t d : slices.begin()->second) along.insert(torus_->coord(static_cast<int>(d)).xyz[a]);
      if (along.size() < 2) continue;
      steps += static_cast<double>(along.size()) - 1;
      links += static_cast<int>(along.size()) == pod.dims()[a] && pod.wraps()[a] && pod.dims()[a] > 2 ? 2 : 1;
      for (auto x = along.begin(), y = std::next(x); y != along.end(); ++x, ++y) gap = std::max(gap, *y - *x);
    }
    r.ici_bytes_per_ns = std::max(links, 1.0) * link_bytes_per_ns_;
    r.steps = steps + 1;
    r.step_ns = gap * hop_ns_ + 2 * hbm_ns_;
    if (slices.size() > 1) {
      // Hierarchical: across k slices, each chip moves its 1 / (chips in its slice) share
      // of the (k - 1) / k of the bytes from other slices over DCN, the group's chips on
      // a host sharing its NICs.
      const auto k = static_cast<double>(slices.size());
      r.steps += k - 1;
      r.dcn_share = (k - 1) / k / static_cast<double>(slices.begin()->second.size());
      r.dcn_bytes_per_ns = std::min(dcn_host_bytes_per_ns_ / most_on_host, host_link_bytes_per_ns_);
      r.step_ns = dcn_ns_ + 2 * hbm_ns_;
    }
  }
  return rings_.emplace(groups, r).first->second;
}

double CostModel::Ring::ns(double phases, double bytes) const {
  const double dcn = dcn_share > 0 ? bytes * dcn_share / dcn_bytes_per_ns : 0;
  return phases * steps * step_ns + bytes / ici_bytes_per_ns + dcn;
}

CostModel::Routes CostModel::all_pairs(const Groups& groups) {
  Routes routes;
  for (const std::vector<int64_t>& group : groups)
    for (int64_t a : group)
      for (int64_t b : group)
        if (a != b) routes.emplace_back(a, b);
  return routes;
}

double CostModel::all_gather(const Groups& groups, double bytes) const {
  const auto g = static_cast<double>(groups.at(0).size());
  if (g < 2) return 0;
  // Rings, or every device's piece sent to every other at once (one shot).
  return std::min(ring(groups).ns(1, bytes), exchange(all_pairs(groups), bytes / (g - 1), false) + hbm_ns_);
}

double CostModel::reduce_scatter(const Groups& groups, double bytes) const {
  const auto g = static_cast<double>(groups.at(0).size());
  return all_gather(groups, bytes * (g - 1) / g);
}

double CostModel::all_reduce(const Groups& groups, double bytes) const {
  const auto g = static_cast<double>(groups.at(0).size());
  if (g < 2) return 0;
  // Rings; a reduce-scatter then an all-gather in one shot each (two shots); the whole
  // array to every device at once where the group's arrays fit a few MiB (one shot).
  const Routes pairs = all_pairs(groups);
  // (The two-shot's exchanges are one use of the mailbox where both fit it.)
  const double two_shot = 2 * bytes <= kOneShotBytes ? 2 * exchange(pairs, bytes / g, false) + hbm_ns_
                                                     : exchange(pairs, bytes / g, false) + exchange(pairs, bytes / g);
  double best = std::min(ring(groups).ns(2, 2 * bytes * (g - 1) / g), two_shot);
  if (g * bytes <= kOneShotBytes) best = std::min(best, exchange(pairs, bytes, false));
  return best;
}

double CostModel::busiest(const Routes& routes) const {
  if (!torus_) return 1;
  const auto it = busiest_.find(routes);
  if (it != busiest_.end()) return it->second;
  std::map<std::pair<int, int>, int64_t> flows;  // (device, port) -> routes
  int64_t most = 1;
  for (const auto& [a, b] : routes) {
    if (a == b || across_slices(a, b)) continue;
    for (const topology::Hop& hop : torus_->route(static_cast<int>(a), static_cast<int>(b)))
      most = std::max(most, ++flows[{hop.device, hop.port}]);
  }
  return busiest_.emplace(routes, static_cast<double>(most)).first->second;
}

double CostModel::exchange(const Routes& routes, double bytes, bool handshake) const {
  double farthest = 0;
  std::map<int64_t, int> host_out, chip_out;  // routes leaving for another slice
  for (const auto& [a, b] : routes) {
    farthest = std::max(farthest, route_ns(a, b));
    if (across_slices(a, b)) {
      ++host_out[torus_->host(static_cast<int>(a))];
      ++chip_out[a];
    }
  }
  double ns = bytes * busiest(routes) / link_bytes_per_ns_;
  // Over DCN: each host's routes through its NICs, each chip's through its host link.
  for (const auto& [host, n] : host_out) ns = std::max(ns, bytes * n / dcn_host_bytes_per_ns_);
  for (const auto& [chip, n] : chip_out) ns = std::max(ns, bytes * n / host_link_bytes_per_ns_);
  return (handshake ? 2 : 1) * farthest + 2 * hbm_ns_ + ns;
}

double CostModel::all_to_all(const Groups& groups, double bytes) const {
  const auto g = static_cast<int64_t>(groups.at(0).size());
  if (g < 2) return 0;
  // Into the mailbox (then copied out) where the group's blocks fit it.
  const bool mailbox = bytes * static_cast<double>(g) / static_cast<double>(g - 1) <= kOneShotBytes;
  return exchange(all_pairs(groups), bytes / static_cast<double>(g - 1), !mailbox) + (mailbox ? hbm_ns_ : 0);
}

double CostModel::permute(const std::vector<std::pair<int64_t, int64_t>>& pairs, double bytes) const {
  if (pairs.empty()) return 0;
  const bool mailbox = bytes <= kOneShotBytes;  // then copied out of it
  return exchange(pairs, bytes, !mailbox) + (mailbox ? hbm_ns_ : 0);
}

double CostModel::copy(double bytes, double run_bytes) const {
  // Every run takes at least a DMA burst of HBM's time, read and written.
  const double runs = bytes / std::max(run_bytes, 1.0);
  return 2 * hbm_ns_ + 2 * std::max(bytes, runs * burst_bytes_) / hbm_bytes_per_ns_;
}

}  // namespace podsim::passes::spmd
