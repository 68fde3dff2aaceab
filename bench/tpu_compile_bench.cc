// Compile time of the TPU target per 1,000 IR instructions, on a generated module of
// 1,000 instructions shaped like model code: blocks of dot (128 x 128 x 128), bias
// broadcast + add, tanh and a scaled residual add, chained. Measured for v4 and v5e:
// the lowering alone on the unfused module, and the default pass pipeline followed by
// the lowering (what the SIM backend does on a compile-cache miss). The time per
// iteration is the time per ~1,000 IR instructions; isa_per_ir is the number of
// TensorCore instructions generated per IR instruction.
//   build/bin/bench/tpu_compile_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "topology/chip_config.h"

namespace {

constexpr int kBlocks = 125;  // 8 instructions each: 1,000 in all (plus the parameters)

std::string model_text() {
  std::string body =
      "HloModule compile_bench\nENTRY main {\n  h0 = f32[128,128] parameter(0)\n"
      "  w = f32[128,128] parameter(1)\n  b = f32[128] parameter(2)\n";
  for (int k = 0; k < kBlocks; ++k) {
    body += fmt::format(
        "  d{0} = f32[128,128] dot(h{0}, w), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}\n"
        "  bb{0} = f32[128,128] broadcast(b), dimensions={{1}}\n"
        "  a{0} = f32[128,128] add(d{0}, bb{0})\n"
        "  t{0} = f32[128,128] tanh(a{0})\n"
        "  c{0} = f32[] constant(0.5)\n"
        "  cb{0} = f32[128,128] broadcast(c{0}), dimensions={{}}\n"
        "  m{0} = f32[128,128] multiply(t{0}, cb{0})\n"
        "  h{1} = f32[128,128] add(m{0}, h{0})\n",
        k, k + 1);
  }
  body += fmt::format("  ROOT out = f32[128,128] copy(h{})\n}}\n", kBlocks);
  return body;
}

void compile_bench(benchmark::State& state, const char* chip_name, bool passes) {
  const std::string text = model_text();
  const podsim::topology::ChipConfig chip = podsim::topology::preset(chip_name);
  int64_t ir_instructions = 0, isa_instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto module = podsim::ir::parse_module(text, "compile_bench.hlo");
    ir_instructions = static_cast<int64_t>(module->entry()->instructions().size());
    state.ResumeTiming();
    if (passes) podsim::passes::default_pipeline().run(*module);
    podsim::isa::Executable exe = podsim::tpu::compile(*module, chip);
    isa_instructions = 0;
    for (const auto& program : exe.programs)
      isa_instructions += static_cast<int64_t>(program.instructions.size());
    benchmark::DoNotOptimize(exe);
  }
  state.counters["isa_per_ir"] =
      static_cast<double>(isa_instructions) / static_cast<double>(ir_instructions);
  state.SetLabel(fmt::format("{} IR instructions", ir_instructions));
}

BENCHMARK_CAPTURE(compile_bench, v4_lowering, "v4", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(compile_bench, v4_passes_and_lowering, "v4", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(compile_bench, v5e_lowering, "v5e", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(compile_bench, v5e_passes_and_lowering, "v5e", true)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
