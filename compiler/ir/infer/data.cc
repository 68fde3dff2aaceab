// Shape inference of sources (parameter, constant, iota) and data movement: broadcast,
// reshape, transpose, slices, concatenate, pad, reverse, bitcast, copy-start and copy-done;
// reduce-precision.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {
namespace {

// Shapes such as broadcast's or reshape's come from the declaration; it must at least
// be a valid array before it is compared with anything.
const Shape& declared_array(const Instruction& inst) {
  validate_shape(inst.shape(), "result");
  expect_array(inst.shape(), "result");
  return inst.shape();
}

// dynamic-slice / dynamic-update-slice start indices: one integer scalar per dimension,
// all of one type.
void check_start_indices(const Instruction& inst, int64_t first, int64_t rank) {
  if (inst.operand_count() - first != rank)
    fail("expects {} start indices (one per dimension of the operand), got {}", rank,
         inst.operand_count() - first);
  for (int64_t i = first; i < inst.operand_count(); ++i) {
    const Shape& s = operand_shape(inst, i);
    if (!s.is_scalar() || !is_integral(s.type()))
      fail("start index (operand {}) must be an integer scalar, got {}", i, str(s));
    if (s.type() != operand_shape(inst, first).type())
      fail("start indices must all have one type, got {} and {}", str(operand_shape(inst, first)),
           str(s));
  }
}

}  // namespace

Shape infer_source(const Instruction& inst) {
  const Shape& declared = inst.shape();
  validate_shape(declared, "result");
  switch (inst.opcode()) {
    case Opcode::kParameter:  // numbering is the verifier's concern
      break;
    case Opcode::kConstant: {
      const auto& literal = inst.attrs().literal;
      if (!literal) fail("has no literal value");
      if (!literal->shape().compatible(declared))
        fail("literal of shape {} does not match the declared shape {}", str(literal->shape()),
             str(declared));
      break;
    }
    default: {  // iota
      expect_array(declared, "result");
      int64_t d = inst.attrs().iota_dimension;
      if (d < 0 || d >= declared.rank())
        fail("iota_dimension {} is out of range for {}", d, str(declared));
      break;
    }
  }
  return without_layout(declared);
}

Shape infer_broadcast(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  const Shape& out = declared_array(inst);
  const auto& dims = inst.attrs().dimensions;
  if (static_cast<int64_t>(dims.size()) != in.rank())
    fail("dimensions {} must have one entry per operand dimension ({})", str(dims), in.rank());
  check_dims(dims, out.rank(), "dimensions");
  for (int64_t i = 0; i < in.rank(); ++i) {
    int64_t o = dims[static_cast<size_t>(i)];
    if (in.dim(i) != out.dim(o))
      fail("operand dimension {} (size {}) maps to result dimension {} of size {}", i, in.dim(i), o,
           out.dim(o));
  }
  return Shape(in.type(), out.dims());
}

Shape infer_reshape(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  const Shape& out = declared_array(inst);
  if (in.num_elements() != out.num_elements())
    fail("cannot reshape {} ({} elements) to {} ({} elements)", str(in), in.num_elements(),
         str(out), out.num_elements());
  return Shape(in.type(), out.dims());
}

Shape infer_transpose(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  const auto& perm = inst.attrs().dimensions;
  if (static_cast<int64_t>(perm.size()) != in.rank())
    fail("dimensions {} is not a permutation of the {} dimensions of {}", str(perm), in.rank(),
         str(in));
  check_dims(perm, in.rank(), "permutation");
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(in.dim(p));
  return Shape(in.type(), std::move(dims));
}

Shape infer_slice(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  const auto& slice = inst.attrs().slice;
  if (static_cast<int64_t>(slice.size()) != in.rank())
    fail("slice has {} dimensions but the operand {} has rank {}", slice.size(), str(in),
         in.rank());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const SliceDim& s = slice[static_cast<size_t>(i)];
    if (s.stride <= 0) fail("slice dimension {} has non-positive stride {}", i, s.stride);
    if (s.start < 0 || s.start > s.limit || s.limit > in.dim(i))
      fail("slice dimension {} [{}:{}] is out of bounds for size {}", i, s.start, s.limit,
           in.dim(i));
    int64_t extent = s.limit - s.start;
    dims.push_back(extent / s.stride + (extent % s.stride != 0 ? 1 : 0));
  }
  return Shape(in.type(), std::move(dims));
}

Shape infer_dynamic_slice(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  check_start_indices(inst, 1, in.rank());
  const auto& sizes = inst.attrs().dynamic_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != in.rank())
    fail("dynamic_slice_sizes {} must have one entry per dimension of {}", str(sizes), str(in));
  for (int64_t i = 0; i < in.rank(); ++i) {
    int64_t s = sizes[static_cast<size_t>(i)];
    if (s < 0 || s > in.dim(i))
      fail("slice size {} of dimension {} is out of range [0, {}]", s, i, in.dim(i));
  }
  return Shape(in.type(), sizes);
}

Shape infer_dynamic_update_slice(const Instruction& inst) {
  if (inst.operand_count() < 2)
    fail("expects an operand and an update, got {} operands", inst.operand_count());
  const Shape& in = operand_shape(inst, 0);
  const Shape& update = operand_shape(inst, 1);
  expect_array(in, "operand");
  expect_array(update, "update");
  if (update.type() != in.type() || update.rank() != in.rank())
    fail("update {} must have the type and rank of the operand {}", str(update), str(in));
  for (int64_t i = 0; i < in.rank(); ++i)
    if (update.dim(i) > in.dim(i))
      fail("update {} is larger than the operand {} in dimension {}", str(update), str(in), i);
  check_start_indices(inst, 2, in.rank());
  return Shape(in.type(), in.dims());
}

Shape infer_concatenate(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  const auto& attr = inst.attrs().dimensions;
  if (attr.size() != 1) fail("dimensions {} must name exactly one dimension", str(attr));
  const Shape& first = operand_shape(inst, 0);
  expect_array(first, "operand 0");
  int64_t d = attr[0];
  if (d < 0 || d >= first.rank()) fail("dimension {} is out of range for {}", d, str(first));
  std::vector<int64_t> dims = first.dims();
  for (int64_t i = 1; i < inst.operand_count(); ++i) {
    const Shape& s = operand_shape(inst, i);
    expect_array(s, fmt::format("operand {}", i));
    bool ok = s.type() == first.type() && s.rank() == first.rank();
    for (int64_t k = 0; ok && k < s.rank(); ++k) ok = k == d || s.dim(k) == first.dim(k);
    if (!ok)
      fail("operand {} {} does not match operand 0 {} outside dimension {}", i, str(s), str(first),
           d);
    dims[static_cast<size_t>(d)] = add_checked(dims[static_cast<size_t>(d)], s.dim(d));
  }
  return make_shape(first.type(), std::move(dims));
}

Shape infer_pad(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  const Shape& value = operand_shape(inst, 1);
  expect_array(in, "operand");
  expect_scalar(value, "padding value");
  if (value.type() != in.type())
    fail("padding value {} must have the operand's type {}", str(value), type_name(in.type()));
  const auto& padding = inst.attrs().padding;
  if (static_cast<int64_t>(padding.size()) != in.rank())
    fail("padding has {} dimensions but the operand {} has rank {}", padding.size(), str(in),
         in.rank());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const PadDim& p = padding[static_cast<size_t>(i)];
    if (p.interior < 0) fail("dimension {} has negative interior padding {}", i, p.interior);
    int64_t d = in.dim(i);
    int64_t interior = d > 0 ? mul_checked(d - 1, p.interior) : 0;
    int64_t size = add_checked(add_checked(add_checked(p.low, p.high), d), interior);
    if (size < 0)
      fail("padding {}_{}_{} makes dimension {} (size {}) negative", p.low, p.high, p.interior, i,
           d);
    dims.push_back(size);
  }
  return make_shape(in.type(), std::move(dims));
}

Shape infer_reverse(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  check_dims(inst.attrs().dimensions, in.rank(), "dimensions");
  return Shape(in.type(), in.dims());
}

Shape infer_bitcast(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  const Shape& out = declared_array(inst);
  if (in.byte_size() != out.byte_size())
    fail("cannot bitcast {} ({} bytes) to {} ({} bytes)", str(in), in.byte_size(), str(out),
         out.byte_size());
  return without_layout(out);
}

Shape infer_copy_start(const Instruction& inst) {
  expect_operand_count(inst, 1);
  const Shape& operand = operand_shape(inst, 0);
  expect_array(operand, "operand");
  return Shape::tuple(
      {without_layout(operand), without_layout(operand), Shape::scalar(PrimitiveType::kU32)});
}

Shape infer_copy_done(const Instruction& inst) {
  expect_operand_count(inst, 1);
  const Shape& start = operand_shape(inst, 0);
  if (!start.is_tuple() || start.tuple_size() != 3 || !start.element(0).is_array() ||
      !start.element(0).compatible(start.element(1)) ||
      !start.element(2).compatible(Shape::scalar(PrimitiveType::kU32)))
    fail("operand {} must be a copy-start's (destination, source, u32[])", str(start));
  return without_layout(start.element(0));
}

Shape infer_reduce_precision(const Instruction& inst) {
  expect_operand_count(inst, 1);
  const Shape& operand = operand_shape(inst, 0);
  expect_array(operand, "operand");
  if (!is_float(operand.type())) fail("operand {} must have a floating-point type", str(operand));
  const int64_t e = inst.attrs().exponent_bits, m = inst.attrs().mantissa_bits;
  if (e < 1 || e > 62 || m < 0 || m > 62)
    fail("exponent_bits={} and mantissa_bits={} must be in [1, 62] and [0, 62]", e, m);
  return without_layout(operand);
}

}  // namespace podsim::ir::infer
