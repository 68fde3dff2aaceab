// Rings of a collective over the pod's torus (DESIGN.md, "Pods"), and the emission of a
// reduce-scatter and an all-gather over them. lower_collectives.cc builds all-reduce,
// reduce-scatter and all-gather on these.
//
// The array of a collective is cut into G chunks (G chips in a group), chunk c the one
// the chip of group position c ends with (reduce-scatter) or starts from (all-gather).
// A group that is a box of the pod in device order (every combination of the
// coordinates it spans: a whole slice, a row, a plane, the same chips of several slices)
// uses every torus axis at once: each chunk is cut into streams, one per axis and
// direction, and a stream runs a ring along each axis in turn, its first axis rotating
// from stream to stream, in both directions where an axis has more than two chips
// (Google's scaling book's model: the bandwidth of k axes, both ways). The
// reduce-scatter of a stream along its first axis leaves each chip the chunks that share
// its coordinate on that axis, reduced over the ring; along the next axis, the chunks
// that share both; and so on to the chip's own chunk. The slices of a multi-slice group
// come last, so that only a reduced piece crosses DCN (the hierarchical all-reduce:
// reduce-scatter in the slice, all-reduce over DCN, all-gather in the slice). The
// all-gather runs the axes in reverse. Any other group (chips in no box) is one ring in
// snake order, both ways.
//
// All streams run their phases together. Before each phase every chip tells the chips
// that send to it that it is in the phase (a Handshake): data only lands in buffers that
// their owner is done with, and counting landings per stream says which block is in
// (transfers between two chips stay in order). Within a phase the chip takes the
// streams' steps in the order they are expected (RingEmitter::timeline: a stream with
// more bytes a step, or more edges on its busiest link, comes up less often), the same
// order on every chip, so that no stream waits behind a slower one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/tpu/lowerer.h"

namespace podsim::tpu {

// One phase of a stream: a ring of `size` chips, moving blocks of chunks: a box of
// block_sizes chunks (outer first; chunk-index strides block_strides) times the stream's
// piece of each chunk.
struct RingPhase {
  int64_t size = 1;
  std::vector<int64_t> block_sizes;
  std::vector<int64_t> block_strides;
  int64_t column = 0;  // where the phase's entries start in a table row
  // How long the stream's ring edges take in this phase (plan_rings, from the pod): ns a
  // byte over the busiest link of the stream's ring, shared with the edges of every
  // stream that cross it in the phase (over DCN: the chip's share of its host's NICs,
  // shared by the streams), and the longest edge's latency.
  double ns_per_byte = 0;
  double hop_ns = 0;
  int64_t blocks() const;
};

// A stream: elements [lo, lo + elements) of every chunk, through its phases.
struct RingStream {
  int64_t lo = 0;
  int64_t elements = 0;
  std::vector<RingPhase> phases;
};

struct RingPlan {
  int64_t group_size = 1;
  int64_t chunk_elements = 0;
  int64_t element_bytes = 4;
  std::vector<RingStream> streams;
  // Per device (row_length entries): its group position, then per stream and phase the
  // next and previous chip of its ring and, for k = 0 .. size - 1, the byte offset of the
  // block that the chip k places back in the ring holds (k = 0: its own).
  std::vector<int64_t> table;
  int64_t row_length = 0;
  int64_t chunk_bytes() const { return chunk_elements * element_bytes; }
  int64_t phases() const { return static_cast<int64_t>(streams.at(0).phases.size()); }
};

// The rings of collective i (groups of more than one chip, all of one size) for chunks
// of chunk_elements elements of element_bytes.
RingPlan plan_rings(const Lowerer& l, const ir::Instruction& i, int64_t chunk_elements,
                    int64_t element_bytes);

// This chip's row of a per-device table of int64 (row_length entries a device), placed in
// HBM as a constant and copied into VMEM, where sld reads it. Returns the VMEM region.
int32_t device_row(Lowerer& l, const std::string& name, const std::vector<int64_t>& table,
                   int64_t row_length);

// A handshake between chips before data moves: a chip tells the chips that will send to
// it that it is ready for this step (a flag), and waits until the chips it sends to have
// said the same. Every chip of the pod counts its handshakes (a word of the flags region,
// Lowerer::collective_flags); a flag carries the sender's count, into the sender's word
// of the receiver's flags, and signals kSemReady there. A chip waits by reading the words
// of the chips it expects, sleeping on kSemReady (one landing at a time) while one is
// behind this count: flags of any other handshake (a chip can be several ahead) are never
// mistaken for this one's, whatever the order they come in.
//
// Construct one at the same point of every chip's program (it counts there), signal()
// and await() where the chip takes part. Over other flags (Lowerer::mailbox_flags), and
// without `advance`, it holds the count as it is: await() then waits for the flags of
// that many earlier handshakes (none when the count is 0).
class Handshake {
 public:
  explicit Handshake(Lowerer& l) : Handshake(l, l.collective_flags(), true) {}
  Handshake(Lowerer& l, Lowerer::Flags flags, bool advance);
  ~Handshake();
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  // Flags to the devices that entries `entries` of the table row (VMEM) name; returns
  // once they have left.
  void signal(int32_t row, const std::vector<int64_t>& entries);
  // Until every device that `entries` name has flagged this handshake (or a later one).
  void await(int32_t row, const std::vector<int64_t>& entries);

 private:
  Lowerer& l_;
  Lowerer::Flags flags_;
  int count_ = -1;  // this handshake's number, held
};
// The semaphore flags land on: used by nothing else.
inline constexpr int kSemReady = isa::kSemaphores - 1;
// The direct (not ring) collectives' transfers pending while other steps run
// (Lowerer::overlap_point), apart from the rings' (collective_rings.cc): data landed
// here, remote sends gone, the chip's own data loaded.
inline constexpr int kSemDirectLanded = kSemReady - 1;
inline constexpr int kSemDirectSent = kSemReady - 2;
inline constexpr int kSemDirectLoad = kSemReady - 3;
// Landings in the one-shot exchanges' mailbox (Lowerer::mailbox), which may come while
// the chip is still in earlier steps: counted apart from every other landing.
inline constexpr int kSemMailboxLanded = kSemReady - 4;
inline constexpr int kSemMailboxSecond = kSemReady - 5;  // a second exchange's, in one use

// Emission of a collective's rings on the main core, for one plan.
class RingEmitter {
 public:
  RingEmitter(Lowerer& l, const ir::Instruction& i, RingPlan plan);
  ~RingEmitter();
  RingEmitter(const RingEmitter&) = delete;
  RingEmitter& operator=(const RingEmitter&) = delete;

  const RingPlan& plan() const { return plan_; }

  // Reduce-scatter of `input` (G chunks in HBM, of `type`, with the reducer of i): the
  // first phase reads input, the later ones the earlier ones' sums in `work` (which may
  // be input, when that is scratch; unused with one phase). Afterwards the chip's own
  // chunk holds the group's reduction of it: in `result` laid out as input, or, when
  // result_is_chunk, as the whole of `result`. When then_gather (result laid out as
  // input, not input nor work), the last phase's sums also go on to the next chip's
  // `result` as the first step of all_gather.
  void reduce_scatter(int32_t input, int32_t work, int32_t result, ir::PrimitiveType type,
                      bool result_is_chunk, bool then_gather);
  // All-gather over `buffer` (G chunks): the chip's own chunk is in place, or in
  // `own_input` (a buffer of one chunk: sent from there, and copied into place while the
  // first phase runs); own_sent when reduce_scatter(then_gather) sent it already.
  void all_gather(int32_t buffer, bool own_sent, int32_t own_input = -1);
  // A scalar register holding the byte offset of the chip's own chunk; valid until the
  // next call of any member.
  int own_chunk_offset();

 private:
  struct Block;
  void handshake(size_t phase);
  int64_t subs(size_t stream, size_t phase) const;
  // How long a step of the stream's ring takes in the phase: its bytes over its share of
  // the busiest link, plus the edge's and an HBM latency.
  double step_ns(size_t stream, size_t phase) const;
  // A phase's steps k = first .. size - 1 - last_from_end of every stream, sub-block by
  // sub-block, in the order they are expected to start: streams whose steps take longer
  // (more bytes, shared links) come up less often, so that no stream waits for a slower
  // one (the same order on every chip: a step only waits for earlier ones).
  struct Entry {
    size_t stream;
    int64_t k, j;
    double ns;  // expected start, from the phase's
  };
  std::vector<Entry> timeline(size_t phase, int64_t first, int64_t last_from_end) const;
  // Calls Lowerer::overlap_point as entry e is reached when the fastest stream has had a
  // step's time in flight since the last call (`next`: when the next call is due).
  void overlap_until(const Entry& e, size_t phase, double& next);
  // How many of a phase's first sends from HBM go ahead of its reductions.
  size_t send_window(size_t phase) const;
  // How many items of a reduce-scatter's phase are loaded ahead of the one reduced.
  size_t load_ahead(size_t phase) const;
  Block block(size_t stream, size_t phase, int64_t sub) const;
  int32_t descriptor(int32_t src, int32_t dst, const Block& b, bool src_box, bool dst_box);
  // A table entry of this chip's row in a register: entry + extra (a byte offset), or a
  // device id (peer).
  int offset(int64_t column, int64_t extra);
  int peer(int64_t column);
  // `first`: a reduce-scatter step's first send (counted on a landing semaphore of its own).
  void send(int32_t descriptor, int src_reg, int dst_reg, int peer_reg, int sent, size_t stream,
            bool first = false);

  Lowerer& l_;
  ProgramBuilder& pb_;
  const ir::Instruction& i_;
  RingPlan plan_;
  int32_t row_ = -1;
  int entry_ = -1, peer_ = -1;
  int64_t max_sub_bytes_ = 0, min_sub_bytes_ = 1;  // of a sub-block (subs())
  int slots_ = 0;          // VMEM slots of a reduction
  int first_landed_ = 0;   // + stream: landing counters of a reduce-scatter's first sends
  int landed_ = 0;         // + stream: landing counters of every other send
};

}  // namespace podsim::tpu
