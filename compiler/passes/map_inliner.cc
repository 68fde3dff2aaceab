// map with an elementwise computation becomes that computation's ops over whole arrays
// (XLA's MapInliner; make_map_inliner in pass.h). Exact: the same ops on the same
// values. A computation with other ops (a call, a reduce) keeps its map.
#include <memory>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

class MapInliner final : public Pass {
 public:
  std::string_view name() const override { return "map-inliner"; }
  bool run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : internal::non_fusion_computations(module)) {
      internal::Replacements replacements;
      std::vector<ir::Instruction*> maps;
      for (const auto& i : c->instructions())
        if (i->opcode() == ir::Opcode::kMap && i->control_predecessors().empty() && i->shape().is_array())
          maps.push_back(i.get());
      for (ir::Instruction* map : maps) {
        internal::Builder b(*map);
        ir::Instruction* inlined = b.inline_elementwise(*map->called(0), map->operands(), map->shape().dims());
        if (!inlined) continue;
        if (map->shape().has_layout()) inlined->mutable_shape().set_layout(map->shape().layout());
        replacements.add(map, inlined);
      }
      if (replacements.empty()) continue;
      replacements.apply(*c);
      c->sort_topologically();
      internal::remove_dead_instructions(*c, internal::SideEffects(module));
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_map_inliner() { return std::make_unique<MapInliner>(); }

}  // namespace podsim::passes
