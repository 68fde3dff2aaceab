// reduce-precision as integer ops on the float's bits (make_reduce_precision_expander in
// pass.h), in the operand's own width: bit for bit what the evaluator computes.
#include <memory>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

Instruction* expand(ir::Module&, Instruction& rp) {
  internal::Builder b(rp);
  Instruction* x = rp.operand(0);
  const PrimitiveType type = x->shape().type();
  int src_e = 8, src_m = 23;
  PrimitiveType bits_type = PrimitiveType::kU32;
  switch (type) {
    case PrimitiveType::kF16:
      src_e = 5, src_m = 10, bits_type = PrimitiveType::kU16;
      break;
    case PrimitiveType::kBF16:
      src_e = 8, src_m = 7, bits_type = PrimitiveType::kU16;
      break;
    case PrimitiveType::kF64:
      src_e = 11, src_m = 52, bits_type = PrimitiveType::kU64;
      break;
    default:
      break;
  }
  const int64_t e = rp.attrs().exponent_bits, m = rp.attrs().mantissa_bits;
  const std::vector<int64_t>& dims = x->shape().dims();
  const Shape bits_shape(bits_type, dims);
  auto constant = [&](uint64_t value) {
    ir::Literal l(Shape::scalar(bits_type));
    l.set_from_uint64(0, value);
    Instruction* c = b.add(Opcode::kConstant, Shape::scalar(bits_type), {});
    c->attrs().literal = std::move(l);
    return b.broadcast(c, dims);
  };
  auto op = [&](Opcode o, Instruction* u, Instruction* v) { return b.add(o, {u, v}); };
  Instruction* bits = b.add(Opcode::kBitcastConvert, bits_shape, {x});
  if (m < src_m) {
    const int64_t drop = src_m - m;
    const uint64_t last = uint64_t{1} << drop;
    Instruction* lowest_kept =
        op(Opcode::kShiftRightLogical, op(Opcode::kAnd, bits, constant(last)), constant(drop));
    Instruction* rounded =
        op(Opcode::kAdd, bits, op(Opcode::kAdd, lowest_kept, constant((last >> 1) - 1)));
    bits = op(Opcode::kAnd, rounded, constant(~(last - 1)));
  }
  if (e < src_e) {
    const int width = ir::type_bit_width(bits_type);
    const uint64_t sign = uint64_t{1} << (width - 1);
    const uint64_t exponent_mask = ((uint64_t{1} << src_e) - 1) << src_m;
    const uint64_t bias = (uint64_t{1} << (src_e - 1)) - 1,
                   reduced_bias = (uint64_t{1} << (e - 1)) - 1;
    Instruction* exponent = op(Opcode::kAnd, bits, constant(exponent_mask));
    Instruction* signed_zero = op(Opcode::kAnd, bits, constant(sign));
    Instruction* signed_inf = op(Opcode::kOr, signed_zero, constant(exponent_mask));
    Instruction* over =
        b.compare(exponent, constant((bias + reduced_bias) << src_m), ir::ComparisonDirection::kGt);
    Instruction* under =
        b.compare(exponent, constant((bias - reduced_bias) << src_m), ir::ComparisonDirection::kLe);
    bits = b.add(Opcode::kSelect, {over, signed_inf, bits});
    bits = b.add(Opcode::kSelect, {under, signed_zero, bits});
  }
  Instruction* y = b.add(Opcode::kBitcastConvert, x->shape(), {bits});
  if (m == 0) return y;
  // A NaN stays itself where a mantissa bit is kept.
  return b.add(Opcode::kSelect, {b.compare(x, x, ir::ComparisonDirection::kNe), x, y});
}

}  // namespace

std::unique_ptr<Pass> make_reduce_precision_expander() {
  return internal::make_opcode_expander("reduce-precision-expander", {Opcode::kReducePrecision},
                                        expand);
}

}  // namespace podsim::passes
