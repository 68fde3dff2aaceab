// Instruction fusion (XLA's loop and input fusion): groups of cheap per-element ops
// become one `fusion` instruction whose fused computation a backend runs as one pass
// over memory, without materializing the intermediate arrays.
//
// What a backend may rely on for the fusions this pass makes:
// - A fusion's kind is kLoop or kInput; called(0) is a computation made for it alone;
//   operand k of the fusion is parameter k of the fused computation; all operands are
//   arrays; the fused computation's root is an array (no tuple, no multi-output).
// - kLoop: every instruction but the parameters is one of
//     * an elementwise op (ir::is_elementwise) all of whose operands have the result's
//       dimensions: clamp / select with scalar bounds or predicate are not fused, and
//       bitcast-convert only between types of one width;
//     * a scalar constant (array constants stay outside, as fusion operands);
//     * iota, broadcast, reshape, transpose, slice, reverse, concatenate, pad.
//   A broadcast's operand is always a parameter or a scalar constant, so elements a
//   broadcast repeats are never recomputed. The root is neither a parameter nor a
//   constant.
// - kInput: the root is a reduce with one input and one init value whose to_apply is
//   a computation of exactly three instructions, `ROOT r = op(p0, p1)` on two scalar
//   parameters of the input's element type, op one of add, multiply, maximum, minimum
//   (not on pred) or and, or (not on floats); it is the original reduce's to_apply,
//   shared, not copied. The init value is a parameter or a scalar constant. Everything
//   else in the computation is as in kLoop (no second reduce).
// - Fused computations are never fused again; fusions already in the input module are
//   left alone (they may hold anything the IR allows).
// Fusion happens in the entry and in computations called by while, conditional and
// call; never in computations used as to_apply / comparators / fusion bodies /
// custom-call callees. Never fused: dot, convolution, gather, scatter, sort,
// control flow, collectives, custom-calls, rng, dynamic slicing, copy, bitcast.
//
// Grouping walks each computation from its end: an instruction not yet in a group roots
// a new one, which then takes in producers whose users are all already in the group
// (each instruction is computed once), up to FusionOptions::max_fused_instructions.
// Cheap producers (scalar constants, iota, broadcasts, and convert / bitcast-convert /
// negate / abs / not / sign of a parameter) are duplicated into every group that reads
// them instead. A group becomes
// a fusion when it holds at least two instructions other than constants.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Computation;
using ir::FusionKind;
using ir::Instruction;
using ir::Module;
using ir::Opcode;

bool is_scalar_constant(const Instruction& i) {
  return i.opcode() == Opcode::kConstant && i.shape().is_scalar();
}

// Ops a loop fusion computes per output element by index arithmetic.
bool loop_fusible(const Instruction& i) {
  if (!i.shape().is_array()) return false;
  if (ir::is_elementwise(i.opcode())) {
    for (const Instruction* op : i.operands())
      if (!op->shape().is_array() || op->shape().dims() != i.shape().dims()) return false;
    return true;
  }
  switch (i.opcode()) {
    case Opcode::kConstant:
      return i.shape().is_scalar();
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReverse:
    case Opcode::kConcatenate:
    case Opcode::kPad:
      return true;
    default:
      return false;
  }
}

bool input_fusion_root(const Instruction& i) {
  if (i.opcode() != Opcode::kReduce || i.operand_count() != 2 || i.called().size() != 1)
    return false;
  const Instruction& input = *i.operand(0);
  const Instruction& init = *i.operand(1);
  return i.shape().is_array() && input.shape().is_array() && init.shape().is_scalar() &&
         internal::simple_reducer(*i.called(0)) &&
         i.called(0)->root()->shape().type() == input.shape().type();
}

// Cheap enough to recompute in every group that reads it.
bool duplicable(const Instruction& i) {
  if (!loop_fusible(i)) return false;
  switch (i.opcode()) {
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kBroadcast:
      return true;
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kNegate:
    case Opcode::kAbs:
    case Opcode::kNot:
    case Opcode::kSign:
      return i.operand(0)->opcode() == Opcode::kParameter;
    default:
      return false;  // exp, log, tanh, ... are worth computing once
  }
}

// Whether operand k of member m may be computed inside the group. A broadcast repeats
// its operand's elements (and a reduce's init is read once per output), so only
// scalar constants go in there; anything else is read from a fusion operand.
bool may_fuse_operand(const Instruction& m, int64_t k) {
  bool restricted = m.opcode() == Opcode::kBroadcast || (m.opcode() == Opcode::kReduce && k == 1);
  return !restricted || is_scalar_constant(*m.operand(k));
}

struct Group {
  Instruction* root = nullptr;
  FusionKind kind = FusionKind::kLoop;
  // Members, and whether each is exclusive (all its users are exclusive members, so
  // the original dies) or duplicated (the original stays for users outside).
  std::unordered_map<const Instruction*, bool> exclusive;
  std::vector<Instruction*> members;
};

class ComputationFuser {
 public:
  ComputationFuser(Module& module, Computation& computation, FusionOptions options,
                   std::unordered_set<std::string>& computation_names, int64_t& name_counter)
      : module_(module),
        c_(computation),
        options_(options),
        computation_names_(computation_names),
        name_counter_(name_counter) {}

  bool run(const internal::SideEffects& side_effects) {
    linked_ = internal::control_linked(c_);
    std::vector<Instruction*> order;
    for (const auto& i : c_.instructions()) {
      position_[i.get()] = order.size();
      order.push_back(i.get());
    }
    for (const auto& [instruction, users] : c_.users())
      user_count_[instruction] = static_cast<int64_t>(users.size());
    ++user_count_[c_.root()];  // the computation's result is a use outside any group

    for (size_t k = order.size(); k-- > 0;) {
      Instruction* i = order[k];
      if (taken_.count(i) || linked_.count(i)) continue;
      FusionKind kind;
      if (input_fusion_root(*i))
        kind = FusionKind::kInput;
      else if (loop_fusible(*i) && i->opcode() != Opcode::kConstant)
        kind = FusionKind::kLoop;
      else
        continue;
      Group group = grow(i, kind);
      if (worth_fusing(group)) materialize(group);
    }
    if (replacements_.empty()) return false;
    replacements_.apply(c_);
    c_.sort_topologically();  // fusions were appended at the end
    internal::remove_dead_instructions(c_, side_effects);
    return true;
  }

 private:
  bool joinable(const Instruction& p) const {
    return loop_fusible(p) && !taken_.count(&p) && !linked_.count(&p);
  }

  bool full(const Group& g) const {
    return static_cast<int64_t>(g.members.size()) >= options_.max_fused_instructions;
  }

  Group grow(Instruction* root, FusionKind kind) {
    Group g;
    g.root = root;
    g.kind = kind;
    g.exclusive[root] = true;
    g.members.push_back(root);
    std::unordered_map<const Instruction*, int64_t> users_inside;
    std::vector<Instruction*> work = {root};  // exclusive members whose operands to count
    while (!work.empty()) {
      Instruction* m = work.back();
      work.pop_back();
      std::unordered_set<const Instruction*> counted;  // an operand used twice is one use
      for (int64_t k = 0; k < m->operand_count(); ++k) {
        Instruction* p = m->operand(k);
        if (!may_fuse_operand(*m, k) || !joinable(*p) || !counted.insert(p).second) continue;
        bool all_inside = ++users_inside[p] == user_count_[p];
        auto it = g.exclusive.find(p);
        if (it != g.exclusive.end()) {
          if (all_inside && !it->second) {
            it->second = true;
            work.push_back(p);
          }
          continue;
        }
        if (full(g)) continue;
        if (all_inside) {
          g.exclusive[p] = true;
          g.members.push_back(p);
          work.push_back(p);
        } else if (duplicable(*p)) {
          add_duplicate(g, p);
        }
      }
    }
    return g;
  }

  // A duplicated member's operands stay outside (the original still needs them),
  // except scalar constants, which are copied in too.
  void add_duplicate(Group& g, Instruction* p) {
    g.exclusive[p] = false;
    g.members.push_back(p);
    for (Instruction* q : p->operands())
      if (is_scalar_constant(*q) && !g.exclusive.count(q) && !full(g) && !linked_.count(q)) {
        g.exclusive[q] = false;
        g.members.push_back(q);
      }
  }

  static bool worth_fusing(const Group& g) {
    int64_t computing = 0;
    for (const Instruction* m : g.members) computing += m->opcode() != Opcode::kConstant;
    return computing >= 2;
  }

  std::string fresh_computation_name() {
    while (true) {
      std::string name = "fused_computation." + std::to_string(name_counter_++);
      if (computation_names_.insert(name).second) return name;
    }
  }

  void materialize(Group& g) {
    std::sort(g.members.begin(), g.members.end(), [&](const Instruction* a, const Instruction* b) {
      return position_.at(a) < position_.at(b);
    });
    auto inside = [&](const Instruction& m, int64_t k) {
      return may_fuse_operand(m, k) && g.exclusive.count(m.operand(k));
    };
    std::vector<Instruction*> inputs;
    std::unordered_map<const Instruction*, int64_t> input_number;
    std::unordered_set<std::string> names;
    for (const Instruction* m : g.members) {
      names.insert(m->name());
      for (int64_t k = 0; k < m->operand_count(); ++k)
        if (!inside(*m, k) && input_number.emplace(m->operand(k), inputs.size()).second)
          inputs.push_back(m->operand(k));
    }

    auto fused = std::make_unique<Computation>(fresh_computation_name());
    std::vector<Instruction*> params;
    for (size_t n = 0; n < inputs.size(); ++n) {
      std::string name = "param_" + std::to_string(n);
      while (names.count(name)) name += "_";
      auto p = std::make_unique<Instruction>(name, Opcode::kParameter, inputs[n]->shape());
      p->attrs().parameter_number = static_cast<int64_t>(n);
      params.push_back(fused->add(std::move(p)));
    }
    std::unordered_map<const Instruction*, Instruction*> clone_of;
    for (const Instruction* m : g.members) {
      std::vector<Instruction*> operands;
      for (int64_t k = 0; k < m->operand_count(); ++k)
        operands.push_back(inside(*m, k)
                               ? clone_of.at(m->operand(k))
                               : params[static_cast<size_t>(input_number.at(m->operand(k)))]);
      clone_of[m] = fused->add(m->clone(m->name(), std::move(operands)));
    }
    fused->set_root(clone_of.at(g.root));
    Computation* body = module_.add_computation(std::move(fused));

    auto fusion =
        std::make_unique<Instruction>(c_.unique_name("fusion"), Opcode::kFusion, g.root->shape());
    fusion->set_operands(inputs);
    fusion->add_called(body);
    fusion->attrs().fusion_kind = g.kind;
    fusion->metadata() = g.root->metadata();
    fusion->sharding() = g.root->sharding();
    replacements_.add(g.root, c_.add(std::move(fusion)));
    for (const auto& [m, exclusive] : g.exclusive)
      if (exclusive) taken_.insert(m);
  }

  Module& module_;
  Computation& c_;
  FusionOptions options_;
  std::unordered_set<std::string>& computation_names_;
  int64_t& name_counter_;
  std::unordered_set<const Instruction*> linked_;
  std::unordered_map<const Instruction*, size_t> position_;
  std::unordered_map<const Instruction*, int64_t> user_count_;
  std::unordered_set<const Instruction*> taken_;
  internal::Replacements replacements_;
};

// Computations that only control flow calls (or nothing): the entry, while bodies and
// conditions, conditional branches, call targets; not what a reducer, comparator or
// fusion body calls, however indirectly.
std::vector<Computation*> fusible_computations(const Module& module) {
  std::unordered_set<const Computation*> excluded;
  std::vector<const Computation*> work;
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions()) {
      Opcode op = i->opcode();
      if (op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall) continue;
      for (const Computation* callee : i->called())
        if (callee && excluded.insert(callee).second) work.push_back(callee);
    }
  while (!work.empty()) {
    const Computation* c = work.back();
    work.pop_back();
    for (const auto& i : c->instructions())
      for (const Computation* callee : i->called())
        if (callee && excluded.insert(callee).second) work.push_back(callee);
  }
  std::vector<Computation*> out;
  for (const auto& c : module.computations())
    if (!excluded.count(c.get())) out.push_back(c.get());
  return out;
}

class Fusion final : public Pass {
 public:
  explicit Fusion(FusionOptions options) : options_(options) {}
  std::string_view name() const override { return "fusion"; }

  bool run(Module& module) override {
    internal::SideEffects side_effects(module);
    std::unordered_set<std::string> names;
    for (const auto& c : module.computations()) names.insert(c->name());
    int64_t counter = 0;
    bool changed = false;
    for (Computation* c : fusible_computations(module))
      changed |= ComputationFuser(module, *c, options_, names, counter).run(side_effects);
    return changed;
  }

 private:
  FusionOptions options_;
};

}  // namespace

std::unique_ptr<Pass> make_fusion(FusionOptions options) {
  return std::make_unique<Fusion>(options);
}

}  // namespace podsim::passes
