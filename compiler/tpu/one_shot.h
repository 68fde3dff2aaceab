// One-shot exchanges (lower_collectives.cc: the collectives whose time is latency, and
// all-to-all and collective-permute's sends) and the mailbox they land in without a
// handshake (Lowerer::mailbox): each chip sends its piece to every other chip of its
// group at once, over its own route to each. Internal to compiler/tpu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/instruction.h"
#include "compiler/tpu/collective_rings.h"
#include "compiler/tpu/lowerer.h"

namespace podsim::tpu {

// Semaphores of the direct (not ring) collectives.
inline constexpr int kSemLanded = kSemDirectLanded;  // remote data landed here
inline constexpr int kSemSentHbm = kSemDirectSent;   // remote sends have read their source
inline constexpr int kSemLoad = kSemDirectLoad;      // local loads
inline constexpr int kSemStore = kSemOnce;           // local copies (never pending at an overlap point)

// A table of a row per device: its group position p and the devices at positions p + 1,
// ..., p + G - 1 (mod G) of its group; this chip's row of it in VMEM. Of i's groups, or
// of `groups`.
int32_t peer_row(Lowerer& l, const ir::Instruction& i);
int32_t peer_row(Lowerer& l, const std::string& name, const std::vector<std::vector<int64_t>>& groups);

// Where a one-shot exchange's pieces land, and when they may go: by default into the
// descriptor's destination once every chip of the group has said it is ready (a
// handshake); into the mailbox (Lowerer::mailbox: the descriptor's destination, from
// `offset`) once the chip's credits count the mailbox's earlier uses, which it gave as
// it finished reading them; or, as the second exchange of one use of the mailbox (a
// two-shot all-reduce's all-gather), at once, counted on a semaphore of its own.
struct Landing {
  bool mailbox = false;
  bool second = false;
  int64_t offset = 0;
  int semaphore() const { return !mailbox ? kSemLanded : second ? kSemMailboxSecond : kSemMailboxLanded; }
};

// The entries 1 .. G - 1 of a peer_row: the chip's group peers.
std::vector<int64_t> group_peers(int64_t g);

// The one-shot exchange (over peer_row's `row`): this chip's piece of `bytes` goes by
// `descriptor` to place p (at p x place_bytes) of its own destination and, once ready
// (`landing`), of every other chip's, over its own route to each, all at once; with
// `scatter` the piece for the chip at position q is chunk q of the source (else the
// whole source). Independent steps run while the pieces are in flight; returns once the
// local copy and the G - 1 pieces from the others are in.
void one_shot_exchange(Lowerer& l, int32_t row, int64_t g, int32_t descriptor, int64_t bytes,
                       int64_t place_bytes, bool scatter, Landing landing = {});

// After a chip has read what landed in its mailbox: a credit to the chips that `entries`
// of the table row name, unless no later collective uses the mailbox.
void give_mailbox_credits(Lowerer& l, const ir::Instruction& i, int32_t row, const std::vector<int64_t>& entries);

// The one-shot all-reduce, for arrays whose time is latency: each chip's whole array
// goes into its slot of every chip's VMEM (the mailbox, where `mailbox` is its region,
// else VMEM of the step) by the one-shot exchange, then each reduces the group's G
// arrays in group order (the reference evaluator's order) on the vector unit into
// `output_buffer`. A reduce-scatter (`scatter`) runs the same way on chunks of `bytes`:
// chunk q of each chip's array (G contiguous chunks in `input_buffer`) goes to the chip
// at position q.
void one_shot_all_reduce(Lowerer& l, const ir::Instruction& i, int32_t row, int64_t g, ir::PrimitiveType type,
                         int64_t bytes, int64_t padded, int32_t input_buffer, int32_t output_buffer, bool scatter,
                         int32_t mailbox, bool credits = true);

// The one-shot all-gather, for chunks whose time is latency: each chip's chunk of
// `bytes` (`input`, in HBM) goes to its place in every chip's `gathered` by the one-shot exchange, or, where
// `mailbox` is a region, to its place (at kMailboxAlignment) in the mailbox, copied from
// there into `gathered`.
void one_shot_all_gather(Lowerer& l, const ir::Instruction& i, int64_t g, int32_t input, int64_t bytes,
                         int32_t gathered, int32_t mailbox);

}  // namespace podsim::tpu
