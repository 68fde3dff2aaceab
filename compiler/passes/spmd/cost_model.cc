#include "compiler/passes/spmd/cost_model.h"

#include <algorithm>

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
  dcn_bytes_per_ns_ = std::min(figures.dcn_host_bandwidth_bytes_per_s / figures.chips_per_host(),
                               figures.chip.host_link_bandwidth_bytes_per_s) *
                      1e-9;
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
  double hop = 0;
  bool neighbours = true, dcn = false;
  for (const std::vector<int64_t>& g : groups)
    for (size_t k = 0; k < g.size() && g.size() > 1; ++k) {
      const int64_t a = g[k], b = g[(k + 1) % g.size()];
      hop = std::max(hop, route_ns(a, b));
      dcn = dcn || across_slices(a, b);
      neighbours = neighbours && torus_ && !across_slices(a, b) && torus_->hops(static_cast<int>(a), static_cast<int>(b)) == 1;
    }
  // A ring of neighbours closes: data goes both ways round it.
  const double bytes_per_ns = dcn ? dcn_bytes_per_ns_ : (neighbours && groups.at(0).size() > 2 ? 2 : 1) * link_bytes_per_ns_;
  return rings_.emplace(groups, Ring{hop + 2 * hbm_ns_, bytes_per_ns}).first->second;
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
  const Ring& r = ring(groups);
  // Rings, or every device's piece sent to every other at once (one shot).
  return std::min((g + 1) * r.step_ns + bytes / r.bytes_per_ns, exchange(all_pairs(groups), bytes / (g - 1)));
}

double CostModel::reduce_scatter(const Groups& groups, double bytes) const {
  const auto g = static_cast<double>(groups.at(0).size());
  return all_gather(groups, bytes * (g - 1) / g);
}

double CostModel::all_reduce(const Groups& groups, double bytes) const {
  const auto g = static_cast<double>(groups.at(0).size());
  if (g < 2) return 0;
  const Ring& r = ring(groups);
  // Rings; a reduce-scatter then an all-gather in one shot each (two shots); the whole
  // array to every device at once where the group's arrays fit a few MiB (one shot).
  const Routes pairs = all_pairs(groups);
  double best = std::min(2 * g * r.step_ns + 2 * bytes * (g - 1) / g / r.bytes_per_ns, 2 * exchange(pairs, bytes / g));
  if (g * bytes <= kOneShotBytes) best = std::min(best, exchange(pairs, bytes));
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

double CostModel::exchange(const Routes& routes, double bytes) const {
  double farthest = 0;
  bool dcn = false;
  for (const auto& [a, b] : routes) {
    farthest = std::max(farthest, route_ns(a, b));
    dcn = dcn || across_slices(a, b);
  }
  const double bytes_per_ns = dcn ? dcn_bytes_per_ns_ : link_bytes_per_ns_;
  return 2 * farthest + 2 * hbm_ns_ + bytes * busiest(routes) / bytes_per_ns;
}

double CostModel::all_to_all(const Groups& groups, double bytes) const {
  const auto g = static_cast<int64_t>(groups.at(0).size());
  if (g < 2) return 0;
  return exchange(all_pairs(groups), bytes / static_cast<double>(g - 1));
}

double CostModel::permute(const std::vector<std::pair<int64_t, int64_t>>& pairs, double bytes) const {
  if (pairs.empty()) return 0;
  return exchange(pairs, bytes);
}

double CostModel::copy(double bytes, double run_bytes) const {
  // Every run takes at least a DMA burst of HBM's time, read and written.
  const double runs = bytes / std::max(run_bytes, 1.0);
  return 2 * hbm_ns_ + 2 * std::max(bytes, runs * burst_bytes_) / hbm_bytes_per_ns_;
}

}  // namespace podsim::passes::spmd
