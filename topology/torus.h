// The wiring of a pod: device order, ICI neighbours per port, routes and hop counts, and
// the figures that follow from the links (bisection and all-reduce bandwidth).
//
// Device order: slice after slice; inside a slice x varies fastest, then y, then z (device
// id = x + dim_x * (y + dim_y * z) + chips_per_slice * slice). Hosts own blocks of
// host_x x host_y x host_z chips, numbered in the same order as their first chips.
// Ports: 2 * axis for the + direction, 2 * axis + 1 for -, axes x, y, z. A port has no
// link at the end of an axis that does not wrap and on an axis of length 1.
// Routes stay inside a slice: dimension order (x, then y, then z), each axis in its
// shorter direction (on a tie, half-way round a ring: + from an even coordinate, - from an
// odd one); on a twisted torus, the first port, in that order, that
// brings the packet one hop closer. Traffic between slices goes over DCN, not ICI.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "topology/pod_config.h"

namespace podsim::topology {

struct ChipCoord {
  int slice = 0;
  std::array<int, 3> xyz{};
  bool operator==(const ChipCoord&) const = default;
};

struct Hop {
  int device;  // where the packet is
  int port;    // the port it leaves by
};

class Torus {
 public:
  explicit Torus(const PodConfig& pod);

  const PodConfig& pod() const { return pod_; }
  int chips() const { return pod_.chips(); }
  int ports() const { return 6; }

  ChipCoord coord(int device) const;
  int device(const ChipCoord& c) const;
  int host(int device) const;

  // The chip at the other end of a port's link, or -1 when the port has no link.
  int neighbour(int device, int port) const;

  // The hops from src to dst (empty when src == dst); podsim::Error when they are in
  // different slices (that traffic goes over DCN).
  std::vector<Hop> route(int src, int dst) const;
  int hops(int src, int dst) const;
  // The longest shortest route inside a slice.
  int diameter() const;

  // Links, one direction, that a cut through the middle of a slice crosses, minimised over
  // the axes that can be halved; 0 for a single chip.
  int bisection_links() const;
  double bisection_bandwidth_bytes_per_s() const;
  // Every chip's outgoing links at once, summed over the pod: the rate at which a
  // bandwidth-bound all-reduce moves data (what Google's pod tables call all-reduce
  // bandwidth).
  double all_reduce_bandwidth_bytes_per_s() const;
  // Links of the whole pod, one direction.
  int links() const;

  // Device ids of one slice, plane by plane (z), with the links between them; "" when the
  // slice has more than 256 chips.
  std::string drawing() const;

 private:
  // Hop counts to `dst` from every chip of its slice (breadth-first over the links).
  std::vector<int> distances_to(int dst) const;

  PodConfig pod_;
  std::array<int, 3> dims_;
  std::array<bool, 3> wraps_;
  std::array<int, 3> twist_;  // shift along each axis when a short axis wraps
  struct Graph;               // a slice's links, reversed, for distances_to()
  std::shared_ptr<const Graph> graph_;
};

}  // namespace podsim::topology
