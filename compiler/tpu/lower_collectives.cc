// Collectives over the pod's torus (DESIGN.md, "Pods"): replica-id and partition-id from
// the chip's device id; all-reduce, reduce-scatter and all-gather as rings of remote DMAs
// (collective_rings.h), or, where their time is latency, one-shot exchanges (one_shot.h);
// all-to-all and collective-permute as direct sends. Every chip runs the same program; what differs
// per chip (its peers, which chunk it handles) is a row of a table placed in HBM, indexed
// by the device id at run time. Before data moves into buffers of a step, every chip
// tells the chips that send to it that it has entered the collective (a Handshake,
// collective_rings.h): data only lands in buffers of a step in progress. Into the
// mailbox (Lowerer::mailbox), reserved for the run, data moves once the chips' credits
// say they have read its earlier contents, with no handshake first.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "common/error.h"
#include "compiler/ir/collective_groups.h"
#include "compiler/tpu/collective_rings.h"
#include "compiler/tpu/one_shot.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"
#include "topology/torus.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// A collective's step begun: its array operand, its result buffer, and the chips in each
// of its groups. A group of one chip (no pod, or groups of one) needs no exchange: the
// result is a copy of the operand, made already (single).
struct CollectiveStep {
  Value in;
  int32_t out = -1;
  int64_t group_size = 1;
  bool single() const { return group_size == 1; }
};

int64_t group_size(const Lowerer& l, const Instruction& i) {
  const Target& t = l.target();
  if (!t.pod) return 1;
  const auto groups = ir::collective_device_groups(i, t.replicas, t.partitions);
  for (const std::vector<int64_t>& group : groups)
    if (group.size() != groups.at(0).size()) unsupported(i, "replica groups of different sizes");
  return static_cast<int64_t>(groups.at(0).size());
}

// The module was verified before the replica count was known (a collective without
// replica_groups spans every replica): the split or gathered dimension must match the
// groups of the target.
void check_group_shapes(const Instruction& i, int64_t g) {
  if (i.attrs().dimensions.empty()) return;
  const int64_t d = i.attrs().dimensions.at(0);
  const int64_t in = i.operand(0)->shape().dims()[static_cast<size_t>(d)];
  const int64_t out = i.shape().dims()[static_cast<size_t>(d)];
  const Opcode op = i.opcode();
  const bool ok = op == Opcode::kAllGather       ? out == g * in
                  : op == Opcode::kReduceScatter ? in == g * out
                  : op == Opcode::kAllToAll      ? in % g == 0
                                                 : true;
  if (!ok)
    fail("{} (line {}): dimension {} has {} elements in the operand and {} in the result, which "
         "groups of {} devices do not fit",
         i.name(), i.pos().line, d, in, out, g);
}

CollectiveStep begin_collective(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.operand_count() != 1 || !i.operand(0)->shape().is_array())
    unsupported(i, "tuple or variadic operands");
  if (!i.shape().is_array()) unsupported(i, "a tuple result");
  isa_dtype(i, i.shape().type());
  CollectiveStep c;
  c.in = l.value_of(*i.operand(0), s);
  l.begin_step(i, s);
  c.out = l.new_buffer(i.name(), i.shape());
  const int64_t g = group_size(l, i);
  check_group_shapes(i, g);
  c.group_size = i.shape().num_elements() == 0 ? 1 : g;  // empty: nothing moves
  if (c.single()) copy_buffer(l, c.in.buffer, c.out, i.shape().byte_size());
  return c;
}

// The latency from chip a to chip b: ICI hops inside a slice, DCN between slices.
double route_latency_ns(const topology::Torus& torus, int64_t a, int64_t b) {
  const topology::PodConfig& pod = torus.pod();
  const int x = static_cast<int>(a), y = static_cast<int>(b);
  if (torus.coord(x).slice != torus.coord(y).slice) return pod.dcn_latency_ns;
  return torus.hops(x, y) * pod.ici_link_latency_ns;
}

// The most of these routes (device pairs; those across slices left out) that cross one
// link in one direction.
int64_t busiest_link(const topology::Torus& torus, const std::vector<std::pair<int64_t, int64_t>>& routes) {
  std::map<std::pair<int, int>, int64_t> flows;  // (device, port) -> routes
  int64_t most = 1;
  for (const auto& [a, b] : routes) {
    if (a == b || torus.coord(static_cast<int>(a)).slice != torus.coord(static_cast<int>(b)).slice) continue;
    for (const topology::Hop& hop : torus.route(static_cast<int>(a), static_cast<int>(b)))
      most = std::max(most, ++flows[{hop.device, hop.port}]);
  }
  return most;
}

// The cost model choosing a collective's algorithm (Options::AllReduce::kAuto), from the
// pod's figures. The rings: each phase's handshake and `steps` x (size - 1) steps (2 for
// an all-reduce: reduce-scatter and all-gather), each a route to the next chip plus the
// HBM latency of landing and loading, and `ring_bytes` over the links, shared by the
// streams, times the first phase's rings that share its busiest link. A one-shot
// exchange of pieces of B bytes: two routes to the farthest chip of the group (ready,
// then data; into the mailbox, only the data's) and two HBM latencies, plus B for each
// route of the exchange that crosses its busiest link, or for each that leaves the
// busiest host for another slice through its NICs, whichever takes longer.
struct CollectiveCosts {
  double ring_ns = 0;
  double exchange_ns = 0;           // of the exchange, whatever its size
  double exchange_ns_per_byte = 0;  // and per byte of a piece
  double ready_ns = 0;              // of the exchange_ns: the handshake's route
  double exchange(double bytes, bool mailbox = false) const {
    return exchange_ns - (mailbox ? ready_ns : 0) + exchange_ns_per_byte * bytes;
  }
};

CollectiveCosts collective_costs(const Lowerer& l, const Instruction& i, const RingPlan& plan, double steps,
                                 double ring_bytes) {
  const Target& t = l.target();
  const topology::Torus torus(*t.pod);
  const topology::PodConfig& pod = *t.pod;
  const double hbm = l.chip().hbm_latency_ns;
  double farthest = 0, ring_ns = 0;
  bool dcn = false;
  std::vector<std::pair<int64_t, int64_t>> exchange, first_rings;
  std::map<int, int64_t> host_out;  // an exchange's routes to other slices, per host
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t a : group)
      for (int64_t b : group) {
        farthest = std::max(farthest, route_latency_ns(torus, a, b));
        if (torus.coord(static_cast<int>(a)).slice != torus.coord(static_cast<int>(b)).slice) {
          dcn = true;
          ++host_out[torus.host(static_cast<int>(a))];
        }
        exchange.emplace_back(a, b);
      }
  for (size_t p = 0; p < static_cast<size_t>(plan.phases()); ++p) {
    double hop = 0;
    int64_t size = 0;
    for (const RingStream& stream : plan.streams) {
      size = std::max(size, stream.phases[p].size);
      for (int64_t d = 0; d < t.devices(); ++d) {
        const int64_t next = plan.table[static_cast<size_t>(d * plan.row_length + stream.phases[p].column)];
        hop = std::max(hop, route_latency_ns(torus, d, next));
        if (p == 0) first_rings.emplace_back(d, next);
      }
    }
    ring_ns += (steps * static_cast<double>(size - 1) + 2) * (hop + 2 * hbm);
  }
  const double bw = dcn ? std::min(pod.ici_link_bandwidth_bytes_per_s, pod.dcn_host_bandwidth_bytes_per_s)
                        : pod.ici_link_bandwidth_bytes_per_s;
  ring_ns += ring_bytes / static_cast<double>(plan.streams.size()) *
             static_cast<double>(busiest_link(torus, first_rings)) / bw * 1e9;
  // An exchange's bytes: the routes on its busiest link, and those leaving the busiest
  // host for other slices through its NICs (a piece each).
  double exchange_ns_per_byte =
      static_cast<double>(busiest_link(torus, exchange)) / pod.ici_link_bandwidth_bytes_per_s * 1e9;
  for (const auto& [host, routes] : host_out)
    exchange_ns_per_byte =
        std::max(exchange_ns_per_byte, static_cast<double>(routes) / pod.dcn_host_bandwidth_bytes_per_s * 1e9);
  return CollectiveCosts{ring_ns, 2 * farthest + 2 * hbm, exchange_ns_per_byte, farthest};
}

// Whether an all-gather's or reduce-scatter's one-shot exchange (pieces of one chunk)
// beats its rings (G - 1 steps, G - 1 chunks over the links).
bool one_shot_is_faster(const Lowerer& l, const Instruction& i, const RingPlan& plan, double chunk,
                        bool mailbox = false) {
  const CollectiveCosts c = collective_costs(l, i, plan, 1, static_cast<double>(plan.group_size - 1) * chunk);
  return c.exchange(chunk, mailbox) < c.ring_ns;
}

// Elements before and after dimension dim of dims (row-major: [outer, dims[dim], inner]).
std::pair<int64_t, int64_t> outer_inner(const std::vector<int64_t>& dims, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < dim; ++a) outer *= dims[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(dim) + 1; a < dims.size(); ++a) inner *= dims[a];
  return {outer, inner};
}

}  // namespace

Value lower_device_id(Lowerer& l, const Instruction& i, Scope& s) {
  // replica-id = device / partitions; partition-id = device % partitions (u32).
  l.begin_step(i, s);
  ProgramBuilder& pb = l.pb();
  const int64_t partitions = l.target().partitions;
  const int r = pb.hold_sreg();
  pb.emit(isa::Opcode::kSdev, isa::DType::kS32, {r, 0});
  const Opcode op = i.opcode();
  pb.emit(op == Opcode::kReplicaId ? isa::Opcode::kSdiv : isa::Opcode::kSrem, isa::DType::kS32,
          {r, r, pb.sreg(partitions)});
  const int32_t word = l.vmem("id", 8);
  pb.emit(isa::Opcode::kSst, isa::DType::kS32, {word, pb.sreg(0), r});
  pb.release_sreg(r);
  const int32_t out = l.new_buffer(i.name(), i.shape());
  pb.dma(contiguous_descriptor(pb, word, l.use(out), 4), 0, 0, kSemStore);
  pb.wait(kSemStore, 1);
  return Value{out, i.shape(), {}};
}

namespace {

// The all-reduce of the array step.in into step.out (groups of more than one chip), by
// the algorithm the options or the cost model choose.
void all_reduce_array(Lowerer& l, const Instruction& i, CollectiveStep& step) {
  const ir::Shape& shape = step.in.shape;
  const int64_t eb = ir::type_byte_size(shape.type());
  const int64_t g = step.group_size;
  const int64_t tile_bytes = int64_t{l.chip().vpu_sublanes} * l.chip().vpu_lanes * eb;
  const int64_t padded_bytes = round_up(std::max<int64_t>(shape.byte_size(), 1), tile_bytes);
  RingPlan plan = plan_rings(l, i, ceil_div(std::max<int64_t>(shape.num_elements(), 1), g), eb);
  // The algorithm: the options', or the cost model's among those that fit (the one-shot
  // exchanges gather the group's arrays, or chunks, in the mailbox or VMEM of the step).
  const Options::AllReduce forced = l.options().all_reduce;
  const int64_t cb = plan.chunk_bytes(), padded_chunk = round_up(cb, tile_bytes);
  const int32_t one_shot_mailbox = l.mailbox(i, g * padded_bytes);
  const int32_t two_shot_mailbox = l.mailbox(i, g * (padded_chunk + round_up(cb, kMailboxAlignment)));
  const bool one_shot_fits = (one_shot_mailbox >= 0 ? 2 : 2 * g) * padded_bytes <= l.vmem_free();
  const bool two_shot_fits = (two_shot_mailbox >= 0 ? 2 : 2 * g) * padded_chunk <= l.vmem_free();
  Options::AllReduce algorithm = Options::AllReduce::kRing;
  if (forced == Options::AllReduce::kAuto) {
    const auto b = static_cast<double>(shape.byte_size());
    const CollectiveCosts c =
        collective_costs(l, i, plan, 2, 2.0 * static_cast<double>(g - 1) / static_cast<double>(g) * b);
    double best = c.ring_ns;
    const double one_shot = c.exchange(b, one_shot_mailbox >= 0);
    const double two_shot = two_shot_mailbox >= 0
                                ? 2 * c.exchange(static_cast<double>(cb), true) + l.chip().hbm_latency_ns
                                : 2 * c.exchange(static_cast<double>(cb));
    if (one_shot_fits && g * padded_bytes <= kOneShotMaxBytes && one_shot < best)
      best = one_shot, algorithm = Options::AllReduce::kOneShot;
    if (two_shot_fits && two_shot < best) algorithm = Options::AllReduce::kTwoShot;
  } else if ((forced == Options::AllReduce::kOneShot && one_shot_fits) ||
             (forced == Options::AllReduce::kTwoShot && two_shot_fits)) {
    algorithm = forced;
  }
  if (algorithm == Options::AllReduce::kOneShot)
    return one_shot_all_reduce(l, i, peer_row(l, i), g, shape.type(), shape.byte_size(), padded_bytes,
                               step.in.buffer, step.out, false, one_shot_mailbox);
  // The array padded to whole chunks (a scratch copy, reduced in place) or as it is
  // (then the rings' sums of phases before the last go to `work`), gathered in the
  // result (or a padded one).
  const ir::Shape padded_shape(ir::PrimitiveType::kU8, {g * cb});
  const bool padded = g * cb != shape.byte_size();
  int32_t input = step.in.buffer, work = -1;
  if (padded) {
    input = work = l.new_buffer(fmt::format("{}.work", i.name()), padded_shape);
    l.pb().wait(kSemStore, issue_spread_copy(l, l.use(step.in.buffer), -1, l.use(work), -1, shape.byte_size(), kSemStore));
  } else if (plan.phases() > 1 && algorithm == Options::AllReduce::kRing) {
    work = l.new_buffer(fmt::format("{}.work", i.name()), padded_shape);
  }
  const int32_t gathered =
      padded ? l.new_buffer(fmt::format("{}.gathered", i.name()), padded_shape) : step.out;
  if (algorithm == Options::AllReduce::kTwoShot) {
    // Reduce-scatter, then all-gather, each one exchange; into the mailbox, both are one
    // use of it: the reduce-scatter's chunks in its first part, the all-gather's in the
    // second, then copied out.
    const int32_t mine = l.new_buffer(fmt::format("{}.chunk", i.name()), ir::Shape(ir::PrimitiveType::kU8, {cb}));
    const int32_t row = peer_row(l, i);
    ProgramBuilder& pb = l.pb();
    one_shot_all_reduce(l, i, row, g, shape.type(), cb, padded_chunk, input, mine, true, two_shot_mailbox, false);
    if (two_shot_mailbox >= 0) {
      const int64_t second = g * padded_chunk, place = round_up(cb, kMailboxAlignment);
      one_shot_exchange(l, row, g, contiguous_descriptor(pb, l.use(mine), two_shot_mailbox, cb), cb, place, false,
                        Landing{true, true, second});
      pb.wait(kSemStore, issue_copy(pb, two_shot_mailbox, second, l.use(gathered), 0, 1, {g, cb}, {place, 1},
                                    {cb, 1}, kSemStore));
      give_mailbox_credits(l, i, row, group_peers(g));
    } else {
      one_shot_exchange(l, row, g, contiguous_descriptor(pb, l.use(mine), l.use(gathered), cb), cb, cb, false);
    }
    pb.wait(kSemSentHbm, g - 1);
  } else {
    RingEmitter rings(l, i, std::move(plan));
    rings.reduce_scatter(input, work, gathered, shape.type(), false, true);
    rings.all_gather(gathered, true);
  }
  if (padded)
    l.pb().wait(kSemStore, issue_spread_copy(l, l.use(gathered), -1, l.use(step.out), -1, shape.byte_size(), kSemStore));
}

// Issues the copy of `elements` of element_bytes between buffers at byte offsets;
// returns the DMAs to wait for on kSemStore.
int copy_at(Lowerer& l, int32_t src, int64_t src_offset, int32_t dst, int64_t dst_offset,
            int64_t elements, int64_t element_bytes) {
  return issue_copy(l.pb(), l.use(src), src_offset, l.use(dst), dst_offset, element_bytes,
                    {elements}, {1}, {1}, kSemStore);
}

// A tuple all-reduce (one reducer applied to each operand, as PyTorch/XLA's all-reduce of
// a list of gradients prints): the operands, all of one element type, concatenated into
// one array that is all-reduced once, then split into the results.
Value lower_tuple_all_reduce(Lowerer& l, const Instruction& i, Scope& s) {
  const ir::PrimitiveType type = i.operand(0)->shape().is_array() ? i.operand(0)->shape().type()
                                                                  : ir::PrimitiveType::kTuple;
  std::vector<Value> ins;
  int64_t total = 0;
  for (int64_t k = 0; k < i.operand_count(); ++k) {
    const ir::Shape& shape = i.operand(k)->shape();
    if (!shape.is_array() || shape.type() != type)
      unsupported(i, "operands that are not all arrays of one element type");
    ins.push_back(l.value_of(*i.operand(k), s));
    total += shape.num_elements();
  }
  isa_dtype(i, type);
  l.begin_step(i, s);
  const int64_t eb = ir::type_byte_size(type);
  CollectiveStep step;
  step.in = Value{l.new_buffer(fmt::format("{}.in", i.name()), ir::Shape(type, {total})),
                  ir::Shape(type, {total}), {}};
  int64_t at = 0, copies = 0;
  for (const Value& in : ins) {
    copies += copy_at(l, in.buffer, 0, step.in.buffer, at * eb, in.shape.num_elements(), eb);
    at += in.shape.num_elements();
  }
  l.pb().wait(kSemStore, copies);
  step.group_size = group_size(l, i);
  if (step.single()) {
    step.out = step.in.buffer;
  } else {
    step.out = l.new_buffer(fmt::format("{}.out", i.name()), step.in.shape);
    all_reduce_array(l, i, step);
  }
  Value result{-1, i.shape(), {}};
  at = copies = 0;
  for (const Value& in : ins) {
    const int32_t out = l.new_buffer(fmt::format("{}.{}", i.name(), result.elements.size()), in.shape);
    copies += copy_at(l, step.out, at * eb, out, 0, in.shape.num_elements(), eb);
    at += in.shape.num_elements();
    result.elements.push_back(Value{out, in.shape, {}});
  }
  l.pb().wait(kSemStore, copies);
  return result;
}

}  // namespace

Value lower_all_reduce(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.operand_count() != 1 || !i.operand(0)->shape().is_array())
    return lower_tuple_all_reduce(l, i, s);
  CollectiveStep step = begin_collective(l, i, s);
  if (!step.single()) all_reduce_array(l, i, step);
  return Value{step.out, i.shape(), {}};
}

Value lower_reduce_scatter(Lowerer& l, const Instruction& i, Scope& s) {
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();  // one chunk
  const int32_t out = step.out;
  if (step.single()) return Value{out, shape, {}};
  const int64_t g = step.group_size;
  const int64_t eb = ir::type_byte_size(shape.type());
  RingPlan plan = plan_rings(l, i, shape.num_elements(), eb);
  // The operand [outer, g * m, inner] is g contiguous chunks [m, inner] when outer is 1;
  // else it is copied into g chunks [outer, m, inner], reduced in place.
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(step.in.shape.dims(), dim);
  const int64_t m = shape.dims()[static_cast<size_t>(dim)];
  const ir::Shape chunks_shape(ir::PrimitiveType::kU8, {g * plan.chunk_bytes()});
  int32_t input = step.in.buffer, work = -1;
  if (outer > 1) {
    input = work = l.new_buffer(fmt::format("{}.work", i.name()), chunks_shape);
    const int n = issue_copy(l.pb(), l.use(step.in.buffer), 0, l.use(work), 0, eb, {g, outer, m * inner},
                             {m * inner, g * m * inner, 1}, {outer * m * inner, m * inner, 1}, kSemStore);
    l.pb().wait(kSemStore, n);
  } else if (plan.phases() > 1) {
    work = l.new_buffer(fmt::format("{}.work", i.name()), chunks_shape);
  }
  // One-shot where it is the faster and the group's chunks fit in the mailbox or half
  // of VMEM.
  const int64_t tile_bytes = int64_t{l.chip().vpu_sublanes} * l.chip().vpu_lanes * eb;
  const int64_t padded_bytes = round_up(std::max<int64_t>(shape.byte_size(), 1), tile_bytes);
  const Options::AllReduce algorithm = l.options().all_reduce;
  const int32_t mailbox = l.mailbox(i, g * padded_bytes);
  if ((mailbox >= 0 ? 2 : 2 * g) * padded_bytes <= l.vmem_free() &&
      (algorithm == Options::AllReduce::kOneShot || algorithm == Options::AllReduce::kTwoShot ||
       (algorithm == Options::AllReduce::kAuto && g * padded_bytes <= kOneShotMaxBytes &&
        one_shot_is_faster(l, i, plan, static_cast<double>(shape.byte_size()), mailbox >= 0)))) {
    one_shot_all_reduce(l, i, peer_row(l, i), g, shape.type(), shape.byte_size(), padded_bytes, input, out,
                        true, mailbox);
    return Value{out, shape, {}};
  }
  RingEmitter rings(l, i, std::move(plan));
  rings.reduce_scatter(input, work, out, shape.type(), true, false);
  return Value{out, shape, {}};
}

namespace {

// Fills buffer (elements of element_bytes) with zeros: one zero row of up to 4 KiB in
// HBM, copied over and over by one DMA (a source stride of 0).
void zero_buffer(Lowerer& l, const Instruction& i, int32_t buffer, int64_t elements,
                 int64_t element_bytes) {
  int64_t row = std::max<int64_t>(1, std::min(elements, 4096 / element_bytes));
  while (elements % row != 0) --row;
  isa::DmaDescriptor d;
  d.src_region = l.use(l.constant_buffer(
      fmt::format("{}.zeros", i.name()), std::vector<uint8_t>(static_cast<size_t>(row * element_bytes), 0)));
  d.dst_region = l.use(buffer);
  d.element_bytes = static_cast<int32_t>(element_bytes);
  d.sizes = {elements / row, row};
  d.src_strides = {0, element_bytes};
  d.dst_strides = {row * element_bytes, element_bytes};
  l.pb().dma(l.pb().descriptor(d), 0, 0, kSemStore);
  l.pb().wait(kSemStore, 1);
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> permute_device_pairs(const Instruction& i, const Target& t) {
  const bool cross_partition = ir::collective_group_mode(i) == ir::GroupMode::kCrossPartition;
  const int64_t domain_size = cross_partition ? t.partitions : t.replicas;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t d = 0; d < t.devices(); ++d) {
    const int64_t mine = cross_partition ? d % t.partitions : d / t.partitions;
    for (auto [from, to] : i.attrs().source_target_pairs) {
      if (from < 0 || to < 0 || from >= domain_size || to >= domain_size)
        unsupported(i, fmt::format("source_target_pairs entry {{{},{}}} out of range", from, to));
      if (from == mine)
        pairs.emplace_back(d, cross_partition ? d - d % t.partitions + to : to * t.partitions + d % t.partitions);
    }
  }
  return pairs;
}

// collective-permute: a chip that is some pair's target tells its source it is in the
// step and waits for the array, which its source sends straight into its result; a chip
// that is no pair's target returns zeros. Which chips a device sends to and receives
// from is a table row indexed by the device id ([has target, target, has source,
// source]); the code branches on it. Where the array fits the mailbox and every pair
// lies within a group of the mailbox's, a source sends once its target's credits count
// the mailbox's earlier uses, into the mailbox, and the target copies it out; every chip
// then gives its credits to its group.
Value lower_collective_permute(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.operand_count() != 1 || !i.operand(0)->shape().is_array())
    unsupported(i, "tuple or variadic operands");
  isa_dtype(i, i.shape().type());
  const Value in = l.value_of(*i.operand(0), s);
  l.begin_step(i, s);
  const ir::Shape& shape = i.shape();
  const int32_t out = l.new_buffer(i.name(), shape);
  const int64_t eb = ir::type_byte_size(shape.type());
  const Target& t = l.target();
  // Per device: whether it sends and to which device, whether it receives and from which.
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * 4), 0);
  const std::vector<std::pair<int64_t, int64_t>> pairs = permute_device_pairs(i, t);
  for (const auto& [from, to] : pairs) {
    int64_t* source = &table[static_cast<size_t>(from * 4)];
    int64_t* target = &table[static_cast<size_t>(to * 4)];
    if (source[0] != 0) unsupported(i, "a device that is the source of two pairs");
    if (target[2] != 0) unsupported(i, "a device that is the target of two pairs");
    source[0] = 1;
    source[1] = to;
    target[2] = 1;
    target[3] = from;
  }
  if (!t.pod) {  // one chip: it is its own source, or it gets zeros
    if (table[2] != 0)
      copy_buffer(l, in.buffer, out, shape.byte_size());
    else
      zero_buffer(l, i, out, shape.num_elements(), eb);
    return Value{out, shape, {}};
  }
  ProgramBuilder& pb = l.pb();
  const int32_t row = device_row(l, fmt::format("{}.pairs", i.name()), table, 4);
  const int flag = pb.hold_sreg(), peer = pb.hold_sreg();
  // `from` the branch skipping to here when flag (table entry `entry`) is 0.
  auto skip_unless = [&](int64_t entry) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {flag, row, pb.sreg(8 * entry)});
    const int64_t branch = pb.pc();
    pb.emit(isa::Opcode::kBz, isa::DType::kF32, {flag, 0});
    return branch;
  };
  auto here = [&](int64_t branch) {
    pb.set_branch_target(branch, pb.pc());
    pb.begin_block();
  };
  const int32_t mailbox = l.mailbox_for_pairs(i, pairs, shape.byte_size());
  // Receivers say they are ready (not into the mailbox); the others' results are zeros.
  std::optional<Handshake> handshake;
  if (mailbox < 0) handshake.emplace(l);
  const int64_t no_source = skip_unless(2);
  if (handshake) handshake->signal(row, {3});
  const int64_t to_send = pb.pc();
  pb.emit(isa::Opcode::kBr, isa::DType::kF32, {0});
  here(no_source);
  zero_buffer(l, i, out, shape.num_elements(), eb);
  here(to_send);
  // Senders send once their target is ready.
  const int64_t no_target = skip_unless(0);
  if (handshake)
    handshake->await(row, {1});
  else
    Handshake(l, l.mailbox_flags(), false).await(row, {1});
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8)});
  pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
          {contiguous_descriptor(pb, l.use(in.buffer), mailbox >= 0 ? mailbox : l.use(out), shape.byte_size()),
           pb.sreg(0), pb.sreg(0), peer, kSemSentHbm, mailbox >= 0 ? kSemMailboxLanded : kSemLanded});
  pb.wait(kSemSentHbm, 1);
  here(no_target);
  // Receivers wait for the array (and copy it out of the mailbox).
  const int64_t nothing_comes = skip_unless(2);
  if (mailbox >= 0) {
    pb.wait(kSemMailboxLanded, 1);
    pb.wait(kSemStore, issue_copy(pb, mailbox, 0, l.use(out), 0, 1, {shape.byte_size()}, {1}, {1}, kSemStore));
  } else {
    pb.wait(kSemLanded, 1);
  }
  here(nothing_comes);
  pb.release_sreg(flag);
  pb.release_sreg(peer);
  if (mailbox >= 0)
    give_mailbox_credits(l, i, peer_row(l, "mailbox.peers", l.mailbox_groups()),
                         group_peers(static_cast<int64_t>(l.mailbox_groups().at(0).size())));
  return Value{out, shape, {}};
}

// all-to-all (array form, dimensions={d}): the operand [outer, D, inner] is cut along d
// into G blocks; block q goes to the group's chip q, where it lands as block p (the
// sender's group position) of the result. After a handshake with the whole group (as
// the one-shot all-reduce), every chip sends its G - 1 blocks at once (large ones in
// pieces, see below) and copies its own. Where the blocks fit the mailbox, they land
// there instead (slot p, dense), with no handshake, and go into the result from there.
// A table row per device: its position p, then for k = 1 .. G - 1 the device at position
// q = p + k (mod G) and q.
Value lower_all_to_all(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.attrs().dimensions.empty())
    unsupported(i, "the tuple form with operands of different shapes");  // else split_tuple_all_to_alls
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();
  if (step.single()) return Value{step.out, shape, {}};
  ProgramBuilder& pb = l.pb();
  const Target& t = l.target();
  const int64_t g = step.group_size;
  const int64_t eb = ir::type_byte_size(shape.type());
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(shape.dims(), dim);
  const int64_t block = shape.dims()[static_cast<size_t>(dim)] / g * inner;  // elements per row
  const int64_t slot_bytes = round_up(outer * block * eb, kMailboxAlignment);
  const int32_t mailbox = l.mailbox(i, g * slot_bytes);
  isa::DmaDescriptor d;
  d.src_region = l.use(step.in.buffer);
  d.dst_region = mailbox >= 0 ? mailbox : l.use(step.out);
  d.element_bytes = static_cast<int32_t>(eb);
  d.sizes = {outer, block};
  d.src_strides = d.dst_strides = {g * block * eb, eb};
  if (mailbox >= 0) d.dst_strides = {block * eb, eb};
  const int32_t blocks = pb.descriptor(d);
  // Each block goes in `pieces` transfers of a piece of every row, the peers taking
  // turns piece by piece, so that a DMA engine moves on from one route to the next before
  // it has sent a whole block down it (32 MiB per chip, bench/timing_collective_bench:
  // v5e:4x4 1.46 -> 1.07 times the torus model, v4:4x4x4 3.98 -> 2.76). Pieces of at
  // least kMinPiece bytes, a power of two that divides the row's block.
  constexpr int64_t kMinPiece = 64 << 10;
  int64_t pieces = 1;
  while (block % (2 * pieces) == 0 && outer * block / (2 * pieces) * eb >= kMinPiece) pieces *= 2;
  d.sizes = {outer, block / pieces};
  const int32_t piece = pb.descriptor(d);

  const int64_t row_len = 1 + 2 * (g - 1);
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * row_len), 0);
  // The peers in the order p + 1, p - 1, p + 2, p - 2, ...: at any time the chips send
  // both ways along the group, not all the same way.
  std::vector<int64_t> offsets;
  for (int64_t k = 1; static_cast<int64_t>(offsets.size()) < g - 1; ++k) {
    offsets.push_back(k);
    if (static_cast<int64_t>(offsets.size()) < g - 1) offsets.push_back(g - k);
  }
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t p = 0; p < g; ++p) {
      int64_t* row = &table[static_cast<size_t>(group[static_cast<size_t>(p)] * row_len)];
      row[0] = p;
      for (int64_t k = 1; k < g; ++k) {
        const int64_t q = (p + offsets[static_cast<size_t>(k - 1)]) % g;
        row[2 * k - 1] = group[static_cast<size_t>(q)];
        row[2 * k] = q;
      }
    }
  const int32_t row = device_row(l, fmt::format("{}.peers", i.name()), table, row_len);
  const int peer = pb.hold_sreg(), src = pb.hold_sreg(), dst = pb.hold_sreg();
  // dst: where this chip's blocks land on every other chip (and its own block here).
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {src, row, pb.sreg(0)});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {dst, src, mailbox >= 0 ? slot_bytes : block * eb});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {src, src, block * eb});
  pb.emit(isa::Opcode::kDma, isa::DType::kF32, {blocks, src, dst, kSemLoad});
  std::vector<int64_t> peers;
  for (int64_t k = 1; k < g; ++k) peers.push_back(2 * k - 1);
  if (mailbox >= 0) {
    Handshake(l, l.mailbox_flags(), false).await(row, peers);
  } else {
    Handshake handshake(l);
    handshake.signal(row, peers);
    handshake.await(row, peers);
  }
  const int landed = mailbox >= 0 ? kSemMailboxLanded : kSemLanded;
  const int from = pb.hold_sreg(), to = pb.hold_sreg();
  for (int64_t c = 0; c < pieces; ++c)
    for (int64_t k = 1; k < g; ++k) {
      pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * (2 * k - 1))});
      pb.emit(isa::Opcode::kSld, isa::DType::kS32, {src, row, pb.sreg(8 * 2 * k)});
      pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {src, src, block * eb});
      const int64_t shift = c * (block / pieces) * eb;
      pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {from, src, shift});
      pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {to, dst, shift});
      pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32, {piece, from, to, peer, kSemSentHbm, landed});
    }
  pb.release_sreg(from);
  pb.release_sreg(to);
  pb.release_sreg(peer);
  pb.release_sreg(src);
  pb.release_sreg(dst);
  pb.wait(kSemLoad, 1);
  pb.wait(kSemSentHbm, (g - 1) * pieces);
  pb.wait(landed, (g - 1) * pieces);
  if (mailbox >= 0) {  // slot q holds block q of every row
    pb.wait(kSemStore, issue_copy(pb, mailbox, 0, l.use(step.out), 0, eb, {g, outer, block},
                                  {slot_bytes / eb, block, 1}, {block, g * block, 1}, kSemStore));
    give_mailbox_credits(l, i, row, peers);
  }
  return Value{step.out, shape, {}};
}

Value lower_all_gather(Lowerer& l, const Instruction& i, Scope& s) {
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();
  const int32_t out = step.out;
  if (step.single()) return Value{out, shape, {}};
  const int64_t g = step.group_size;
  const int64_t eb = ir::type_byte_size(shape.type());
  // Chunk q of the result: [outer, m, inner] at q * m along dim of [outer, g * m, inner];
  // the rings gather g contiguous chunks, in the result itself when outer is 1.
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(step.in.shape.dims(), dim);
  const int64_t m = step.in.shape.dims()[static_cast<size_t>(dim)];
  RingPlan plan = plan_rings(l, i, step.in.shape.num_elements(), eb);
  const int32_t gathered =
      outer > 1 ? l.new_buffer(fmt::format("{}.gathered", i.name()), shape) : out;
  const Options::AllReduce algorithm = l.options().all_reduce;
  const int32_t mailbox = l.mailbox(i, g * round_up(step.in.shape.byte_size(), kMailboxAlignment));
  if (algorithm == Options::AllReduce::kOneShot || algorithm == Options::AllReduce::kTwoShot ||
      (algorithm == Options::AllReduce::kAuto &&
       one_shot_is_faster(l, i, plan, static_cast<double>(step.in.shape.byte_size()), mailbox >= 0)))
    one_shot_all_gather(l, i, g, step.in.buffer, step.in.shape.byte_size(), gathered, mailbox);
  else
    RingEmitter(l, i, std::move(plan)).all_gather(gathered, false, step.in.buffer);
  if (outer > 1) {
    const int k = issue_copy(l.pb(), l.use(gathered), 0, l.use(out), 0, eb, {g, outer, m * inner},
                             {outer * m * inner, m * inner, 1}, {m * inner, g * m * inner, 1}, kSemStore);
    l.pb().wait(kSemStore, k);
  }
  return Value{out, shape, {}};
}

// collective-broadcast: the group's first chip (its root) scatters the array, chunk q to
// the chip at group position q (once that chip says it is ready), and the rings then
// all-gather the chunks: each link carries about the array once, as the ring all-gather
// does, where sending the whole array from the root would load its links G - 1 times.
// A table row per device: whether it is its group's root, its root, then (roots) the
// chips at positions 1 .. G - 1.
Value lower_collective_broadcast(Lowerer& l, const Instruction& i, Scope& s) {
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();
  if (step.single()) return Value{step.out, shape, {}};
  const int64_t g = step.group_size;
  const int64_t eb = ir::type_byte_size(shape.type());
  const int64_t bytes = shape.byte_size();
  RingPlan plan = plan_rings(l, i, ceil_div(shape.num_elements(), g), eb);
  const int64_t cb = plan.chunk_bytes();
  const Target& t = l.target();
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * (g + 1)), 0);
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t d : group) {
      int64_t* row = &table[static_cast<size_t>(d * (g + 1))];
      row[0] = d == group[0];
      row[1] = group[0];
      if (d == group[0])
        for (int64_t q = 1; q < g; ++q) row[q + 1] = group[static_cast<size_t>(q)];
    }
  // Whole chunks: the result itself, or a padded scratch array copied out at the end.
  const bool padded = g * cb != bytes;
  const int32_t gathered =
      padded ? l.new_buffer(fmt::format("{}.gathered", i.name()), ir::Shape(ir::PrimitiveType::kU8, {g * cb}))
             : step.out;
  ProgramBuilder& pb = l.pb();
  const int32_t row = device_row(l, fmt::format("{}.roots", i.name()), table, g + 1);
  const int flag = pb.hold_sreg(), peer = pb.hold_sreg();
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {flag, row, pb.sreg(0)});
  Handshake handshake(l);
  const int64_t to_root = pb.pc();
  pb.emit(isa::Opcode::kBnz, isa::DType::kF32, {flag, 0});
  // Members: ready, then their chunk lands in place.
  handshake.signal(row, {1});
  pb.wait(kSemLanded, 1);
  const int64_t to_gather = pb.pc();
  pb.emit(isa::Opcode::kBr, isa::DType::kF32, {0});
  pb.set_branch_target(to_root, pb.pc());
  pb.begin_block();
  // The root: its array in place (sent from there when padded), then chunk q to position q.
  copy_buffer(l, step.in.buffer, gathered, bytes);
  std::vector<int64_t> members;
  for (int64_t q = 1; q < g; ++q) members.push_back(q + 1);
  handshake.await(row, members);
  const int32_t src = padded ? l.use(gathered) : l.use(step.in.buffer);
  const int32_t descriptor = contiguous_descriptor(pb, src, l.use(gathered), cb);
  for (int64_t q = 1; q < g; ++q) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * (q + 1))});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
            {descriptor, pb.sreg(q * cb), pb.sreg(q * cb), peer, kSemSentHbm, kSemLanded});
  }
  pb.wait(kSemSentHbm, g - 1);
  pb.set_branch_target(to_gather, pb.pc());
  pb.begin_block();
  pb.release_sreg(flag);
  pb.release_sreg(peer);
  RingEmitter rings(l, i, std::move(plan));
  rings.all_gather(gathered, false);
  if (padded) copy_buffer(l, gathered, step.out, bytes);
  return Value{step.out, shape, {}};
}

void split_tuple_all_to_alls(ir::Module& module) {
  for (const auto& c : module.computations()) {
    std::vector<Instruction*> tuples;
    for (const auto& i : c->instructions()) {
      if (i->opcode() != Opcode::kAllToAll || !i->attrs().dimensions.empty() || i->operand_count() < 1) continue;
      bool same = i->operand(0)->shape().is_array();
      for (int64_t k = 1; k < i->operand_count(); ++k)
        same = same && i->operand(k)->shape().compatible(i->operand(0)->shape());
      if (same) tuples.push_back(i.get());
    }
    for (Instruction* i : tuples) {
      const int64_t n = i->operand_count();
      const ir::Shape& piece = i->operand(0)->shape();
      std::vector<int64_t> dims{1};
      dims.insert(dims.end(), piece.dims().begin(), piece.dims().end());
      auto add = [&](std::string suffix, Opcode op, ir::Shape shape, std::vector<Instruction*> operands) {
        auto x = std::make_unique<Instruction>(c->unique_name(i->name() + suffix), op, std::move(shape));
        x->set_operands(std::move(operands));
        x->set_pos(i->pos());
        return x;
      };
      // Operand k, a row of one array: block k goes to the group's k-th device.
      std::vector<Instruction*> rows;
      for (int64_t k = 0; k < n; ++k)
        rows.push_back(c->add(add(".row", Opcode::kReshape, ir::Shape(piece.type(), dims), {i->operand(k)})));
      dims[0] = n;
      auto joined = add(".rows", Opcode::kConcatenate, ir::Shape(piece.type(), dims), rows);
      joined->attrs().dimensions = {0};
      Instruction* input = c->add(std::move(joined));
      auto array = i->clone(c->unique_name(i->name() + ".array"), {input});
      array->mutable_shape() = ir::Shape(piece.type(), dims);
      array->attrs().dimensions = {0};
      array->sharding().reset();
      Instruction* exchanged = c->add(std::move(array));
      // Row k of the result came from the group's k-th device: element k of the tuple.
      std::vector<Instruction*> elements;
      for (int64_t k = 0; k < n; ++k) {
        dims[0] = 1;
        auto row = add(".received", Opcode::kSlice, ir::Shape(piece.type(), dims), {exchanged});
        row->attrs().slice.push_back(ir::SliceDim{k, k + 1, 1});
        for (int64_t d : piece.dims()) row->attrs().slice.push_back(ir::SliceDim{0, d, 1});
        Instruction* sliced = c->add(std::move(row));
        elements.push_back(c->add(add(".element", Opcode::kReshape, piece, {sliced})));
      }
      Instruction* tuple = c->add(add(".tuple", Opcode::kTuple, i->shape(), std::move(elements)));
      c->replace_all_uses(i, tuple);
      c->remove_if([&](const Instruction* x) { return x == i; });
    }
    if (!tuples.empty()) c->sort_topologically();
  }
}

}  // namespace podsim::tpu
