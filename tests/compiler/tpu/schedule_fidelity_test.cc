// The compiled schedule on the timed model (sim/timing), against the analytic roofline
// (bench/roofline.h) from the same ChipConfig: a large elementwise op moves data at
// >= 85% of v4's HBM bandwidth, a GEMM keeps both TensorCores' MXUs busy (as far as the
// MXU model allows at this size, see below), a small op stays near the latency floor;
// each with the evaluator's results and no hazard. Sizes are modest so that the test
// runs in about a second; bench/timing_fidelity_bench reports the larger ones.
#include <fmt/format.h>

#include <array>

#include "bench/roofline.h"
#include "sim/timing/timed_chip.h"
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

struct TimedCase {
  std::vector<ir::Literal> outputs;
  std::vector<ir::Literal> expected;
  sim::timing::TimedRunResult result;
  isa::Executable executable;
};

// Compiles for v4, runs on the timed model with hazards as errors, and evaluates.
TimedCase run_timed_case(const std::string& hlo, double lo, double hi,
                         const topology::ChipConfig& chip = topology::preset("v4")) {
  auto module = ir::parse_module(hlo);
  passes::default_pipeline().run(*module);
  TimedCase c;
  c.executable = compile(*module, chip);
  std::mt19937_64 rng(5);
  std::vector<ir::Literal> args;
  std::vector<std::vector<uint8_t>> params;
  for (const ir::Instruction* p : module->entry()->parameters()) {
    args.push_back(random_literal(p->shape(), rng, lo, hi, /*integral_floats=*/true));
    auto bytes = args.back().bytes();
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    params.emplace_back(data, data + bytes.size());
  }
  sim::timing::TimingOptions options;
  options.check_hazards = true;
  options.hazards_are_errors = true;
  c.result = sim::timing::run_timed(c.executable, params, options);
  c.expected = {ir::evaluate(*module, args)};
  for (size_t k = 0; k < c.result.outputs.size(); ++k) {
    ir::Literal l(c.expected.at(k).shape());
    std::memcpy(l.bytes().data(), c.result.outputs[k].data(), c.result.outputs[k].size());
    c.outputs.push_back(std::move(l));
  }
  return c;
}

TEST(TpuScheduleFidelity, ElementwiseReachesEightyFivePercentOfHbmBandwidth) {
  const int n = 1024;
  TimedCase c = run_timed_case(
      fmt::format("HloModule e\nENTRY e {{\n  x = f32[{0},{0}] parameter(0)\n"
                  "  y = f32[{0},{0}] parameter(1)\n  ROOT s = f32[{0},{0}] add(x, y)\n}}\n",
                  n),
      -100, 100);
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_TRUE(near(c.outputs[0], c.expected[0], 0, 0));
  EXPECT_EQ(c.executable.programs.size(), 2u) << "both TensorCores";
  const bench::RooflineTime roofline =
      bench::roofline_elementwise(c.executable.chip, 3.0 * n * n * 4);
  const double fraction = bench::roofline_fraction(roofline, c.result.seconds);
  std::cout << "f32 add " << n << "^2: " << c.result.cycles << " cycles, roofline "
            << roofline.cycles << ", HBM bandwidth fraction " << fraction << "\n";
  EXPECT_GE(fraction, 0.85);
  EXPECT_LE(static_cast<double>(c.result.cycles), 1.10 * roofline.cycles);
}

TEST(TpuScheduleFidelity, GemmKeepsTheMxusOfBothCoresBusy) {
  // 1024^3: 8 K steps per output tile. The MXU model pops an accumulator
  // mxu_rows + mxu_cols cycles after its last pass and for mxu_rows cycles; with v4's two
  // accumulators per MXU the pop overlaps the next tile's 8 passes, so the MXU bound is
  // the peak (bench::roofline_gemm_bf16_mxu); at this size the first weight blocks' load
  // (HBM-bound) and the last write-back take much of the time.
  const int n = 1024;
  TimedCase c =
      run_timed_case(fmt::format("HloModule g\nENTRY e {{\n  a = bf16[{0},{0}] parameter(0)\n  b = "
                                 "bf16[{0},{0}] parameter(1)\n"
                                 "  ROOT d = f32[{0},{0}] dot(a, b), lhs_contracting_dims={{1}}, "
                                 "rhs_contracting_dims={{0}}\n}}\n",
                                 n),
                     -2, 2);
  ASSERT_EQ(c.outputs.size(), 1u);
  // Small integers: every product and sum is exact in f32, in any order.
  EXPECT_TRUE(near(c.outputs[0], c.expected[0], 0, 0));
  EXPECT_EQ(c.executable.programs.size(), 2u) << "both TensorCores";
  const topology::ChipConfig& chip = c.executable.chip;
  const bench::RooflineTime roofline = bench::roofline_gemm_bf16(chip, n, n, n, 4);
  const double fraction = bench::roofline_fraction(roofline, c.result.seconds);
  // 8 passes of 128 cycles per tile; its 384 cycles of drain and pop overlap the next
  // tile's passes (one accumulator would make it 1408 / 1024 of the peak's compute time).
  const bench::RooflineTime mxu = bench::roofline_gemm_bf16_mxu(chip, n, n, n, 4);
  EXPECT_DOUBLE_EQ(mxu.compute_seconds / roofline.compute_seconds, 1.0);
  topology::ChipConfig one = chip;
  one.mxu_accumulators = 1;
  EXPECT_DOUBLE_EQ(
      bench::roofline_gemm_bf16_mxu(one, n, n, n, 4).compute_seconds / roofline.compute_seconds,
      1408.0 / 1024.0);
  std::cout << "bf16 GEMM " << n << "^3: " << c.result.cycles << " cycles, roofline "
            << roofline.cycles << " (with the MXU's drain and pop: " << mxu.cycles
            << "), MXU peak fraction " << fraction << "\n";
  EXPECT_GE(fraction, 0.5);
  EXPECT_GE(static_cast<double>(c.result.cycles), mxu.cycles - mxu.latency_seconds * chip.clock_hz);
}

// The target size of issue 5, timing-only (no data: the code's control flow does not
// depend on it): >= 90% of the chip's MXU peak, and within 5% of the roofline that
// includes the MXU's drain and pop.
TEST(TpuScheduleFidelity, LargeGemmReachesNinetyPercentOfMxuPeak) {
  const int n = 8192;
  auto module = ir::parse_module(
      fmt::format("HloModule g\nENTRY e {{\n  a = bf16[{0},{0}] parameter(0)\n  b = bf16[{0},{0}] "
                  "parameter(1)\n  ROOT d = f32[{0},{0}] dot(a, b), lhs_contracting_dims={{1}}, "
                  "rhs_contracting_dims={{0}}\n}}\n",
                  n));
  const topology::ChipConfig chip = topology::preset("v4");
  isa::Executable exe = compile(*module, chip);
  sim::timing::TimingOptions options;
  options.timing_only = true;
  options.profile = false;
  sim::timing::TimedRunResult r = sim::timing::run_timed(exe, {}, options);
  const double fraction =
      bench::roofline_fraction(bench::roofline_gemm_bf16(chip, n, n, n, 4), r.seconds);
  const double mxu =
      static_cast<double>(r.cycles) / bench::roofline_gemm_bf16_mxu(chip, n, n, n, 4).cycles;
  std::cout << "bf16 GEMM " << n << "^3 (timing-only): " << r.cycles
            << " cycles, MXU peak fraction " << fraction << ", simulated / MXU roofline " << mxu
            << "\n";
  EXPECT_GE(fraction, 0.90);
  EXPECT_LE(mxu, 1.05);
}

// With less VMEM the weights come in several blocks per core: double-buffered (the next
// block loads while this one is used) or, when two do not fit, one after the other;
// and LHS panels too large for VMEM stream in chunks of K. Results stay exact and no
// DMA races an access.
TEST(TpuScheduleFidelity, GemmWeightBlocksAndLhsChunksThroughSmallVmem) {
  topology::ChipConfig chip = topology::preset("v4");
  chip.vmem_bytes = 4 << 20;
  for (auto [m, k, n] :
       {std::array<int, 3>{256, 1024, 2048}, std::array<int, 3>{128, 4096, 1024}}) {
    TimedCase c =
        run_timed_case(fmt::format("HloModule g\nENTRY e {{\n  a = bf16[{},{}] parameter(0)\n  b = "
                                   "bf16[{},{}] parameter(1)\n"
                                   "  ROOT d = f32[{},{}] dot(a, b), lhs_contracting_dims={{1}}, "
                                   "rhs_contracting_dims={{0}}\n}}\n",
                                   m, k, k, n, m, n),
                       -2, 2, chip);
    EXPECT_TRUE(near(c.outputs.at(0), c.expected.at(0), 0, 0)) << m << "x" << k << "x" << n;
    EXPECT_EQ(c.executable.programs.size(), 2u);
  }
}

// N = 384 is three 128-wide tiles a row on v4's four MXUs: rows load together so that
// every group of output tiles is whole and every MXU takes the same share of the passes
// (one row at a time would leave an MXU idle). Results stay exact, no DMA races.
TEST(TpuScheduleFidelity, AwkwardNKeepsEveryMxuBusy) {
  TimedCase c = run_timed_case(
      "HloModule g\nENTRY e {\n  a = bf16[1024,256] parameter(0)\n  b = bf16[256,384] "
      "parameter(1)\n  ROOT d = f32[1024,384] dot(a, b), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}\n}\n",
      -2, 2);
  EXPECT_TRUE(near(c.outputs.at(0), c.expected.at(0), 0, 0));
  ASSERT_EQ(c.executable.programs.size(), 2u);
  for (const isa::Program& program : c.executable.programs) {
    std::array<int, 4> passes{};
    for (const isa::Instruction& in : program.instructions)
      if (in.opcode == isa::Opcode::kMmul) ++passes.at(static_cast<size_t>(in.operands[0]));
    // 8 rows x 3 tiles x 2 K steps over 2 cores and 4 MXUs each: 6 passes per MXU.
    EXPECT_EQ(passes, (std::array<int, 4>{6, 6, 6, 6}));
  }
}

// Partial tiles, a row-broadcast and a constant leaf, batch dims and a transposed
// operand, split over both cores: exact results, no hazard.
TEST(TpuScheduleFidelity, OddShapesSplitOverCoresAreRightAndRaceFree) {
  TimedCase e = run_timed_case(R"(HloModule e
ENTRY e {
  x = f32[1000,700] parameter(0)
  b = f32[700] parameter(1)
  bb = f32[1000,700] broadcast(b), dimensions={1}
  two = f32[] constant(2)
  t = f32[1000,700] broadcast(two), dimensions={}
  s = f32[1000,700] add(x, bb)
  ROOT r = f32[1000,700] multiply(s, t)
})",
                               -100, 100);
  EXPECT_TRUE(near(e.outputs.at(0), e.expected.at(0), 0, 0));
  EXPECT_EQ(e.executable.programs.size(), 2u);
  EXPECT_EQ(isa::assemble(isa::disassemble(e.executable)), e.executable);
  TimedCase d = run_timed_case(R"(HloModule d
ENTRY d {
  a = bf16[3,200,300] parameter(0)
  w = bf16[3,260,300] parameter(1)
  ROOT o = f32[3,200,260] dot(a, w), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
})",
                               -2, 2);
  EXPECT_TRUE(near(d.outputs.at(0), d.expected.at(0), 0, 0));
  EXPECT_EQ(d.executable.programs.size(), 2u);
}

TEST(TpuScheduleFidelity, SmallOpStaysNearTheLatencyFloor) {
  TimedCase c = run_timed_case(
      "HloModule s\nENTRY e {\n  x = f32[8,128] parameter(0)\n  y = f32[8,128] parameter(1)\n"
      "  ROOT s = f32[8,128] add(x, y)\n}\n",
      -100, 100);
  EXPECT_TRUE(near(c.outputs.at(0), c.expected.at(0), 0, 0));
  EXPECT_EQ(c.executable.programs.size(), 1u) << "one tile: no second core, no barrier";
  // Within 5% of the latency floor (bench/roofline.h: read, then write back).
  const bench::RooflineTime floor = bench::roofline_small_op(c.executable.chip);
  std::cout << "f32 add 8x128: " << c.result.cycles << " cycles, latency floor " << floor.cycles
            << "\n";
  EXPECT_GE(static_cast<double>(c.result.cycles), floor.cycles);
  EXPECT_LE(static_cast<double>(c.result.cycles), 1.05 * floor.cycles);
}

}  // namespace
}  // namespace podsim::tpu::testing
