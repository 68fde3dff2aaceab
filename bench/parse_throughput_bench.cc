// Parse and verify throughput on a generated module of >= 100k instructions, the size
// of a large transformer's training step as dumped by XLA.
//   build/bin/bench/parse_throughput_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"

namespace {

// A module in XLA's dump style: layouts, metadata, operand shapes written before the
// operands on some lines, a mix of elementwise ops, broadcasts, dots and reductions.
std::string generate_module(int blocks) {
  std::string text =
      "HloModule generated, entry_computation_layout={(f32[64,256]{1,0}, f32[256,256]{1,0})->f32[64,256]{1,0}}\n\n"
      "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n"
      "ENTRY %main (x: f32[64,256], w: f32[256,256]) -> f32[64,256] {\n"
      "  %x = f32[64,256]{1,0} parameter(0)\n  %w = f32[256,256]{1,0} parameter(1)\n"
      "  %zero = f32[] constant(0)\n  %scale = f32[] constant(0.0625)\n";
  std::string prev = "x";
  for (int i = 0; i < blocks; ++i) {
    std::string meta = fmt::format(R"(metadata={{op_type="Block" op_name="model/layer{}/mlp" source_file="model.py" source_line={}}})", i, 100 + i % 50);
    text += fmt::format("  %d{0} = f32[64,256]{{1,0}} dot(f32[64,256]{{1,0}} %{1}, f32[256,256]{{1,0}} %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, {2}\n", i, prev, meta);
    text += fmt::format("  %s{0} = f32[64,256]{{1,0}} broadcast(f32[] %scale), dimensions={{}}\n", i);
    text += fmt::format("  %m{0} = f32[64,256]{{1,0}} multiply(%d{0}, %s{0}), {1}\n", i, meta);
    text += fmt::format("  %t{0} = f32[64,256]{{1,0}} tanh(%m{0}), {1}\n", i, meta);
    text += fmt::format("  %r{0} = f32[64]{{0}} reduce(%t{0}, %zero), dimensions={{1}}, to_apply=%add\n", i);
    text += fmt::format("  %rb{0} = f32[64,256]{{1,0}} broadcast(%r{0}), dimensions={{0}}\n", i);
    text += fmt::format("  %e{0} = f32[64,256]{{1,0}} subtract(%t{0}, %rb{0}), {1}\n", i, meta);
    text += fmt::format("  %a{0} = f32[64,256]{{1,0}} add(%e{0}, %{1})\n", i, prev);
    prev = fmt::format("a{}", i);
  }
  text += fmt::format("  ROOT %out = f32[64,256]{{1,0}} copy(%{})\n}}\n", prev);
  return text;
}

const std::string& module_text() {
  static const std::string text = generate_module(12500);  // 8 per block: 100k + 5
  return text;
}

void BM_Parse(benchmark::State& state) {
  const std::string& text = module_text();
  int64_t instructions = 0;
  for (auto _ : state) {
    auto module = podsim::ir::parse_module(text, "generated.hlo");
    instructions = module->instruction_count();
    benchmark::DoNotOptimize(module);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.SetItemsProcessed(state.iterations() * instructions);
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_ParseAndVerify(benchmark::State& state) {
  const std::string& text = module_text();
  int64_t instructions = 0;
  for (auto _ : state) {
    auto module = podsim::ir::parse_module(text, "generated.hlo");
    podsim::ir::verify_module(*module, "generated.hlo");
    instructions = module->instruction_count();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.SetItemsProcessed(state.iterations() * instructions);
  state.counters["instructions"] = static_cast<double>(instructions);
}

BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ParseAndVerify)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
