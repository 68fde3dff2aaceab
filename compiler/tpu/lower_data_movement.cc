// Data movement by DMA, HBM to HBM: materialized views (broadcast, transpose, slice,
// reshape chains: one strided copy), reverse (one copy per index of the reversed dims:
// DMA strides are never negative), concatenate (one copy per operand into its place),
// pad (a fill kernel, then the operand copied to its strided place), buffer copies.
#include <algorithm>
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

void copy_buffer(Lowerer& l, int32_t src, int32_t dst, int64_t bytes) {
  if (bytes == 0) return;
  l.pb().dma(contiguous_descriptor(l.pb(), l.use(src), l.use(dst), bytes), 0, 0, kSemOnce);
  l.pb().wait(kSemOnce, 1);
}

int issue_spread_copy(Lowerer& l, int32_t src_region, int src_reg, int32_t dst_region, int dst_reg,
                      int64_t bytes, int semaphore) {
  constexpr int64_t kMinPart = 64 * 1024;
  const int64_t parts = std::clamp<int64_t>(bytes / kMinPart, 1, std::max(l.chip().dma_engines, 1));
  const int64_t part = round_up(ceil_div(bytes, parts), 512);
  int64_t width = 8;
  while (bytes % width != 0) width /= 2;
  int count = 0;
  for (int64_t at = 0; at < bytes; at += part) {
    const int64_t n = std::min(part, bytes - at);
    count += issue_copy(l.pb(), src_region, src_reg, at, dst_region, dst_reg, at, width, {n / width}, {1}, {1},
                        semaphore);
  }
  return count;
}

Value lower_view_copy(Lowerer& l, const Instruction& i, Scope& s) {
  const Leaf src = view_of(l, s, i);
  l.begin_step(i, s);
  int32_t out = l.new_buffer(i.name(), i.shape());
  int64_t eb = ir::type_byte_size(i.shape().type());
  int n = issue_copy(l.pb(), l.use(src.buffer), src.offset * eb, l.use(out), 0, eb, i.shape().dims(), src.strides,
                     ir::row_major_strides(i.shape().dims()), kSemOnce);
  l.pb().wait(kSemOnce, n);
  return Value{out, i.shape(), {}};
}

Value lower_reverse(Lowerer& l, const Instruction& i, Scope& s) {
  const Leaf src = view_of(l, s, *i.operand(0));
  l.begin_step(i, s);
  int32_t out = l.new_buffer(i.name(), i.shape());
  const int64_t eb = ir::type_byte_size(i.shape().type());
  const std::vector<int64_t>& dims = i.shape().dims();
  const std::vector<int64_t> out_strides = ir::row_major_strides(dims);
  const std::vector<int64_t>& reversed = i.attrs().dimensions;
  // DMA strides are not negative: one DMA per index of the reversed dims, each copying
  // the rest of the array in order.
  std::vector<int64_t> sizes = dims, loop;
  for (int64_t d : reversed) {
    loop.push_back(dims[static_cast<size_t>(d)]);
    sizes[static_cast<size_t>(d)] = 1;
  }
  int n = 0;
  ir::for_each_index(loop, [&](const std::vector<int64_t>& index) {
    int64_t from = src.offset, to = 0;
    for (size_t k = 0; k < reversed.size(); ++k) {
      auto d = static_cast<size_t>(reversed[k]);
      from += index[k] * src.strides[d];
      to += (dims[d] - 1 - index[k]) * out_strides[d];
    }
    n += issue_copy(l.pb(), l.use(src.buffer), from * eb, l.use(out), to * eb, eb, sizes, src.strides, out_strides,
                    kSemOnce);
  });
  l.pb().wait(kSemOnce, n);
  return Value{out, i.shape(), {}};
}

Value lower_concatenate(Lowerer& l, const Instruction& i, Scope& s) {
  std::vector<Leaf> parts;
  for (const Instruction* op : i.operands()) parts.push_back(view_of(l, s, *op));
  l.begin_step(i, s);
  int32_t out = l.new_buffer(i.name(), i.shape());
  const int64_t eb = ir::type_byte_size(i.shape().type());
  const std::vector<int64_t> out_strides = ir::row_major_strides(i.shape().dims());
  const size_t d = static_cast<size_t>(i.attrs().dimensions.at(0));
  int64_t position = 0, n = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const ir::Shape& shape = i.operand(static_cast<int64_t>(k))->shape();
    n += issue_copy(l.pb(), l.use(parts[k].buffer), parts[k].offset * eb, l.use(out), position * out_strides[d] * eb,
                    eb, shape.dims(), parts[k].strides, out_strides, kSemOnce);
    position += shape.dims()[d];
  }
  l.pb().wait(kSemOnce, n);
  return Value{out, i.shape(), {}};
}

Value lower_pad(Lowerer& l, const Instruction& i, Scope& s) {
  isa_dtype(i, i.shape().type());  // the padding is written by the vector unit
  const Instruction& operand = *i.operand(0);
  const Instruction& value = *i.operand(1);
  const Leaf src = view_of(l, s, operand);
  Expr fill;
  fill.dims = i.shape().dims();
  if (value.opcode() == ir::Opcode::kConstant && !l.find_value(value, s)) {
    fill.add_constant(value.shape().type(), lane_bits(value, *value.attrs().literal));
  } else {
    Leaf v = view_of(l, s, value);
    v.strides.assign(fill.dims.size(), 0);
    fill.add_leaf(v);
  }
  l.begin_step(i, s);
  int32_t out = l.new_buffer(i.name(), i.shape());
  emit_elementwise_kernel(l, fill, {KernelOutput{0, out, i.shape().type()}});

  // The operand's elements that land inside the result, and where.
  const std::vector<int64_t> out_strides = ir::row_major_strides(i.shape().dims());
  const int64_t eb = ir::type_byte_size(i.shape().type());
  std::vector<int64_t> sizes, src_strides, dst_strides;
  int64_t src_offset = src.offset, dst_offset = 0;
  for (size_t d = 0; d < fill.dims.size(); ++d) {
    const ir::PadDim& p = i.attrs().padding[d];
    const int64_t step = p.interior + 1, n = operand.shape().dims()[d], out_n = fill.dims[d];
    int64_t j0 = p.low < 0 ? -floor_div(p.low, step) : 0;
    int64_t j1 = std::min(n - 1, floor_div(out_n - 1 - p.low, step));
    sizes.push_back(std::max<int64_t>(0, j1 - j0 + 1));
    src_offset += j0 * src.strides[d];
    dst_offset += (p.low + j0 * step) * out_strides[d];
    src_strides.push_back(src.strides[d]);
    dst_strides.push_back(out_strides[d] * step);
  }
  int n = issue_copy(l.pb(), l.use(src.buffer), src_offset * eb, l.use(out), dst_offset * eb, eb, sizes, src_strides,
                     dst_strides, kSemOnce);
  l.pb().wait(kSemOnce, n);
  return Value{out, i.shape(), {}};
}

}  // namespace podsim::tpu
