// Dead-code elimination: drops instructions whose values nothing needs and
// computations nothing calls any more. What stays: each computation's root and
// parameters (a computation's signature never changes), instructions with side effects
// (pass_util.h) and everything they use; the entry and the computations reachable from
// it through called computations.
#include <unordered_set>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Computation;
using ir::Module;

class Dce final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }

  bool run(Module& module) override {
    internal::SideEffects side_effects(module);
    bool changed = false;
    for (const auto& c : module.computations())
      changed |= internal::remove_dead_instructions(*c, side_effects);
    changed |= internal::remove_unreachable_computations(module);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce() { return std::make_unique<Dce>(); }

}  // namespace podsim::passes
