// map with an elementwise computation becomes that computation's ops over whole arrays
// (XLA's MapInliner; make_map_inliner in pass.h). Exact: the same ops on the same
// values. A computation with other ops (a call, a reduce) keeps its map.
#include <memory>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {

std::unique_ptr<Pass> make_map_inliner() {
  return internal::make_opcode_expander("map-inliner", {ir::Opcode::kMap},
                                        [](ir::Module&, ir::Instruction& map) -> ir::Instruction* {
                                          if (!map.shape().is_array()) return nullptr;
                                          return internal::Builder(map).inline_elementwise(
                                              *map.called(0), map.operands(), map.shape().dims());
                                        });
}

}  // namespace podsim::passes
