// podsim compile FILE.hlo --chip v4|FILE.toml [--topology POD] -o prog.pex: lowers an HLO
// module to a TensorCore executable for one chip, or for every chip of a pod (the default
// pass pipeline first, so that elementwise ops and reductions fuse into kernels;
// --no-passes lowers op by op).
#include <fmt/core.h>

#include <filesystem>
#include <map>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/tpu/tpu_compiler.h"
#include "isa/isa.h"
#include "tools/commands.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"

namespace podsim::tools {
namespace {

struct CompileOptions {
  std::string file;
  std::string chip = "v4";
  std::string topology;  // a pod: every chip runs the program, one replica each
  std::string output;
  bool no_passes = false;
  int core = 0;
  tpu::Options::AllReduce collectives = tpu::Options::AllReduce::kAuto;
  std::vector<std::string> custom_calls;
};

int run_compile(const CompileOptions& o) {
  define_custom_calls(o.custom_calls);
  auto module = ir::parse_module_file(o.file);
  ir::verify_module(*module, o.file);
  const tpu::Target target = o.topology.empty()
                                 ? tpu::Target(topology::chip_config(o.chip))
                                 : tpu::Target(topology::pod_config(o.topology));
  const topology::ChipConfig& chip = target.chip;
  tpu::Options options;
  options.core = o.core;
  options.passes = !o.no_passes;
  options.all_reduce = o.collectives;
  isa::Executable e = tpu::compile(*module, target, options);
  std::string output = o.output;
  if (output.empty()) output = std::filesystem::path(o.file).replace_extension(".pex").string();
  isa::write_executable(output, e);

  int64_t instructions = 0, vector = 0, mxu = 0, dma = 0, hbm = 0, vmem = 0;
  for (const isa::Program& p : e.programs)
    for (const isa::Instruction& in : p.instructions) {
      ++instructions;
      switch (isa::unit(in.opcode)) {
        case isa::Unit::kVector: ++vector; break;
        case isa::Unit::kMxu: ++mxu; break;
        case isa::Unit::kDma: ++dma; break;
        default: break;
      }
    }
  for (const isa::Region& r : e.regions) {
    int64_t& top = r.space == isa::MemorySpace::kHbm ? hbm : vmem;
    top = std::max(top, r.offset + r.size);
  }
  fmt::print("{}: compiled for chip '{}' (core {}): {} instructions ({} vector, {} MXU, {} DMA), {} bytes of HBM, "
             "{} bytes of VMEM; wrote {}\n",
             o.file, chip.name, o.core, instructions, vector, mxu, dma, hbm, vmem, output);
  return 0;
}

}  // namespace

Command add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile an HLO text module to a TensorCore executable (.pex)");
  auto o = std::make_shared<CompileOptions>();
  cmd->add_option("file", o->file, "HLO text file (XLA's format)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--chip", o->chip, "Target chip: a preset (v4, v5e, v5p, v6e, tiny) or a TOML file")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Executable to write (default: FILE with the extension .pex)");
  cmd->add_option("--topology", o->topology,
                  "Compile for every chip of a pod (v5e-8, v4:2x2x2, ... or a TOML file), one "
                  "replica per chip; its chip replaces --chip");
  cmd->add_flag("--no-passes", o->no_passes, "Lower the module as it is (no simplification or fusion)");
  add_custom_calls_option(*cmd, o->custom_calls);
  cmd->add_option("--core", o->core, "The TensorCore that runs the program")->capture_default_str();
  using A = tpu::Options::AllReduce;
  cmd->add_option("--collectives", o->collectives,
                  "With --topology: the algorithm of all-reduce, all-gather and reduce-scatter: auto (the "
                  "compiler's cost model picks), ring, one-shot or two-shot (all-reduce only; the others "
                  "take one-shot)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, A>{{"auto", A::kAuto}, {"ring", A::kRing}, {"one-shot", A::kOneShot}, {"two-shot", A::kTwoShot}}))
      ->default_str("auto");
  return {cmd, [o]() { return run_compile(*o); }};
}

}  // namespace podsim::tools
