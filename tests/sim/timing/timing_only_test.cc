// Timing-only runs (TimingOptions::timing_only): the same cycles, instruction trace and
// profile as a full run on the golden kernels and on compiled modules, no outputs, and
// far less host time on a GEMM (the MXU products are what it skips).
#include <gtest/gtest.h>

#include <chrono>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

isa::Executable compile_hlo(const std::string& hlo, const std::string& chip) {
  return tpu::compile(*ir::parse_module(hlo), topology::preset(chip));
}

std::string gemm_hlo(int n) {
  std::string d = std::to_string(n);
  return "HloModule gemm\nENTRY e {\n  a = bf16[" + d + "," + d + "] parameter(0)\n  b = bf16[" +
         d + "," + d + "] parameter(1)\n  ROOT d = f32[" + d + "," + d +
         "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
}

const char* kElementwise = R"(HloModule elementwise
ENTRY e {
  x = f32[64,256] parameter(0)
  y = f32[64,256] parameter(1)
  s = f32[64,256] add(x, y)
  t = f32[64,256] exponential(s)
  ROOT r = f32[64,256] maximum(t, y)
}
)";

// Runs full and timing-only and checks that everything but the data agrees.
void expect_same_timing(const isa::Executable& exe, const std::string& what) {
  SCOPED_TRACE(what);
  TimingOptions full;
  full.instruction_trace = true;
  full.check_hazards = true;
  TimingOptions fast = full;
  fast.timing_only = true;
  auto params = small_parameters(exe);
  TimedRunResult a = run_timed(exe, params, full);
  TimedRunResult b = run_timed(exe, params, fast);
  EXPECT_EQ(a.outputs.size(), exe.outputs.size());
  EXPECT_TRUE(b.outputs.empty());
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.instructions, b.instructions);
  EXPECT_EQ(a.dmas, b.dmas);
  EXPECT_EQ(a.hazards.size(), b.hazards.size());
  EXPECT_EQ(format_instruction_trace(a.trace, exe), format_instruction_trace(b.trace, exe));
  ASSERT_EQ(a.profile.chips.size(), b.profile.chips.size());
  const auto& ta = a.profile.chips.at(0).tracks;
  const auto& tb = b.profile.chips.at(0).tracks;
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t t = 0; t < ta.size(); ++t) {
    ASSERT_EQ(ta[t].spans.size(), tb[t].spans.size()) << ta[t].name;
    for (size_t s = 0; s < ta[t].spans.size(); ++s) {
      EXPECT_EQ(ta[t].spans[s].start, tb[t].spans[s].start) << ta[t].name << " span " << s;
      EXPECT_EQ(ta[t].spans[s].end, tb[t].spans[s].end) << ta[t].name << " span " << s;
    }
  }
  // Parameters may be left out altogether.
  TimedRunResult c = run_timed(exe, {}, fast);
  EXPECT_EQ(c.cycles, a.cycles);
  EXPECT_EQ(format_instruction_trace(c.trace, exe), format_instruction_trace(a.trace, exe));
}

TEST(TimingOnly, GoldenKernelsKeepTheirTraces) {
  std::string root = std::string(PODSIM_SOURCE_DIR) + "/tests/";
  for (const std::string& path :
       {root + "isa/testdata/vector_add.s", root + "isa/testdata/matmul.s",
        root + "isa/testdata/reduce_loop.s", root + "sim/timing/golden/four_mxus.s",
        root + "sim/timing/golden/two_cores.s"})
    expect_same_timing(isa::assemble(read_text(path), path), path);
}

TEST(TimingOnly, CompiledModulesKeepTheirTraces) {
  expect_same_timing(compile_hlo(gemm_hlo(256), "tiny"), "gemm 256 on tiny");
  expect_same_timing(compile_hlo(gemm_hlo(256), "v4"), "gemm 256 on v4");
  expect_same_timing(compile_hlo(kElementwise, "v5e"), "elementwise on v5e");
}

TEST(TimingOnly, IsMuchFasterOnAGemm) {
  isa::Executable exe = compile_hlo(gemm_hlo(512), "v4");
  auto params = small_parameters(exe);
  auto best = [&](bool timing_only) {
    TimingOptions o;
    o.profile = false;
    o.timing_only = timing_only;
    double seconds = 1e30;
    for (int i = 0; i < 3; ++i) {
      auto start = std::chrono::steady_clock::now();
      run_timed(exe, params, o);
      seconds = std::min(
          seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return seconds;
  };
  double full = best(false), fast = best(true);
  // The MXU products dominate a full run (2 * 512^3 flops on the host); without them
  // what is left is the model's own bookkeeping.
  EXPECT_LT(fast * 3, full) << "timing-only " << fast << " s, full " << full << " s";
}

TEST(TimingOnly, WrongParametersAreStillAnError) {
  isa::Executable exe = testdata_kernel("vector_add.s");
  TimingOptions o;
  o.timing_only = true;
  auto params = small_parameters(exe);
  params.pop_back();
  EXPECT_THROW(run_timed(exe, params, o), Error);
  params = small_parameters(exe);
  params[0].pop_back();
  EXPECT_THROW(run_timed(exe, params, o), Error);
}

TEST(TimingOnly, TheFunctionalModelWritesNoData) {
  isa::Executable exe = testdata_kernel("vector_add.s");
  auto params = small_parameters(exe);
  FunctionalModel model(exe);
  model.set_compute_data(false);
  for (size_t k = 0; k < params.size(); ++k) model.set_parameter(static_cast<int>(k), params[k]);
  model.run_to_completion(int64_t{1} << 20);
  EXPECT_TRUE(model.all_halted());
  // Neither the parameters nor any result reached memory: the output reads as zeros,
  // where a full run computes nonzero sums of the inputs.
  std::vector<uint8_t> out = model.read_output(0);
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0));
  EXPECT_NE(functional_outputs(exe, params).at(0), out);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
