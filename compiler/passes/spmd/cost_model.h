// What the collectives the SPMD partitioner may write cost on the pod the program will
// run on, in nanoseconds, so that it picks between ways of partitioning an instruction
// (gathering operands or summing partial products; halos by collective-permute or
// gathering) and between resharding plans. An alpha-beta model from the pod's figures,
// close to the TPU lowering's choice of algorithm: a ring collective over a group (in
// group order) takes a step per device, each a route to the next device plus the HBM
// latency of landing and loading, and its bytes over a ring along each torus axis the
// group spans (both ways round an axis that wraps and that the group covers), or over
// DCN at the group's share of a host's NICs; an exchange (one-shot collectives,
// all-to-all, collective-permute) waits for the farthest route twice (ready, then data;
// once for the one-shot collectives, all-to-alls and collective-permutes that fit the
// lowering's mailbox, plus an HBM latency for the copy out of it where the lowering
// copies) and moves its bytes over the busiest link of its routes, or the busiest host's
// NICs and chip's host link for routes to other slices. Each collective takes the
// quicker.
// bench/timing_collective_bench compares the estimates with the simulated pod.
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
    double steps = 0;              // a phase's
    double step_ns = 0;            // a route to the next device and two HBM latencies
    double ici_bytes_per_ns = 0;   // every ring of the group's at once
    double dcn_share = 0;          // of the bytes, that go over DCN (across slices)
    double dcn_bytes_per_ns = 0;
    double ns(double phases, double bytes) const;
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
  // Every route carrying `bytes` at once, after a handshake (else into a mailbox).
  double exchange(const Routes& routes, double bytes, bool handshake = true) const;

  std::unique_ptr<topology::Torus> torus_;  // null without a pod
  double link_bytes_per_ns_, hop_ns_, hbm_ns_, hbm_bytes_per_ns_, burst_bytes_;
  double dcn_ns_;  // a chip's route to another slice: host link, NIC to NIC, host link
  double dcn_host_bytes_per_ns_, host_link_bytes_per_ns_;
  mutable std::map<Groups, Ring> rings_;
  mutable std::map<Routes, double> busiest_;
};

}  // namespace podsim::passes::spmd
