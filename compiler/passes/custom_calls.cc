// Custom calls with a meaning every backend can run (make_custom_call_expander in
// pass.h): the targets a user defined as HLO computations (define_custom_calls), and the
// ones XLA itself emits whose meaning is public; and sharding domains, as copies.
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Module;
using ir::Opcode;

// A computation name for a target: characters HLO names cannot hold become '_'.
std::string name_for(std::string_view target) {
  std::string name(target);
  for (char& ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-'))
      ch = '_';
  return name;
}

struct Definition {
  std::shared_ptr<const Module> module;  // keeps `computation` alive
  const Computation* computation = nullptr;
  std::string source;  // where it was defined, for messages
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Definition> by_name;  // name_for(target) -> definition
  std::string key;                            // the printed definitions, in definition order
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: compiles may run at exit
  return *r;
}

std::string signature(const std::vector<ir::Shape>& parameters, const ir::Shape& result) {
  std::string s = "(";
  for (size_t k = 0; k < parameters.size(); ++k)
    s += (k ? ", " : "") + parameters[k].to_string(false);
  return s + ") -> " + result.to_string(false);
}

// XLA's own targets whose meaning is public, outside SPMD: markers for the partitioner
// and the memory-space annotations are the value itself.
bool identity_target(std::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target == "annotate_device_placement" ||
         target == "MoveToHost" || target == "MoveToDevice";
}

class CustomCallExpander final : public Pass {
 public:
  std::string_view name() const override { return "custom-call-expander"; }

  bool run(Module& module) override {
    std::map<std::string, Definition> definitions;
    {
      Registry& r = registry();
      std::lock_guard lock(r.mutex);
      definitions = r.by_name;
    }
    std::unordered_map<const Computation*, Computation*> copies;  // definition module -> this one
    return internal::expand_instructions(module, [&](Instruction& call) -> Instruction* {
      if (call.opcode() == Opcode::kDomain)  // a sharding domain's boundary
        return internal::Builder(call).add(Opcode::kCopy, call.shape(), {call.operand(0)});
      if (call.opcode() != Opcode::kCustomCall) return nullptr;
      const std::string& target = call.attrs().custom_call_target;
      if (auto it = definitions.find(name_for(target)); it != definitions.end())
        return expand(module, call, it->second, copies);
      if (identity_target(target) && call.operand_count() == 1 &&
          call.operand(0)->shape().compatible(call.shape()))
        return internal::Builder(call).add(Opcode::kCopy, call.shape(), {call.operand(0)});
      if (target == "TopK") return topk(call);
      return nullptr;
    });
  }

 private:
  // XLA's TopK custom call (its TopkRewriter's): (values, s32 positions) of the k largest
  // along the last dimension, or the smallest where its comparator is a less-than.
  static Instruction* topk(Instruction& call) {
    const ir::Shape& s = call.shape();
    if (call.operand_count() != 1 || !s.is_tuple() || s.tuple_size() != 2 ||
        !s.element(0).is_array())
      return nullptr;
    const ir::Shape& x = call.operand(0)->shape();
    std::vector<int64_t> dims = x.dims();
    if (!x.is_array() || dims.empty() || s.element(0).rank() != x.rank() ||
        s.element(0).dims().back() > dims.back())
      return nullptr;
    dims.back() = s.element(0).dims().back();
    if (!s.element(0).compatible(ir::Shape(x.type(), dims)) ||
        !s.element(1).compatible(ir::Shape(ir::PrimitiveType::kS32, dims)))
      return nullptr;
    bool largest = true;
    if (call.called().size() == 1 && call.called(0)->root()->opcode() == Opcode::kCompare) {
      const ir::ComparisonDirection d = call.called(0)->root()->attrs().direction;
      largest = !(d == ir::ComparisonDirection::kLt || d == ir::ComparisonDirection::kLe);
    }
    return internal::Builder(call).add(Opcode::kTopK, {call.operand(0)}, [&](ir::Attributes& a) {
      a.k = dims.back();
      a.largest = largest;
    });
  }

  // The definition's computation `c` (and what it calls) copied into `module` once.
  static Computation* copy_into(Module& module, const Computation& c,
                                std::unordered_map<const Computation*, Computation*>& copies) {
    if (auto it = copies.find(&c); it != copies.end()) return it->second;
    auto copy = std::make_unique<Computation>(module.unique_computation_name(c.name()));
    clone_body(c, *copy, {}, copies, module, nullptr);
    return copies[&c] = module.add_computation(std::move(copy));
  }

  // Clones c's instructions into `into` and returns the root's clone. With `origin` (the
  // call they replace): c's parameters become `arguments`, the clones are named after the
  // call and carry its metadata and position. Without: a whole copy, parameters and root.
  static Instruction* clone_body(const Computation& c, Computation& into,
                                 const std::vector<Instruction*>& arguments,
                                 std::unordered_map<const Computation*, Computation*>& copies,
                                 Module& module, const Instruction* origin) {
    std::unordered_map<const Instruction*, Instruction*> map;
    for (const auto& i : c.instructions()) {
      if (i->opcode() == Opcode::kParameter && origin) {
        map[i.get()] = arguments.at(static_cast<size_t>(i->attrs().parameter_number));
        continue;
      }
      std::vector<Instruction*> operands;
      for (const Instruction* o : i->operands()) operands.push_back(map.at(o));
      const std::string name =
          origin ? into.unique_name(origin->name() + "." + i->name()) : i->name();
      std::unique_ptr<Instruction> clone = i->clone(name, std::move(operands));
      std::vector<Computation*> called;
      for (const Computation* callee : i->called())
        called.push_back(copy_into(module, *callee, copies));
      clone->set_called(std::move(called));
      clone->mutable_control_predecessors().clear();
      for (const Instruction* p : i->control_predecessors())
        clone->add_control_predecessor(map.at(p));
      if (origin) {
        clone->metadata() = origin->metadata();
        if (clone->metadata().op_name.empty()) clone->metadata().op_name = origin->name();
        clone->set_pos(origin->pos());
      }
      map[i.get()] = into.add(std::move(clone));
    }
    Instruction* root = map.at(c.root());
    if (!origin) into.set_root(root);
    return root;
  }

  static Instruction* expand(Module& module, Instruction& call, const Definition& d,
                             std::unordered_map<const Computation*, Computation*>& copies) {
    const Computation& c = *d.computation;
    std::vector<ir::Shape> wanted, given;
    bool elementwise = c.root()->shape().is_scalar() && call.shape().is_array();
    for (const Instruction* p : c.parameters()) wanted.push_back(p->shape());
    for (const Instruction* o : call.operands()) {
      given.push_back(o->shape());
      elementwise =
          elementwise && o->shape().is_array() && o->shape().dims() == call.shape().dims();
    }
    bool exact = wanted.size() == given.size() && c.root()->shape().compatible(call.shape());
    for (size_t k = 0; exact && k < wanted.size(); ++k) exact = wanted[k].compatible(given[k]);
    if (exact) return clone_body(c, *call.parent(), call.operands(), copies, module, &call);
    // Scalar definitions apply elementwise to arrays of one shape, as a map.
    for (size_t k = 0; elementwise && k < wanted.size(); ++k)
      elementwise = wanted[k].is_scalar() && wanted[k].type() == given[k].type();
    elementwise = elementwise && !wanted.empty() && wanted.size() == given.size() &&
                  c.root()->shape().type() == call.shape().type();
    if (!elementwise)
      fail("custom-call {} (line {}) of '{}' is {}, but its definition {} ({}) is {}{}",
           call.name(), call.pos().line, call.attrs().custom_call_target,
           signature(given, call.shape()), c.name(), d.source, signature(wanted, c.root()->shape()),
           c.root()->shape().is_scalar()
               ? " (a definition on scalars also applies elementwise to arrays of one shape)"
               : "");
    Instruction* map = internal::Builder(call).add(Opcode::kMap, call.shape(), call.operands());
    for (int64_t k = 0; k < call.shape().rank(); ++k) map->attrs().dimensions.push_back(k);
    map->add_called(copy_into(module, c, copies));
    return map;
  }
};

}  // namespace

void define_custom_calls(const ir::Module& definitions, std::string_view source) {
  ir::verify_module(definitions, std::string(source));
  // An owned copy: the definitions outlive the caller's module.
  std::shared_ptr<const Module> copy = ir::parse_module(ir::print_module(definitions), source);
  std::unordered_set<const Computation*> callees;
  for (const auto& c : copy->computations())
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called()) callees.insert(callee);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& c : copy->computations())
    if (!callees.contains(c.get()))  // (the others are helpers: reducers, ...)
      r.by_name[c->name()] = Definition{copy, c.get(), std::string(source)};
  r.key += ir::print_module(*copy);
}

void clear_custom_call_definitions() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.by_name.clear();
  r.key.clear();
}

std::string custom_call_definitions_key() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.key;
}

std::unique_ptr<Pass> make_custom_call_expander() { return std::make_unique<CustomCallExpander>(); }

}  // namespace podsim::passes
