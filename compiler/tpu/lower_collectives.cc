// Collectives over the pod's torus (DESIGN.md, "Pods"): replica-id and partition-id from
// the chip's device id, and all-reduce, reduce-scatter and all-gather as rings of remote
// DMAs. Every chip runs the same program; what differs per chip (its neighbours in the
// ring, which chunk it handles at each step) is a row of a table placed in HBM, indexed
// by the device id at run time.
//
// The ring of a group visits its chips in snake order over the torus (row by row,
// alternate rows reversed), so that consecutive chips of a full slice are neighbours.
// Each array is cut into G chunks (G chips in the group), each chunk into sub-chunks
// that flow independently, so that a long message keeps every link busy:
//   reduce-scatter, G - 1 steps: a chip sends a chunk to the next chip, which adds it to
//     its own copy of that chunk on the vector unit and sends the sum on (straight from
//     VMEM), sub-chunk by sub-chunk as each lands; after G - 1 steps each chip holds one
//     chunk summed over the group;
//   all-gather, G - 1 steps: each chip forwards the chunk that last landed to the next.
// all-reduce is the two in turn. Before any data moves, every chip tells the chip that
// sends to it that it has entered the collective (a one-word remote DMA onto a semaphore
// no other step uses): data only lands in buffers of a step in progress.
//
// Remote data lands on the destination's semaphores in the order it was sent (transfers
// between two chips stay in order), so counting landings says which sub-chunk is in.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
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
using ir::Opcode;

// Semaphores of a collective step. kSemReady is used by nothing else: a chip signals it
// on the chip before it in the ring, which may still be in an earlier step.
constexpr int kSemReady = isa::kSemaphores - 1;
static_assert(kSemBlock + kMaxBlockParts <= kSemReady);
constexpr int kSemLanded = kSemBlock;       // remote data landed here
constexpr int kSemSentHbm = kSemBlock + 1;  // remote sends from HBM have read their source
constexpr int kSemSentVmem = kSemBlock + 2; // + slot: remote sends from a VMEM slot
constexpr int kSemLoad = kSemInput;         // + slot: loads into a VMEM slot
constexpr int kSemStore = kSemOnce;         // local copies
constexpr int kSemSlotStore = kSemOutput;   // + slot: stores from a VMEM slot
constexpr int kSlots = 2;

// The bytes a sub-chunk may have at most: small enough that the ring's pipeline fills
// quickly, large enough that per-DMA overheads stay small.
constexpr int64_t kMaxSubChunkBytes = 64 * 1024;

// One ring per group: ring[g] the devices of group g in ring order, and for every
// device its ring's next and previous chip and, by ring position, the group position of
// each chip (where that chip's chunk goes).
struct Rings {
  int64_t size = 1;  // chips per group
  // Per device: next, prev, then a_k = group position of the chip k places back in the
  // ring (k = 0 .. size - 1; a_0 is the device's own group position).
  std::vector<int64_t> table;
  int64_t row() const { return 2 + size; }
};

// Snake position of a device over its slice (slices in order): rows along x, alternate
// rows reversed, alternate planes' rows reversed, so consecutive positions are adjacent.
int64_t snake_position(const topology::Torus& torus, int64_t device) {
  const topology::ChipCoord c = torus.coord(static_cast<int>(device));
  const std::array<int, 3> d = torus.pod().dims();
  const int64_t row = int64_t{c.xyz[2]} * d[1] + (c.xyz[2] % 2 ? d[1] - 1 - c.xyz[1] : c.xyz[1]);
  const int64_t x = row % 2 ? d[0] - 1 - c.xyz[0] : c.xyz[0];
  return (int64_t{c.slice} * d[2] * d[1] + row) * d[0] + x;
}

Rings make_rings(const Lowerer& l, const Instruction& i) {
  const Target& t = l.target();
  const auto groups = ir::collective_device_groups(i, t.replicas, t.partitions);
  Rings r;
  r.size = static_cast<int64_t>(groups.at(0).size());
  r.table.assign(static_cast<size_t>(t.devices() * r.row()), 0);
  const topology::Torus torus(*t.pod);
  for (const std::vector<int64_t>& group : groups) {
    if (static_cast<int64_t>(group.size()) != r.size)
      unsupported(i, "replica groups of different sizes");
    std::vector<int64_t> ring = group;
    std::sort(ring.begin(), ring.end(), [&](int64_t a, int64_t b) {
      return snake_position(torus, a) < snake_position(torus, b);
    });
    auto group_position = [&](int64_t device) {
      return std::find(group.begin(), group.end(), device) - group.begin();
    };
    const int64_t g = r.size;
    for (int64_t p = 0; p < g; ++p) {
      int64_t* row = &r.table[static_cast<size_t>(ring[static_cast<size_t>(p)] * r.row())];
      row[0] = ring[static_cast<size_t>((p + 1) % g)];
      row[1] = ring[static_cast<size_t>((p + g - 1) % g)];
      for (int64_t k = 0; k < g; ++k)
        row[2 + k] = group_position(ring[static_cast<size_t>((p - k + g) % g)]);
    }
  }
  return r;
}

// This device's row of a per-device table of int64 (row_len entries a device), placed in
// HBM as a constant: the row is copied into VMEM, where sld reads it.
int32_t device_row(Lowerer& l, const std::string& name, const std::vector<int64_t>& table,
                   int64_t row_len) {
  ProgramBuilder& pb = l.pb();
  std::vector<uint8_t> bytes(table.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), table.data(), bytes.size());
  const int32_t region = l.use(l.constant_buffer(name, std::move(bytes)));
  const int64_t row_bytes = row_len * 8;
  const int32_t row = l.vmem("table_row", row_bytes);
  const int device = pb.hold_sreg();
  pb.emit(isa::Opcode::kSdev, isa::DType::kS32, {device, 0});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {device, device, row_bytes});
  pb.emit(isa::Opcode::kDma, isa::DType::kF32,
          {contiguous_descriptor(pb, region, row, row_bytes), device, 0, kSemStore});
  pb.wait(kSemStore, 1);
  pb.release_sreg(device);
  return row;
}

// The handshake: tells the chips whose device ids are entries `entries` of the table row
// in VMEM that this chip is in the step (a one-word remote DMA onto their kSemReady), and
// waits until the flags have left. Each lands in a word of this chip's device id (chips
// signalling the same chip write different bytes), the one of this collective's parity
// (Lowerer::handshake_parity: a chip's consecutive flags to another never share bytes).
void signal_ready(Lowerer& l, int32_t row, const std::vector<int64_t>& entries) {
  ProgramBuilder& pb = l.pb();
  const auto [flag_src, flag_dst] = l.collective_flags();
  const int32_t flag = contiguous_descriptor(pb, l.use(flag_src), l.use(flag_dst), 8);
  const int word = pb.hold_sreg(), peer = pb.hold_sreg();
  pb.emit(isa::Opcode::kSdev, isa::DType::kS32, {word, 0});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {word, word, 16});
  if (l.handshake_parity() == 1) pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {word, word, 8});
  for (int64_t entry : entries) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * entry)});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
            {flag, pb.sreg(0), word, peer, kSemStore, kSemReady});
  }
  pb.release_sreg(word);
  pb.release_sreg(peer);
  pb.wait(kSemStore, static_cast<int64_t>(entries.size()));
}

// Emission of one collective step on the main core: the ring table row in scalar
// registers, the handshake, and remote sends by run-time offsets.
class RingStep {
 public:
  RingStep(Lowerer& l, const Instruction& i, Rings rings) : l_(l), pb_(l.pb()), rings_(std::move(rings)) {
    row_ = device_row(l_, fmt::format("{}.ring", i.name()), rings_.table, rings_.row());
    next_ = hold();
    pb_.emit(isa::Opcode::kSld, isa::DType::kS32, {next_, row_, pb_.sreg(0)});
    prev_ = hold();
    pb_.emit(isa::Opcode::kSld, isa::DType::kS32, {prev_, row_, pb_.sreg(8)});
    // Handshake: tell the previous chip this one is here; wait until the next one is.
    signal_ready(l_, row_, {1});
    pb_.wait(kSemReady, 1);
    a_ = hold();
    off_ = hold();
  }
  ~RingStep() {
    for (int r : held_) pb_.release_sreg(r);
  }

  int64_t size() const { return rings_.size; }

  // a_k * chunk_bytes + extra in a register (the offset register unless extra is 0); a_k
  // is loaded again only when k or chunk_bytes changed since the last call.
  int chunk_offset(int64_t k, int64_t chunk_bytes, int64_t extra) {
    const int64_t g = rings_.size;
    k = ((k % g) + g) % g;
    if (k != a_k_ || chunk_bytes != a_scale_) {
      pb_.emit(isa::Opcode::kSld, isa::DType::kS32, {a_, row_, pb_.sreg(8 * (2 + k))});
      pb_.emit(isa::Opcode::kSmuli, isa::DType::kS32, {a_, a_, chunk_bytes});
      a_k_ = k;
      a_scale_ = chunk_bytes;
    }
    if (extra != 0) pb_.emit(isa::Opcode::kSaddi, isa::DType::kS32, {off_, a_, extra});
    return extra != 0 ? off_ : a_;
  }
  // Sends with `descriptor` from the offsets in src_reg to those in dst_reg on the next
  // chip of the ring; sent_semaphore here once the source is read, kSemLanded there.
  void send(int32_t descriptor, int src_reg, int dst_reg, int sent_semaphore) {
    pb_.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
             {descriptor, src_reg, dst_reg, next_, sent_semaphore, kSemLanded});
  }

 private:
  int hold() {
    int r = pb_.hold_sreg();
    held_.push_back(r);
    return r;
  }

  Lowerer& l_;
  ProgramBuilder& pb_;
  Rings rings_;
  int32_t row_ = -1;
  int next_ = -1, prev_ = -1, a_ = -1, off_ = -1;
  int64_t a_k_ = -1, a_scale_ = 0;  // what a_ holds: a_{a_k_} * a_scale_
  std::vector<int> held_;
};

// How an array moves through the ring: G chunks of chunk_bytes (sub_bytes per
// sub-chunk), contiguous in `work`.
struct Chunks {
  int64_t chunk_bytes = 0;
  int64_t sub_bytes = 0;
  int64_t subs() const { return chunk_bytes / sub_bytes; }
};

// Chunks of at least `elements` elements each: whole vector tiles, whole sub-chunks.
Chunks plan_chunks(const topology::ChipConfig& chip, int64_t elements, int64_t element_bytes) {
  const int64_t tile = int64_t{chip.vpu_sublanes} * chip.vpu_lanes * element_bytes;
  Chunks c;
  c.chunk_bytes = round_up(std::max<int64_t>(elements, 1) * element_bytes, tile);
  c.sub_bytes = std::min(c.chunk_bytes, std::max(tile, kMaxSubChunkBytes / tile * tile));
  c.chunk_bytes = round_up(c.chunk_bytes, c.sub_bytes);
  return c;
}

// Reduce-scatter over the ring on `work` (G contiguous chunks, HBM): afterwards chunk a_0
// of `result` (laid out as `work`) holds the group's reduction of the chip's own chunk.
// When then_gather, the reduced sub-chunks also go straight on to the next chip's
// `result` as the first step of an all-gather (which must then not be `work`: the chunks
// that land there would overwrite what the first step's sends may still be reading).
void ring_reduce_scatter(Lowerer& l, const Instruction& i, RingStep& ring, int32_t work,
                         int32_t result, const Chunks& c, ir::PrimitiveType type,
                         bool then_gather) {
  ProgramBuilder& pb = l.pb();
  const int64_t g = ring.size();
  const int64_t subs = c.subs();
  const isa::DType mem = memory_dtype(type);
  const topology::ChipConfig& chip = l.chip();
  const int64_t row_bytes = int64_t{chip.vpu_lanes} * ir::type_byte_size(type);
  const int64_t tile_bytes = row_bytes * chip.vpu_sublanes;

  // Landing slots, one chunk per step, and VMEM slots for the sub-chunk being reduced.
  const int32_t recv = l.use(l.new_buffer(fmt::format("{}.recv", i.name()),
                                          ir::Shape(ir::PrimitiveType::kU8, {(g - 1) * c.chunk_bytes})));
  const int32_t work_region = l.use(work);
  const int32_t result_region = l.use(result);
  int32_t mine[kSlots], theirs[kSlots];
  for (int s = 0; s < kSlots; ++s) {
    mine[s] = l.vmem(fmt::format("mine{}", s), c.sub_bytes);
    theirs[s] = l.vmem(fmt::format("theirs{}", s), c.sub_bytes);
  }
  const int32_t hbm_to_recv = contiguous_descriptor(pb, work_region, recv, c.sub_bytes);
  const int32_t recv_in[kSlots] = {contiguous_descriptor(pb, recv, theirs[0], c.sub_bytes),
                                   contiguous_descriptor(pb, recv, theirs[1], c.sub_bytes)};
  const int32_t work_in[kSlots] = {contiguous_descriptor(pb, work_region, mine[0], c.sub_bytes),
                                   contiguous_descriptor(pb, work_region, mine[1], c.sub_bytes)};
  const int32_t to_recv[kSlots] = {contiguous_descriptor(pb, mine[0], recv, c.sub_bytes),
                                   contiguous_descriptor(pb, mine[1], recv, c.sub_bytes)};
  const int32_t to_result[kSlots] = {contiguous_descriptor(pb, mine[0], result_region, c.sub_bytes),
                                     contiguous_descriptor(pb, mine[1], result_region, c.sub_bytes)};

  // Step 0: the chunk a_1 (its reduction ends g - 1 chips on) goes out from HBM.
  for (int64_t j = 0; j < subs; ++j) {
    int src = ring.chunk_offset(1, c.chunk_bytes, j * c.sub_bytes);
    ring.send(hbm_to_recv, src, pb.sreg(j * c.sub_bytes), kSemSentHbm);
  }

  const Reducer reducer = build_reducer(l, i, 1);
  VRegs regs(chip.vector_registers, l.step_name());
  VectorCodegen combine(pb, regs, reducer.expr, reducer.roots);
  int64_t pending_sends[kSlots] = {0, 0}, pending_stores[kSlots] = {0, 0};
  // Step k reduces the chunk a_{k+2} (k = 0 .. g - 2): what landed in recv slot k plus the
  // chip's own copy. The last step's sum is the chip's result chunk a_0.
  for (int64_t k = 0; k < g - 1; ++k) {
    const bool last = k == g - 2;
    for (int64_t j = 0; j < subs; ++j) {
      const int s = static_cast<int>(j % kSlots);
      // The slot's previous contents have left.
      pb.wait(kSemSentVmem + s, pending_sends[s]);
      pb.wait(kSemSlotStore + s, pending_stores[s]);
      pending_sends[s] = pending_stores[s] = 0;
      pb.wait(kSemLanded, 1);
      const int64_t sub = j * c.sub_bytes;
      pb.dma(recv_in[s], k * c.chunk_bytes + sub, 0, kSemLoad + s);
      const int own = ring.chunk_offset(k + 2, c.chunk_bytes, sub);
      pb.emit(isa::Opcode::kDma, isa::DType::kF32, {work_in[s], own, pb.sreg(0), kSemLoad + s});
      pb.wait(kSemLoad + s, 2);
      for (int64_t t = 0; t < c.sub_bytes / tile_bytes; ++t) {
        const int a = regs.take(), b = regs.take();
        pb.vld(a, mine[s], t * tile_bytes, row_bytes, mem);
        pb.vld(b, theirs[s], t * tile_bytes, row_bytes, mem);
        std::vector<int> leaf_regs;
        for (int param : reducer.leaf_param) leaf_regs.push_back(param == 0 ? a : b);
        const std::vector<int> out = combine.emit_on(leaf_regs);
        pb.vst(mine[s], t * tile_bytes, row_bytes, out.at(0), mem);
        combine.give_back(out);
        regs.give(a);
        regs.give(b);
      }
      if (!last) {
        ring.send(to_recv[s], pb.sreg(0), pb.sreg((k + 1) * c.chunk_bytes + sub), kSemSentVmem + s);
        ++pending_sends[s];
        continue;
      }
      const int dst = ring.chunk_offset(0, c.chunk_bytes, sub);
      pb.emit(isa::Opcode::kDma, isa::DType::kF32, {to_result[s], pb.sreg(0), dst, kSemSlotStore + s});
      ++pending_stores[s];
      if (then_gather) {
        ring.send(to_result[s], pb.sreg(0), dst, kSemSentVmem + s);
        ++pending_sends[s];
      }
    }
  }
  for (int s = 0; s < kSlots; ++s) {
    pb.wait(kSemSentVmem + s, pending_sends[s]);
    pb.wait(kSemSlotStore + s, pending_stores[s]);
  }
  pb.wait(kSemSentHbm, subs);
}

// All-gather over the ring on `work` (G chunks of chunk_bytes at group positions, each
// chunk_sizes-shaped with the strides given): the chip's own chunk a_0 is in place; when
// own_sent, its sends (step 0) were issued already. Forwards each landed sub-chunk on.
void ring_all_gather(Lowerer& l, RingStep& ring, int32_t work, int64_t chunk_bytes,
                     const std::vector<int64_t>& sub_sizes, const std::vector<int64_t>& strides,
                     int64_t element_bytes, int64_t sub_step, int64_t subs, bool own_sent) {
  ProgramBuilder& pb = l.pb();
  const int64_t g = ring.size();
  const int32_t region = l.use(work);
  isa::DmaDescriptor d;
  d.src_region = d.dst_region = region;
  d.element_bytes = static_cast<int32_t>(element_bytes);
  d.sizes = sub_sizes;
  d.src_strides = d.dst_strides = strides;
  const int32_t forward = pb.descriptor(d);
  int64_t sent = 0;
  if (!own_sent)
    for (int64_t j = 0; j < subs; ++j) {
      const int at = ring.chunk_offset(0, chunk_bytes, j * sub_step);
      ring.send(forward, at, at, kSemSentHbm);
      ++sent;
    }
  // Step k (1 .. g - 1): the chunk a_k lands; all but the last go on.
  for (int64_t k = 1; k < g; ++k)
    for (int64_t j = 0; j < subs; ++j) {
      pb.wait(kSemLanded, 1);
      if (k == g - 1) continue;
      const int at = ring.chunk_offset(k, chunk_bytes, j * sub_step);
      ring.send(forward, at, at, kSemSentHbm);
      ++sent;
    }
  pb.wait(kSemSentHbm, sent);
}

// A collective's step begun: its array operand, its result buffer, and the rings of its
// groups. A group of one chip (no pod, or groups of one) needs no ring: the result is a
// copy of the operand, made already (single).
struct CollectiveStep {
  Value in;
  int32_t out = -1;
  Rings rings;
  bool single() const { return rings.size == 1; }
};

CollectiveStep begin_collective(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.operand_count() != 1 || !i.operand(0)->shape().is_array())
    unsupported(i, "tuple or variadic operands");
  if (!i.shape().is_array()) unsupported(i, "a tuple result");
  isa_dtype(i, i.shape().type());
  CollectiveStep c;
  c.in = l.value_of(*i.operand(0), s);
  l.begin_step(i, s);
  c.out = l.new_buffer(i.name(), i.shape());
  if (l.target().pod) c.rings = make_rings(l, i);
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

// The most bytes the one-shot all-reduce gathers in VMEM (the group's arrays).
constexpr int64_t kOneShotMaxBytes = 2 << 20;

// The cost model choosing an all-reduce's algorithm (Options::AllReduce::kAuto), from the pod's figures: a ring
// takes 2 (G - 1) steps, each a route to the next chip plus the HBM latency of landing
// and loading the sum, and moves 2 (G - 1) / G of the array over each link; the one-shot
// exchange takes two routes to the farthest chip of the group (ready, then data) and
// moves G - 1 arrays out of every chip (counted as over one link: a bound). True when the
// one-shot is the faster and the group's arrays fit kOneShotMaxBytes.
bool prefer_one_shot(const Lowerer& l, const Instruction& i, const Rings& rings, int64_t bytes,
                     int64_t padded) {
  const Target& t = l.target();
  const int64_t g = rings.size;
  if (g * padded > kOneShotMaxBytes) return false;
  const topology::Torus torus(*t.pod);
  const topology::PodConfig& pod = *t.pod;
  double ring_hop = 0, farthest = 0;
  bool dcn = false;
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t a : group) {
      ring_hop = std::max(ring_hop, route_latency_ns(torus, a, rings.table[static_cast<size_t>(a * rings.row())]));
      for (int64_t b : group) {
        farthest = std::max(farthest, route_latency_ns(torus, a, b));
        dcn = dcn || torus.coord(static_cast<int>(a)).slice != torus.coord(static_cast<int>(b)).slice;
      }
    }
  const double bw = dcn ? std::min(pod.ici_link_bandwidth_bytes_per_s, pod.dcn_host_bandwidth_bytes_per_s)
                        : pod.ici_link_bandwidth_bytes_per_s;
  const double hbm = l.chip().hbm_latency_ns;
  const double b = static_cast<double>(bytes), steps = 2.0 * static_cast<double>(g - 1);
  const double ring_ns = steps * (ring_hop + 2 * hbm) + steps / static_cast<double>(g) * b / bw * 1e9;
  const double one_shot_ns = 2 * farthest + 2 * hbm + static_cast<double>(g - 1) * b / bw * 1e9;
  return one_shot_ns < ring_ns;
}

// The one-shot all-reduce, for arrays whose time is latency: once every chip of the
// group has said it is in the step, each sends its whole array (from HBM, each copy over
// its own route, all at once) into its slot of every other chip's VMEM, then reduces
// the group's G arrays in group order (the reference evaluator's order) on the vector
// unit. A table row per device holds its group position p and the devices at positions
// p + 1, ..., p + G - 1 (mod G).
void one_shot_all_reduce(Lowerer& l, const Instruction& i, const CollectiveStep& step,
                         int64_t padded) {
  ProgramBuilder& pb = l.pb();
  const Target& t = l.target();
  const ir::Shape& shape = step.in.shape;
  const topology::ChipConfig& chip = l.chip();
  const int64_t bytes = shape.byte_size();
  const int64_t row_bytes = int64_t{chip.vpu_lanes} * ir::type_byte_size(shape.type());
  const int64_t tile_bytes = row_bytes * chip.vpu_sublanes;
  const isa::DType mem = memory_dtype(shape.type());
  const int64_t g = step.rings.size;
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * g), 0);
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t p = 0; p < g; ++p) {
      int64_t* row = &table[static_cast<size_t>(group[static_cast<size_t>(p)] * g)];
      row[0] = p;
      for (int64_t k = 1; k < g; ++k) row[k] = group[static_cast<size_t>((p + k) % g)];
    }
  const int32_t row = device_row(l, fmt::format("{}.peers", i.name()), table, g);
  const int32_t slots = l.vmem("slots", g * padded);
  const int32_t input = l.use(step.in.buffer);
  const int peer = pb.hold_sreg(), at = pb.hold_sreg();
  // The chip's own array into its slot p; tell every peer this chip is ready.
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {at, row, pb.sreg(0)});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {at, at, padded});
  const int32_t to_slot = contiguous_descriptor(pb, input, slots, bytes);
  pb.emit(isa::Opcode::kDma, isa::DType::kF32, {to_slot, pb.sreg(0), at, kSemLoad});
  std::vector<int64_t> peers;
  for (int64_t k = 1; k < g; ++k) peers.push_back(k);
  signal_ready(l, row, peers);
  pb.wait(kSemReady, g - 1);
  for (int64_t k = 1; k < g; ++k) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * k)});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
            {to_slot, pb.sreg(0), at, peer, kSemSentHbm, kSemLanded});
  }
  pb.release_sreg(peer);
  pb.release_sreg(at);
  pb.wait(kSemLoad, 1);
  pb.wait(kSemLanded, g - 1);

  // slot 0 (+) slot 1 (+) ... tile by tile, into `sum`, then out to HBM.
  const Reducer reducer = build_reducer(l, i, 1);
  VRegs regs(chip.vector_registers, l.step_name());
  VectorCodegen combine(pb, regs, reducer.expr, reducer.roots);
  const int32_t sum = l.vmem("sum", padded);
  for (int64_t tile = 0; tile < padded / tile_bytes; ++tile) {
    int acc = regs.take();
    bool acc_from_combine = false;
    pb.vld(acc, slots, tile * tile_bytes, row_bytes, mem);
    for (int64_t q = 1; q < g; ++q) {
      const int next = regs.take();
      pb.vld(next, slots, q * padded + tile * tile_bytes, row_bytes, mem);
      std::vector<int> leaf_regs;
      for (int param : reducer.leaf_param) leaf_regs.push_back(param == 0 ? acc : next);
      const int out = combine.emit_on(leaf_regs).at(0);
      if (acc_from_combine)
        combine.give_back({acc});
      else
        regs.give(acc);
      regs.give(next);
      acc = out;
      acc_from_combine = true;
    }
    pb.vst(sum, tile * tile_bytes, row_bytes, acc, mem);
    if (acc_from_combine)
      combine.give_back({acc});
    else
      regs.give(acc);
  }
  pb.dma(contiguous_descriptor(pb, sum, l.use(step.out), bytes), 0, 0, kSemStore);
  pb.wait(kSemStore, 1);
  pb.wait(kSemSentHbm, g - 1);
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

// The all-reduce of the array step.in into step.out (step.rings of more than one chip),
// by the algorithm the options or the cost model choose.
void all_reduce_array(Lowerer& l, const Instruction& i, CollectiveStep& step) {
  const ir::Shape& shape = step.in.shape;
  const int64_t eb = ir::type_byte_size(shape.type());
  const int64_t g = step.rings.size;
  const int64_t tile_bytes = int64_t{l.chip().vpu_sublanes} * l.chip().vpu_lanes * eb;
  const int64_t padded_bytes = round_up(std::max<int64_t>(shape.byte_size(), 1), tile_bytes);
  const Options::AllReduce algorithm = l.options().all_reduce;
  if (algorithm == Options::AllReduce::kOneShot ||
      (algorithm == Options::AllReduce::kAuto &&
       prefer_one_shot(l, i, step.rings, shape.byte_size(), padded_bytes)))
    return one_shot_all_reduce(l, i, step, padded_bytes);
  const Chunks c = plan_chunks(l.chip(), ceil_div(shape.num_elements(), g), eb);
  // The array, padded to whole chunks, is reduced in `work` and gathered in `gathered`
  // (the result itself unless padded).
  const ir::Shape padded_shape(ir::PrimitiveType::kU8, {g * c.chunk_bytes});
  const bool padded = g * c.chunk_bytes != shape.byte_size();
  const int32_t work = l.new_buffer(fmt::format("{}.work", i.name()), padded_shape);
  const int32_t gathered =
      padded ? l.new_buffer(fmt::format("{}.gathered", i.name()), padded_shape) : step.out;
  copy_buffer(l, step.in.buffer, work, shape.byte_size());
  RingStep ring(l, i, std::move(step.rings));
  ring_reduce_scatter(l, i, ring, work, gathered, c, shape.type(), true);
  ring_all_gather(l, ring, gathered, c.chunk_bytes, {c.sub_bytes / 8}, {8}, 8, c.sub_bytes, c.subs(), true);
  if (padded) copy_buffer(l, gathered, step.out, shape.byte_size());
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
  if (l.target().pod) step.rings = make_rings(l, i);
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
  const int64_t g = step.rings.size;
  const int64_t eb = ir::type_byte_size(shape.type());
  // The operand [outer, g * m, inner] into g contiguous chunks [outer, m, inner].
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(step.in.shape.dims(), dim);
  const int64_t m = shape.dims()[static_cast<size_t>(dim)];
  const Chunks c = plan_chunks(l.chip(), shape.num_elements(), eb);
  const int32_t work = l.new_buffer(fmt::format("{}.work", i.name()),
                                    ir::Shape(ir::PrimitiveType::kU8, {g * c.chunk_bytes}));
  const int n = issue_copy(l.pb(), l.use(step.in.buffer), 0, l.use(work), 0, eb, {g, outer, m * inner},
                           {m * inner, g * m * inner, 1}, {c.chunk_bytes / eb, m * inner, 1}, kSemStore);
  l.pb().wait(kSemStore, n);
  RingStep ring(l, i, std::move(step.rings));
  ring_reduce_scatter(l, i, ring, work, work, c, shape.type(), false);
  // The chip's chunk (a_0) out.
  const int at = ring.chunk_offset(0, c.chunk_bytes, 0);
  const int k = issue_copy(l.pb(), l.use(work), at, 0, l.use(out), -1, 0, eb, {shape.num_elements()}, {1}, {1},
                           kSemStore);
  l.pb().wait(kSemStore, k);
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

// collective-permute: a chip that is some pair's target tells its source it is in the
// step and waits for the array, which its source sends straight into its result; a chip
// that is no pair's target returns zeros. Which chips a device sends to and receives
// from is a table row indexed by the device id ([has target, target, has source,
// source]); the code branches on it.
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
  // Per device: the device it sends to and the one it receives from (-1: none), pairs
  // naming replica ids (or partition ids with a channel_id) within the device's domain.
  const bool cross_partition = ir::collective_group_mode(i) == ir::GroupMode::kCrossPartition;
  const int64_t domain_size = cross_partition ? t.partitions : t.replicas;
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * 4), 0);
  for (int64_t d = 0; d < t.devices(); ++d) {
    auto device_of = [&](int64_t id) {
      return cross_partition ? d - d % t.partitions + id : id * t.partitions + d % t.partitions;
    };
    const int64_t mine = cross_partition ? d % t.partitions : d / t.partitions;
    int64_t* row = &table[static_cast<size_t>(d * 4)];
    for (auto [from, to] : i.attrs().source_target_pairs) {
      if (from < 0 || to < 0 || from >= domain_size || to >= domain_size)
        unsupported(i, fmt::format("source_target_pairs entry {{{},{}}} out of range", from, to));
      if (from == mine) {
        if (row[0] != 0) unsupported(i, "a device that is the source of two pairs");
        row[0] = 1;
        row[1] = device_of(to);
      }
      if (to == mine) {
        if (row[2] != 0) unsupported(i, "a device that is the target of two pairs");
        row[2] = 1;
        row[3] = device_of(from);
      }
    }
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
  // Receivers say they are ready; the others' results are zeros.
  const int64_t no_source = skip_unless(2);
  signal_ready(l, row, {3});
  const int64_t to_send = pb.pc();
  pb.emit(isa::Opcode::kBr, isa::DType::kF32, {0});
  here(no_source);
  zero_buffer(l, i, out, shape.num_elements(), eb);
  here(to_send);
  // Senders send once their target is ready.
  const int64_t no_target = skip_unless(0);
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8)});
  pb.wait(kSemReady, 1);
  pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
          {contiguous_descriptor(pb, l.use(in.buffer), l.use(out), shape.byte_size()), pb.sreg(0),
           pb.sreg(0), peer, kSemSentHbm, kSemLanded});
  pb.wait(kSemSentHbm, 1);
  here(no_target);
  // Receivers wait for the array.
  const int64_t nothing_comes = skip_unless(2);
  pb.wait(kSemLanded, 1);
  here(nothing_comes);
  pb.release_sreg(flag);
  pb.release_sreg(peer);
  return Value{out, shape, {}};
}

// all-to-all (array form, dimensions={d}): the operand [outer, D, inner] is cut along d
// into G blocks; block q goes to the group's chip q, where it lands as block p (the
// sender's group position) of the result. After a handshake with the whole group (as
// the one-shot all-reduce), every chip sends its G - 1 blocks at once and copies its own.
// A table row per device: its position p, then for k = 1 .. G - 1 the device at position
// q = p + k (mod G) and q.
Value lower_all_to_all(Lowerer& l, const Instruction& i, Scope& s) {
  if (i.attrs().dimensions.empty()) unsupported(i, "the tuple form (no dimensions)");
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();
  if (step.single()) return Value{step.out, shape, {}};
  ProgramBuilder& pb = l.pb();
  const Target& t = l.target();
  const int64_t g = step.rings.size;
  const int64_t eb = ir::type_byte_size(shape.type());
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(shape.dims(), dim);
  const int64_t block = shape.dims()[static_cast<size_t>(dim)] / g * inner;  // elements per row
  isa::DmaDescriptor d;
  d.src_region = l.use(step.in.buffer);
  d.dst_region = l.use(step.out);
  d.element_bytes = static_cast<int32_t>(eb);
  d.sizes = {outer, block};
  d.src_strides = d.dst_strides = {g * block * eb, eb};
  const int32_t blocks = pb.descriptor(d);

  const int64_t row_len = 1 + 2 * (g - 1);
  std::vector<int64_t> table(static_cast<size_t>(t.devices() * row_len), 0);
  for (const std::vector<int64_t>& group : ir::collective_device_groups(i, t.replicas, t.partitions))
    for (int64_t p = 0; p < g; ++p) {
      int64_t* row = &table[static_cast<size_t>(group[static_cast<size_t>(p)] * row_len)];
      row[0] = p;
      for (int64_t k = 1; k < g; ++k) {
        row[2 * k - 1] = group[static_cast<size_t>((p + k) % g)];
        row[2 * k] = (p + k) % g;
      }
    }
  const int32_t row = device_row(l, fmt::format("{}.peers", i.name()), table, row_len);
  const int peer = pb.hold_sreg(), src = pb.hold_sreg(), dst = pb.hold_sreg();
  // dst: where this chip's blocks land on every other chip (and its own block here).
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {dst, row, pb.sreg(0)});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {dst, dst, block * eb});
  pb.emit(isa::Opcode::kDma, isa::DType::kF32, {blocks, dst, dst, kSemLoad});
  std::vector<int64_t> peers;
  for (int64_t k = 1; k < g; ++k) peers.push_back(2 * k - 1);
  signal_ready(l, row, peers);
  pb.wait(kSemReady, g - 1);
  for (int64_t k = 1; k < g; ++k) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * (2 * k - 1))});
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {src, row, pb.sreg(8 * 2 * k)});
    pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {src, src, block * eb});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32, {blocks, src, dst, peer, kSemSentHbm, kSemLanded});
  }
  pb.release_sreg(peer);
  pb.release_sreg(src);
  pb.release_sreg(dst);
  pb.wait(kSemLoad, 1);
  pb.wait(kSemSentHbm, g - 1);
  pb.wait(kSemLanded, g - 1);
  return Value{step.out, shape, {}};
}

Value lower_all_gather(Lowerer& l, const Instruction& i, Scope& s) {
  CollectiveStep step = begin_collective(l, i, s);
  const ir::Shape& shape = i.shape();
  const int32_t out = step.out;
  if (step.single()) return Value{out, shape, {}};
  const int64_t g = step.rings.size;
  const int64_t eb = ir::type_byte_size(shape.type());
  // Chunk q of the result: [outer, m, inner] at q * m along dim of [outer, g * m, inner].
  const int64_t dim = i.attrs().dimensions.at(0);
  const auto [outer, inner] = outer_inner(step.in.shape.dims(), dim);
  const int64_t m = step.in.shape.dims()[static_cast<size_t>(dim)];
  const int64_t row = m * inner * eb;  // one chunk's bytes per outer index
  RingStep ring(l, i, std::move(step.rings));
  const int at = ring.chunk_offset(0, row, 0);
  const int n = issue_copy(l.pb(), l.use(step.in.buffer), -1, 0, l.use(out), at, 0, eb, {outer, m * inner},
                           {m * inner, 1}, {g * m * inner, 1}, kSemStore);
  l.pb().wait(kSemStore, n);
  // Sub-chunks: whole outer rows when there are several, else slices of the one row.
  int64_t subs = 1, rows_per_sub = outer;
  std::vector<int64_t> sub_sizes, strides;
  int64_t sub_step = 0;
  if (outer > 1) {
    rows_per_sub = std::max<int64_t>(1, std::min(outer, kMaxSubChunkBytes / std::max<int64_t>(row, 1)));
    while (outer % rows_per_sub != 0) --rows_per_sub;
    subs = outer / rows_per_sub;
    sub_sizes = {rows_per_sub, m * inner};
    strides = {g * m * inner * eb, eb};
    sub_step = rows_per_sub * g * row;
  } else {
    int64_t elements = m * inner;
    int64_t per = std::max<int64_t>(1, kMaxSubChunkBytes / eb);
    subs = ceil_div(elements, per);
    while (elements % subs != 0) ++subs;
    sub_sizes = {elements / subs};
    strides = {eb};
    sub_step = elements / subs * eb;
  }
  ring_all_gather(l, ring, out, row, sub_sizes, strides, eb, sub_step, subs, false);
  return Value{out, shape, {}};
}

}  // namespace podsim::tpu
