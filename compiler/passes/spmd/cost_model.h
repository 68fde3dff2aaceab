// What the collectives the SPMD partitioner may write cost on the pod the program will
// run on, in nanoseconds, so that it picks between ways of partitioning an instruction
// (gathering operands or summing partial products; halos by collective-permute or
// gathering) and between resharding plans. An alpha-beta model from the pod's figures,
// close to the TPU lowering's choice of algorithm: a ring collective over a group (in
// group order) takes a step per device, each a route to the next device plus the HBM
// latency of landing and loading, and its bytes over one link each way (both where the
// ring closes over neighbours); an exchange (one-shot collectives, all-to-all,
// collective-permute) waits for the farthest route twice (ready, then data) and moves
// its bytes over the busiest link of its routes. Each collective takes the quicker.
// Partition p runs on device p of the pod (replica 0); without a pod, every two devices
// are one hop apart on links of a v5e chip.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace podsim::topology {
struct PodConfig;
class Torus;
}  // namespace podsim::topology

namespace podsim::passes::spmd {

using Groups = std::vector<std::vector<int64_t>>;

class CostModel {
 public:
  explicit CostModel(const topology::PodConfig* pod);
  ~CostModel();

  // Each device of a group receives `bytes` (the pieces of the others).
  double all_gather(const Groups& groups, double bytes) const;
  // Each device's array of `bytes` summed over its group, every device keeping the sum
  // (an all-reduce: twice a reduce-scatter's steps and bytes) or its 1 / g piece of it.
  double all_reduce(const Groups& groups, double bytes) const;
  double reduce_scatter(const Groups& groups, double bytes) const;
  // Each device sends `bytes` to the others of its group, an equal part to each.
  double all_to_all(const Groups& groups, double bytes) const;
  // Each pair's first device sends `bytes` to its second.
  double permute(const std::vector<std::pair<int64_t, int64_t>>& pairs, double bytes) const;
  // A copy of `bytes` on each device (a slice, pad or select that forms halos), in
  // contiguous runs of `run_bytes`: read and written through HBM by DMA bursts.
  double copy(double bytes, double run_bytes) const;

 private:
  struct Ring {
    double step_ns;        // a route to the next device of the ring and two HBM latencies
    double bytes_per_ns;   // one way round, or both
  };
  using Routes = std::vector<std::pair<int64_t, int64_t>>;
  static Routes all_pairs(const Groups& groups);
  // The most a one-shot all-reduce gathers on a device (the TPU lowering's limit).
  static constexpr double kOneShotBytes = 2 << 20;
  const Ring& ring(const Groups& groups) const;
  bool across_slices(int64_t a, int64_t b) const;
  double route_ns(int64_t a, int64_t b) const;
  // The most of these routes that cross one ICI link in one direction (at least 1).
  double busiest(const Routes& routes) const;
  // Every route carrying `bytes` at once.
  double exchange(const Routes& routes, double bytes) const;

  std::unique_ptr<topology::Torus> torus_;  // null without a pod
  double link_bytes_per_ns_, hop_ns_, hbm_ns_, hbm_bytes_per_ns_, burst_bytes_;
  double dcn_ns_, dcn_bytes_per_ns_;  // a chip's route to another slice, and its share of its host's NICs
  mutable std::map<Groups, Ring> rings_;
  mutable std::map<Routes, double> busiest_;
};

}  // namespace podsim::passes::spmd
