// Target-independent optimization passes over the IR, and the pipeline that runs them.
// Every pass keeps the module's results identical to the reference evaluator's (up to
// floating-point reassociation where a pass documents it).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Returns whether the module changed.
  virtual bool run(ir::Module& module) = 0;
};

struct FusionOptions {
  // Largest number of instructions in one fused computation.
  int max_fused_instructions = 64;
};

std::unique_ptr<Pass> make_algebraic_simplifier();
std::unique_ptr<Pass> make_constant_folding();
std::unique_ptr<Pass> make_cse();
std::unique_ptr<Pass> make_dce();
// Groups elementwise ops, broadcasts (and other loop-compatible producers) and
// reductions of them into `fusion` instructions (kind=kLoop, or kInput for a fused
// reduction) whose fused computation a backend runs as one pass over memory.
std::unique_ptr<Pass> make_fusion(FusionOptions options = {});

class Pipeline {
 public:
  Pipeline& add(std::unique_ptr<Pass> pass);
  // Verify the module after every pass (tests and debugging); off by default.
  Pipeline& verify_each(bool on);
  // Runs the passes in order; returns whether anything changed.
  bool run(ir::Module& module);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  bool verify_each_ = false;
};

// simplify -> constant folding -> CSE -> DCE, repeated to a fixed point (bounded), then
// fusion and a final DCE.
Pipeline default_pipeline(FusionOptions fusion = {});

}  // namespace podsim::passes
