// The default pipeline on a module of 100k instructions finishes quickly: no pass may
// be quadratic in the number of instructions (a quadratic pass takes minutes here).
#include <gtest/gtest.h>

#include <chrono>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

// A long elementwise chain with repeated constants (for CSE), identities (for the
// simplifier), foldable constant arithmetic, dead values (for DCE) and a reduction
// fed back every 40 steps (for input fusion and fusion boundaries).
std::string long_module(int steps) {
  std::string s = R"(HloModule scale

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  x = f32[16] parameter(0)
  v0 = f32[16] negate(x)
)";
  for (int k = 1; k <= steps; ++k) {
    std::string v = "v" + std::to_string(k), prev = "v" + std::to_string(k - 1),
                n = std::to_string(k);
    switch (k % 5) {
      case 0:
        s += "  c" + n + " = f32[] constant(" + std::to_string(k % 7) + ")\n";
        s += "  b" + n + " = f32[16] broadcast(c" + n + "), dimensions={}\n";
        s += "  " + v + " = f32[16] multiply(" + prev + ", b" + n + ")\n";
        break;
      case 1:
        s += "  one" + n + " = f32[] constant(1)\n";
        s += "  o" + n + " = f32[16] broadcast(one" + n + "), dimensions={}\n";
        s += "  " + v + " = f32[16] multiply(" + prev + ", o" + n + ")\n";
        break;
      case 2:
        s += "  dead" + n + " = f32[16] exponential(" + prev + ")\n";
        s += "  " + v + " = f32[16] add(" + prev + ", x)\n";
        break;
      case 3:
        if (k % 40 == 3) {
          s += "  z" + n + " = f32[] constant(0)\n";
          s += "  r" + n + " = f32[] reduce(" + prev + ", z" + n +
               "), dimensions={0}, to_apply=add\n";
          s += "  rb" + n + " = f32[16] broadcast(r" + n + "), dimensions={}\n";
          s += "  " + v + " = f32[16] subtract(" + prev + ", rb" + n + ")\n";
        } else {
          s += "  " + v + " = f32[16] tanh(" + prev + ")\n";
        }
        break;
      default:
        s += "  k" + n + " = f32[] constant(2)\n";
        s += "  kk" + n + " = f32[] add(k" + n + ", k" + n + ")\n";
        s += "  kb" + n + " = f32[16] broadcast(kk" + n + "), dimensions={}\n";
        s += "  " + v + " = f32[16] divide(" + prev + ", kb" + n + ")\n";
        break;
    }
  }
  s += "  ROOT out = f32[16] copy(v" + std::to_string(steps) + ")\n}\n";
  return s;
}

TEST(PipelineScale, HundredThousandInstructionsInSeconds) {
  auto module = ir::parse_module(long_module(40000));
  int64_t before = module->instruction_count();
  ASSERT_GE(before, 100000);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(default_pipeline().run(*module));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ir::verify_module(*module);
  EXPECT_LT(module->instruction_count(), before / 2);
  EXPECT_GT(testing::count(*module, ir::Opcode::kFusion), 0);
  // Linear passes take about a second here even in a debug build; quadratic ones
  // take minutes.
  EXPECT_LT(seconds, 60.0) << "pipeline took " << seconds << " s on " << before << " instructions";
  std::cout << "pipeline: " << before << " -> " << module->instruction_count()
            << " instructions in " << seconds << " s\n";
}

TEST(PipelineScale, ShortVersionKeepsResults) {
  testing::check_preserves(long_module(400), testing::run_default_pipeline(), 2);
}

}  // namespace
}  // namespace podsim::passes
