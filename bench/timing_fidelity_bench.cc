// Fidelity of the timed model against the analytic roofline (bench/roofline.h, from the
// same ChipConfig): compiled modules on v4 — bf16 GEMMs (f32 results), f32 elementwise
// adds, a small op — with the simulated cycles, the roofline's, and the fraction of the
// peak reached. Sizes past what the host computes in seconds run timing-only (no data:
// the same cycles for code whose control flow does not depend on data).
// What bounds the GEMM at a given K in this model: an MXU pops its accumulator
// mxu_rows + mxu_cols cycles after its last pass, for mxu_rows cycles; with one
// accumulator the next tile's pass waits for the pop (at most K / (K + 3 * 128) of the
// MXU time computes: 73% at K = 1024), with two (the default) the pop overlaps the next
// tile (bench::mxu_tile_cycles); `mxu_bound` reports the fraction, and `sim/mxu_roofline`
// compares with the roofline that includes it (roofline_gemm_bf16_mxu).
//   build/bin/bench/timing_fidelity_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench/roofline.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"

namespace {

using podsim::bench::RooflineTime;

void run(benchmark::State& state, const std::string& hlo, const RooflineTime& roofline,
         bool timing_only) {
  auto module = podsim::ir::parse_module(hlo);
  podsim::passes::default_pipeline().run(*module);
  podsim::topology::ChipConfig chip = podsim::topology::preset("v4");
  podsim::isa::Executable exe = podsim::tpu::compile(*module, chip);
  std::vector<std::vector<uint8_t>> params;
  if (!timing_only)
    for (const auto& b : exe.parameters) {
      int64_t n = podsim::isa::dtype_bytes(b.dtype);
      for (int64_t d : b.dims) n *= d;
      params.emplace_back(static_cast<size_t>(n), uint8_t{0x3c});
    }
  podsim::sim::timing::TimingOptions options;
  options.timing_only = timing_only;
  options.profile = false;
  podsim::sim::timing::TimedRunResult r;
  for (auto _ : state) r = podsim::sim::timing::run_timed(exe, params, options);
  state.counters["sim_cycles"] = static_cast<double>(r.cycles);
  state.counters["roofline_cycles"] = roofline.cycles;
  state.counters["sim/roofline"] = static_cast<double>(r.cycles) / roofline.cycles;
  state.counters["peak_fraction"] = podsim::bench::roofline_fraction(roofline, r.seconds);
  state.counters["cores"] = static_cast<double>(exe.programs.size());
  state.SetLabel(std::string(roofline.bound()) + "-bound" + (timing_only ? ", timing-only" : ""));
}

// Sizes up to 1024 run with data.
constexpr int64_t kLargestWithData = 1024;

void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const podsim::topology::ChipConfig chip = podsim::topology::preset("v4");
  run(state,
      fmt::format("HloModule g\nENTRY e {{\n  a = bf16[{0},{0}] parameter(0)\n  b = bf16[{0},{0}] "
                  "parameter(1)\n"
                  "  ROOT d = f32[{0},{0}] dot(a, b), lhs_contracting_dims={{1}}, "
                  "rhs_contracting_dims={{0}}\n}}\n",
                  n),
      podsim::bench::roofline_gemm_bf16(chip, n, n, n, 4), n > kLargestWithData);
  const double k = static_cast<double>(n);
  state.counters["mxu_bound"] = k / podsim::bench::mxu_tile_cycles(chip, n);
  state.counters["sim/mxu_roofline"] =
      state.counters["sim_cycles"] / podsim::bench::roofline_gemm_bf16_mxu(chip, n, n, n, 4).cycles;
}

void BM_Elementwise(benchmark::State& state) {
  const int64_t n = state.range(0);
  run(state,
      fmt::format("HloModule e\nENTRY e {{\n  x = f32[{0},{0}] parameter(0)\n  y = f32[{0},{0}] "
                  "parameter(1)\n"
                  "  ROOT s = f32[{0},{0}] add(x, y)\n}}\n",
                  n),
      podsim::bench::roofline_elementwise(podsim::topology::preset("v4"),
                                          3.0 * static_cast<double>(n * n) * 4),
      n > 2 * kLargestWithData);
}

void BM_SmallOp(benchmark::State& state) {
  run(state,
      "HloModule s\nENTRY e {\n  x = f32[8,128] parameter(0)\n  y = f32[8,128] parameter(1)\n"
      "  ROOT s = f32[8,128] add(x, y)\n}\n",
      podsim::bench::roofline_small_op(podsim::topology::preset("v4")), false);
}

BENCHMARK(BM_Gemm)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_Elementwise)
    ->Arg(2048)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_SmallOp)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
