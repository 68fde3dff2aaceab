// The op lowerings the driver (lowerer.cc) dispatches to. Each emits one or more steps
// and returns the value it computed. Internal to compiler/tpu.
#pragma once

#include <utility>
#include <vector>

#include "compiler/tpu/expr.h"

namespace podsim::tpu {

// The value of an instruction whose results are in `buffers`, one per element of a tuple
// result (else the one array).
inline Value value_in(const ir::Instruction& i, const std::vector<int32_t>& buffers) {
  if (!i.shape().is_tuple()) return Value{buffers.at(0), i.shape(), {}};
  Value v{-1, i.shape(), {}};
  for (size_t k = 0; k < buffers.size(); ++k)
    v.elements.push_back(Value{buffers[k], i.shape().element(static_cast<int64_t>(k)), {}});
  return v;
}

// Elementwise kernels (lower_elementwise.cc).
struct KernelOutput {
  int node = 0;
  int32_t buffer = -1;
  ir::PrimitiveType type = ir::PrimitiveType::kF32;
};
// Streams expr's index space in tiles and stores each output node, row-major over
// expr.dims, to its buffer. Called within a step.
void emit_elementwise_kernel(Lowerer& l, const Expr& expr, const std::vector<KernelOutput>& outputs);
// An elementwise instruction (or a fused root): one kernel computing it.
Value lower_elementwise(Lowerer& l, const ir::Instruction& i, Scope& s);

// reduce (lower_reduce.cc).
Value lower_reduce(Lowerer& l, const ir::Instruction& i, Scope& s);

// dot (lower_dot.cc).
Value lower_dot(Lowerer& l, const ir::Instruction& i, Scope& s);

// Control flow (lower_control.cc): while loops and conditionals as branches in the
// program; the loop state lives in buffers of its own.
Value lower_while(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_conditional(Lowerer& l, const ir::Instruction& i, Scope& s);

// Data-dependent indexing (lower_indexing.cc): DMAs whose offsets the scalar unit
// computes from index arrays at run time.
Value lower_dynamic_slice(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_dynamic_update_slice(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_gather(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_scatter(Lowerer& l, const ir::Instruction& i, Scope& s);
// sort (lower_sort.cc).
Value lower_sort(Lowerer& l, const ir::Instruction& i, Scope& s);

// Data movement by DMA (lower_data_movement.cc): broadcast / transpose / slice
// materialized, reverse, concatenate, pad, and a plain copy of a buffer.
Value lower_view_copy(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_reverse(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_concatenate(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_pad(Lowerer& l, const ir::Instruction& i, Scope& s);
// Collectives over the pod (lower_collectives.cc): replica-id / partition-id, and
// all-reduce, reduce-scatter and all-gather as rings of remote DMAs (or a one-shot
// exchange), collective-permute as one remote DMA per pair, all-to-all as one per block.
Value lower_device_id(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_all_reduce(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_reduce_scatter(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_all_gather(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_collective_permute(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_collective_broadcast(Lowerer& l, const ir::Instruction& i, Scope& s);
Value lower_all_to_all(Lowerer& l, const ir::Instruction& i, Scope& s);
// A collective-permute's pairs as device ids (source, target): its pairs name replica
// ids, or partition ids with a channel_id, within each device's domain.
std::vector<std::pair<int64_t, int64_t>> permute_device_pairs(const ir::Instruction& i, const Target& t);
// The most bytes the one-shot all-reduce gathers in VMEM (the group's arrays).
inline constexpr int64_t kOneShotMaxBytes = 2 << 20;
// Where each chip's chunk of a one-shot all-gather lands in the mailbox: at multiples of this.
inline constexpr int64_t kMailboxAlignment = 128;

// Copies `bytes` from one buffer to another within the step in progress.
void copy_buffer(Lowerer& l, int32_t src, int32_t dst, int64_t bytes);
// Issues a copy of `bytes` contiguous bytes between regions (at the offset in register
// src_reg / dst_reg, -1 for 0) as one DMA per DMA engine of the chip, so that a large copy
// moves at the rate of all of them; each signals `semaphore`. Returns how many.
int issue_spread_copy(Lowerer& l, int32_t src_region, int src_reg, int32_t dst_region, int dst_reg,
                      int64_t bytes, int semaphore);

}  // namespace podsim::tpu
