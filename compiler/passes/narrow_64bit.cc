// Narrowing of 64-bit element types for targets without 64-bit lanes (the TPU target):
// s64 -> s32, u64 -> u32, f64 -> f32 everywhere, as PyTorch/XLA does on TPUs (its
// XLA_USE_32BIT_LONG, and f64 computed as f32). Integer values (constants and
// arguments) outside the 32-bit range saturate, so that the identities of min / max
// reductions stay identities; computed integers wrap at 32 bits; f64 values round to
// f32. A deliberate change of results, which is why this pass is not in the default
// pipeline and its callers say so.
//
// Unlike the other passes it changes the entry computation's parameter and result
// shapes: a caller converts arguments to the narrowed parameter types and results back
// (narrow_literal / ir::Literal set_* conversions).
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace podsim::passes {
namespace {

using ir::PrimitiveType;

PrimitiveType narrowed(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS64:
      return PrimitiveType::kS32;
    case PrimitiveType::kU64:
      return PrimitiveType::kU32;
    case PrimitiveType::kF64:
      return PrimitiveType::kF32;
    default:
      return t;
  }
}

bool narrow_shape(ir::Shape& shape) {
  if (shape.is_tuple()) {
    bool changed = false;
    for (ir::Shape& element : shape.mutable_elements()) changed |= narrow_shape(element);
    return changed;
  }
  PrimitiveType t = narrowed(shape.type());
  if (t == shape.type()) return false;
  shape.set_type(t);
  return true;
}

bool has_64bit(const ir::Shape& shape) {
  ir::Shape copy = shape;
  return narrow_shape(copy);
}

class Narrow64Bit final : public Pass {
 public:
  std::string_view name() const override { return "narrow-64bit"; }

  bool run(ir::Module& module) override {
    bool changed = false;
    for (const auto& computation : module.computations())
      for (const auto& instruction : computation->instructions()) changed |= narrow(*instruction);
    if (module.entry_parameter_layouts)
      for (ir::Shape& shape : *module.entry_parameter_layouts) changed |= narrow_shape(shape);
    if (module.entry_result_layout) changed |= narrow_shape(*module.entry_result_layout);
    return changed;
  }

 private:
  static bool narrow(ir::Instruction& i) {
    const bool wide = has_64bit(i.shape());
    bool wide_operand = false;
    for (const ir::Instruction* op : i.operands()) wide_operand |= has_64bit(op->shape());
    if (!wide && !wide_operand) return false;
    // Ops whose meaning depends on the width itself cannot be narrowed.
    if (i.opcode() == ir::Opcode::kBitcastConvert || i.opcode() == ir::Opcode::kRngBitGenerator)
      fail("not supported with 64-bit types narrowed to 32 bits: {} ({})",
           ir::opcode_name(i.opcode()), where(i));
    if (i.opcode() == ir::Opcode::kConstant && i.attrs().literal)
      i.attrs().literal = narrow_literal(*i.attrs().literal);
    return narrow_shape(i.mutable_shape()) || wide_operand;
  }

  static std::string where(const ir::Instruction& i) {
    return i.pos().line > 0 ? fmt::format("line {}", i.pos().line)
                            : fmt::format("instruction '{}'", i.name());
  }
};

}  // namespace

ir::Literal narrow_literal(const ir::Literal& literal) {
  if (literal.shape().is_tuple()) {
    std::vector<ir::Literal> elements;
    for (const ir::Literal& e : literal.elements()) elements.push_back(narrow_literal(e));
    return ir::Literal::tuple(std::move(elements));
  }
  ir::Shape shape = literal.shape();
  if (!narrow_shape(shape)) return literal;
  ir::Literal out(shape);
  const int64_t n = literal.num_elements();
  switch (literal.type()) {
    case PrimitiveType::kS64:
      for (int64_t k = 0; k < n; ++k)
        out.set_from_int64(k, std::clamp<int64_t>(literal.get_as_int64(k), INT32_MIN, INT32_MAX));
      break;
    case PrimitiveType::kU64:
      for (int64_t k = 0; k < n; ++k)
        out.set_from_uint64(k, std::min<uint64_t>(literal.get_as_uint64(k), UINT32_MAX));
      break;
    default:
      for (int64_t k = 0; k < n; ++k) out.set_from_double(k, literal.get_as_double(k));
  }
  return out;
}

ir::Literal convert_literal(const ir::Literal& literal, ir::PrimitiveType type) {
  ir::Literal out(ir::Shape(type, literal.shape().dims()));
  const int64_t n = literal.num_elements();
  if (ir::is_float(type) || ir::is_float(literal.type())) {
    for (int64_t k = 0; k < n; ++k) out.set_from_double(k, literal.get_as_double(k));
  } else if (ir::is_unsigned_int(literal.type())) {
    for (int64_t k = 0; k < n; ++k) out.set_from_uint64(k, literal.get_as_uint64(k));
  } else {
    for (int64_t k = 0; k < n; ++k) out.set_from_int64(k, literal.get_as_int64(k));
  }
  return out;
}

ir::Shape narrow_64bit_shape(ir::Shape shape) {
  narrow_shape(shape);
  return shape;
}

std::unique_ptr<Pass> make_narrow_64bit_types() { return std::make_unique<Narrow64Bit>(); }

}  // namespace podsim::passes
