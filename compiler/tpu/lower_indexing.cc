// Data-dependent indexing by DMA with run-time offsets: dynamic-slice,
// dynamic-update-slice, gather and scatter. Index arrays are DMAed to VMEM, each element
// zero-extended into an 8-byte slot so that sld reads it; the scalar unit sign-extends,
// clamps (XLA clamps start indices so that the slice stays inside the operand) and
// sums index * stride into a byte offset that a DMA takes from a register.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::PrimitiveType;

struct StagedIndices {
  int32_t region = -1;
  PrimitiveType type = PrimitiveType::kS32;
};

StagedIndices stage_indices(Lowerer& l, const Instruction& origin, const Leaf& leaf, const std::vector<int64_t>& dims,
                            const std::string& name) {
  if (!ir::is_integral(leaf.type)) unsupported(origin, fmt::format("{} indices", ir::type_name(leaf.type)));
  ProgramBuilder& pb = l.pb();
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  const int64_t lanes = l.chip().vpu_lanes, tile = l.chip().vpu_sublanes * lanes * 4;
  const int64_t eb = ir::type_byte_size(leaf.type);
  StagedIndices st{l.vmem(name, round_up(std::max<int64_t>(8 * count, 1), tile)), leaf.type};
  if (eb < 8) {  // zero the slots so that each index reads zero-extended
    pb.vimm(0, 0);
    for (int64_t offset = 0; offset < round_up(std::max<int64_t>(8 * count, 1), tile); offset += tile)
      pb.vst(st.region, offset, lanes * 4, 0, isa::DType::kU32);
  }
  std::vector<int64_t> slots = ir::row_major_strides(dims);
  for (int64_t& v : slots) v *= 8 / eb;
  int n = issue_copy(pb, l.use(leaf.buffer), leaf.offset * eb, st.region, 0, eb, dims, leaf.strides, slots, kSemOnce);
  pb.wait(kSemOnce, n);
  return st;
}

// Index k, sign-extended, in a held register.
int load_raw_index(ProgramBuilder& pb, const StagedIndices& st, int64_t k) {
  int r = pb.hold_sreg();
  pb.emit(isa::Opcode::kSld, isa::DType::kF32, {r, st.region, pb.sreg(8 * k)});
  const int bits = ir::type_bit_width(st.type);
  if (ir::is_signed_int(st.type) && bits < 64) {
    // r >= 2^(bits-1) is negative: subtract 2^bits.
    int t = pb.hold_sreg();
    pb.emit(isa::Opcode::kSlt, isa::DType::kF32, {t, r, pb.sreg(int64_t{1} << (bits - 1))});
    pb.emit(isa::Opcode::kSmul, isa::DType::kF32, {t, t, pb.sreg(int64_t{1} << bits)});
    pb.emit(isa::Opcode::kSadd, isa::DType::kF32, {r, r, t});
    pb.emit(isa::Opcode::kSaddi, isa::DType::kF32, {r, r, -(int64_t{1} << bits)});
    pb.release_sreg(t);
  }
  return r;
}

// Index k, sign-extended and clamped to [0, limit], in a held register.
int load_index(ProgramBuilder& pb, const StagedIndices& st, int64_t k, int64_t limit) {
  int r = load_raw_index(pb, st, k);
  pb.emit(isa::Opcode::kSmax, isa::DType::kF32, {r, r, 0});
  pb.emit(isa::Opcode::kSmin, isa::DType::kF32, {r, r, pb.sreg(limit)});
  return r;
}

// acc += index * stride_bytes (index: a held register, consumed).
void accumulate(ProgramBuilder& pb, int acc, int index, int64_t stride_bytes) {
  pb.emit(isa::Opcode::kSmul, isa::DType::kF32, {index, index, pb.sreg(stride_bytes)});
  pb.emit(isa::Opcode::kSadd, isa::DType::kF32, {acc, acc, index});
  pb.release_sreg(index);
}

int zeroed_register(ProgramBuilder& pb) {
  int acc = pb.hold_sreg();
  pb.emit(isa::Opcode::kSli, isa::DType::kF32, {acc, 0});
  return acc;
}

// The start indices of dynamic-slice / dynamic-update-slice, from operand `first` on:
// one scalar per dimension, or (the older form) one rank-1 array.
std::vector<Leaf> start_leaves(Lowerer& l, Scope& s, const Instruction& i, int64_t first) {
  std::vector<Leaf> leaves;
  for (int64_t k = first; k < i.operand_count(); ++k) leaves.push_back(view_of(l, s, *i.operand(k)));
  return leaves;
}

// The byte offset of the clamped start (limit[d] = dim - size), in a held register.
int start_offset(Lowerer& l, const Instruction& i, const std::vector<Leaf>& leaves, int64_t first,
                 const std::vector<int64_t>& limit, const std::vector<int64_t>& stride_bytes) {
  ProgramBuilder& pb = l.pb();
  std::vector<StagedIndices> staged;
  for (size_t k = 0; k < leaves.size(); ++k)
    staged.push_back(stage_indices(l, i, leaves[k], i.operand(first + static_cast<int64_t>(k))->shape().dims(),
                                   fmt::format("start{}", k)));
  int acc = zeroed_register(pb);
  const bool one_array = leaves.size() == 1 && i.operand(first)->shape().rank() == 1;
  for (size_t d = 0; d < limit.size(); ++d) {
    const StagedIndices& st = one_array ? staged[0] : staged.at(d);
    int r = load_index(pb, st, one_array ? static_cast<int64_t>(d) : 0, limit[d]);
    accumulate(pb, acc, r, stride_bytes[d]);
  }
  return acc;
}

}  // namespace

Value lower_dynamic_slice(Lowerer& l, const Instruction& i, Scope& s) {
  const Instruction& operand = *i.operand(0);
  const Leaf src = view_of(l, s, operand);
  const std::vector<Leaf> starts = start_leaves(l, s, i, 1);
  l.begin_step(i, s);
  const int32_t out = l.new_buffer(i.name(), i.shape());
  const int64_t eb = ir::type_byte_size(i.shape().type());
  const std::vector<int64_t>& sizes = i.shape().dims();
  std::vector<int64_t> limit, stride_bytes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    limit.push_back(operand.shape().dims()[d] - sizes[d]);
    stride_bytes.push_back(src.strides[d] * eb);
  }
  int acc = start_offset(l, i, starts, 1, limit, stride_bytes);
  int n = issue_copy(l.pb(), l.use(src.buffer), acc, src.offset * eb, l.use(out), -1, 0, eb, sizes, src.strides,
                     ir::row_major_strides(sizes), kSemOnce);
  l.pb().wait(kSemOnce, n);
  l.pb().release_sreg(acc);
  return Value{out, i.shape(), {}};
}

Value lower_dynamic_update_slice(Lowerer& l, const Instruction& i, Scope& s) {
  const Leaf base = view_of(l, s, *i.operand(0));
  const Instruction& update = *i.operand(1);
  const Leaf upd = view_of(l, s, update);
  const std::vector<Leaf> starts = start_leaves(l, s, i, 2);
  l.begin_step(i, s);
  const int32_t out = l.new_buffer(i.name(), i.shape());
  const int32_t out_region = l.use(out);
  const int64_t eb = ir::type_byte_size(i.shape().type());
  const std::vector<int64_t>& dims = i.shape().dims();
  const std::vector<int64_t> out_strides = ir::row_major_strides(dims);
  ProgramBuilder& pb = l.pb();
  // The operand first; the update over it once that copy has landed.
  pb.wait(kSemOnce, issue_copy(pb, l.use(base.buffer), base.offset * eb, out_region, 0, eb, dims, base.strides,
                               out_strides, kSemOnce));
  std::vector<int64_t> limit, stride_bytes;
  for (size_t d = 0; d < dims.size(); ++d) {
    limit.push_back(dims[d] - update.shape().dims()[d]);
    stride_bytes.push_back(out_strides[d] * eb);
  }
  int acc = start_offset(l, i, starts, 2, limit, stride_bytes);
  pb.wait(kSemOnce, issue_copy(pb, l.use(upd.buffer), -1, upd.offset * eb, out_region, acc, 0, eb,
                               update.shape().dims(), upd.strides, out_strides, kSemOnce));
  pb.release_sreg(acc);
  return Value{out, i.shape(), {}};
}

Value lower_gather(Lowerer& l, const Instruction& i, Scope& s) {
  const ir::GatherDimNumbers& g = i.attrs().gather_dims;
  if (!g.operand_batching_dims.empty() || !g.start_indices_batching_dims.empty())
    unsupported(i, "gather with batching dims");
  const Instruction& operand = *i.operand(0);
  const Instruction& indices = *i.operand(1);
  const Leaf src = view_of(l, s, operand);
  const Leaf idx = view_of(l, s, indices);
  l.begin_step(i, s);
  const int32_t out = l.new_buffer(i.name(), i.shape());
  const int32_t src_region = l.use(src.buffer), out_region = l.use(out);
  const int64_t eb = ir::type_byte_size(i.shape().type());
  ProgramBuilder& pb = l.pb();
  const StagedIndices staged = stage_indices(l, i, idx, indices.shape().dims(), "indices");

  const std::vector<int64_t>& out_dims = i.shape().dims();
  const std::vector<int64_t> out_strides = ir::row_major_strides(out_dims);
  const std::vector<int64_t>& slice = i.attrs().gather_slice_sizes;
  auto listed = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  // Output dims: batch dims (in order, one per index dim but the index vector dim) and
  // offset dims (one per operand dim not collapsed).
  std::vector<int64_t> batch_out;
  for (int64_t d = 0; d < static_cast<int64_t>(out_dims.size()); ++d)
    if (!listed(g.offset_dims, d)) batch_out.push_back(d);
  std::vector<int64_t> sizes, src_strides, dst_strides;
  size_t next_offset_dim = 0;
  for (int64_t d = 0; d < operand.shape().rank(); ++d) {
    if (listed(g.collapsed_slice_dims, d)) continue;
    sizes.push_back(slice[static_cast<size_t>(d)]);
    src_strides.push_back(src.strides[static_cast<size_t>(d)]);
    dst_strides.push_back(out_strides[static_cast<size_t>(g.offset_dims.at(next_offset_dim++))]);
  }
  const std::vector<int64_t>& idims = indices.shape().dims();
  const int64_t ivd = g.index_vector_dim;
  const std::vector<int64_t> istrides = ir::row_major_strides(idims);
  std::vector<int64_t> batch_shape;
  for (int64_t d = 0; d < static_cast<int64_t>(idims.size()); ++d)
    if (d != ivd) batch_shape.push_back(idims[static_cast<size_t>(d)]);

  int count = 0;
  ir::for_each_index(batch_shape, [&](const std::vector<int64_t>& b) {
    int64_t dst = 0, base = 0;  // output element; indices element of index-vector entry 0
    for (size_t j = 0, d = 0; d < idims.size(); ++d) {
      if (static_cast<int64_t>(d) == ivd) continue;
      base += b[j] * istrides[d];
      dst += b[j] * out_strides[static_cast<size_t>(batch_out[j])];
      ++j;
    }
    int acc = zeroed_register(pb);
    for (size_t k = 0; k < g.start_index_map.size(); ++k) {
      const auto d = static_cast<size_t>(g.start_index_map[k]);
      int64_t element = base + (ivd < static_cast<int64_t>(idims.size()) ? static_cast<int64_t>(k) * istrides[static_cast<size_t>(ivd)] : 0);
      int r = load_index(pb, staged, element, operand.shape().dims()[d] - slice[d]);
      accumulate(pb, acc, r, src.strides[d] * eb);
    }
    count += issue_copy(pb, src_region, acc, src.offset * eb, out_region, -1, dst * eb, eb, sizes, src_strides,
                        dst_strides, kSemOnce);
    pb.release_sreg(acc);
  });
  pb.wait(kSemOnce, count);
  return Value{out, i.shape(), {}};
}

// Scatter, one update window after another in the order of the scatter indices (as the
// evaluator applies them; later windows see what earlier ones wrote): the operands are
// copied into the results; for each window whose start lies inside the operand (XLA skips
// the others: a branch on the indices at run time), the results' window and the update
// window go to VMEM, dense, the update computation combines them tile by tile on the
// vector unit, and the window goes back. Variadic scatters carry every operand's window
// through one computation.
Value lower_scatter(Lowerer& l, const Instruction& i, Scope& s) {
  const ir::ScatterDimNumbers& g = i.attrs().scatter_dims;
  if (!g.input_batching_dims.empty() || !g.scatter_indices_batching_dims.empty())
    unsupported(i, "scatter with batching dims");
  const int64_t n = (i.operand_count() - 1) / 2;
  std::vector<Leaf> operands, updates;
  for (int64_t k = 0; k < n; ++k) {
    operands.push_back(view_of(l, s, *i.operand(k)));
    updates.push_back(view_of(l, s, *i.operand(n + 1 + k)));
  }
  const Instruction& indices = *i.operand(n);
  const Leaf idx = view_of(l, s, indices);
  const Reducer reducer = build_reducer(l, i, n);
  l.begin_step(i, s);
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const std::vector<int64_t>& dims = i.operand(0)->shape().dims();
  const std::vector<int64_t> strides = ir::row_major_strides(dims);
  const std::vector<int64_t>& udims = i.operand(n + 1)->shape().dims();
  auto listed = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };

  // The results start as copies of the operands.
  std::vector<int32_t> out;
  std::vector<ir::PrimitiveType> types;
  int copies = 0;
  for (int64_t k = 0; k < n; ++k) {
    types.push_back(i.operand(k)->shape().type());
    const ir::Shape shape(types.back(), dims);
    out.push_back(l.new_buffer(n == 1 ? i.name() : fmt::format("{}.{}", i.name(), k), shape));
    const int64_t eb = ir::type_byte_size(types.back());
    copies += issue_copy(pb, l.use(operands[static_cast<size_t>(k)].buffer),
                         operands[static_cast<size_t>(k)].offset * eb, l.use(out.back()), 0, eb,
                         dims, operands[static_cast<size_t>(k)].strides, strides, kSemOnce);
  }
  const Value result = value_in(i, out);
  pb.wait(kSemOnce, copies);

  // The window: the update's window dims, over the operand's dims not inserted (in order).
  std::vector<int64_t> window, window_size(dims.size(), 1), out_window_strides;
  for (size_t d = 0, next = 0; d < dims.size(); ++d) {
    if (listed(g.inserted_window_dims, static_cast<int64_t>(d))) continue;
    const int64_t size = udims[static_cast<size_t>(g.update_window_dims.at(next++))];
    window.push_back(size);
    window_size[d] = size;
    out_window_strides.push_back(strides[d]);
  }
  int64_t window_elements = 1;
  for (int64_t w : window) window_elements *= w;
  if (window_elements == 0) return result;
  const std::vector<int64_t> dense = ir::row_major_strides(window);
  std::vector<int32_t> mine, theirs;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t tile = int64_t{chip.vpu_sublanes} * chip.vpu_lanes *
                         ir::type_byte_size(types[static_cast<size_t>(k)]);
    const int64_t bytes =
        round_up(window_elements * ir::type_byte_size(types[static_cast<size_t>(k)]), tile);
    mine.push_back(l.vmem(fmt::format("window{}", k), bytes));
    theirs.push_back(l.vmem(fmt::format("update{}", k), bytes));
  }
  const StagedIndices staged = stage_indices(l, i, idx, indices.shape().dims(), "indices");
  std::vector<int64_t> update_window_strides;
  for (int64_t d : g.update_window_dims)
    update_window_strides.push_back(updates[0].strides[static_cast<size_t>(d)]);
  // The scatter dims of the update, in order, run with the indices' dims but the index
  // vector dim.
  std::vector<int64_t> scatter_shape, scatter_update_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(udims.size()); ++d)
    if (!listed(g.update_window_dims, d)) {
      scatter_shape.push_back(udims[static_cast<size_t>(d)]);
      scatter_update_dims.push_back(d);
    }
  const std::vector<int64_t>& idims = indices.shape().dims();
  const int64_t ivd = g.index_vector_dim;
  const std::vector<int64_t> istrides = ir::row_major_strides(idims);
  const int64_t tile_elements = int64_t{chip.vpu_sublanes} * chip.vpu_lanes;
  VRegs regs(chip.vector_registers, l.step_name());
  VectorCodegen combine(pb, regs, reducer.expr, reducer.roots);

  ir::for_each_index(scatter_shape, [&](const std::vector<int64_t>& b) {
    int64_t base = 0, update_at = 0;  // indices element of index-vector entry 0; update element
    for (size_t j = 0, d = 0; d < idims.size(); ++d) {
      if (static_cast<int64_t>(d) == ivd) continue;
      base += b[j] * istrides[d];
      update_at += b[j] * updates[0].strides[static_cast<size_t>(scatter_update_dims[j])];
      ++j;
    }
    // The window's start (elements into the result) and whether any index is outside.
    const int start = zeroed_register(pb), outside = zeroed_register(pb), t = pb.hold_sreg();
    for (size_t k = 0; k < g.scatter_dims_to_operand_dims.size(); ++k) {
      const auto d = static_cast<size_t>(g.scatter_dims_to_operand_dims[k]);
      const int64_t element =
          base + (ivd < static_cast<int64_t>(idims.size())
                      ? static_cast<int64_t>(k) * istrides[static_cast<size_t>(ivd)]
                      : 0);
      const int r = load_raw_index(pb, staged, element);
      pb.emit(isa::Opcode::kSlt, isa::DType::kF32, {t, r, pb.sreg(0)});
      pb.emit(isa::Opcode::kSadd, isa::DType::kF32, {outside, outside, t});
      pb.emit(isa::Opcode::kSlt, isa::DType::kF32, {t, pb.sreg(dims[d] - window_size[d]), r});
      pb.emit(isa::Opcode::kSadd, isa::DType::kF32, {outside, outside, t});
      accumulate(pb, start, r, strides[d]);
    }
    const int64_t skip = pb.pc();
    pb.emit(isa::Opcode::kBnz, isa::DType::kF32, {outside, 0});
    pb.begin_block();
    int loads = 0;
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const int64_t eb = ir::type_byte_size(types[k]);
      pb.emit(isa::Opcode::kSmuli, isa::DType::kF32, {t, start, eb});
      loads += issue_copy(pb, l.use(out[k]), t, 0, mine[k], -1, 0, eb, window, out_window_strides,
                          dense, kSemOnce);
      loads += issue_copy(pb, l.use(updates[k].buffer), -1, (updates[k].offset + update_at) * eb,
                          theirs[k], -1, 0, eb, window, update_window_strides, dense, kSemOnce);
    }
    pb.wait(kSemOnce, loads);
    for (int64_t tile = 0; tile < ceil_div(window_elements, tile_elements); ++tile) {
      std::vector<int> current, update;
      for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
        const isa::DType mem = memory_dtype(types[k]);
        const int64_t eb = ir::type_byte_size(types[k]), row = int64_t{chip.vpu_lanes} * eb;
        current.push_back(regs.take());
        update.push_back(regs.take());
        pb.vld(current.back(), mine[k], tile * tile_elements * eb, row, mem);
        pb.vld(update.back(), theirs[k], tile * tile_elements * eb, row, mem);
      }
      std::vector<int> leaf_regs;
      for (int param : reducer.leaf_param)
        leaf_regs.push_back(param < n ? current[static_cast<size_t>(param)]
                                      : update[static_cast<size_t>(param - n)]);
      const std::vector<int> sums = combine.emit_on(leaf_regs);
      for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
        const int64_t eb = ir::type_byte_size(types[k]);
        pb.vst(mine[k], tile * tile_elements * eb, int64_t{chip.vpu_lanes} * eb, sums[k],
               memory_dtype(types[k]));
      }
      combine.give_back(sums);
      for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
        regs.give(current[k]);
        regs.give(update[k]);
      }
    }
    int stores = 0;
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const int64_t eb = ir::type_byte_size(types[k]);
      pb.emit(isa::Opcode::kSmuli, isa::DType::kF32, {t, start, eb});
      stores += issue_copy(pb, mine[k], -1, 0, l.use(out[k]), t, 0, eb, window, dense,
                           out_window_strides, kSemOnce);
    }
    pb.wait(kSemOnce, stores);
    pb.set_branch_target(skip, pb.pc());
    pb.begin_block();
    pb.release_sreg(t);
    pb.release_sreg(outside);
    pb.release_sreg(start);
  });
  return result;
}

}  // namespace podsim::tpu
