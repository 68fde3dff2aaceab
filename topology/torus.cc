#include "topology/torus.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>

#include "common/error.h"

namespace podsim::topology {

struct Torus::Graph {
  explicit Graph(int vertices) : reversed(static_cast<size_t>(vertices)) {}
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> reversed;
};

Torus::Torus(const PodConfig& pod) : pod_(pod), dims_(pod.dims()), wraps_(pod.wraps()), twist_{} {
  pod_.validate();
  if (!pod_.twisted) return;  // routes and distances follow from the coordinates
  const int longest = *std::max_element(dims_.begin(), dims_.end());
  for (int a = 0; a < 3; ++a) twist_[a] = dims_[a] == longest ? longest / 2 : 0;
  // Links reversed, so that one search from a destination gives every chip's distance.
  auto graph = std::make_shared<Graph>(pod_.chips_per_slice());
  for (int d = 0; d < pod_.chips_per_slice(); ++d)
    for (int p = 0; p < ports(); ++p)
      if (int n = neighbour(d, p); n >= 0)
        boost::add_edge(static_cast<size_t>(n), static_cast<size_t>(d), graph->reversed);
  graph_ = std::move(graph);
}

ChipCoord Torus::coord(int device) const {
  if (device < 0 || device >= chips())
    fail("device {} is not in pod {} ({} chips)", device, pod_.name, chips());
  const int per_slice = pod_.chips_per_slice();
  int local = device % per_slice;
  ChipCoord c{device / per_slice, {}};
  for (int a = 0; a < 3; ++a) {
    c.xyz[a] = local % dims_[a];
    local /= dims_[a];
  }
  return c;
}

int Torus::device(const ChipCoord& c) const {
  for (int a = 0; a < 3; ++a)
    if (c.xyz[a] < 0 || c.xyz[a] >= dims_[a])
      fail("coordinates ({}, {}, {}) are outside slice shape {}", c.xyz[0], c.xyz[1], c.xyz[2],
           pod_.shape_string());
  if (c.slice < 0 || c.slice >= pod_.slices)
    fail("slice {} is not in pod {} ({} slices)", c.slice, pod_.name, pod_.slices);
  return c.xyz[0] + dims_[0] * (c.xyz[1] + dims_[1] * c.xyz[2]) + pod_.chips_per_slice() * c.slice;
}

int Torus::host(int device) const {
  const ChipCoord c = coord(device);
  const std::array<int, 3> block = pod_.host_block();
  int index = 0;
  for (int a = 2; a >= 0; --a) index = index * (dims_[a] / block[a]) + c.xyz[a] / block[a];
  return c.slice * (pod_.chips_per_slice() / pod_.chips_per_host()) + index;
}

int Torus::neighbour(int device, int port) const {
  if (port < 0 || port >= ports()) fail("port {} does not exist (ports 0..{})", port, ports() - 1);
  ChipCoord c = coord(device);
  const int axis = port / 2;
  const int step = port % 2 == 0 ? 1 : -1;
  const int n = dims_[axis];
  if (n == 1) return -1;
  int& x = c.xyz[axis];
  x += step;
  if (x >= 0 && x < n) return this->device(c);
  if (!wraps_[axis]) return -1;
  x = (x + n) % n;
  // A short axis of a twisted torus wraps onto the far half of each longest axis.
  if (twist_[axis] == 0)
    for (int b = 0; b < 3; ++b)
      if (twist_[b] != 0) c.xyz[b] = (c.xyz[b] + step * twist_[b] + dims_[b]) % dims_[b];
  return this->device(c);
}

std::vector<int> Torus::distances_to(int dst) const {
  // Every slice is wired alike: search in slice 0's graph.
  const int per_slice = pod_.chips_per_slice();
  const size_t local = static_cast<size_t>(dst % per_slice);
  std::vector<int> distance(static_cast<size_t>(per_slice), -1);
  distance[local] = 0;
  const auto& g = graph_->reversed;
  boost::breadth_first_search(g, boost::vertex(local, g),
                              boost::visitor(boost::make_bfs_visitor(boost::record_distances(
                                  distance.data(), boost::on_tree_edge()))));
  return distance;
}

std::vector<Hop> Torus::route(int src, int dst) const {
  const ChipCoord a = coord(src), b = coord(dst);
  if (a.slice != b.slice)
    fail(
        "devices {} and {} are in different slices ({} and {}): their traffic goes over DCN, not "
        "ICI",
        src, dst, a.slice, b.slice);
  std::vector<Hop> hops;
  if (!pod_.twisted) {
    // Dimension order, each axis in its shorter direction; half-way round a ring, + from
    // an even coordinate and - from an odd one, so that the two directions share the
    // half-way traffic (+ for all would load the + links with it alone).
    ChipCoord at = a;
    for (int axis = 0; axis < 3; ++axis) {
      const int n = dims_[axis];
      int forward = ((b.xyz[axis] - at.xyz[axis]) % n + n) % n;
      int backward = (n - forward) % n;
      bool plus;
      int count;
      if (wraps_[axis]) {
        plus = forward < backward || (forward == backward && at.xyz[axis] % 2 == 0);
        count = plus ? forward : backward;
      } else {
        plus = b.xyz[axis] >= at.xyz[axis];
        count = std::abs(b.xyz[axis] - at.xyz[axis]);
      }
      for (int i = 0; i < count; ++i) {
        const int here = device(at);
        const int port = 2 * axis + (plus ? 0 : 1);
        hops.push_back({here, port});
        at = coord(neighbour(here, port));
      }
    }
    return hops;
  }
  const std::vector<int> distance = distances_to(dst);
  const int base = a.slice * pod_.chips_per_slice();
  for (int at = src; at != dst;) {
    const int left = distance[static_cast<size_t>(at - base)];
    int next = -1;
    for (int p = 0; p < ports() && next < 0; ++p)
      if (int n = neighbour(at, p); n >= 0 && distance[static_cast<size_t>(n - base)] == left - 1) {
        hops.push_back({at, p});
        next = n;
      }
    at = next;
  }
  return hops;
}

int Torus::hops(int src, int dst) const { return static_cast<int>(route(src, dst).size()); }

int Torus::diameter() const {
  if (!pod_.twisted) {
    int d = 0;
    for (int a = 0; a < 3; ++a) d += wraps_[a] ? dims_[a] / 2 : dims_[a] - 1;
    return d;
  }
  // Every chip of a twisted torus sees the same distances (it is vertex-transitive).
  const std::vector<int> distance = distances_to(0);
  return *std::max_element(distance.begin(), distance.end());
}

int Torus::bisection_links() const {
  const int per_slice = pod_.chips_per_slice();
  int best = -1;
  for (int axis = 0; axis < 3; ++axis) {
    if (dims_[axis] % 2 != 0) continue;
    const int half = dims_[axis] / 2;
    int crossing = 0;
    for (int d = 0; d < per_slice; ++d)
      for (int p = 0; p < ports(); ++p)
        if (int n = neighbour(d, p);
            n >= 0 && (coord(d).xyz[axis] < half) && !(coord(n).xyz[axis] < half))
          ++crossing;
    if (best < 0 || crossing < best) best = crossing;
  }
  return std::max(best, 0);
}

double Torus::bisection_bandwidth_bytes_per_s() const {
  return bisection_links() * pod_.ici_link_bandwidth_bytes_per_s;
}

int Torus::links() const {
  int count = 0;
  for (int d = 0; d < chips(); ++d)
    for (int p = 0; p < ports(); ++p) count += neighbour(d, p) >= 0;
  return count;
}

double Torus::all_reduce_bandwidth_bytes_per_s() const {
  return links() * pod_.ici_link_bandwidth_bytes_per_s;
}

std::string Torus::drawing() const {
  if (pod_.chips_per_slice() > 256) return "";
  const int width = static_cast<int>(fmt::formatted_size("{}", pod_.chips_per_slice() - 1));
  std::string out;
  for (int z = 0; z < dims_[2]; ++z) {
    if (dims_[2] > 1) out += fmt::format("z = {}{}\n", z, wraps_[2] ? " (z wraps)" : "");
    for (int y = 0; y < dims_[1]; ++y) {
      out += "  ";
      for (int x = 0; x < dims_[0]; ++x)
        out +=
            fmt::format("{:>{}}{}", device({0, {x, y, z}}), width, x + 1 < dims_[0] ? " - " : "");
      out += wraps_[0] && dims_[0] > 1 ? " ~\n" : "\n";
      if (y + 1 < dims_[1]) {
        out += "  ";
        for (int x = 0; x < dims_[0]; ++x)
          out += fmt::format("{:>{}}{}", "|", width, x + 1 < dims_[0] ? "   " : "");
        out += "\n";
      }
    }
    if (wraps_[1] && dims_[1] > 1) {
      out += "  ";
      for (int x = 0; x < dims_[0]; ++x)
        out += fmt::format("{:>{}}{}", "~", width, x + 1 < dims_[0] ? "   " : "");
      out += "\n";
    }
  }
  out += "  (- | links, ~ wraparound";
  if (pod_.twisted) out += "; twisted: a short axis wraps onto the far half of the longest";
  return out + ")\n";
}

}  // namespace podsim::topology
