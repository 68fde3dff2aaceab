// Pipelines of passes, with optional verification after each pass, and the default
// pipeline every target runs.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"

namespace podsim::passes {
namespace {

// where: "after pass 'cse'", "on entry to the pipeline", ...
void verify(const ir::Module& module, const std::string& where) {
  try {
    ir::verify_module(module);
  } catch (const Error& e) {
    fail("module {} does not verify {}:\n{}", module.name(), where, e.what());
  }
}

void verify_after(const ir::Module& module, const std::string& pass) {
  verify(
      module,
      fmt::format("after pass {} (a compiler bug: please report it with the input module)", pass));
}

// Runs its passes in order, again and again until a round changes nothing (at most
// max_rounds rounds).
class FixedPoint final : public Pass {
 public:
  FixedPoint(std::string name, std::vector<std::unique_ptr<Pass>> passes, int max_rounds)
      : name_(std::move(name)), passes_(std::move(passes)), max_rounds_(max_rounds) {}

  std::string_view name() const override { return name_; }
  bool run(ir::Module& module) override { return run(module, false); }

  bool run(ir::Module& module, bool verify_each) {
    bool changed = false;
    for (int round = 1; round <= max_rounds_; ++round) {
      bool round_changed = false;
      for (const auto& pass : passes_) {
        round_changed |= pass->run(module);
        if (verify_each)
          verify_after(module, fmt::format("'{}' (round {} of '{}')", pass->name(), round, name_));
      }
      changed |= round_changed;
      if (!round_changed) break;
    }
    return changed;
  }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Pass>> passes_;
  int max_rounds_;
};

}  // namespace

Pipeline& Pipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

Pipeline& Pipeline::verify_each(bool on) {
  verify_each_ = on;
  return *this;
}

bool Pipeline::run(ir::Module& module) {
  if (verify_each_) verify(module, "on entry to the pass pipeline");
  bool changed = false;
  for (const auto& pass : passes_) {
    if (auto* fixed_point = dynamic_cast<FixedPoint*>(pass.get())) {
      changed |= fixed_point->run(module, verify_each_);
      continue;
    }
    changed |= pass->run(module);
    if (verify_each_) verify_after(module, fmt::format("'{}'", pass->name()));
  }
  return changed;
}

Pipeline default_pipeline(FusionOptions fusion) {
  std::vector<std::unique_ptr<Pass>> simplify;
  simplify.push_back(make_algebraic_simplifier());
  simplify.push_back(make_constant_folding());
  simplify.push_back(make_cse());
  simplify.push_back(make_dce());
  Pipeline pipeline;
  pipeline.add(std::make_unique<FixedPoint>("simplify", std::move(simplify), 8));
  pipeline.add(make_fusion(fusion));
  pipeline.add(make_dce());
  return pipeline;
}

void expand_composite_ops(ir::Module& module) {
  Pipeline()
      .add(make_custom_call_expander())
      .add(make_batch_norm_expander())
      .add(make_reduce_precision_expander())
      .add(make_topk_decomposer())
      .run(module);
}

}  // namespace podsim::passes
