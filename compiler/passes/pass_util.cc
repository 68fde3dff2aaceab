#include "compiler/passes/pass_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "common/error.h"
#include "compiler/ir/shape_inference.h"

namespace podsim::passes::internal {

using ir::Computation;
using ir::Instruction;
using ir::Literal;
using ir::Module;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

std::unordered_set<const Computation*> fusion_computations(const Module& module) {
  std::unordered_set<const Computation*> fused;
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kFusion)
        for (const Computation* callee : i->called()) fused.insert(callee);
  return fused;
}

std::vector<Computation*> non_fusion_computations(const Module& module) {
  auto fused = fusion_computations(module);
  std::vector<Computation*> out;
  for (const auto& c : module.computations())
    if (!fused.count(c.get())) out.push_back(c.get());
  return out;
}

std::vector<const Computation*> callees_first(const Module& module) {
  std::vector<const Computation*> order;
  std::unordered_map<const Computation*, uint8_t> state;  // 1 on the stack, 2 done
  for (const auto& start : module.computations()) {
    if (state[start.get()]) continue;
    // (computation, next callee to visit) pairs; callees listed flat per computation.
    std::vector<std::pair<const Computation*, std::vector<const Computation*>>> stack;
    auto push = [&](const Computation* c) {
      std::vector<const Computation*> callees;
      for (const auto& i : c->instructions())
        for (const Computation* callee : i->called())
          if (callee) callees.push_back(callee);
      state[c] = 1;
      stack.emplace_back(c, std::move(callees));
    };
    push(start.get());
    while (!stack.empty()) {
      auto& [c, callees] = stack.back();
      if (callees.empty()) {
        state[c] = 2;
        order.push_back(c);
        stack.pop_back();
        continue;
      }
      const Computation* next = callees.back();
      callees.pop_back();
      if (!state[next]) push(next);  // invalidates c and callees
    }
  }
  return order;
}

bool remove_unreachable_computations(ir::Module& module) {
  if (!module.entry()) return false;
  std::unordered_set<const ir::Computation*> reachable = {module.entry()};
  std::vector<const ir::Computation*> work = {module.entry()};
  while (!work.empty()) {
    const ir::Computation* c = work.back();
    work.pop_back();
    for (const auto& i : c->instructions())
      for (const ir::Computation* callee : i->called())
        if (callee && reachable.insert(callee).second) work.push_back(callee);
  }
  if (reachable.size() == module.computations().size()) return false;
  module.remove_computations_if([&](const ir::Computation* c) { return !reachable.count(c); });
  return true;
}

namespace {

bool has_own_side_effect(const Instruction& i) {
  if (i.opcode() == Opcode::kCustomCall) return i.attrs().custom_call_has_side_effect;
  return ir::has_side_effect(i.opcode());
}

}  // namespace

SideEffects::SideEffects(const Module& module) {
  for (const Computation* c : callees_first(module)) {
    for (const auto& i : c->instructions()) {
      bool effect = has_own_side_effect(*i);
      for (const Computation* callee : i->called()) effect = effect || effectful_.count(callee);
      if (effect) {
        effectful_.insert(c);
        break;
      }
    }
  }
}

bool SideEffects::has(const Instruction& instruction) const {
  if (has_own_side_effect(instruction)) return true;
  for (const Computation* callee : instruction.called())
    if (effectful_.count(callee)) return true;
  return false;
}

std::unordered_set<const Instruction*> control_linked(const Computation& computation) {
  std::unordered_set<const Instruction*> linked;
  for (const auto& i : computation.instructions()) {
    if (i->control_predecessors().empty()) continue;
    linked.insert(i.get());
    for (const Instruction* p : i->control_predecessors()) linked.insert(p);
  }
  return linked;
}

Instruction* Replacements::resolve(Instruction* instruction) const {
  // Chains are short (a replacement is usually never replaced itself); the bound only
  // guards against a cycle, which no pass records.
  for (size_t steps = 0; steps <= map_.size(); ++steps) {
    auto it = map_.find(instruction);
    if (it == map_.end()) return instruction;
    instruction = it->second;
  }
  fail("internal: cyclic instruction replacement at '{}'", instruction->name());
}

void Replacements::resolve_operands(Instruction& instruction) const {
  if (map_.empty()) return;
  for (int64_t k = 0; k < instruction.operand_count(); ++k) {
    Instruction* r = resolve(instruction.operand(k));
    if (r != instruction.operand(k)) instruction.set_operand(k, r);
  }
}

void Replacements::apply(Computation& computation) const {
  if (map_.empty()) return;
  for (const auto& i : computation.instructions()) {
    resolve_operands(*i);
    for (Instruction*& p : i->mutable_control_predecessors()) p = resolve(p);
  }
  computation.set_root(resolve(computation.root()));
}

bool remove_dead_instructions(Computation& computation, const SideEffects& side_effects) {
  std::unordered_set<const Instruction*> live;
  std::vector<const Instruction*> work;
  auto mark = [&](const Instruction* i) {
    if (i && live.insert(i).second) work.push_back(i);
  };
  mark(computation.root());
  for (const auto& i : computation.instructions())
    if (i->opcode() == Opcode::kParameter || side_effects.has(*i)) mark(i.get());
  while (!work.empty()) {
    const Instruction* i = work.back();
    work.pop_back();
    for (const Instruction* op : i->operands()) mark(op);
  }
  if (live.size() == computation.instructions().size()) return false;
  computation.remove_if([&](const Instruction* i) { return !live.count(i); });
  return true;
}

std::optional<Literal> uniform_value(const Instruction& instruction) {
  const Instruction* source = &instruction;
  // A broadcast repeats its operand's elements: uniform when they are.
  if (source->opcode() == Opcode::kBroadcast && source->operand_count() == 1) {
    if (source->shape().is_tuple() || source->shape().num_elements() == 0) return std::nullopt;
    source = source->operand(0);
  }
  if (source->opcode() != Opcode::kConstant || !source->attrs().literal) return std::nullopt;
  const Literal& literal = *source->attrs().literal;
  if (literal.shape().is_tuple() || literal.num_elements() == 0) return std::nullopt;
  auto size = static_cast<size_t>(ir::type_byte_size(literal.type()));
  auto bytes = literal.bytes();
  for (size_t offset = size; offset < bytes.size(); offset += size)
    if (std::memcmp(bytes.data(), bytes.data() + offset, size) != 0) return std::nullopt;
  Literal scalar(ir::Shape::scalar(literal.type()));
  std::memcpy(scalar.bytes().data(), bytes.data(), size);
  return scalar;
}

bool is_zero(const Literal& scalar) {
  if (ir::is_float(scalar.type())) return scalar.get_as_double(0) == 0.0;
  return scalar.get_as_uint64(0) == 0;
}

bool is_positive_zero(const Literal& scalar) {
  if (!ir::is_float(scalar.type())) return false;
  double v = scalar.get_as_double(0);
  return v == 0.0 && !std::signbit(v);
}

bool is_negative_zero(const Literal& scalar) {
  if (!ir::is_float(scalar.type())) return false;
  double v = scalar.get_as_double(0);
  return v == 0.0 && std::signbit(v);
}

bool is_one(const Literal& scalar) {
  if (ir::is_float(scalar.type())) return scalar.get_as_double(0) == 1.0;
  return scalar.get_as_uint64(0) == 1;
}

std::optional<Opcode> simple_reducer(const Computation& computation) {
  if (computation.parameter_count() != 2 || computation.instruction_count() != 3)
    return std::nullopt;
  const Instruction* root = computation.root();
  const Instruction* p0 = computation.parameter(0);
  const Instruction* p1 = computation.parameter(1);
  if (!root || !p0 || !p1 || root->operand_count() != 2 || root->operand(0) != p0 ||
      root->operand(1) != p1)
    return std::nullopt;
  const ir::Shape& s = root->shape();
  if (!s.is_scalar() || !p0->shape().compatible(s) || !p1->shape().compatible(s))
    return std::nullopt;
  switch (root->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      if (s.type() == ir::PrimitiveType::kPred) return std::nullopt;
      return root->opcode();
    case Opcode::kAnd:
    case Opcode::kOr:
      if (ir::is_float(s.type())) return std::nullopt;
      return root->opcode();
    default:
      return std::nullopt;
  }
}

bool is_reducer_identity(const Instruction& init, const ir::Computation& reducer) {
  const auto op = simple_reducer(reducer);
  const auto v = uniform_value(init);
  if (!op || !v || !v->shape().is_scalar()) return false;
  const ir::PrimitiveType t = v->type();
  const int bits = 8 * static_cast<int>(ir::type_byte_size(t));
  const bool pred = t == ir::PrimitiveType::kPred, sign = ir::is_signed_int(t), real = ir::is_float(t);
  const int64_t smin = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  const int64_t smax = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  const uint64_t umax = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const double inf = std::numeric_limits<double>::infinity();
  switch (*op) {
    case Opcode::kAdd:
    case Opcode::kOr:
    case Opcode::kXor:
      return real ? is_zero(*v) : v->get_as_uint64(0) == 0;
    case Opcode::kMultiply:
      return is_one(*v);
    case Opcode::kAnd:
      return pred ? v->get_as_uint64(0) == 1 : v->get_as_uint64(0) == umax;
    case Opcode::kMaximum:
      return real ? v->get_as_double(0) == -inf : sign ? v->get_as_int64(0) == smin : v->get_as_uint64(0) == 0;
    case Opcode::kMinimum:
      return real   ? v->get_as_double(0) == inf
             : pred ? v->get_as_uint64(0) == 1
             : sign ? v->get_as_int64(0) == smax
                    : v->get_as_uint64(0) == umax;
    default:
      return false;
  }
}

Instruction* Builder::make(Opcode op, Shape shape, std::vector<Instruction*> operands) {
  auto i = std::make_unique<Instruction>(c_.unique_name(origin_.name()), op, std::move(shape));
  i->set_operands(std::move(operands));
  i->metadata() = origin_.metadata();
  if (i->metadata().op_name.empty()) i->metadata().op_name = origin_.name();
  return c_.add(std::move(i));
}

Instruction* Builder::add(Opcode op, std::vector<Instruction*> operands,
                          const std::function<void(ir::Attributes&)>& set) {
  // (A tuple placeholder: a dot's or convolution's inference takes an array's type as
  // the declared accumulation type.)
  Instruction* i = make(op, Shape::tuple({}), std::move(operands));
  if (set) set(i->attrs());
  i->mutable_shape() = ir::infer_shape(*i);
  return i;
}

Instruction* Builder::add(Opcode op, Shape shape, std::vector<Instruction*> operands) {
  return make(op, std::move(shape), std::move(operands));
}

Instruction* Builder::scalar(PrimitiveType type, double value) {
  ir::Literal l(Shape::scalar(type));
  l.set_from_double(0, value);
  Instruction* i = make(Opcode::kConstant, l.shape(), {});
  i->attrs().literal = std::move(l);
  return i;
}

Instruction* Builder::pred(bool value) { return scalar(PrimitiveType::kPred, value ? 1 : 0); }

Instruction* Builder::broadcast(Instruction* scalar, const std::vector<int64_t>& dims) {
  return broadcast_in(scalar, Shape(scalar->shape().type(), dims), {});
}

Instruction* Builder::broadcast_in(Instruction* x, const Shape& shape, std::vector<int64_t> dims) {
  Instruction* b = make(Opcode::kBroadcast, Shape(x->shape().type(), shape.dims()), {x});
  b->attrs().dimensions = std::move(dims);
  return b;
}

Instruction* Builder::reshape(Instruction* x, const std::vector<int64_t>& dims) {
  if (x->shape().dims() == dims) return x;
  return make(Opcode::kReshape, Shape(x->shape().type(), dims), {x});
}

Instruction* Builder::convert(Instruction* x, PrimitiveType type) {
  if (x->shape().type() == type) return x;
  return make(Opcode::kConvert, Shape(type, x->shape().dims()), {x});
}

Instruction* Builder::transpose(Instruction* x, std::vector<int64_t> permutation) {
  bool identity = true;
  for (size_t d = 0; d < permutation.size(); ++d) identity = identity && permutation[d] == static_cast<int64_t>(d);
  if (identity) return x;
  return add(Opcode::kTranspose, {x}, [&](ir::Attributes& a) { a.dimensions = std::move(permutation); });
}

Instruction* Builder::pad(Instruction* x, Instruction* value, std::vector<ir::PadDim> padding) {
  if (std::all_of(padding.begin(), padding.end(), [](const ir::PadDim& p) { return p == ir::PadDim{}; })) return x;
  return add(Opcode::kPad, {x, value}, [&](ir::Attributes& a) { a.padding = std::move(padding); });
}

Instruction* Builder::concatenate(std::vector<Instruction*> xs, int64_t dim) {
  if (xs.size() == 1) return xs[0];
  return add(Opcode::kConcatenate, std::move(xs), [&](ir::Attributes& a) { a.dimensions = {dim}; });
}

Instruction* Builder::slice(Instruction* x, std::vector<ir::SliceDim> dims) {
  return add(Opcode::kSlice, {x}, [&](ir::Attributes& a) { a.slice = std::move(dims); });
}

Instruction* Builder::compare(Instruction* a, Instruction* b, ir::ComparisonDirection direction) {
  return add(Opcode::kCompare, {a, b}, [&](ir::Attributes& at) { at.direction = direction; });
}

Instruction* Builder::inline_elementwise(const ir::Computation& computation, const std::vector<Instruction*>& args,
                                         const std::vector<int64_t>& dims) {
  if (!elementwise_body(computation)) return nullptr;
  std::unordered_map<const Instruction*, Instruction*> value;
  for (const auto& owned : computation.instructions()) {
    const Instruction& i = *owned;
    if (i.opcode() == Opcode::kParameter) {
      value[&i] = args.at(static_cast<size_t>(i.attrs().parameter_number));
    } else if (i.opcode() == Opcode::kConstant) {
      Instruction* c = make(Opcode::kConstant, i.shape(), {});
      c->attrs().literal = *i.attrs().literal;
      value[&i] = broadcast(c, dims);
    } else {
      std::vector<Instruction*> operands;
      for (const Instruction* o : i.operands()) operands.push_back(value.at(o));
      value[&i] = make(i.opcode(), Shape(i.shape().type(), dims), std::move(operands));
      value[&i]->attrs() = i.attrs();
    }
  }
  return value.at(computation.root());
}

bool expand_instructions(ir::Module& module, const std::function<Instruction*(Instruction&)>& expand) {
  bool changed = false;
  for (Computation* c : non_fusion_computations(module)) {
    Replacements replacements;
    std::vector<Instruction*> candidates;  // (expand adds instructions to c)
    for (const auto& i : c->instructions())
      if (i->control_predecessors().empty()) candidates.push_back(i.get());
    for (Instruction* i : candidates) {
      Instruction* expanded = expand(*i);
      if (!expanded) continue;
      if (i->shape().has_layout()) expanded->mutable_shape().set_layout(i->shape().layout());
      replacements.add(i, expanded);
    }
    if (replacements.empty()) continue;
    replacements.apply(*c);
    c->sort_topologically();
    remove_dead_instructions(*c, SideEffects(module));
    changed = true;
  }
  return changed;
}

Computation* add_scalar_adder(Module& module, PrimitiveType type, std::string_view prefix) {
  auto c = std::make_unique<Computation>(module.unique_computation_name(prefix));
  const Shape s = Shape::scalar(type);
  std::vector<Instruction*> params;
  for (int64_t k = 0; k < 2; ++k) {
    auto p = std::make_unique<Instruction>(k ? "b" : "a", Opcode::kParameter, s);
    p->attrs().parameter_number = k;
    params.push_back(c->add(std::move(p)));
  }
  auto sum = std::make_unique<Instruction>("sum", type == PrimitiveType::kPred ? Opcode::kOr : Opcode::kAdd, s);
  sum->set_operands(params);
  c->set_root(c->add(std::move(sum)));
  return module.add_computation(std::move(c));
}

bool elementwise_body(const ir::Computation& computation) {
  for (const auto& i : computation.instructions()) {
    if (!i->shape().is_array() || !i->called().empty()) return false;
    if (!(i->opcode() == Opcode::kParameter || (i->opcode() == Opcode::kConstant && i->shape().is_scalar()) ||
          ir::is_elementwise(i->opcode())))
      return false;
  }
  return true;
}

namespace {

class OpcodeExpander final : public Pass {
 public:
  OpcodeExpander(std::string_view name, std::vector<Opcode> opcodes,
                 std::function<Instruction*(Module&, Instruction&)> expand)
      : name_(name), opcodes_(std::move(opcodes)), expand_(std::move(expand)) {}
  std::string_view name() const override { return name_; }
  bool run(Module& module) override {
    return expand_instructions(module, [&](Instruction& i) -> Instruction* {
      if (std::find(opcodes_.begin(), opcodes_.end(), i.opcode()) == opcodes_.end()) return nullptr;
      return expand_(module, i);
    });
  }

 private:
  std::string name_;
  std::vector<Opcode> opcodes_;
  std::function<Instruction*(Module&, Instruction&)> expand_;
};

}  // namespace

std::unique_ptr<Pass> make_opcode_expander(
    std::string_view name, std::vector<Opcode> opcodes,
    std::function<Instruction*(Module&, Instruction&)> expand) {
  return std::make_unique<OpcodeExpander>(name, std::move(opcodes), std::move(expand));
}

}  // namespace podsim::passes::internal
