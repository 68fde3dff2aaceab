// One-shot exchanges and the mailbox (one_shot.h).
#include "compiler/tpu/one_shot.h"

#include <fmt/format.h>

#include "compiler/ir/collective_groups.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {

using ir::Instruction;

int32_t peer_row(Lowerer& l, const std::string& name, const std::vector<std::vector<int64_t>>& groups) {
  const auto g = static_cast<int64_t>(groups.at(0).size());
  std::vector<int64_t> table(static_cast<size_t>(l.target().devices() * g), 0);
  for (const std::vector<int64_t>& group : groups)
    for (int64_t p = 0; p < g; ++p) {
      int64_t* row = &table[static_cast<size_t>(group[static_cast<size_t>(p)] * g)];
      row[0] = p;
      for (int64_t k = 1; k < g; ++k) row[k] = group[static_cast<size_t>((p + k) % g)];
    }
  return device_row(l, name, table, g);
}

int32_t peer_row(Lowerer& l, const Instruction& i) {
  const Target& t = l.target();
  return peer_row(l, fmt::format("{}.peers", i.name()), ir::collective_device_groups(i, t.replicas, t.partitions));
}

std::vector<int64_t> group_peers(int64_t g) {
  std::vector<int64_t> peers;
  for (int64_t k = 1; k < g; ++k) peers.push_back(k);
  return peers;
}

void one_shot_exchange(Lowerer& l, int32_t row, int64_t g, int32_t descriptor, int64_t bytes,
                       int64_t place_bytes, bool scatter, Landing landing) {
  ProgramBuilder& pb = l.pb();
  const int peer = pb.hold_sreg(), at = pb.hold_sreg(), from = pb.hold_sreg();
  auto chunk_of = [&](int64_t k) {  // the chunk (p + k) mod G goes to the k-th peer
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {from, row, pb.sreg(0)});
    pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {from, from, k});
    pb.emit(isa::Opcode::kSrem, isa::DType::kS32, {from, from, pb.sreg(g)});
    pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {from, from, bytes});
    return from;
  };
  pb.emit(isa::Opcode::kSld, isa::DType::kS32, {at, row, pb.sreg(0)});
  pb.emit(isa::Opcode::kSmuli, isa::DType::kS32, {at, at, place_bytes});
  if (landing.offset != 0) pb.emit(isa::Opcode::kSaddi, isa::DType::kS32, {at, at, landing.offset});
  pb.emit(isa::Opcode::kDma, isa::DType::kF32, {descriptor, scatter ? chunk_of(0) : pb.sreg(0), at, kSemLoad});
  const std::vector<int64_t> peers = group_peers(g);
  if (!landing.mailbox) {
    Handshake handshake(l);
    handshake.signal(row, peers);
    handshake.await(row, peers);
  } else if (!landing.second) {
    Handshake(l, l.mailbox_flags(), false).await(row, peers);
  }
  const int landed = landing.semaphore();
  for (int64_t k = 1; k < g; ++k) {
    pb.emit(isa::Opcode::kSld, isa::DType::kS32, {peer, row, pb.sreg(8 * k)});
    pb.emit(isa::Opcode::kDmaRemote, isa::DType::kF32,
            {descriptor, scatter ? chunk_of(k) : pb.sreg(0), at, peer, kSemSentHbm, landed});
  }
  pb.release_sreg(from);
  pb.release_sreg(peer);
  pb.release_sreg(at);
  const topology::PodConfig& pod = *l.target().pod;
  l.overlap_point(static_cast<double>(bytes * (g - 1)) /
                      (pod.ici_link_bandwidth_bytes_per_s *
                       static_cast<double>(std::min<int64_t>(g - 1, l.chip().ici_ports))) * 1e9 +
                  pod.ici_link_latency_ns);
  pb.wait(kSemLoad, 1);
  pb.wait(landed, g - 1);
}

void give_mailbox_credits(Lowerer& l, const Instruction& i, int32_t row, const std::vector<int64_t>& entries) {
  if (l.mailbox_used_later(i)) Handshake(l, l.mailbox_flags(), true).signal(row, entries);
}

void one_shot_all_reduce(Lowerer& l, const Instruction& i, int32_t row, int64_t g, ir::PrimitiveType type,
                         int64_t bytes, int64_t padded, int32_t input_buffer, int32_t output_buffer, bool scatter,
                         int32_t mailbox, bool credits) {
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const int64_t row_bytes = int64_t{chip.vpu_lanes} * ir::type_byte_size(type);
  const int64_t tile_bytes = row_bytes * chip.vpu_sublanes;
  const isa::DType mem = memory_dtype(type);
  const int32_t slots = mailbox >= 0 ? mailbox : l.vmem("slots", g * padded);
  one_shot_exchange(l, row, g, contiguous_descriptor(pb, l.use(input_buffer), slots, bytes), bytes, padded,
                    scatter, Landing{mailbox >= 0});

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
  pb.dma(contiguous_descriptor(pb, sum, l.use(output_buffer), bytes), 0, 0, kSemStore);
  pb.wait(kSemStore, 1);
  if (mailbox >= 0 && credits) give_mailbox_credits(l, i, row, group_peers(g));
  pb.wait(kSemSentHbm, g - 1);
}

void one_shot_all_gather(Lowerer& l, const Instruction& i, int64_t g, int32_t input, int64_t bytes,
                         int32_t gathered, int32_t mailbox) {
  ProgramBuilder& pb = l.pb();
  const int32_t row = peer_row(l, i);
  if (mailbox < 0) {
    one_shot_exchange(l, row, g, contiguous_descriptor(pb, l.use(input), l.use(gathered), bytes), bytes,
                      bytes, false);
    pb.wait(kSemSentHbm, g - 1);
    return;
  }
  const int64_t place = round_up(bytes, kMailboxAlignment);
  one_shot_exchange(l, row, g, contiguous_descriptor(pb, l.use(input), mailbox, bytes), bytes, place, false,
                    Landing{true});
  pb.wait(kSemStore, issue_copy(pb, mailbox, 0, l.use(gathered), 0, 1, {g, bytes}, {place, 1}, {bytes, 1}, kSemStore));
  give_mailbox_credits(l, i, row, group_peers(g));
  pb.wait(kSemSentHbm, g - 1);
}

}  // namespace podsim::tpu
