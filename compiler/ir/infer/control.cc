// Shape inference of tuples and control flow: tuple, get-tuple-element, call, fusion,
// while, conditional, and of the ops whose shape is declared: custom-call,
// rng-bit-generator.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {

Shape infer_tuple(const Instruction& inst) {
  std::vector<Shape> elements;
  for (int64_t i = 0; i < inst.operand_count(); ++i)
    elements.push_back(without_layout(operand_shape(inst, i)));
  return Shape::tuple(std::move(elements));
}

Shape infer_get_tuple_element(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  if (!in.is_tuple()) fail("operand {} is not a tuple", str(in));
  int64_t index = inst.attrs().tuple_index;
  if (index < 0 || index >= in.tuple_size())
    fail("index {} is out of range for a tuple of {} elements", index, in.tuple_size());
  return without_layout(in.element(index));
}

Shape infer_call(const Instruction& inst) {
  expect_called_count(inst, 1);
  const Computation& c = called_computation(inst, 0);
  std::vector<Shape> params = parameter_shapes(c);
  if (static_cast<int64_t>(params.size()) != inst.operand_count())
    fail("passes {} arguments to computation {}, which takes {}", inst.operand_count(), c.name(),
         params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Shape& arg = operand_shape(inst, static_cast<int64_t>(i));
    if (!arg.compatible(params[i]))
      fail("argument {} {} does not match parameter {} {} of computation {}", i, str(arg), i,
           str(params[i]), c.name());
  }
  return without_layout(root_shape(c));
}

Shape infer_generic_async(const Instruction& inst) {
  if (inst.opcode() == Opcode::kAsyncStart) {
    Shape result = infer_call(inst);
    const Computation& c = called_computation(inst, 0);
    if (c.instructions().size() != static_cast<size_t>(inst.operand_count()) + 1)
      fail("computation {} must be its parameters and the instruction it runs asynchronously",
           c.name());
    std::vector<Shape> operands;
    for (int64_t i = 0; i < inst.operand_count(); ++i) operands.push_back(without_layout(operand_shape(inst, i)));
    std::vector<Shape> elements{Shape::tuple(std::move(operands)), std::move(result)};
    const Shape& d = inst.shape();  // context words, as declared
    for (int64_t k = 2; d.is_tuple() && k < d.tuple_size(); ++k) elements.push_back(without_layout(d.element(k)));
    return Shape::tuple(std::move(elements));
  }
  const Instruction* start = inst.operand(0);
  if (!start || (start->opcode() != Opcode::kAsyncStart && start->opcode() != Opcode::kAsyncUpdate))
    fail("its operand must be an async-start or async-update, got {}",
         start ? opcode_name(start->opcode()) : "nothing");
  expect_called_count(inst, 1);
  if (start->called().size() != 1 || start->called()[0] != inst.called()[0])
    fail("calls {}, but its start runs another computation", called_computation(inst, 0).name());
  const Shape& s = start->shape();
  if (!s.is_tuple() || s.tuple_size() < 2) fail("its operand's shape {} is not an async start's", str(s));
  return without_layout(inst.opcode() == Opcode::kAsyncUpdate ? s : s.element(1));
}

Shape infer_while(const Instruction& inst) {
  Shape state = without_layout(operand_shape(inst, 0));
  expect_called_count(inst, 2);
  Shape pred = Shape::scalar(PrimitiveType::kPred);
  check_signature(called_computation(inst, 0), {state}, &pred, "condition");
  check_signature(called_computation(inst, 1), {state}, &state, "body");
  return state;
}

Shape infer_conditional(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects a branch selector operand");
  const Shape& selector = operand_shape(inst, 0);
  auto branches = static_cast<int64_t>(inst.called().size());
  if (selector.compatible(Shape::scalar(PrimitiveType::kPred))) {
    if (branches != 2) fail("a pred selector needs 2 branch computations, got {}", branches);
  } else if (selector.compatible(Shape::scalar(PrimitiveType::kS32))) {
    if (branches < 1) fail("needs at least one branch computation");
  } else {
    fail("branch selector {} must be pred[] or s32[]", str(selector));
  }
  if (inst.operand_count() != branches + 1)
    fail("has {} branches but {} branch operands", branches, inst.operand_count() - 1);
  Shape result;
  for (int64_t b = 0; b < branches; ++b) {
    const Computation& c = called_computation(inst, b);
    check_signature(c, {without_layout(operand_shape(inst, b + 1))}, nullptr,
                    fmt::format("branch {}", b));
    const Shape& r = root_shape(c);
    if (b == 0)
      result = without_layout(r);
    else if (!r.compatible(result))
      fail("branch {} ({}) returns {} but branch 0 returns {}", b, c.name(), str(r), str(result));
  }
  return result;
}

Shape infer_custom_call(const Instruction& inst) {
  validate_shape(inst.shape(), "result");
  return without_layout(inst.shape());
}

Shape infer_rng_bit_generator(const Instruction& inst) {
  const Shape& state = operand_shape(inst, 0);
  if (!state.is_array() || state.type() != PrimitiveType::kU64 || state.rank() < 1)
    fail("state {} must be a u64 array", str(state));
  const Shape& declared = inst.shape();
  validate_shape(declared, "result");
  if (!declared.is_tuple() || declared.tuple_size() != 2 || !declared.element(1).is_array())
    fail("result {} must be a tuple (new state, output array)", str(declared));
  PrimitiveType out = declared.element(1).type();
  if (!is_integral(out) && !is_float(out))
    fail("output type {} must be an integer or floating-point type", type_name(out));
  return Shape::tuple({without_layout(state), without_layout(declared.element(1))});
}

}  // namespace podsim::ir::infer
