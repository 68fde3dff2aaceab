// Fidelity of the timed model against the analytic roofline (bench/roofline.h, from the
// same ChipConfig): compiled modules on v4 — a bf16 GEMM, an f32 elementwise add, a small
// op — with the simulated cycles, the roofline's, and the fraction of the peak reached.
// The compiled code's schedule (one TensorCore, a few DMAs in flight against 500 ns of
// HBM latency) sets these figures more than the model does; the model itself reaches
// >= 90% of MXU peak on a hand-scheduled GEMM (tests/sim/timing/fidelity_test.cc) and
// the bandwidth on a large copy (timing_behaviour_test.cc).
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

void run(benchmark::State& state, const std::string& hlo, const RooflineTime& roofline) {
  auto module = podsim::ir::parse_module(hlo);
  podsim::passes::default_pipeline().run(*module);
  podsim::topology::ChipConfig chip = podsim::topology::preset("v4");
  podsim::isa::Executable exe = podsim::tpu::compile(*module, chip);
  std::vector<std::vector<uint8_t>> params;
  for (const auto& b : exe.parameters) {
    int64_t n = podsim::isa::dtype_bytes(b.dtype);
    for (int64_t d : b.dims) n *= d;
    params.emplace_back(static_cast<size_t>(n), uint8_t{0x3c});
  }
  podsim::sim::timing::TimedRunResult r;
  for (auto _ : state) r = podsim::sim::timing::run_timed(exe, params);
  state.counters["sim_cycles"] = static_cast<double>(r.cycles);
  state.counters["roofline_cycles"] = roofline.cycles;
  state.counters["sim/roofline"] = static_cast<double>(r.cycles) / roofline.cycles;
  state.counters["peak_fraction"] = podsim::bench::roofline_fraction(roofline, r.seconds);
  state.SetLabel(std::string(roofline.bound()) + "-bound");
}

void BM_Gemm(benchmark::State& state) {
  const int n = 1024;
  run(state,
      fmt::format("HloModule g\nENTRY e {{\n  a = bf16[{0},{0}] parameter(0)\n  b = bf16[{0},{0}] "
                  "parameter(1)\n"
                  "  ROOT d = f32[{0},{0}] dot(a, b), lhs_contracting_dims={{1}}, "
                  "rhs_contracting_dims={{0}}\n}}\n",
                  n),
      podsim::bench::roofline_gemm_bf16(podsim::topology::preset("v4"), n, n, n, 4));
}

void BM_Elementwise(benchmark::State& state) {
  const int n = 2048;
  run(state,
      fmt::format("HloModule e\nENTRY e {{\n  x = f32[{0},{0}] parameter(0)\n  y = f32[{0},{0}] "
                  "parameter(1)\n"
                  "  ROOT s = f32[{0},{0}] add(x, y)\n}}\n",
                  n),
      podsim::bench::roofline_elementwise(podsim::topology::preset("v4"), 3.0 * n * n * 4));
}

void BM_SmallOp(benchmark::State& state) {
  run(state,
      "HloModule s\nENTRY e {\n  x = f32[8,128] parameter(0)\n  y = f32[8,128] parameter(1)\n"
      "  ROOT s = f32[8,128] add(x, y)\n}\n",
      podsim::bench::roofline_small_op(podsim::topology::preset("v4")));
}

BENCHMARK(BM_Gemm)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Elementwise)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_SmallOp)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
