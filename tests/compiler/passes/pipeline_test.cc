// The pass pipeline: verification after each pass names the culprit, the default
// pipeline reaches a fixed point across passes, and it keeps the results of every
// example module and of random modules while producing well-formed fusions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "tests/compiler/passes/fusion_contract_test_util.h"
#include "tests/compiler/passes/pass_test_util.h"
#include "tests/compiler/passes/random_module_test_util.h"

namespace podsim::passes {
namespace {

using ir::Opcode;
using testing::check_preserves;
using testing::count;
using testing::run_default_pipeline;

// Declares the wrong shape on the entry root: what a buggy pass might do.
class BreakingPass final : public Pass {
 public:
  std::string_view name() const override { return "breaker"; }
  bool run(ir::Module& module) override {
    module.entry()->root()->mutable_shape() = ir::Shape(ir::PrimitiveType::kS8, {99});
    return true;
  }
};

std::string error_of(Pipeline& pipeline, ir::Module& module) {
  try {
    pipeline.run(module);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

const char* kSmall =
    "HloModule m\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n";

TEST(Pipeline, VerifyEachNamesThePassThatBrokeTheModule) {
  auto module = ir::parse_module(kSmall);
  Pipeline pipeline;
  pipeline.add(make_dce()).add(std::make_unique<BreakingPass>()).add(make_cse()).verify_each(true);
  std::string message = error_of(pipeline, *module);
  EXPECT_NE(message.find("after pass 'breaker'"), std::string::npos) << message;
  EXPECT_NE(message.find("does not match the inferred shape"), std::string::npos) << message;
}

TEST(Pipeline, WithoutVerifyEachNothingIsChecked) {
  auto module = ir::parse_module(kSmall);
  Pipeline pipeline;
  pipeline.add(std::make_unique<BreakingPass>());
  EXPECT_TRUE(pipeline.run(*module));
}

TEST(Pipeline, VerifyEachRejectsAnInvalidInput) {
  auto module = ir::parse_module(kSmall);
  module->entry()->root()->mutable_shape() = ir::Shape(ir::PrimitiveType::kF32, {5});
  Pipeline pipeline = default_pipeline();
  pipeline.verify_each(true);
  std::string message = error_of(pipeline, *module);
  EXPECT_NE(message.find("on entry to the pass pipeline"), std::string::npos) << message;
}

TEST(Pipeline, ReportsWhetherAnythingChanged) {
  auto module = ir::parse_module(kSmall);
  EXPECT_FALSE(default_pipeline().verify_each(true).run(*module));
  auto again = check_preserves(kSmall, run_default_pipeline());
  EXPECT_EQ(again->entry()->instruction_count(), 2);
}

TEST(Pipeline, RewritesFeedEachOtherUntilNothingChanges) {
  // (c - c) folds to a zero array, which the simplifier turns into a broadcast zero,
  // which makes x + 0 disappear; then the select's predicate folds to a constant and
  // the select goes too.
  const std::string text = R"(HloModule m

ENTRY main {
  x = s32[4] parameter(0)
  y = s32[4] parameter(1)
  c = s32[4] constant({1, 2, 3, 4})
  z = s32[4] subtract(c, c)
  a = s32[4] add(x, z)
  p = pred[4] compare(c, c), direction=EQ
  ROOT r = s32[4] select(p, a, y)
}
)";
  auto after = check_preserves(text, run_default_pipeline());
  EXPECT_EQ(after->entry()->root(), after->entry()->parameter(0));
  EXPECT_EQ(after->entry()->instruction_count(), 2);
}

// Modules of the IR tests and the examples: every one verifies and evaluates the same
// after the default pipeline; a second run changes nothing.
std::vector<std::string> example_files() {
  std::vector<std::string> files;
  for (const char* dir : {"/tests/compiler/ir/testdata", "/examples/hlo"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(PODSIM_SOURCE_DIR) + dir))
      if (e.path().extension() == ".hlo") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Pipeline, KeepsResultsOfExampleModules) {
  ir::register_custom_call(
      "annotate_device_placement",
      [](const ir::Instruction&, std::span<const ir::Literal* const> ops) { return *ops[0]; });
  std::vector<std::string> files = example_files();
  ASSERT_GE(files.size(), 5u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::string text = read(file);
    std::set<std::string> preexisting;
    auto original = ir::parse_module(text);
    for (const auto& c : original->computations()) preexisting.insert(c->name());
    std::unique_ptr<ir::Module> after;
    try {
      testing::run_module(*original, 1);
      after = check_preserves(text, run_default_pipeline(), 3);
    } catch (const Error& e) {
      // A module written to exercise the parser need not run (collectives.hlo's
      // collective-permute names partitions it does not have): verification only.
      after = ir::parse_module(text);
      default_pipeline().verify_each(true).run(*after);
    }
    testing::expect_fusion_contract(*after, 64, preexisting);
    EXPECT_FALSE(default_pipeline().run(*after)) << ir::print_module(*after);
  }
}

TEST(Pipeline, FusesTheMlpExample) {
  std::string text = read(std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo");
  auto after = check_preserves(text, run_default_pipeline(), 2);
  EXPECT_EQ(count(*after, Opcode::kDot), 2);
  EXPECT_GE(count(*after, Opcode::kFusion), 3);
  for (const auto& i : after->entry()->instructions())
    EXPECT_NE(i->opcode(), Opcode::kAdd) << "bias adds are fused";
  testing::expect_fusion_contract(*after);
}

TEST(Pipeline, KeepsResultsOfRandomModules) {
  for (uint64_t seed = 100; seed < 140; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string text = testing::RandomModule(seed).build(60);
    auto after = check_preserves(text, run_default_pipeline(), 2);
    testing::expect_fusion_contract(*after);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(Pipeline, KeepsResultsOfRandomAlgebra) {
  for (const char* type : {"s32", "u8", "f32", "bf16"}) {
    for (uint64_t seed = 1; seed <= 15; ++seed) {
      SCOPED_TRACE(std::string(type) + " seed " + std::to_string(seed));
      std::string text = testing::RandomAlgebra(seed, type).build(30);
      auto after = check_preserves(text, run_default_pipeline(), 3);
      testing::expect_fusion_contract(*after);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace podsim::passes
