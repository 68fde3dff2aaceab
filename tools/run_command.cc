// podsim run FILE.hlo --backend eval|cpu|opencl|sim-functional|sim: run a module on inputs
// (random or from a safetensors file) and print a summary of each output. With --topology, every chip of a
// pod runs the module (on the simulator) on its own inputs. podsim run FILE.pex / FILE.s
// runs an executable (hand-written or compiled) on the simulated chip or pod it names.
#include <fmt/core.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <random>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/native_types.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/safetensors.h"
#include "compiler/ir/sharding.h"
#include "compiler/ir/verifier.h"
#include "compiler/cpu/cpu_compiler.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "isa/isa.h"
#include "sim/functional/functional_model.h"
#include "sim/functional/pod_model.h"
#include "sim/timing/timed_chip.h"
#include "traces/chrome_trace.h"
#include "traces/summary.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"
#include "runtime/pjrt/device.h"
#include "tools/commands.h"

namespace podsim::tools {
namespace {

struct RunOptions {
  std::string file;
  std::string backend = "eval";
  bool backend_given = false;
  std::string chip = "v5e";
  std::string topology;
  std::string inputs = "random";
  uint64_t seed = 0;
  int64_t replicas = 0;
  int64_t partitions = 0;
  bool spmd = false;
  std::string save_partitioned;
  std::string output;
  // --backend sim
  std::string profile;
  std::string trace_instructions;
  int trace_chip = 0;
  bool check_hazards = false;
  bool timing_only = false;
  bool stats = false;  // --stats
  bool quiet = false;  // --quiet: no progress line
  bool host_link = false;
  bool local_flows = false;
  std::string hbm = "request-time";
  std::vector<std::string> custom_calls;
};

// Random values that exercise an op without overflowing ordinary arithmetic: floats
// uniform in [-1, 1), signed ints in [-10, 10], unsigned in [0, 20], pred 0/1.
ir::Literal random_literal(const ir::Shape& shape, std::mt19937_64& rng) {
  if (shape.is_tuple()) {
    std::vector<ir::Literal> elements;
    for (const ir::Shape& e : shape.elements()) elements.push_back(random_literal(e, rng));
    return ir::Literal::tuple(std::move(elements));
  }
  ir::Literal l(shape);
  ir::PrimitiveType t = shape.type();
  for (int64_t i = 0; i < l.num_elements(); ++i) {
    if (ir::is_float(t)) l.set_from_double(i, std::uniform_real_distribution<double>(-1, 1)(rng));
    else if (ir::is_signed_int(t)) l.set_from_int64(i, std::uniform_int_distribution<int64_t>(-10, 10)(rng));
    else if (ir::is_unsigned_int(t)) l.set_from_int64(i, std::uniform_int_distribution<int64_t>(0, 20)(rng));
    else l.set_from_int64(i, std::uniform_int_distribution<int64_t>(0, 1)(rng));
  }
  return l;
}

// Arguments of one device: from the named tensors (parameter name, argN, or rD.argN for
// device D), or random.
std::vector<ir::Literal> device_arguments(const ir::Computation& entry, const RunOptions& options,
                                          const std::map<std::string, ir::Literal>& named,
                                          int64_t device, int64_t device_count) {
  std::vector<ir::Literal> args;
  std::mt19937_64 rng(options.seed * 1000003 + static_cast<uint64_t>(device));
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const ir::Instruction* p = entry.parameter(i);
    if (options.inputs == "random") {
      args.push_back(random_literal(p->shape(), rng));
      continue;
    }
    std::vector<std::string> candidates = {fmt::format("r{}.arg{}", device, i), p->name(),
                                           fmt::format("arg{}", i)};
    if (device_count == 1) candidates.erase(candidates.begin());
    auto found = std::find_if(candidates.begin(), candidates.end(),
                              [&](const std::string& n) { return named.count(n) != 0; });
    if (found == candidates.end())
      fail("{}: no tensor for parameter {} ('{}', {}); name it one of: {}", options.inputs, i, p->name(),
           p->shape().to_string(false), fmt::join(candidates, ", "));
    const ir::Literal& value = named.at(*found);
    if (!value.shape().compatible(p->shape()))
      fail("{}: tensor '{}' has shape {} but parameter {} ('{}') is {}", options.inputs, *found,
           value.shape().to_string(false), i, p->name(), p->shape().to_string(false));
    args.push_back(value);
  }
  return args;
}

std::string summary(const ir::Literal& l) {
  std::string head = fmt::format("dtype={} shape=[{}]", ir::type_name(l.type()), fmt::join(l.shape().dims(), ","));
  int64_t n = l.num_elements();
  if (n == 0) return head + " (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = l.get_as_double(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::vector<std::string> first;
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) first.push_back(fmt::format("{:.6g}", l.get_as_double(i)));
  std::string out = fmt::format("{}  min={:.6g} max={:.6g} mean={:.6g} first=[{}{}]", head, lo, hi,
                                sum / static_cast<double>(std::max<int64_t>(1, n - nans)),
                                fmt::join(first, ", "), n > 6 ? ", ..." : "");
  if (nans) out += fmt::format(" nan={}", nans);
  return out;
}

void flatten(const ir::Literal& l, const std::string& name, ir::NamedLiterals& out) {
  if (!l.shape().is_tuple()) {
    out.emplace_back(name, l);
    return;
  }
  for (size_t i = 0; i < l.elements().size(); ++i) flatten(l.elements()[i], fmt::format("{}.{}", name, i), out);
}

// Elements of a tuple root, flattened; any other root as one value.
std::vector<ir::Shape> flat_output_shapes(const ir::Shape& shape) {
  if (!shape.is_tuple()) return {shape};
  std::vector<ir::Shape> out;
  for (const ir::Shape& e : shape.elements())
    for (ir::Shape& s : flat_output_shapes(e)) out.push_back(std::move(s));
  return out;
}

// Compiles the module for the TPU target of the chip.
isa::Executable compile_for_chip(const ir::Module& module, const std::string& chip_name) {
  return tpu::compile(module, topology::chip_config(chip_name));
}

// The bytes of each argument as an executable compiled from a module takes them (64-bit
// types narrowed), or as they are (the parameters of a .pex).
std::vector<std::vector<uint8_t>> parameter_bytes(const std::vector<ir::Literal>& args,
                                                  bool compiled = true) {
  std::vector<std::vector<uint8_t>> out;
  for (const ir::Literal& a : args) {
    if (compiled) {
      out.push_back(tpu::parameter_bytes(a));
      continue;
    }
    const auto* data = reinterpret_cast<const uint8_t*>(a.bytes().data());
    out.emplace_back(data, data + a.bytes().size());
  }
  return out;
}

// Output k of a simulated run (bytes as FunctionalModel::read_output) as literals of the
// module's flattened root shapes.
std::vector<ir::Literal> output_literals(const ir::Module& module, const std::vector<std::vector<uint8_t>>& outputs) {
  std::vector<ir::Literal> out;
  std::vector<ir::Shape> shapes = flat_output_shapes(module.entry()->root()->shape());
  if (outputs.size() != shapes.size())
    fail("the simulated run has {} outputs, the module {}", outputs.size(), shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k)
    out.push_back(tpu::output_literal(outputs[k], shapes[k], k, "the simulated run"));
  return out;
}

using DeviceBytes = std::vector<std::vector<std::vector<uint8_t>>>;  // [device][k]

sim::timing::TimingOptions timing_options(const RunOptions& options, const topology::ChipConfig& chip) {
  sim::timing::TimingOptions timing;
  // A run of more than a second shows how far it is on a terminal (one line, rewritten).
  if (!options.quiet && ::isatty(STDERR_FILENO)) {
    const auto start = std::chrono::steady_clock::now();
    timing.progress = [start, clock = chip.clock_hz](uint64_t cycles) {
      const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr, "\r  simulating: {} cycles ({:.1f} us simulated) in {:.0f} s, {:.3g} cycles/s\x1b[K",
                 cycles, static_cast<double>(cycles) / clock * 1e6, host, static_cast<double>(cycles) / host);
      std::fflush(stderr);
    };
  }
  timing.instruction_trace = !options.trace_instructions.empty();
  timing.check_hazards = timing.hazards_are_errors = options.check_hazards;
  timing.timing_only = options.timing_only;
  timing.profile_host_link = options.host_link;
  timing.profile_local_flows = options.local_flows;
  timing.hbm_model = options.hbm;
  return timing;
}

// Clears the progress line, where there may be one.
void end_progress(const sim::timing::TimingOptions& timing) {
  if (timing.progress) fmt::print(stderr, "\r\x1b[K");
}

// Writes the instruction trace where --trace-instructions says, if it says.
void write_trace(const std::vector<sim::timing::InstructionRecord>& trace, const isa::Executable& exe,
                 const RunOptions& options, std::string& report) {
  if (options.trace_instructions.empty()) return;
  std::FILE* f = std::fopen(options.trace_instructions.c_str(), "wb");
  if (!f) fail("cannot write the instruction trace to {}: {}", options.trace_instructions, std::strerror(errno));
  std::string text = sim::timing::format_instruction_trace(trace, exe);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) fail("writing the instruction trace to {} failed", options.trace_instructions);
  report += fmt::format("wrote {} trace records to {}\n", trace.size(), options.trace_instructions);
}

// Writes the profile where --profile says, if it says.
void write_profile(const traces::Profile& profile, const RunOptions& options, std::string& report) {
  if (options.profile.empty()) return;
  traces::write_chrome_trace(profile, options.profile);
  report += fmt::format("wrote the profile to {} (open it in Perfetto UI)\n", options.profile);
}

// Runs an executable on every chip of its pod (one chip without) with parameters[device]
// (none in a timing-only run); returns outputs[device][k] and adds the simulator's report.
DeviceBytes run_on_pod(const isa::Executable& exe, const DeviceBytes& parameters,
                       const RunOptions& options, std::string& report) {
  DeviceBytes outputs;
  if (options.backend == "sim-functional") {
    sim::PodFunctionalModel pod(exe);
    for (int d = 0; d < pod.chips(); ++d)
      for (size_t k = 0; k < parameters[static_cast<size_t>(d)].size(); ++k)
        pod.chip(d).set_parameter(static_cast<int>(k), parameters[static_cast<size_t>(d)][k]);
    pod.run_to_completion(int64_t{1} << 40);
    for (int d = 0; d < pod.chips(); ++d) {
      outputs.emplace_back();
      for (size_t k = 0; k < exe.outputs.size(); ++k)
        outputs.back().push_back(pod.chip(d).read_output(static_cast<int>(k)));
    }
    return outputs;
  }
  const int chips = exe.pod ? exe.pod->chips() : 1;
  if (options.trace_chip < 0 || options.trace_chip >= chips)
    fail("--trace-chip {}: this executable runs on chips 0 to {}", options.trace_chip, chips - 1);
  const sim::timing::TimingOptions timing = timing_options(options, exe.chip);
  sim::timing::PodRunResult result = sim::timing::run_timed_pod(exe, parameters, timing);
  end_progress(timing);
  write_trace(result.chips[static_cast<size_t>(options.trace_chip)].trace, exe, options, report);
  result.profile.program = std::filesystem::path(options.file).stem().string();
  report += sim::timing::format_pod_summary(result, exe.chip);
  if (result.chips.size() <= 4) report += traces::format_summary(traces::summarize(result.profile));
  if (options.stats) report += sim::timing::format_statistics(result.statistics);
  write_profile(result.profile, options, report);
  for (sim::timing::TimedRunResult& chip : result.chips) outputs.push_back(std::move(chip.outputs));
  return outputs;
}

// Compiles for the TPU target and runs the executable on the functional chip model.
// The module on the first OpenCL device through the runtime: one literal per result leaf.
std::vector<ir::Literal> run_opencl(const ir::Module& module, const std::vector<ir::Literal>& args) {
  pjrt::Client& client = pjrt::client("OPENCL");
  pjrt::Device& device = *client.devices()[0];
  std::vector<std::shared_ptr<pjrt::Buffer>> buffers;
  for (const ir::Literal& a : args) buffers.push_back(client.transfer_to_device(a, device));
  std::vector<ir::Literal> out;
  for (const auto& b : client.compile(module)->execute(buffers, device)) out.push_back(b->to_literal());
  return out;
}

std::vector<ir::Literal> run_sim_functional(ir::Module& module, const std::vector<ir::Literal>& args,
                                            const RunOptions& options) {
  std::string report;  // the functional model has none
  DeviceBytes outputs = run_on_pod(compile_for_chip(module, options.chip), {parameter_bytes(args)},
                                   options, report);
  return output_literals(module, outputs.at(0));
}

// Compiles for the TPU target and runs it on the timed chip model; prints the summary and
// writes the profile and instruction trace when asked.
std::vector<ir::Literal> run_sim_timed(ir::Module& module, const std::vector<ir::Literal>& args,
                                       const RunOptions& options, std::string& report) {
  isa::Executable exe = compile_for_chip(module, options.chip);
  const sim::timing::TimingOptions timing = timing_options(options, exe.chip);
  sim::timing::TimedRunResult result = sim::timing::run_timed(
      exe, options.timing_only ? std::vector<std::vector<uint8_t>>{} : parameter_bytes(args), timing);
  end_progress(timing);
  result.profile.program = module.name();
  report = traces::format_summary(traces::summarize(result.profile));
  report += sim::timing::format_host_link(result, exe.chip);
  if (options.stats) report += sim::timing::format_statistics(result.statistics);
  write_profile(result.profile, options, report);
  write_trace(result.trace, exe, options, report);
  if (options.timing_only) return {};  // no data was computed
  return output_literals(module, result.outputs);
}

// The executable of a .pex or .s file, moved onto --topology's pod when given (every chip
// a replica).
isa::Executable load_executable(const RunOptions& options) {
  isa::Executable exe;
  if (options.file.ends_with(".pex")) {
    exe = isa::read_executable(options.file);
  } else {
    std::ifstream in(options.file);
    if (!in) fail("cannot read {}", options.file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    exe = isa::assemble(text, options.file);
  }
  if (!options.topology.empty()) {
    exe.pod = topology::pod_config(options.topology);
    exe.chip = exe.pod->chip;
    exe.replicas = exe.pod->chips();
    exe.partitions = 1;
    try {
      isa::validate(exe);
    } catch (const Error& e) {
      fail("{} does not fit --topology {}: {}", options.file, options.topology, e.what());
    }
  }
  return exe;
}

ir::PrimitiveType ir_type(isa::DType t) { return *ir::type_from_name(isa::dtype_name(t)); }

// podsim run FILE.pex|FILE.s: random or named inputs per chip (rD.NAME or NAME), outputs
// per chip.
int run_executable(RunOptions options) {
  if (!options.backend_given) options.backend = "sim";
  if (options.backend != "sim" && options.backend != "sim-functional")
    fail("{} is an executable: it runs on --backend sim or sim-functional, not {}", options.file,
         options.backend);
  if (options.replicas || options.partitions)
    fail("an executable records its replicas and partitions; use --topology to run it on "
         "another pod");
  if (options.timing_only && options.backend != "sim")
    fail("--timing-only needs --backend sim (it skips the data of a timed run)");
  isa::Executable exe = load_executable(options);
  const int devices = exe.replicas * exe.partitions;
  const int chips = exe.pod ? exe.pod->chips() : 1;  // those past the devices stay idle

  std::map<std::string, ir::Literal> named;
  if (options.inputs != "random")
    for (auto& [name, value] : ir::read_safetensors(options.inputs)) named.emplace(name, std::move(value));
  DeviceBytes parameters;
  for (int d = 0; d < chips && !options.timing_only; ++d) {
    std::mt19937_64 rng(options.seed * 1000003 + static_cast<uint64_t>(d));
    std::vector<ir::Literal> args;
    for (const isa::Binding& b : exe.parameters) {
      ir::Shape shape(ir_type(b.dtype), b.dims);
      if (options.inputs == "random" || d >= devices) {
        args.push_back(random_literal(shape, rng));
        continue;
      }
      std::vector<std::string> candidates = {fmt::format("r{}.{}", d, b.name), b.name};
      auto found = std::find_if(candidates.begin(), candidates.end(),
                                [&](const std::string& n) { return named.count(n) != 0; });
      if (found == candidates.end())
        fail("{}: no tensor for parameter '{}' ({}) of chip {}; name it one of: {}", options.inputs,
             b.name, shape.to_string(false), d, fmt::join(candidates, ", "));
      if (!named.at(*found).shape().compatible(shape))
        fail("{}: tensor '{}' has shape {} but parameter '{}' is {}", options.inputs, *found,
             named.at(*found).shape().to_string(false), b.name, shape.to_string(false));
      args.push_back(named.at(*found));
    }
    parameters.push_back(parameter_bytes(args, /*compiled=*/false));
  }

  auto start = std::chrono::steady_clock::now();
  std::string report;
  DeviceBytes results = run_on_pod(exe, parameters, options, report);
  results.resize(std::min(results.size(), static_cast<size_t>(devices)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ir::NamedLiterals outputs;
  for (size_t d = 0; d < results.size() && !options.timing_only; ++d)  // (none computed)
    for (size_t k = 0; k < exe.outputs.size(); ++k) {
      const isa::Binding& b = exe.outputs[k];
      ir::Literal l(ir::Shape(ir_type(b.dtype), b.dims));
      std::memcpy(l.bytes().data(), results[d][k].data(), results[d][k].size());
      outputs.emplace_back(devices == 1 ? b.name : fmt::format("r{}.{}", d, b.name), std::move(l));
    }
  fmt::print("{}: ran on {} ({}, {} chip{}) in {:.3f} s\n", options.file, options.backend,
             exe.pod ? "pod " + exe.pod->name : "chip " + exe.chip.name, devices,
             devices == 1 ? "" : "s", seconds);
  for (const auto& [name, value] : outputs) fmt::print("  {}: {}\n", name, summary(value));
  if (options.timing_only) fmt::print("  (--timing-only: no outputs computed)\n");
  fmt::print("{}", report);
  if (!options.output.empty()) {
    ir::write_safetensors(options.output, outputs);
    fmt::print("wrote {} tensors to {}\n", outputs.size(), options.output);
  }
  return 0;
}

// "partitioned over 4 devices: 1 all-reduce (4 KiB), 2 all-gather (96 KiB)": the
// collectives the partitioner put in each device's program (loop bodies and called
// computations included, each counted once) and the bytes of their results.
std::string partition_summary(const ir::Module& module) {
  std::map<std::string, std::pair<int64_t, int64_t>> collectives;  // count, result bytes
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions()) {
      if (!ir::is_collective(i->opcode())) continue;
      int64_t bytes = i->shape().byte_size();
      for (const ir::Shape& e : i->shape().is_tuple() ? i->shape().elements() : std::vector<ir::Shape>{})
        bytes += e.byte_size();
      auto& [count, total] = collectives[std::string(ir::opcode_name(i->opcode()))];
      ++count;
      total += bytes;
    }
  std::string out = fmt::format("partitioned over {} devices: ", module.num_partitions);
  if (collectives.empty()) return out + "no collectives";
  bool first = true;
  for (const auto& [name, figures] : collectives) {
    out += fmt::format("{}{} {} ({:.1f} KiB)", first ? "" : ", ", figures.first, name, figures.second / 1024.0);
    first = false;
  }
  return out;
}

int run(const RunOptions& options) {
  if (options.file.ends_with(".pex") || options.file.ends_with(".s")) return run_executable(options);
  define_custom_calls(options.custom_calls);
  auto module = ir::parse_module_file(options.file);
  ir::verify_module(*module, options.file);

  std::optional<topology::PodConfig> pod;
  if (!options.topology.empty()) {
    if (options.backend != "sim" && options.backend != "sim-functional" && options.backend != "cpu")
      fail("--topology runs on the simulated pod (--backend sim or sim-functional), or sets the "
           "replicas of --backend cpu");
    pod = topology::pod_config(options.topology);
  }
  std::map<std::string, ir::Literal> named;
  if (options.inputs != "random")
    for (auto& [name, value] : ir::read_safetensors(options.inputs)) named.emplace(name, std::move(value));

  // SPMD: the module partitioned by its shardings, each partition running on its pieces
  // of the whole inputs; the pieces of the result are put back together.
  const int64_t spmd = options.partitions ? options.partitions : options.spmd ? module->num_partitions : 0;
  std::vector<ir::Literal> whole_args;
  const ir::Shape whole_result = module->entry()->root()->shape();
  if (!spmd && !options.save_partitioned.empty()) fail("--save-partitioned needs --partitions N or --spmd");
  if (spmd) {
    if (options.replicas > 1) fail("--partitions runs one replica; drop --replicas");
    if (pod && spmd > pod->chips())
      fail("{} needs {} devices (partitions); --topology {} has {} chips", options.file, spmd, options.topology,
           pod->chips());
    if (!options.timing_only) whole_args = device_arguments(*module->entry(), options, named, 0, 1);
    passes::spmd_partition(*module, spmd, pod ? &*pod : nullptr);
    if (spmd > 1) fmt::print("{}\n", partition_summary(*module));
    if (!options.save_partitioned.empty()) {
      std::ofstream f(options.save_partitioned);
      if (!(f << ir::print_module(*module))) fail("cannot write {}", options.save_partitioned);
    }
  }

  // Custom calls with a meaning as it, for every backend (the evaluator's too).
  passes::make_custom_call_expander()->run(*module);

  ir::EvalOptions eval;
  // On a pod: --replicas, else the module's replica_count, else a replica per chip; the
  // replicas run on the first chips in device order, the others stay idle.
  eval.replicas = spmd                                ? 1
                  : options.replicas                  ? options.replicas
                  : module->replica_count > 1 || !pod ? module->replica_count
                                                      : pod->chips();
  eval.partitions = spmd ? spmd : pod ? 1 : module->num_partitions;
  if (eval.replicas < 1 || eval.partitions < 1 || eval.replicas * eval.partitions > 4096)
    fail("--replicas x --partitions must be between 1 and 4096 devices");
  int64_t devices = eval.replicas * eval.partitions;
  if (pod && devices > pod->chips())
    fail("{} needs {} devices ({}); --topology {} has {} chips", options.file, devices,
         spmd ? "partitions" : "replicas", options.topology, pod->chips());

  std::vector<std::vector<ir::Literal>> args;
  // A timing-only run reads no inputs: none are made.
  for (int64_t d = 0; d < devices && !options.timing_only; ++d) {
    if (!spmd) {
      args.push_back(device_arguments(*module->entry(), options, named, d, devices));
      continue;
    }
    std::vector<ir::Literal>& pieces = args.emplace_back();
    for (size_t k = 0; k < whole_args.size(); ++k)
      pieces.push_back(
          ir::shard_literal(whole_args[k], module->entry()->parameter(static_cast<int64_t>(k))->sharding().value_or(ir::Sharding{}), d));
  }

  if (options.timing_only && options.backend != "sim")
    fail("--timing-only needs --backend sim (it skips the data of a timed run)");
  if (options.timing_only && !options.output.empty())
    fail("--timing-only computes no outputs; drop --output, or run without --timing-only");
  if (devices > 1 && options.backend == "opencl")
    fail("--backend opencl runs one device; {} needs {}", options.file, devices);
  if (devices > 1 && options.backend.starts_with("sim") && !pod)
    fail("--backend {} runs one chip; several replicas need --topology (a simulated pod)", options.backend);
  // The simulated pod, where one runs it; --topology with the CPU only sets the replicas.
  const bool on_pod = pod && options.backend.starts_with("sim");
  auto start = std::chrono::steady_clock::now();
  std::vector<ir::Literal> results;
  std::string sim_report;
  // A device's result: its output arrays, a tuple where the root is one.
  auto whole = [&](std::vector<ir::Literal> flat) {
    return module->entry()->root()->shape().is_tuple() ? ir::Literal::tuple(std::move(flat)) : std::move(flat.at(0));
  };
  if (on_pod) {
    // Every chip runs the module as one replica, on its own inputs; collectives run
    // over the pod's links.
    isa::Executable exe = tpu::compile(*module, tpu::Target(*pod, eval.replicas, eval.partitions));
    DeviceBytes parameters;
    for (const std::vector<ir::Literal>& a : args) parameters.push_back(parameter_bytes(a));
    // Idle chips (no replica) take zeros of the same sizes.
    for (int64_t d = devices; d < pod->chips() && !parameters.empty(); ++d) {
      parameters.push_back(parameters[0]);
      for (auto& bytes : parameters.back()) std::fill(bytes.begin(), bytes.end(), 0);
    }
    DeviceBytes outputs = run_on_pod(exe, parameters, options, sim_report);
    outputs.resize(static_cast<size_t>(std::min<int64_t>(devices, static_cast<int64_t>(outputs.size()))));
    for (const auto& device : outputs) {
      if (options.timing_only) break;
      std::vector<ir::Literal> flat = output_literals(*module, device);
      results.push_back(whole(std::move(flat)));
    }
  } else if (options.backend == "eval") {
    results = ir::evaluate_spmd(*module, args, eval);
  } else if (options.backend == "cpu" && devices > 1) {
    // Replicas run together in process, as the CPU devices of the runtime run them: the
    // plan on a thread per device, collectives computed by the evaluator (exact,
    // deterministic).
    module->replica_count = eval.replicas;
    module->num_partitions = eval.partitions;
    std::vector<std::vector<const ir::Literal*>> pointers(args.size());
    for (size_t d = 0; d < args.size(); ++d)
      for (const ir::Literal& a : args[d]) pointers[d].push_back(&a);
    for (std::vector<ir::Literal>& flat : cpu::compile(*module)->run_devices(pointers))
      results.push_back(whole(std::move(flat)));
  } else {
    std::vector<ir::Literal> flat;
    if (options.backend == "cpu") {
      std::vector<const ir::Literal*> pointers;
      for (const ir::Literal& a : args[0]) pointers.push_back(&a);
      flat = cpu::compile(*module)->run(pointers);
    } else if (options.backend == "opencl") {
      flat = run_opencl(*module, args[0]);
    } else if (options.backend == "sim") {
      flat = run_sim_timed(*module, options.timing_only ? std::vector<ir::Literal>{} : args[0], options, sim_report);
    } else {
      flat = run_sim_functional(*module, args[0], options);
    }
    if (!options.timing_only)
      results.push_back(whole(std::move(flat)));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (spmd && !results.empty())
    results = {ir::unshard_literal(results, module->entry()->root()->sharding().value_or(ir::Sharding{}), whole_result)};

  ir::NamedLiterals outputs;
  for (int64_t d = 0; d < static_cast<int64_t>(results.size()); ++d) {
    std::string prefix = results.size() == 1 ? "" : fmt::format("r{}.", d);
    const ir::Literal& r = results[static_cast<size_t>(d)];
    if (r.shape().is_tuple())
      for (size_t i = 0; i < r.elements().size(); ++i) flatten(r.elements()[i], fmt::format("{}out{}", prefix, i), outputs);
    else
      flatten(r, prefix + "out0", outputs);
  }
  fmt::print("{}: ran on {} ({} device{}) in {:.3f} s\n", options.file,
             on_pod                               ? options.backend + ", pod " + pod->name
             : options.backend.starts_with("sim") ? options.backend + ", chip " + options.chip
                                                  : options.backend,
             devices, devices == 1 ? "" : "s", seconds);
  for (const auto& [name, value] : outputs) fmt::print("  {}: {}\n", name, summary(value));
  if (options.timing_only) fmt::print("  (--timing-only: no outputs computed)\n");
  if (!sim_report.empty()) fmt::print("{}", sim_report);
  if (!options.output.empty()) {
    ir::write_safetensors(options.output, outputs);
    fmt::print("wrote {} tensors to {}\n", outputs.size(), options.output);
  }
  return 0;
}

}  // namespace

void add_custom_calls_option(CLI::App& command, std::vector<std::string>& files) {
  command
      .add_option("--custom-calls", files,
                  "HLO files defining custom-call targets: each computation that no other in its "
                  "file calls "
                  "gives the meaning of the target of its name (characters a name cannot hold as "
                  "'_'), used by "
                  "every backend; a definition on scalars also applies elementwise to arrays")
      ->check(CLI::ExistingFile);
}

void define_custom_calls(const std::vector<std::string>& files) {
  for (const std::string& file : files)
    passes::define_custom_calls(*ir::parse_module_file(file), file);
}

Command add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run", "Run an HLO text module (or an executable: .pex, .s) and summarise its outputs");
  auto options = std::make_shared<RunOptions>();
  cmd->add_option("file", options->file,
                  "HLO text file (XLA's format), or an executable: .pex (podsim compile / asm) or "
                  ".s (assembler text), run on the simulator")
      ->required()
      ->check(CLI::ExistingFile);
  auto* backend = cmd->add_option("--backend", options->backend,
                  "Where to run: eval (the reference evaluator), cpu (the host-CPU target), sim-functional "
                  "(the TPU target on the functional chip model), sim (the same on the cycle-approximate timed "
                  "chip model: prints a profile summary), opencl (the first OpenCL device: a GPU where there is "
                  "one; PODSIM_OPENCL_DEVICE picks another)")
      ->capture_default_str()
      ->check(CLI::IsMember({"eval", "cpu", "sim-functional", "sim", "opencl"}));
  cmd->add_option("--topology", options->topology,
                  "Run on a simulated pod (v5e-8, v4:2x2x2, v5e-16x2, ...; `podsim topology list`): "
                  "every chip runs a replica of the module on its own inputs, or the executable "
                  "moved onto that pod; with --backend cpu, a replica per chip of it in process");
  cmd->add_option("--chip", options->chip, "Chip preset or TOML file for --backend sim-functional and sim")
      ->capture_default_str();
  cmd->add_option("--inputs", options->inputs,
                  "'random', or a safetensors file with one tensor per parameter, named after the "
                  "parameter, argN, or rD.argN for device D")
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--replicas", options->replicas, "Replicas to run (default: the module's replica_count)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--partitions", options->partitions,
                  "SPMD: partition the module over N devices by its shardings (sharding propagation, "
                  "then the partitioner); inputs and outputs are whole values")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--spmd", options->spmd, "SPMD over the module's num_partitions (as --partitions)");
  cmd->add_option("--save-partitioned", options->save_partitioned,
                  "SPMD: write the partitioned module (the program every device runs, HLO text) here");
  cmd->add_option("--output", options->output, "Write the outputs to this safetensors file");
  add_custom_calls_option(*cmd, options->custom_calls);
  cmd->add_option("--profile", options->profile,
                  "--backend sim: write the run's profile (Chrome trace JSON, opens in Perfetto UI) here");
  cmd->add_option("--trace-instructions", options->trace_instructions,
                  "--backend sim: write every instruction's unit, issue, start and end cycle and source op "
                  "(CSV) here");
  cmd->add_option("--trace-chip", options->trace_chip,
                  "--backend sim on a pod: the device id of the chip --trace-instructions traces (default 0)");
  cmd->add_flag("--check-hazards", options->check_hazards,
                "--backend sim: fail if a DMA races with an access no synchronisation orders");
  cmd->add_flag("--quiet", options->quiet,
                "--backend sim: no progress line (one shows on a terminal when a run takes more "
                "than a second)");
  cmd->add_flag("--stats", options->stats,
                "--backend sim: print every unit model's statistics (totals over the units; "
                "`podsim models` says what each counts)");
  cmd->add_flag("--host-link", options->host_link,
                "--backend sim: show the parameters' and outputs' transfers over the host link in the "
                "profile and summary (a Host link track before and after the program)");
  cmd->add_flag("--local-flows", options->local_flows,
                "--backend sim --profile: also an arrow from each DMA engine to the HBM traffic of each of its "
                "transfers (arrows between chips are always there; these grow the file by about 400 bytes a DMA)");
  cmd->add_flag("--timing-only", options->timing_only,
                "--backend sim: model the cycles without computing any data (much faster; no outputs; "
                "a loop whose condition is computed data runs as if it were zero)");
  cmd->add_option("--hbm", options->hbm,
                  "--backend sim: how HBM channels serve requests: request-time (the first free "
                  "gap at or after each request) or channels (in the order they are made; "
                  "sim/timing/README.md)")
      ->capture_default_str();
  return {cmd, [options, backend]() {
            options->backend_given = backend->count() > 0;
            return run(*options);
          }};
}

}  // namespace podsim::tools
