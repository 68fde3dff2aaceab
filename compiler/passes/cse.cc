// Common-subexpression elimination: within each computation, an instruction identical
// to an earlier one (same opcode, shape including layout, operands, called computations,
// attributes and sharding; constants by their literal's bits) is replaced by it.
// Instructions are looked up in a hash set while walking the computation once, so the
// pass is linear in the number of instructions. Not merged: parameters, instructions
// with side effects or control edges, rng-bit-generator (each draw stands for its own
// random stream), custom-calls and opt-barriers.
#include <functional>
#include <string_view>
#include <unordered_set>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

void combine(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

size_t hash_shape(const ir::Shape& shape) {
  size_t h = static_cast<size_t>(shape.type());
  for (int64_t d : shape.dims()) combine(h, static_cast<size_t>(d));
  for (const ir::Shape& e : shape.elements()) combine(h, hash_shape(e));
  return h;
}

// Uses only what equal() compares, so that equal instructions hash alike.
struct InstructionHash {
  size_t operator()(const Instruction* i) const {
    size_t h = static_cast<size_t>(i->opcode());
    combine(h, hash_shape(i->shape()));
    for (const Instruction* op : i->operands()) combine(h, std::hash<const void*>()(op));
    for (const Computation* c : i->called()) combine(h, std::hash<const void*>()(c));
    const ir::Attributes& a = i->attrs();
    for (int64_t d : a.dimensions) combine(h, static_cast<size_t>(d));
    combine(h, static_cast<size_t>(a.tuple_index));
    if (a.literal && a.literal->shape().is_array()) {
      auto bytes = a.literal->bytes();
      combine(h, std::hash<std::string_view>()(
                     std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
    }
    return h;
  }
};

// Shapes equal including layouts (Shape::operator== lets a missing layout match any).
bool identical_shapes(const ir::Shape& a, const ir::Shape& b) {
  if (!(a == b) || a.has_layout() != b.has_layout()) return false;
  for (int64_t k = 0; k < a.tuple_size(); ++k)
    if (!identical_shapes(a.element(k), b.element(k))) return false;
  return true;
}

struct InstructionEqual {
  bool operator()(const Instruction* a, const Instruction* b) const {
    return a->opcode() == b->opcode() && a->operands() == b->operands() &&
           a->called() == b->called() && identical_shapes(a->shape(), b->shape()) &&
           a->attrs() == b->attrs() && a->sharding() == b->sharding() &&
           a->pred_conditional_syntax == b->pred_conditional_syntax;
  }
};

bool mergeable(const Instruction& i, const internal::SideEffects& side_effects) {
  switch (i.opcode()) {
    case Opcode::kParameter:
    case Opcode::kRngBitGenerator:
    case Opcode::kCustomCall:
    case Opcode::kOptimizationBarrier:
      return false;
    default:
      return !side_effects.has(i);
  }
}

bool run_on(Computation& computation, const internal::SideEffects& side_effects) {
  auto linked = internal::control_linked(computation);
  internal::Replacements replacements;
  std::unordered_set<Instruction*, InstructionHash, InstructionEqual> seen;
  std::unordered_set<const Instruction*> merged;
  seen.reserve(computation.instructions().size());
  for (const auto& owned : computation.instructions()) {
    Instruction* i = owned.get();
    replacements.resolve_operands(*i);
    if (linked.count(i) || !mergeable(*i, side_effects)) continue;
    auto [it, inserted] = seen.insert(i);
    if (inserted) continue;
    replacements.add(i, *it);
    merged.insert(i);
  }
  if (merged.empty()) return false;
  replacements.apply(computation);
  // Nothing uses a merged instruction any more; dropping it here keeps a second run
  // from finding it again. (What only it used is left to DCE.)
  computation.remove_if([&](const Instruction* i) { return merged.count(i) != 0; });
  return true;
}

class Cse final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }

  bool run(ir::Module& module) override {
    internal::SideEffects side_effects(module);
    bool changed = false;
    for (Computation* c : internal::non_fusion_computations(module))
      changed |= run_on(*c, side_effects);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse() { return std::make_unique<Cse>(); }

}  // namespace podsim::passes
