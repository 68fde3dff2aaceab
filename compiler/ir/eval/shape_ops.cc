// Reference evaluation of the data-movement ops: every one of them only moves
// elements, so they copy type_byte_size bytes at a time instead of being templated on
// the element type (iota is the exception: it computes values).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {
namespace {

const Literal& array_operand(const Instruction& instruction, Operands operands, size_t i) {
  if (i >= operands.size())
    op_fail(instruction, "expected at least {} operands, got {}", i + 1, operands.size());
  if (operands[i]->shape().is_tuple())
    op_fail(instruction, "operand {} is a tuple; expected an array", i);
  return *operands[i];
}

void expect_operand_count(const Instruction& instruction, Operands operands, size_t n) {
  if (operands.size() != n)
    op_fail(instruction, "expected {} operands, got {}", n, operands.size());
}

// The result literal, after checking that the instruction's shape is the array shape
// the op computes (guards every later index computation).
Literal make_result(const Instruction& instruction, PrimitiveType type,
                    const std::vector<int64_t>& dims) {
  const Shape& shape = instruction.shape();
  if (shape.is_tuple() || shape.type() != type || shape.dims() != dims)
    op_fail(instruction, "result shape {} does not match the computed shape {}",
            shape.to_string(false), Shape(type, dims).to_string(false));
  return Literal(shape);
}

template <size_t N>
void strided_copy_n(const std::byte* in, std::byte* out, const std::vector<int64_t>& dims,
                    int64_t base, const std::vector<int64_t>& strides, int64_t count) {
  const size_t rank = dims.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = base;
  for (int64_t o = 0; o < count; ++o) {
    std::memcpy(out + static_cast<size_t>(o) * N, in + static_cast<size_t>(offset) * N, N);
    for (size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

// out[i] = in[base + sum_d i_d * strides[d]] for every row-major index i of out_dims;
// strides are in elements and may be 0 (broadcast) or negative (reverse).
void strided_copy(const std::byte* in, std::byte* out, size_t element_size,
                  const std::vector<int64_t>& out_dims, int64_t base,
                  const std::vector<int64_t>& strides) {
  int64_t count = 1;
  for (int64_t d : out_dims) count *= d;
  if (count == 0) return;
  switch (element_size) {
    case 1:
      return strided_copy_n<1>(in, out, out_dims, base, strides, count);
    case 2:
      return strided_copy_n<2>(in, out, out_dims, base, strides, count);
    case 4:
      return strided_copy_n<4>(in, out, out_dims, base, strides, count);
    case 8:
      return strided_copy_n<8>(in, out, out_dims, base, strides, count);
    default:
      fail("internal: element size {} in strided_copy", element_size);
  }
}

size_t element_size(const Literal& l) { return static_cast<size_t>(type_byte_size(l.type())); }

Literal eval_broadcast(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  const auto& map = instruction.attrs().dimensions;
  const std::vector<int64_t>& out_dims = instruction.shape().dims();
  if (static_cast<int64_t>(map.size()) != in.shape().rank())
    op_fail(instruction, "dimensions has {} entries for an operand of rank {}", map.size(),
            in.shape().rank());
  Literal out = make_result(instruction, in.type(), out_dims);
  std::vector<int64_t> in_strides = row_major_strides(in.shape().dims());
  // Result dimensions that no operand dimension maps to repeat the operand: stride 0.
  std::vector<int64_t> strides(out_dims.size(), 0);
  std::vector<bool> mapped(out_dims.size(), false);
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t d = map[i];
    if (d < 0 || d >= static_cast<int64_t>(out_dims.size()) || mapped[static_cast<size_t>(d)])
      op_fail(instruction, "dimensions[{}] = {} is out of range or repeated", i, d);
    if (out_dims[static_cast<size_t>(d)] != in.shape().dim(static_cast<int64_t>(i)))
      op_fail(instruction, "operand dimension {} (size {}) does not match result dimension {}", i,
              in.shape().dim(static_cast<int64_t>(i)), d);
    mapped[static_cast<size_t>(d)] = true;
    strides[static_cast<size_t>(d)] = in_strides[i];
  }
  strided_copy(in.bytes().data(), out.bytes().data(), element_size(in), out_dims, 0, strides);
  return out;
}

Literal eval_reshape(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  Literal out = make_result(instruction, in.type(), instruction.shape().dims());
  if (out.num_elements() != in.num_elements())
    op_fail(instruction, "cannot reshape {} elements into {}", in.num_elements(),
            instruction.shape().to_string(false));
  std::copy(in.bytes().begin(), in.bytes().end(), out.bytes().begin());
  return out;
}

Literal eval_transpose(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  const auto& perm = instruction.attrs().dimensions;
  const int64_t rank = in.shape().rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    op_fail(instruction, "dimensions has {} entries for an operand of rank {}", perm.size(), rank);
  std::vector<int64_t> in_strides = row_major_strides(in.shape().dims());
  std::vector<int64_t> out_dims(perm.size()), strides(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t d = perm[i];
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)])
      op_fail(instruction, "dimensions {{{}}} is not a permutation", fmt::join(perm, ","));
    seen[static_cast<size_t>(d)] = true;
    out_dims[i] = in.shape().dim(d);
    strides[i] = in_strides[static_cast<size_t>(d)];
  }
  Literal out = make_result(instruction, in.type(), out_dims);
  strided_copy(in.bytes().data(), out.bytes().data(), element_size(in), out_dims, 0, strides);
  return out;
}

Literal eval_slice(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  const auto& slice = instruction.attrs().slice;
  const int64_t rank = in.shape().rank();
  if (static_cast<int64_t>(slice.size()) != rank)
    op_fail(instruction, "slice has {} dimensions for an operand of rank {}", slice.size(), rank);
  std::vector<int64_t> in_strides = row_major_strides(in.shape().dims());
  std::vector<int64_t> out_dims(slice.size()), strides(slice.size());
  int64_t base = 0;
  for (size_t i = 0; i < slice.size(); ++i) {
    const SliceDim& s = slice[i];
    int64_t dim = in.shape().dim(static_cast<int64_t>(i));
    if (s.start < 0 || s.limit > dim || s.start > s.limit || s.stride <= 0)
      op_fail(instruction, "slice [{}:{}:{}] is invalid for dimension {} of size {}", s.start,
              s.limit, s.stride, i, dim);
    out_dims[i] = (s.limit - s.start + s.stride - 1) / s.stride;
    strides[i] = in_strides[i] * s.stride;
    base += s.start * in_strides[i];
  }
  Literal out = make_result(instruction, in.type(), out_dims);
  strided_copy(in.bytes().data(), out.bytes().data(), element_size(in), out_dims, base, strides);
  return out;
}

// Reads a start index; unsigned values beyond int64 saturate (they clamp anyway).
int64_t read_index(const Instruction& instruction, const Literal& l, int64_t i) {
  if (!is_integral(l.type()))
    op_fail(instruction, "start indices have type {}; expected an integer type",
            type_name(l.type()));
  if (is_unsigned_int(l.type())) {
    uint64_t u = l.get_as_uint64(i);
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  return l.get_as_int64(i);
}

// Start indices of dynamic-(update-)slice from operands[first...]: one scalar per
// dimension, or (old form) one rank-1 array. Each is clamped so that a window of
// sizes[d] stays inside dims[d], as XLA does.
std::vector<int64_t> clamped_starts(const Instruction& instruction, Operands operands, size_t first,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& sizes) {
  const size_t rank = dims.size();
  std::vector<int64_t> starts(rank, 0);
  size_t index_operands = operands.size() - first;
  const bool vector_form = index_operands == 1 && operands[first]->shape().is_array() &&
                           operands[first]->shape().rank() == 1;
  if (vector_form) {
    const Literal& l = array_operand(instruction, operands, first);
    if (static_cast<size_t>(l.num_elements()) != rank)
      op_fail(instruction, "start index vector has {} elements for rank {}", l.num_elements(),
              rank);
    for (size_t d = 0; d < rank; ++d)
      starts[d] = read_index(instruction, l, static_cast<int64_t>(d));
  } else {
    if (index_operands != rank)
      op_fail(instruction, "expected {} start index operands, got {}", rank, index_operands);
    for (size_t d = 0; d < rank; ++d) {
      const Literal& l = array_operand(instruction, operands, first + d);
      if (!l.shape().is_scalar())
        op_fail(instruction, "start index operand {} has shape {}; expected a scalar", first + d,
                l.shape().to_string(false));
      starts[d] = read_index(instruction, l, 0);
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || sizes[d] > dims[d])
      op_fail(instruction, "window size {} exceeds dimension {} of size {}", sizes[d], d, dims[d]);
    starts[d] = std::clamp<int64_t>(starts[d], 0, dims[d] - sizes[d]);
  }
  return starts;
}

Literal eval_dynamic_slice(const Instruction& instruction, Operands operands) {
  const Literal& in = array_operand(instruction, operands, 0);
  const std::vector<int64_t>& dims = in.shape().dims();
  std::vector<int64_t> sizes = instruction.attrs().dynamic_slice_sizes;
  if (sizes.empty() && !dims.empty()) sizes = instruction.shape().dims();
  if (sizes.size() != dims.size())
    op_fail(instruction, "dynamic_slice_sizes has {} entries for an operand of rank {}",
            sizes.size(), dims.size());
  std::vector<int64_t> starts = clamped_starts(instruction, operands, 1, dims, sizes);
  Literal out = make_result(instruction, in.type(), sizes);
  std::vector<int64_t> strides = row_major_strides(dims);
  int64_t base = 0;
  for (size_t d = 0; d < dims.size(); ++d) base += starts[d] * strides[d];
  strided_copy(in.bytes().data(), out.bytes().data(), element_size(in), sizes, base, strides);
  return out;
}

// Writes src (dims src_dims, row-major) into dst (dims dst_dims) at the offsets
// dst_start + i * dst_step for every index i of src.
void place(const Literal& src, Literal& dst, const std::vector<int64_t>& dst_start,
           const std::vector<int64_t>& dst_step) {
  const size_t es = element_size(src);
  const std::vector<int64_t>& dst_dims = dst.shape().dims();
  std::vector<int64_t> dst_strides = row_major_strides(dst_dims);
  int64_t i = 0;
  const std::byte* from = src.bytes().data();
  std::byte* to = dst.bytes().data();
  for_each_index(src.shape().dims(), [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t p = dst_start[d] + index[d] * dst_step[d];
      if (p < 0 || p >= dst_dims[d]) {
        inside = false;
        break;
      }
      offset += p * dst_strides[d];
    }
    if (inside)
      std::memcpy(to + static_cast<size_t>(offset) * es, from + static_cast<size_t>(i) * es, es);
    ++i;
  });
}

Literal eval_dynamic_update_slice(const Instruction& instruction, Operands operands) {
  const Literal& in = array_operand(instruction, operands, 0);
  const Literal& update = array_operand(instruction, operands, 1);
  if (update.type() != in.type() || update.shape().rank() != in.shape().rank())
    op_fail(instruction, "update {} does not match operand {}", update.shape().to_string(false),
            in.shape().to_string(false));
  std::vector<int64_t> starts =
      clamped_starts(instruction, operands, 2, in.shape().dims(), update.shape().dims());
  Literal out = make_result(instruction, in.type(), in.shape().dims());
  std::copy(in.bytes().begin(), in.bytes().end(), out.bytes().begin());
  place(update, out, starts, std::vector<int64_t>(starts.size(), 1));
  return out;
}

Literal eval_concatenate(const Instruction& instruction, Operands operands) {
  const auto& attr = instruction.attrs().dimensions;
  if (attr.size() != 1) op_fail(instruction, "expected one concatenate dimension");
  if (operands.empty()) op_fail(instruction, "expected at least one operand");
  const Literal& first = array_operand(instruction, operands, 0);
  const int64_t rank = first.shape().rank();
  const int64_t dim = attr[0];
  if (dim < 0 || dim >= rank)
    op_fail(instruction, "concatenate dimension {} is out of range for rank {}", dim, rank);
  std::vector<int64_t> out_dims = first.shape().dims();
  out_dims[static_cast<size_t>(dim)] = 0;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Literal& l = array_operand(instruction, operands, k);
    bool same = l.type() == first.type() && l.shape().rank() == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == dim || l.shape().dim(d) == first.shape().dim(d);
    if (!same)
      op_fail(instruction, "operand {} has shape {}, incompatible with operand 0 {}", k,
              l.shape().to_string(false), first.shape().to_string(false));
    out_dims[static_cast<size_t>(dim)] += l.shape().dim(dim);
  }
  Literal out = make_result(instruction, first.type(), out_dims);
  // Each operand contributes, for every index of the dimensions before dim, one
  // contiguous run of (its size along dim) * (elements after dim).
  int64_t outer = 1, inner = static_cast<int64_t>(element_size(first));
  for (int64_t d = 0; d < dim; ++d) outer *= out_dims[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < rank; ++d) inner *= out_dims[static_cast<size_t>(d)];
  const int64_t out_run = out_dims[static_cast<size_t>(dim)] * inner;
  int64_t column = 0;
  for (const Literal* l : operands) {
    const int64_t run = l->shape().dim(dim) * inner;
    for (int64_t o = 0; o < outer && run > 0; ++o)  // an empty operand has no data to copy
      std::memcpy(out.bytes().data() + o * out_run + column, l->bytes().data() + o * run,
                  static_cast<size_t>(run));
    column += run;
  }
  return out;
}

Literal eval_pad(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 2);
  const Literal& in = array_operand(instruction, operands, 0);
  const Literal& value = array_operand(instruction, operands, 1);
  const auto& padding = instruction.attrs().padding;
  const int64_t rank = in.shape().rank();
  if (!value.shape().is_scalar() || value.type() != in.type())
    op_fail(instruction, "padding value {} must be a scalar of the operand type {}",
            value.shape().to_string(false), type_name(in.type()));
  if (static_cast<int64_t>(padding.size()) != rank)
    op_fail(instruction, "padding has {} dimensions for an operand of rank {}", padding.size(),
            rank);
  std::vector<int64_t> out_dims(padding.size()), starts(padding.size()), steps(padding.size());
  for (size_t d = 0; d < padding.size(); ++d) {
    const PadDim& p = padding[d];
    int64_t size = in.shape().dim(static_cast<int64_t>(d));
    if (p.interior < 0) op_fail(instruction, "negative interior padding {}", p.interior);
    int64_t dilated = size == 0 ? 0 : (size - 1) * (p.interior + 1) + 1;
    out_dims[d] = p.low + dilated + p.high;
    if (out_dims[d] < 0)
      op_fail(instruction, "padding {}_{}_{} makes dimension {} negative", p.low, p.high,
              p.interior, d);
    starts[d] = p.low;
    steps[d] = p.interior + 1;
  }
  Literal out = make_result(instruction, in.type(), out_dims);
  const size_t es = element_size(in);
  for (int64_t i = 0; i < out.num_elements(); ++i)
    std::memcpy(out.bytes().data() + static_cast<size_t>(i) * es, value.bytes().data(), es);
  // Negative low/high padding crops: elements landing outside the result are dropped.
  place(in, out, starts, steps);
  return out;
}

Literal eval_reverse(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  const std::vector<int64_t>& dims = in.shape().dims();
  std::vector<int64_t> strides = row_major_strides(dims);
  std::vector<bool> reversed(dims.size(), false);
  int64_t base = 0;
  for (int64_t d : instruction.attrs().dimensions) {
    if (d < 0 || d >= static_cast<int64_t>(dims.size()) || reversed[static_cast<size_t>(d)])
      op_fail(instruction, "reverse dimension {} is out of range or repeated", d);
    reversed[static_cast<size_t>(d)] = true;
    base += (dims[static_cast<size_t>(d)] - 1) * strides[static_cast<size_t>(d)];
    strides[static_cast<size_t>(d)] = -strides[static_cast<size_t>(d)];
  }
  Literal out = make_result(instruction, in.type(), dims);
  strided_copy(in.bytes().data(), out.bytes().data(), element_size(in), dims, base, strides);
  return out;
}

// minor_to_major of shape, or the row-major default when it has none.
std::vector<int64_t> minor_to_major(const Instruction& instruction, const Shape& shape) {
  const int64_t rank = shape.rank();
  if (!shape.has_layout() || (shape.layout().minor_to_major.empty() && rank == 0)) {
    std::vector<int64_t> order(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) order[static_cast<size_t>(i)] = rank - 1 - i;
    return order;
  }
  const auto& order = shape.layout().minor_to_major;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool ok = static_cast<int64_t>(order.size()) == rank;
  for (size_t i = 0; ok && i < order.size(); ++i) {
    ok = order[i] >= 0 && order[i] < rank && !seen[static_cast<size_t>(order[i])];
    if (ok) seen[static_cast<size_t>(order[i])] = true;
  }
  if (!ok) op_fail(instruction, "layout of {} is not a permutation", shape.to_string());
  return order;
}

// Strides (in elements) of each logical dimension in the physical layout.
std::vector<int64_t> physical_strides(const Shape& shape, const std::vector<int64_t>& m2m) {
  std::vector<int64_t> strides(m2m.size());
  int64_t s = 1;
  for (int64_t d : m2m) {
    strides[static_cast<size_t>(d)] = s;
    s *= shape.dim(d);
  }
  return strides;
}

// bitcast reinterprets the physical bytes, so it honours the layouts of the operand
// and result shapes (literals themselves are always row-major).
Literal eval_bitcast(const Instruction& instruction, Operands operands) {
  expect_operand_count(instruction, operands, 1);
  const Literal& in = array_operand(instruction, operands, 0);
  const Shape& out_shape = instruction.shape();
  if (out_shape.is_tuple() || type_byte_size(out_shape.type()) != type_byte_size(in.type()) ||
      checked_num_elements(out_shape.dims()) != in.num_elements())
    op_fail(instruction, "cannot bitcast {} to {}: sizes differ", in.shape().to_string(false),
            out_shape.to_string(false));
  Shape in_shape = instruction.operand_count() == 1 ? instruction.operand(0)->shape() : in.shape();
  if (in_shape.is_tuple() || in_shape.dims() != in.shape().dims()) in_shape = in.shape();
  const size_t es = element_size(in);

  // Physical order of the operand: its dimensions from major to minor.
  std::vector<int64_t> in_m2m = minor_to_major(instruction, in_shape);
  std::vector<int64_t> in_rm = row_major_strides(in_shape.dims());
  std::vector<int64_t> phys_dims, phys_strides;
  for (size_t k = in_m2m.size(); k-- > 0;) {
    phys_dims.push_back(in_shape.dim(in_m2m[k]));
    phys_strides.push_back(in_rm[static_cast<size_t>(in_m2m[k])]);
  }
  std::vector<std::byte> physical(in.bytes().size());
  strided_copy(in.bytes().data(), physical.data(), es, phys_dims, 0, phys_strides);

  Literal out(out_shape);
  std::vector<int64_t> out_m2m = minor_to_major(instruction, out_shape);
  strided_copy(physical.data(), out.bytes().data(), es, out_shape.dims(), 0,
               physical_strides(out_shape, out_m2m));
  return out;
}

Literal eval_iota(const Instruction& instruction) {
  const Shape& shape = instruction.shape();
  if (shape.is_tuple()) op_fail(instruction, "iota result must be an array");
  const int64_t dim = instruction.attrs().iota_dimension;
  if (dim < 0 || dim >= shape.rank())
    op_fail(instruction, "iota_dimension {} is out of range for rank {}", dim, shape.rank());
  Literal out(shape);
  const int64_t stride = row_major_strides(shape.dims())[static_cast<size_t>(dim)];
  const int64_t size = shape.dim(dim);
  for (int64_t i = 0; i < out.num_elements(); ++i) out.set_from_int64(i, (i / stride) % size);
  return out;
}

}  // namespace

Literal eval_shape_op(const Instruction& instruction, Operands operands) {
  switch (instruction.opcode()) {
    case Opcode::kBroadcast:
      return eval_broadcast(instruction, operands);
    case Opcode::kReshape:
      return eval_reshape(instruction, operands);
    case Opcode::kTranspose:
      return eval_transpose(instruction, operands);
    case Opcode::kSlice:
      return eval_slice(instruction, operands);
    case Opcode::kDynamicSlice:
      return eval_dynamic_slice(instruction, operands);
    case Opcode::kDynamicUpdateSlice:
      return eval_dynamic_update_slice(instruction, operands);
    case Opcode::kConcatenate:
      return eval_concatenate(instruction, operands);
    case Opcode::kPad:
      return eval_pad(instruction, operands);
    case Opcode::kReverse:
      return eval_reverse(instruction, operands);
    case Opcode::kCopy:
      expect_operand_count(instruction, operands, 1);
      return *operands[0];
    case Opcode::kBitcast:
      return eval_bitcast(instruction, operands);
    case Opcode::kIota:
      return eval_iota(instruction);
    default:
      op_fail(instruction, "internal: not a shape op");
  }
}

}  // namespace podsim::ir::eval
