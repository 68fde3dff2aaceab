#include "compiler/tpu/collective_rings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "compiler/ir/collective_groups.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"
#include "topology/torus.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;

// Semaphores of the rings, apart from the steps' (lowerer.h), so that steps may run
// while a collective is in flight: sends, then a semaphore per VMEM slot (its loads, then
// the sends and stores from it: a slot's uses follow one another) and two landing
// counters per stream (as many slots as leave room for the
// counters: RingEmitter's slots_, first_landed_, landed_), then kSemLocal and those of
// collective_rings.h. A stream's landings are counted and taken in the order they were
// sent, so each counter has one sender order: a reduce-scatter's first sends (issued a
// window ahead of its reductions) count on one, everything the reductions send on (and
// all-gathers) on the other.
constexpr int kMaxStreams = 6;  // 3 axes, both directions
constexpr int kMaxSlots = 16;
constexpr int kSemSentHbm = kSemCollectives;  // remote sends from HBM have read their source
constexpr int kSemSlot = kSemSentHbm + 1;     // + slot: loads into a VMEM slot, then sends and stores from it
constexpr int kSemLocal = kSemMailboxSecond - 1;  // table rows in, flags out
static_assert(kSemSlot + 4 + 2 * kMaxStreams <= kSemLocal);  // at least 4 slots

// The bytes a block's piece may have at most in one transfer: small enough that the
// ring's pipeline fills quickly, large enough that per-DMA overheads stay small.
constexpr int64_t kMaxSubChunkBytes = 64 * 1024;
// A smaller block still goes in this many sub-blocks where each keeps a VPU tile: a
// ring step's sub-blocks follow one another on the link, each one's landing, load and
// reduction (hop and HBM latencies, microseconds) overlapping the next one's transfer.
// (4 MiB reduce-scatters on v5e:4x4, v4:4x4x4 and v5e:16x16: 1.3 to 1.9x faster; 8
// sub-blocks gain no more, their per-item costs taking back what the pipeline gives.)
constexpr int64_t kMinSubBlocks = 4;

// Snake position of a device over its slice (slices in order): rows along x, alternate
// rows reversed, alternate planes' rows reversed, so consecutive positions are adjacent.
int64_t snake_position(const topology::Torus& torus, int64_t device) {
  const topology::ChipCoord c = torus.coord(static_cast<int>(device));
  const std::array<int, 3> d = torus.pod().dims();
  const int64_t row = int64_t{c.xyz[2]} * d[1] + (c.xyz[2] % 2 ? d[1] - 1 - c.xyz[1] : c.xyz[1]);
  const int64_t x = row % 2 ? d[0] - 1 - c.xyz[0] : c.xyz[0];
  return (int64_t{c.slice} * d[2] * d[1] + row) * d[0] + x;
}

// How the groups lie on the pod when each is a box in device order: the axes a group
// spans (0 to 2: x, y, z of the torus; 3: the slice, over DCN), the chips along each, and
// the group-position stride of each (x fastest, slices slowest, as device ids count).
// Empty axes when the groups are not such boxes.
struct Box {
  std::vector<int> axes;
  std::vector<int64_t> extent, stride;
};
constexpr int kSliceAxis = 3;

Box find_box(const topology::Torus& torus, const std::vector<std::vector<int64_t>>& groups) {
  Box box;
  const int64_t g = static_cast<int64_t>(groups.at(0).size());
  auto coordinate = [&](int64_t device, int axis) {
    const topology::ChipCoord c = torus.coord(static_cast<int>(device));
    return axis == kSliceAxis ? c.slice : c.xyz[static_cast<size_t>(axis)];
  };
  for (size_t n = 0; n < groups.size(); ++n) {
    std::array<std::vector<int>, 4> values;
    for (int64_t d : groups[n])
      for (int a = 0; a < 4; ++a) values[static_cast<size_t>(a)].push_back(coordinate(d, a));
    Box b;
    int64_t stride = 1;
    for (int a = 0; a < 4; ++a) {
      std::vector<int>& v = values[static_cast<size_t>(a)];
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      if (v.size() < 2) continue;
      b.axes.push_back(a);
      b.extent.push_back(static_cast<int64_t>(v.size()));
      b.stride.push_back(stride);
      stride *= static_cast<int64_t>(v.size());
    }
    if (stride != g || (n > 0 && (b.axes != box.axes || b.extent != box.extent))) return {};
    // Group position = sum of coordinate ranks x strides.
    for (int64_t p = 0; p < g; ++p) {
      int64_t position = 0;
      for (size_t k = 0; k < b.axes.size(); ++k) {
        const std::vector<int>& v = values[static_cast<size_t>(b.axes[k])];
        const int at = coordinate(groups[n][static_cast<size_t>(p)], b.axes[k]);
        position += (std::lower_bound(v.begin(), v.end(), at) - v.begin()) * b.stride[k];
      }
      if (position != p) return {};
    }
    box = std::move(b);
  }
  return box;
}

// Elements [0, total) cut into `parts` pieces as equal as whole elements allow (none empty).
std::vector<std::pair<int64_t, int64_t>> split(int64_t total, int64_t parts) {
  parts = std::max<int64_t>(1, std::min(parts, total));
  std::vector<std::pair<int64_t, int64_t>> pieces;
  for (int64_t q = 0, lo = 0; q < parts; ++q) {
    const int64_t n = total / parts + (q < total % parts ? 1 : 0);
    pieces.emplace_back(lo, n);
    lo += n;
  }
  return pieces;
}

// Elements [0, total) cut into one piece per weight, in proportion to the weights as
// whole elements allow (none empty: total is at least the number of weights).
std::vector<std::pair<int64_t, int64_t>> split_weighted(int64_t total, const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  const auto parts = static_cast<int64_t>(weights.size());
  std::vector<std::pair<int64_t, int64_t>> pieces;
  double before = 0;
  for (int64_t q = 0, lo = 0; q < parts; ++q) {
    before += weights[static_cast<size_t>(q)];
    // At least one element each, and one left for every later piece.
    const int64_t end = q + 1 == parts ? total
                                       : std::clamp<int64_t>(std::llround(static_cast<double>(total) * before / sum),
                                                             lo + 1, total - (parts - q - 1));
    pieces.emplace_back(lo, end - lo);
    lo = end;
  }
  return pieces;
}

int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

}  // namespace

int64_t RingPhase::blocks() const {
  return std::accumulate(block_sizes.begin(), block_sizes.end(), int64_t{1}, std::multiplies<>());
}

RingPlan plan_rings(const Lowerer& l, const Instruction& i, int64_t chunk_elements, int64_t element_bytes) {
  const Target& t = l.target();
  const auto groups = ir::collective_device_groups(i, t.replicas, t.partitions);
  const topology::Torus torus(*t.pod);
  RingPlan plan;
  plan.group_size = static_cast<int64_t>(groups.at(0).size());
  plan.chunk_elements = chunk_elements;
  plan.element_bytes = element_bytes;
  const int64_t g = plan.group_size;

  // A ring of one phase by group position: each position's next and previous one, and
  // the first chunk of the block that the chip k places back holds (k = 0 .. size - 1).
  struct Ring {
    std::vector<int64_t> next, prev;
    std::vector<std::vector<int64_t>> back;
  };
  // rings(stream, phase, group) once the streams are planned.
  std::function<Ring(size_t, size_t, const std::vector<int64_t>&)> ring_of;
  const Box box = find_box(torus, groups);
  std::vector<int64_t> directions;
  // Per stream, the box axes (indices into box.axes) of its phases in reduce-scatter
  // order: the torus axes, the first rotating from stream to stream, then the slices
  // (so that only a reduced piece crosses DCN: the hierarchical all-reduce).
  std::vector<std::vector<size_t>> orders;
  if (!box.axes.empty()) {
    std::vector<size_t> torus_axes;
    bool slices = false, both = false;
    for (size_t a = 0; a < box.axes.size(); ++a) {
      if (box.axes[a] == kSliceAxis)
        slices = true;
      else
        torus_axes.push_back(a);
      both = both || box.extent[a] > 2;  // some ring has two directions
    }
    const size_t k = std::max<size_t>(torus_axes.size(), 1);
    for (const auto& [lo, elements] : split(chunk_elements, static_cast<int64_t>(k) * (both ? 2 : 1))) {
      const size_t s = plan.streams.size();
      directions.push_back(s / k ? -1 : 1);
      std::vector<size_t> order;
      for (size_t p = 0; p < torus_axes.size(); ++p) order.push_back(torus_axes[(s + p) % k]);
      if (slices) order.push_back(box.axes.size() - 1);
      RingStream stream{lo, elements, {}};
      for (size_t p = 0; p < order.size(); ++p) {
        RingPhase phase;
        phase.size = box.extent[order[p]];
        for (size_t f = order.size() - 1; f > p; --f) {  // the axes of later phases, outer first
          phase.block_sizes.push_back(box.extent[order[f]]);
          phase.block_strides.push_back(box.stride[order[f]]);
        }
        stream.phases.push_back(std::move(phase));
      }
      plan.streams.push_back(std::move(stream));
      orders.push_back(std::move(order));
    }
    // Stream s, phase p: along axis orders[s][p]; the chunks it moves share this chip's
    // coordinates on the axes of earlier phases. Where the group's chips along the axis
    // do not close a ring (the axis does not wrap, or the group spans part of it), the
    // ring is folded onto the line: even ranks out, odd ranks back (0 2 4 .. 5 3 1), so
    // that no edge crosses more than two links and each link direction carries one edge
    // of each stream (a ring in rank order would send its last edge back over them all).
    const topology::PodConfig& pod = *t.pod;
    ring_of = [&box, &pod, g, &directions, &orders](size_t s, size_t p, const std::vector<int64_t>&) {
      const int64_t dir = directions[s];
      const size_t axis = orders[s][p];
      const int64_t n = box.extent[axis], stride = box.stride[axis];
      const int torus_axis = box.axes[axis];
      const bool closes = torus_axis == kSliceAxis ||
                          (pod.wraps()[static_cast<size_t>(torus_axis)] &&
                           n == pod.dims()[static_cast<size_t>(torus_axis)]);
      std::vector<int64_t> order, index(static_cast<size_t>(n));  // ring position -> rank, inverse
      for (int64_t r = 0; r < n; r += closes ? 1 : 2) order.push_back(r);
      if (!closes)
        for (int64_t r = n - 1 - n % 2; r > 0; r -= 2) order.push_back(r);
      for (int64_t k = 0; k < n; ++k) index[static_cast<size_t>(order[static_cast<size_t>(k)])] = k;
      auto at = [&](int64_t r, int64_t step) {  // the rank `step` ring positions on from r
        return order[static_cast<size_t>(mod(index[static_cast<size_t>(r)] + step, n))];
      };
      Ring ring;
      for (int64_t pos = 0; pos < g; ++pos) {
        auto rank = [&](size_t a) { return pos / box.stride[a] % box.extent[a]; };
        const int64_t r = rank(axis);
        ring.next.push_back(pos + (at(r, dir) - r) * stride);
        ring.prev.push_back(pos + (at(r, -dir) - r) * stride);
        int64_t fixed = 0;
        for (size_t e = 0; e < p; ++e) fixed += rank(orders[s][e]) * box.stride[orders[s][e]];
        std::vector<int64_t> back;
        for (int64_t b = 0; b < n; ++b) back.push_back(fixed + at(r, -b * dir) * stride);
        ring.back.push_back(std::move(back));
      }
      return ring;
    };
  } else {
    for (const auto& [lo, elements] : split(chunk_elements, g > 2 ? 2 : 1)) {
      directions.push_back(plan.streams.empty() ? 1 : -1);
      plan.streams.push_back(RingStream{lo, elements, {RingPhase{g, {}, {}, 0}}});
    }
    // One ring over the group's chips in snake order (neighbours on the torus where the
    // group allows).
    ring_of = [&torus, g, &directions](size_t s, size_t, const std::vector<int64_t>& group) {
      std::vector<int64_t> order(static_cast<size_t>(g));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return snake_position(torus, group[static_cast<size_t>(a)]) <
               snake_position(torus, group[static_cast<size_t>(b)]);
      });
      const int64_t dir = directions[s];
      Ring ring{std::vector<int64_t>(static_cast<size_t>(g)), std::vector<int64_t>(static_cast<size_t>(g)),
                std::vector<std::vector<int64_t>>(static_cast<size_t>(g))};
      for (int64_t r = 0; r < g; ++r) {
        const size_t pos = static_cast<size_t>(order[static_cast<size_t>(r)]);
        ring.next[pos] = order[static_cast<size_t>(mod(r + dir, g))];
        ring.prev[pos] = order[static_cast<size_t>(mod(r - dir, g))];
        for (int64_t b = 0; b < g; ++b) ring.back[pos].push_back(order[static_cast<size_t>(mod(r - b * dir, g))]);
      }
      return ring;
    };
  }

  plan.row_length = 1;
  for (RingStream& stream : plan.streams)
    for (RingPhase& phase : stream.phases) {
      phase.column = plan.row_length;
      plan.row_length += 2 + phase.size;
    }
  plan.table.assign(static_cast<size_t>(t.devices() * plan.row_length), 0);
  for (const std::vector<int64_t>& group : groups)
    for (int64_t pos = 0; pos < g; ++pos)
      plan.table[static_cast<size_t>(group[static_cast<size_t>(pos)] * plan.row_length)] = pos;
  // Each device's neighbours in every ring; the blocks' offsets once the streams' pieces
  // are known (below).
  std::vector<std::vector<std::vector<Ring>>> rings(plan.streams.size());  // stream, phase, group
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t p = 0; p < plan.streams[s].phases.size(); ++p) {
      rings[s].emplace_back();
      for (const std::vector<int64_t>& group : groups) {
        rings[s][p].push_back(ring_of(s, p, group));
        const Ring& ring = rings[s][p].back();
        for (int64_t pos = 0; pos < g; ++pos) {
          const size_t at = static_cast<size_t>(pos);
          int64_t* row =
              &plan.table[static_cast<size_t>(group[at] * plan.row_length + plan.streams[s].phases[p].column)];
          row[0] = group[static_cast<size_t>(ring.next[at])];
          row[1] = group[static_cast<size_t>(ring.prev[at])];
        }
      }
    }
  // Each phase's link shares and edge latencies, from the routes of every stream's edges.
  const topology::PodConfig& pod = *t.pod;
  const double ici_ns_per_byte = 1e9 / pod.ici_link_bandwidth_bytes_per_s;
  const double dcn_ns_per_byte = 1e9 * pod.chips_per_host() / pod.dcn_host_bandwidth_bytes_per_s;
  for (size_t p = 0; p < static_cast<size_t>(plan.phases()); ++p) {
    // Per stream, the route of each chip's edge to its next chip; none across slices.
    std::vector<std::vector<std::optional<std::vector<topology::Hop>>>> routes(plan.streams.size());
    std::map<std::pair<int, int>, int64_t> edges;  // (device, port) -> edges crossing it
    int64_t dcn_streams = 0;
    for (size_t s = 0; s < plan.streams.size(); ++s) {
      bool dcn = false;
      for (const std::vector<int64_t>& group : groups)
        for (int64_t d : group) {
          const int from = static_cast<int>(d);
          const int to = static_cast<int>(
              plan.table[static_cast<size_t>(d * plan.row_length + plan.streams[s].phases[p].column)]);
          if (torus.coord(from).slice != torus.coord(to).slice) {
            dcn = true;
            routes[s].emplace_back();
            continue;
          }
          routes[s].emplace_back(torus.route(from, to));
          for (const topology::Hop& hop : *routes[s].back()) ++edges[{hop.device, hop.port}];
        }
      dcn_streams += dcn ? 1 : 0;
    }
    for (size_t s = 0; s < plan.streams.size(); ++s) {
      RingPhase& phase = plan.streams[s].phases[p];
      for (const auto& route : routes[s]) {
        if (!route) {
          phase.ns_per_byte = std::max(phase.ns_per_byte, static_cast<double>(dcn_streams) * dcn_ns_per_byte);
          phase.hop_ns = std::max(phase.hop_ns, pod.dcn_latency_ns);
          continue;
        }
        for (const topology::Hop& hop : *route)
          phase.ns_per_byte =
              std::max(phase.ns_per_byte, static_cast<double>(edges[{hop.device, hop.port}]) * ici_ns_per_byte);
        phase.hop_ns = std::max(phase.hop_ns, static_cast<double>(route->size()) * pod.ici_link_latency_ns);
      }
    }
  }
  // Streams whose first phases take different times per element (rings of different
  // sizes, or sharing links differently: a 8x4 slice's x and y rings) get pieces in
  // inverse proportion, so that they finish their first phase, which moves the most,
  // together; the later phases run all streams at once as well.
  if (plan.streams.size() > 1) {
    std::vector<double> weights;
    for (const RingStream& stream : plan.streams) {
      const RingPhase& first = stream.phases.at(0);
      weights.push_back(1.0 / (static_cast<double>(std::max<int64_t>((first.size - 1) * first.blocks(), 1)) *
                               std::max(first.ns_per_byte, 1e-9)));
    }
    const auto pieces = split_weighted(chunk_elements, weights);
    for (size_t s = 0; s < plan.streams.size(); ++s)
      std::tie(plan.streams[s].lo, plan.streams[s].elements) = pieces[s];
  }
  for (size_t s = 0; s < plan.streams.size(); ++s)
    for (size_t p = 0; p < plan.streams[s].phases.size(); ++p)
      for (size_t n = 0; n < groups.size(); ++n) {
        const std::vector<int64_t>& group = groups[n];
        const Ring& ring = rings[s][p][n];
        for (int64_t pos = 0; pos < g; ++pos) {
          const size_t at = static_cast<size_t>(pos);
          int64_t* row =
              &plan.table[static_cast<size_t>(group[at] * plan.row_length + plan.streams[s].phases[p].column)];
          for (int64_t b = 0; b < plan.streams[s].phases[p].size; ++b)
            row[2 + b] = ring.back[at][static_cast<size_t>(b)] * plan.chunk_bytes() +
                         plan.streams[s].lo * element_bytes;
        }
      }
  return plan;
}

int32_t device_row(Lowerer& l, const std::string& name, const std::vector<int64_t>& table,
                   int64_t row_length) {
  ProgramBuilder& pb = l.pb();
  std::vector<uint8_t> bytes(table.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), table.data(), bytes.size());
  const int32_t region = l.use(l.constant_buffer(name, std::move(bytes)));
  const int64_t row_bytes = row_length * 8;
  const int32_t row = l.vmem("table_row", row_bytes);
  const int device = pb.hold_sreg();
  pb.emit(isa::Opcode::kSdev, isa::DType::kS32, {device, 0});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {device, device, row_bytes});
  pb.emit(isa::Opcode::kDma, isa::DType::kF32,
          {contiguous_descriptor(pb, region, row, row_bytes), device, 0, kSemLocal});
  pb.wait(kSemLocal, 1);
  pb.release_sreg(device);
  return row;
}

Handshake::Handshake(Lowerer& l, Lowerer::Flags flags, bool advance) : l_(l), flags_(flags) {
  ProgramBuilder& pb = l_.pb();
  count_ = pb.hold_sreg();
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {count_, flags_.region, pb.sreg(flags_.counter)});
  if (!advance) return;
  pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {count_, count_, 1});
  pb.emit(isa::Opcode::kSst, isa::DType::kS32, {flags_.region, pb.sreg(flags_.counter), count_});
}

Handshake::~Handshake() { l_.pb().release_sreg(count_); }

void Handshake::signal(int32_t row, const std::vector<int64_t>& entries) {
  ProgramBuilder& pb = l_.pb();
  // The flag's word holds the count (the last handshake's flags have left).
  pb.emit(isa::Opcode::kSst, isa::DType::kS32, {flags_.region, pb.sreg(flags_.out), count_});
  isa::DmaDescriptor d;
  d.src_region = d.dst_region = flags_.region;
  d.element_bytes = 8;
  d.sizes = {1};
  d.src_strides = d.dst_strides = {8};
  const int32_t flag = pb.descriptor(d);
  const int word = pb.hold_sreg(), peer = pb.hold_sreg();
  pb.emit(isa::Opcode::kSdev, isa::DType::kS32, {word, 0});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {word, word, 8});
  if (flags_.words != 0) pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {word, word, flags_.words});
  for (int64_t entry : entries) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * entry)});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
            {flag, pb.sreg(flags_.out), word, peer, kSemLocal, kSemReady});
  }
  pb.release_sreg(word);
  pb.release_sreg(peer);
  pb.wait(kSemLocal, static_cast<int64_t>(entries.size()));
}

void Handshake::await(int32_t row, const std::vector<int64_t>& entries) {
  ProgramBuilder& pb = l_.pb();
  const int behind = pb.hold_sreg(), peer = pb.hold_sreg(), seen = pb.hold_sreg();
  // Nothing to wait for at a count of 0.
  const int64_t none = pb.pc();
  pb.emit(isa::Opcode::kBz, isa::DType::kF32, {count_, 0});
  // top: behind = how many expected flags are below the count; done when none.
  const int64_t top = pb.pc();
  pb.begin_block();
  pb.emit(isa::Opcode::kSli, isa::DType::kS32, {behind, 0});
  for (int64_t entry : entries) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * entry)});
    pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {peer, peer, 8});
    if (flags_.words != 0) pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {peer, peer, flags_.words});
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {seen, flags_.region, peer});
    pb.emit(isa::Opcode::kSlt, isa::DType::kS32, {seen, seen, count_});
    pb.emit(isa::Opcode::kSadd, isa::DType::kS32, {behind, behind, seen});
  }
  const int64_t done = pb.pc();
  pb.emit(isa::Opcode::kBz, isa::DType::kF32, {behind, 0});
  pb.wait(kSemReady, 1);
  pb.emit(isa::Opcode::kBr, isa::DType::kF32, {top});
  pb.set_branch_target(done, pb.pc());
  pb.set_branch_target(none, pb.pc());
  pb.begin_block();
  pb.release_sreg(behind);
  pb.release_sreg(peer);
  pb.release_sreg(seen);
}

// A sub-block of a stream's phase: the block's chunks times `sizes.back()` elements of
// the stream's piece, from piece_offset bytes into the piece.
struct RingEmitter::Block {
  std::vector<int64_t> sizes, box_strides, dense_strides;
  int64_t piece_offset = 0;  // bytes into the piece of each chunk
  int64_t bytes = 0;         // of the sub-block, dense
  int64_t dense_offset = 0;  // bytes of earlier sub-blocks in the block's dense image
  int64_t block_bytes = 0;   // of the whole block, dense
};

RingEmitter::RingEmitter(Lowerer& l, const ir::Instruction& i, RingPlan plan)
    : l_(l), pb_(l.pb()), i_(i), plan_(std::move(plan)) {
  if (plan_.streams.size() > static_cast<size_t>(kMaxStreams)) unsupported(i, "more than 6 ring streams");
  row_ = device_row(l_, fmt::format("{}.rings", i.name()), plan_.table, plan_.row_length);
  entry_ = pb_.hold_sreg();
  peer_ = pb_.hold_sreg();
  // Sub-blocks small enough that every slot's two buffers fit in a quarter of VMEM.
  const int64_t tile = int64_t{l.chip().vpu_sublanes} * l.chip().vpu_lanes * plan_.element_bytes;
  const int streams = static_cast<int>(plan_.streams.size());
  slots_ = std::min(kMaxSlots, kSemLocal - kSemSlot - 2 * streams);
  first_landed_ = kSemSlot + slots_;
  landed_ = first_landed_ + streams;
  max_sub_bytes_ = std::max(tile, std::min(kMaxSubChunkBytes, l.vmem_free() / (8 * slots_) / tile * tile));
  min_sub_bytes_ = tile;
}

RingEmitter::~RingEmitter() {
  pb_.release_sreg(entry_);
  pb_.release_sreg(peer_);
}

int64_t RingEmitter::subs(size_t stream, size_t phase) const {
  const RingStream& s = plan_.streams[stream];
  const int64_t bytes = s.phases[phase].blocks() * s.elements * plan_.element_bytes;
  const int64_t split = std::max(ceil_div(bytes, max_sub_bytes_), std::min(kMinSubBlocks, bytes / min_sub_bytes_));
  const int64_t len = ceil_div(s.elements, std::max<int64_t>(split, 1));
  return ceil_div(s.elements, len);
}

RingEmitter::Block RingEmitter::block(size_t stream, size_t phase, int64_t sub) const {
  const RingStream& s = plan_.streams[stream];
  const RingPhase& p = s.phases[phase];
  const int64_t eb = plan_.element_bytes, blocks = p.blocks();
  const int64_t len = ceil_div(s.elements, subs(stream, phase));
  Block b;
  b.sizes = p.block_sizes;
  b.sizes.push_back(std::min(len, s.elements - sub * len));
  for (int64_t stride : p.block_strides) b.box_strides.push_back(stride * plan_.chunk_bytes());
  b.box_strides.push_back(eb);
  b.dense_strides.assign(b.sizes.size(), eb);
  for (size_t d = b.sizes.size() - 1; d > 0; --d) b.dense_strides[d - 1] = b.dense_strides[d] * b.sizes[d];
  b.piece_offset = sub * len * eb;
  b.bytes = blocks * b.sizes.back() * eb;
  b.dense_offset = blocks * sub * len * eb;
  b.block_bytes = blocks * s.elements * eb;
  return b;
}

int32_t RingEmitter::descriptor(int32_t src, int32_t dst, const Block& b, bool src_box, bool dst_box) {
  isa::DmaDescriptor d;
  d.src_region = src;
  d.dst_region = dst;
  d.element_bytes = static_cast<int32_t>(plan_.element_bytes);
  d.sizes = b.sizes;
  d.src_strides = src_box ? b.box_strides : b.dense_strides;
  d.dst_strides = dst_box ? b.box_strides : b.dense_strides;
  return pb_.descriptor(d);
}

int RingEmitter::offset(int64_t column, int64_t extra) {
  pb_.emit(isa::Opcode::kSld, isa::DType::kS32, {entry_, row_, pb_.sreg(8 * column)});
  if (extra != 0) pb_.emit(isa::Opcode::kSaddi, isa::DType::kS32, {entry_, entry_, extra});
  return entry_;
}

int RingEmitter::peer(int64_t column) {
  pb_.emit(isa::Opcode::kSld, isa::DType::kS32, {peer_, row_, pb_.sreg(8 * column)});
  return peer_;
}

int RingEmitter::own_chunk_offset() {
  offset(0, 0);
  pb_.emit(isa::Opcode::kSmuli, isa::DType::kS32, {entry_, entry_, plan_.chunk_bytes()});
  return entry_;
}

void RingEmitter::send(int32_t descriptor, int src_reg, int dst_reg, int peer_reg, int sent, size_t stream,
                       bool first) {
  pb_.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
           {descriptor, src_reg, dst_reg, peer_reg, sent,
            (first ? first_landed_ : landed_) + static_cast<int>(stream)});
}

// Before a phase: this chip tells the chips that send to it in the phase (each once)
// that it is here, and waits for the same from each chip it sends to. A flag only leaves
// once the chip is done with the previous phase's landings, so data of the phase never
// lands early (and counting landings per stream stays exact).
void RingEmitter::handshake(size_t phase) {
  // Streams whose previous (next) chip is another stream's on every chip share a flag.
  auto distinct = [&](int64_t which) {
    std::vector<int64_t> columns;
    for (const RingStream& s : plan_.streams) {
      const int64_t column = s.phases[phase].column + which;
      bool same_as_earlier = false;
      for (int64_t earlier : columns) {
        bool all = true, none = true;
        for (int64_t d = 0; d < l_.target().devices(); ++d) {
          const size_t row = static_cast<size_t>(d * plan_.row_length);
          const bool same = plan_.table[row + static_cast<size_t>(column)] ==
                            plan_.table[row + static_cast<size_t>(earlier)];
          all = all && same;
          none = none && !same;
        }
        if (!all && !none) unsupported(i_, "rings that share a neighbour on some chips only");
        same_as_earlier = same_as_earlier || all;
      }
      if (!same_as_earlier) columns.push_back(column);
    }
    return columns;
  };
  Handshake handshake(l_);
  handshake.signal(row_, distinct(1));
  handshake.await(row_, distinct(0));
}

double RingEmitter::step_ns(size_t stream, size_t phase) const {
  const RingPhase& p = plan_.streams[stream].phases[phase];
  int64_t bytes = 0;
  for (int64_t j = 0; j < subs(stream, phase); ++j) bytes += block(stream, phase, j).bytes;
  return static_cast<double>(bytes) * p.ns_per_byte + p.hop_ns + l_.chip().hbm_latency_ns;
}

std::vector<RingEmitter::Entry> RingEmitter::timeline(size_t phase, int64_t first, int64_t last_from_end) const {
  std::vector<Entry> entries;
  for (size_t s = 0; s < plan_.streams.size(); ++s) {
    const int64_t n = subs(s, phase);
    const double step = step_ns(s, phase);
    for (int64_t k = first; k < plan_.streams[s].phases[phase].size - last_from_end; ++k)
      for (int64_t j = 0; j < n; ++j)
        entries.push_back(
            Entry{s, k, j, (static_cast<double>(k - first) + static_cast<double>(j) / static_cast<double>(n)) * step});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.ns != b.ns) return a.ns < b.ns;
    return a.k != b.k ? a.k < b.k : a.j != b.j ? a.j < b.j : a.stream < b.stream;
  });
  return entries;
}

void RingEmitter::overlap_until(const Entry& e, size_t phase, double& next) {
  if (e.ns < next) return;
  double fastest = std::numeric_limits<double>::max();
  for (size_t s = 0; s < plan_.streams.size(); ++s) fastest = std::min(fastest, step_ns(s, phase));
  l_.overlap_point(fastest);
  next = e.ns + fastest * (1 - 1e-9);
}

size_t RingEmitter::send_window(size_t phase) const {
  // Sends of every stream in flight over about four round trips (a link's and HBM's
  // latency; the chips' reductions pace each other), at least two per stream.
  const topology::PodConfig& pod = *l_.target().pod;
  int64_t most = 1;  // the largest sub-block a stream sends
  for (size_t s = 0; s < plan_.streams.size(); ++s)
    most = std::max(most, block(s, phase, 0).bytes);
  const double round_trip_bytes =
      2e-9 * (pod.ici_link_latency_ns + l_.chip().hbm_latency_ns) * pod.ici_link_bandwidth_bytes_per_s;
  const auto per_stream = std::max<size_t>(2, static_cast<size_t>(std::ceil(4 * round_trip_bytes / most)));
  return per_stream * plan_.streams.size();
}

size_t RingEmitter::load_ahead(size_t phase) const {
  // What the streams bring in over a load's round trip (its HBM latency twice: queued
  // behind the landings' writes), in sub-blocks, and one more; at most half the slots,
  // the rest holding sums on their way out. Loading further ahead than that only makes
  // a reduction wait for a landing it does not need.
  double bytes_per_ns = 0;
  for (const RingStream& s : plan_.streams) bytes_per_ns += 1 / std::max(s.phases[phase].ns_per_byte, 1e-9);
  const double in_flight = 2 * l_.chip().hbm_latency_ns * bytes_per_ns / static_cast<double>(max_sub_bytes_);
  return std::clamp<size_t>(static_cast<size_t>(std::ceil(in_flight)) + 1, 2, static_cast<size_t>(slots_ / 2));
}

void RingEmitter::reduce_scatter(int32_t input, int32_t work, int32_t result, ir::PrimitiveType type,
                                 bool result_is_chunk, bool then_gather) {
  const topology::ChipConfig& chip = l_.chip();
  const size_t streams = plan_.streams.size();
  const size_t phases = static_cast<size_t>(plan_.phases());
  const int64_t row_bytes = int64_t{chip.vpu_lanes} * plan_.element_bytes;
  const int64_t tile_bytes = row_bytes * chip.vpu_sublanes;
  const isa::DType mem = memory_dtype(type);
  const int32_t input_region = l_.use(input), result_region = l_.use(result);
  const int32_t work_region = phases > 1 ? l_.use(work) : -1;

  // Landing buffers, a stream's after another's: the blocks of a ring's steps.
  std::vector<int64_t> recv_at;
  int64_t recv_bytes = 0, slot_bytes = 0;
  for (size_t s = 0; s < streams; ++s) {
    recv_at.push_back(recv_bytes);
    int64_t most = 0;
    for (size_t p = 0; p < phases; ++p) {
      const Block b = block(s, p, 0);
      most = std::max(most, (plan_.streams[s].phases[p].size - 1) * b.block_bytes);
      slot_bytes = std::max(slot_bytes, round_up(b.bytes, tile_bytes));
    }
    recv_bytes += most;
  }
  const int32_t recv = l_.use(l_.new_buffer(fmt::format("{}.recv", i_.name()),
                                            ir::Shape(ir::PrimitiveType::kU8, {recv_bytes})));
  // VMEM slots, used in turn by every stream: the chip's own sub-block and the landed one.
  const int slots = slots_;
  std::vector<int32_t> mine, theirs;
  for (int s = 0; s < slots; ++s) {
    mine.push_back(l_.vmem(fmt::format("mine{}", s), slot_bytes));
    theirs.push_back(l_.vmem(fmt::format("theirs{}", s), slot_bytes));
  }
  const Reducer reducer = build_reducer(l_, i_, 1);
  VRegs regs(chip.vector_registers, l_.step_name());
  VectorCodegen combine(pb_, regs, reducer.expr, reducer.roots);
  std::vector<int64_t> pending(static_cast<size_t>(slots), 0);  // sends and stores from a slot
  int next_slot = 0;

  // One sub-block of one step: stream s reduces sub-block j of block k + 2 of its ring.
  struct Item {
    size_t stream;
    int64_t k, j;
    int slot;
  };
  for (size_t p = 0; p < phases; ++p) {
    handshake(p);
    const bool last_phase = p + 1 == phases;
    const int32_t source = p == 0 ? input_region : work_region;
    const int32_t sums = last_phase ? result_region : work_region;
    // Step 0: block 1 (its reduction ends size - 1 chips on) goes out from HBM, a window
    // of sends ahead of the reductions: the engines take transfers in order, and sends
    // queued all at once would hold up the loads of what has landed until the last left.
    // Step k reduces block k + 2 (k = 0 .. size - 2): what landed in recv step k plus the
    // chip's own; the last step's sum is block 0, the chip's. The streams take turns, sub-
    // block by sub-block, in the order of their timeline, and each item's loads are issued
    // before the previous item is reduced (so that their latency overlaps it).
    const std::vector<Entry> order = timeline(p, 0, 1);
    std::vector<Item> items;
    std::vector<std::pair<size_t, int64_t>> hbm_sends;  // stream, sub-block: the first steps'
    std::vector<int64_t> before;  // per item: where the same sub-block's previous step is, or -1
    std::map<std::pair<size_t, int64_t>, int64_t> last;
    for (const Entry& e : order) {
      const auto at = last.try_emplace({e.stream, e.j}, -1).first;
      before.push_back(at->second);
      at->second = static_cast<int64_t>(items.size());
      items.push_back(Item{e.stream, e.k, e.j, next_slot});
      next_slot = (next_slot + 1) % slots;
      if (e.k == 0) hbm_sends.emplace_back(e.stream, e.j);
    }
    size_t sent = 0;
    auto send_until = [&](size_t n) {
      for (; sent < std::min(n, hbm_sends.size()); ++sent) {
        const auto [s, j] = hbm_sends[sent];
        const int64_t column = plan_.streams[s].phases[p].column;
        const Block b = block(s, p, j);
        send(descriptor(source, recv, b, true, false), offset(column + 3, b.piece_offset),
             pb_.sreg(recv_at[s] + b.dense_offset), peer(column), kSemSentHbm, s, true);
      }
    };
    // (Items are loaded `ahead` before they are reduced, below: their sends must be out.)
    const size_t ahead = load_ahead(p);
    const size_t window = std::max(send_window(p), ahead);
    send_until(window);
    auto load = [&](const Item& it) {
      const RingPhase& phase = plan_.streams[it.stream].phases[p];
      const size_t slot = static_cast<size_t>(it.slot);
      pb_.wait(kSemSlot + it.slot, pending[slot]);  // the slot's last contents have left
      pending[slot] = 0;
      pb_.wait((it.k == 0 ? first_landed_ : landed_) + static_cast<int>(it.stream), 1);
      const Block b = block(it.stream, p, it.j);
      pb_.dma(contiguous_descriptor(pb_, recv, theirs[slot], b.bytes),
              recv_at[it.stream] + it.k * b.block_bytes + b.dense_offset, 0, kSemSlot + it.slot);
      const int own = offset(phase.column + 2 + (it.k + 2) % phase.size, b.piece_offset);
      pb_.emit(isa::Opcode::kDma, isa::DType::kF32,
               {descriptor(source, mine[slot], b, true, false), own, pb_.sreg(0), kSemSlot + it.slot});
    };
    auto reduce = [&](const Item& it) {
      const size_t s = it.stream;
      const RingPhase& phase = plan_.streams[s].phases[p];
      const size_t slot = static_cast<size_t>(it.slot);
      const int out = kSemSlot + it.slot;
      const Block b = block(s, p, it.j);
      pb_.wait(kSemSlot + it.slot, 2);
      for (int64_t t = 0; t < ceil_div(b.bytes, tile_bytes); ++t) {
        const int x = regs.take(), y = regs.take();
        pb_.vld(x, mine[slot], t * tile_bytes, row_bytes, mem);
        pb_.vld(y, theirs[slot], t * tile_bytes, row_bytes, mem);
        std::vector<int> leaf_regs;
        for (int param : reducer.leaf_param) leaf_regs.push_back(param == 0 ? x : y);
        const std::vector<int> sum = combine.emit_on(leaf_regs);
        pb_.vst(mine[slot], t * tile_bytes, row_bytes, sum.at(0), mem);
        combine.give_back(sum);
        regs.give(x);
        regs.give(y);
      }
      if (it.k + 2 < phase.size) {
        send(contiguous_descriptor(pb_, mine[slot], recv, b.bytes), pb_.sreg(0),
             pb_.sreg(recv_at[s] + (it.k + 1) * b.block_bytes + b.dense_offset), peer(phase.column), out, s);
        ++pending[slot];
        return;
      }
      // The last phase's block 0 is the chip's chunk: in a one-chunk result, at the
      // stream's piece.
      const int at = last_phase && result_is_chunk
                         ? pb_.sreg(plan_.streams[s].lo * plan_.element_bytes + b.piece_offset)
                         : offset(phase.column + 2, b.piece_offset);
      pb_.emit(isa::Opcode::kDma, isa::DType::kF32, {descriptor(mine[slot], sums, b, false, true), pb_.sreg(0), at, out});
      ++pending[slot];
      if (then_gather && last_phase) {
        send(descriptor(mine[slot], result_region, b, false, true), pb_.sreg(0), at, peer(phase.column), out, s);
        ++pending[slot];
      }
    };
    // Items are loaded up to `ahead` before they are reduced, each once its sub-block's
    // previous step has been reduced here: what lands in step k + 1 is what the previous
    // chip reduced in step k, which may wait for this chip's sends of step k.
    size_t loaded = 0;
    // With small blocks (a step's items few, each short), `ahead` items reach into
    // landings that the previous chip has only just sent, and a load's wait for its
    // landing holds up the program in order; there an item is also loaded no earlier than
    // three HBM latencies (the landing's write, the load's round trip) before the
    // timeline expects it. (4 MiB reduce-scatter on v5e:16x16: 147 -> 87 us; a gate of
    // two latencies also made v4:4x4x4 10% slower.)
    bool small_blocks = true;
    for (size_t s = 0; s < streams; ++s) small_blocks = small_blocks && subs(s, p) <= kMinSubBlocks;
    const double gate_ns = 3 * l_.chip().hbm_latency_ns;
    auto load_until = [&](size_t most, size_t t) {  // before item t is reduced
      for (; loaded < items.size() && loaded <= most && before[loaded] < static_cast<int64_t>(t) &&
             (!small_blocks || order[loaded].ns <= order[t].ns + gate_ns);
           ++loaded)
        load(items[loaded]);
    };
    double next_overlap = 0;
    for (size_t t = 0; t < items.size(); ++t) {
      overlap_until(order[t], p, next_overlap);  // earlier steps' sends are in flight
      load_until(t + ahead - 1, t);  // (the first items' loads go ahead of the next send)
      send_until(t + 1 + window);
      load_until(t + ahead, t);
      reduce(items[t]);
    }
    send_until(hbm_sends.size());
    // The phase's sums are in HBM and its sends have left before the next phase.
    for (int slot = 0; slot < slots; ++slot) {
      pb_.wait(kSemSlot + slot, pending[static_cast<size_t>(slot)]);
      pending[static_cast<size_t>(slot)] = 0;
    }
    pb_.wait(kSemSentHbm, static_cast<int64_t>(hbm_sends.size()));
  }
}

void RingEmitter::all_gather(int32_t buffer, bool own_sent, int32_t own_input) {
  const int32_t region = l_.use(buffer);
  const int32_t input_region = own_input >= 0 ? l_.use(own_input) : -1;
  int64_t copies = 0;  // of own_input into the chip's chunk, on kSemSlot
  for (size_t p = static_cast<size_t>(plan_.phases()); p-- > 0;) {
    int64_t sends = 0;
    auto forward = [&](size_t s, int64_t j, int64_t k) {
      const int64_t column = plan_.streams[s].phases[p].column;
      const Block b = block(s, p, j);
      const int at = offset(column + 2 + k, b.piece_offset);
      send(descriptor(region, region, b, true, true), at, at, peer(column), kSemSentHbm, s);
      ++sends;
    };
    const bool first = p + 1 == static_cast<size_t>(plan_.phases());
    // Block 0 (k = 0) goes out from the chip (unless the reduce-scatter sent it), a
    // window of the timeline ahead: the engines take transfers in order, and sends queued
    // all at once would hold up the forwarding of what lands until the last had left.
    // Step k (1 .. size - 1): block k lands; all but the last go on.
    const std::vector<Entry> order = timeline(p, 0, 0);
    const bool send_own = !(own_sent && first);
    size_t next_own = 0;
    auto send_own_until = [&](size_t position) {
      for (; send_own && next_own < std::min(position + 1, order.size()); ++next_own) {
        const Entry& e = order[next_own];
        if (e.k != 0) continue;
        if (input_region < 0 || !first) {
          forward(e.stream, e.j, 0);
          continue;
        }
        // The first phase's block 0 is the chip's chunk: straight from own_input.
        const RingStream& stream = plan_.streams[e.stream];
        const int64_t column = stream.phases[p].column;
        const Block b = block(e.stream, p, e.j);
        const int at = offset(column + 2, b.piece_offset);
        send(descriptor(input_region, region, b, false, true),
             pb_.sreg(stream.lo * plan_.element_bytes + b.piece_offset), at, peer(column), kSemSentHbm, e.stream);
        ++sends;
      }
    };
    const size_t window = send_window(p);
    if (send_own) {
      handshake(p);
      pb_.wait(kSemSlot, copies);  // the chip's chunk is in place before it goes on
      send_own_until(window);
      copies = 0;
      if (input_region >= 0 && first)  // the local copy, while the first phase's sends go
        copies = issue_spread_copy(l_, input_region, -1, region, own_chunk_offset(), plan_.chunk_bytes(), kSemSlot);
    }
    double next_overlap = 0;
    for (size_t t = 0; t < order.size(); ++t) {
      const Entry& e = order[t];
      if (e.k == 0) continue;
      overlap_until(e, p, next_overlap);  // earlier steps' sends are in flight
      send_own_until(t + window);
      pb_.wait(landed_ + static_cast<int>(e.stream), 1);
      if (e.k + 1 < plan_.streams[e.stream].phases[p].size) forward(e.stream, e.j, e.k);
    }
    send_own_until(order.size());
    pb_.wait(kSemSentHbm, sends);
  }
  pb_.wait(kSemSlot, copies);
}

}  // namespace podsim::tpu
