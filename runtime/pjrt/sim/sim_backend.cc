#include "runtime/pjrt/sim/sim_backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/tpu/tpu_compiler.h"
#include "runtime/pjrt/host_device.h"
#include "runtime/pjrt/replicated.h"
#include "runtime/debug/metrics.h"
#include "sim/timing/timed_chip.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"

namespace podsim::pjrt {
namespace {

// PODSIM_CHECK_HAZARDS=1: every run goes through the hazard checker, and a hazard
// fails the run (the compiled code is validated cycle by cycle).
bool check_hazards() {
  const char* value = std::getenv("PODSIM_CHECK_HAZARDS");  // per run: cheap next to a simulation
  return value != nullptr && std::string_view(value) == "1";
}

std::atomic<bool>& profiling() {
  static std::atomic<bool> on{false};
  return on;
}
std::mutex& last_run_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::optional<SimRun>& last_run() {
  static std::optional<SimRun> run;
  return run;
}

sim::timing::TimingOptions timing_options() {
  sim::timing::TimingOptions options;
  options.profile = profiling().load();
  options.check_hazards = options.hazards_are_errors = check_hazards();
  return options;
}

void keep_last_run(SimRun run) {
  std::lock_guard lock(last_run_mutex());
  last_run() = std::move(run);
}

// What a run needs of an executable (shared with its queued runs, which may outlive it):
// the program, the module's name and its output shapes. Arguments are narrowed to the
// program's 32-bit types and results widened back (PyTorch/XLA's behaviour on TPUs).
struct SimProgram {
  std::shared_ptr<const isa::Executable> exe;
  std::string name;
  std::vector<ir::Shape> output_shapes;

  std::vector<ir::Literal> results(std::vector<std::vector<uint8_t>>& outputs, int device) const {
    const std::string run = device < 0 ? "the simulated run of " + name
                                       : fmt::format("chip {} of the pod run of {}", device, name);
    if (outputs.size() != output_shapes.size())
      fail("{} has {} outputs, expected {}", run, outputs.size(), output_shapes.size());
    std::vector<ir::Literal> literals;
    for (size_t k = 0; k < output_shapes.size(); ++k)
      literals.push_back(tpu::output_literal(outputs[k], output_shapes[k], k, run));
    return literals;
  }

  std::vector<ir::Literal> run_chip(std::span<const ir::Literal* const> args) const {
    std::vector<std::vector<uint8_t>> parameters;
    parameters.reserve(args.size());
    for (const ir::Literal* arg : args) parameters.push_back(tpu::parameter_bytes(*arg));
    sim::timing::TimingOptions options = timing_options();
    sim::timing::TimedRunResult run = sim::timing::run_timed(*exe, parameters, options);
    debug::counter_add("SimulatedCycles", static_cast<int64_t>(run.cycles));
    std::vector<ir::Literal> literals = results(run.outputs, -1);
    if (options.profile) {
      run.profile.program = name;
      keep_last_run({name, run.cycles, run.seconds, 1, 0, 0, std::move(run.profile)});
    }
    return literals;
  }

  std::vector<std::vector<ir::Literal>> run_pod(
      const std::vector<std::vector<const ir::Literal*>>& args) const {
    std::vector<std::vector<std::vector<uint8_t>>> parameters(args.size());
    for (size_t d = 0; d < args.size(); ++d)
      for (const ir::Literal* arg : args[d]) parameters[d].push_back(tpu::parameter_bytes(*arg));
    sim::timing::TimingOptions options = timing_options();
    sim::timing::PodRunResult run = sim::timing::run_timed_pod(*exe, parameters, options);
    debug::counter_add("SimulatedCycles", static_cast<int64_t>(run.cycles));
    std::vector<std::vector<ir::Literal>> literals;  // the replicas' (idle chips have none)
    for (size_t d = 0; d < args.size(); ++d)
      literals.push_back(results(run.chips[d].outputs, static_cast<int>(d)));
    if (options.profile) {
      run.profile.program = name;
      keep_last_run({name, run.cycles, run.seconds, static_cast<int>(run.chips.size()),
                     run.ici_bytes, run.dcn_bytes, std::move(run.profile)});
    }
    return literals;
  }
};

// Holds the module as traced (its parameter and result types are what buffers have)
// and the program compiled from its 64-bit-narrowed form. A replicated program (a
// pod's) runs through the client's rendezvous.
class SimExecutable final : public Executable {
 public:
  SimExecutable(std::unique_ptr<ir::Module> module, isa::Executable program,
                ReplicaRendezvous& rendezvous)
      : module_(std::move(module)),
        program_(std::make_shared<const SimProgram>(
            SimProgram{std::make_shared<const isa::Executable>(std::move(program)),
                       module_->name(), entry_output_shapes(*module_)})),
        rendezvous_(rendezvous),
        parameter_shapes_(entry_parameter_shapes(*module_)) {
    for (const ir::Shape& shape : parameter_shapes_) info_.argument_bytes += shape.byte_size();
    for (const ir::Shape& shape : program_->output_shapes) info_.output_bytes += shape.byte_size();
    for (const isa::Program& p : program_->exe->programs)
      info_.program_bytes += static_cast<int64_t>(p.instructions.size() * sizeof(isa::Instruction));
  }

  const ir::Module& module() const override { return *module_; }
  const ExecutableInfo& info() const override { return info_; }

  // The module's text, then the program: deserialize() needs both.
  std::string serialize() const override {
    std::string text = ir::print_module(*module_);
    std::vector<uint8_t> bytes = isa::serialize(*program_->exe);
    uint64_t length = text.size();
    std::string out(sizeof length, '\0');
    std::memcpy(out.data(), &length, sizeof length);
    out += text;
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return out;
  }

  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override {
    const isa::Executable& exe = *program_->exe;
    if (exe.replicas * exe.partitions > 1)
      return rendezvous_.execute(
          program_.get(), module_->name(), exe.replicas * exe.partitions, parameter_shapes_,
          program_->output_shapes, arguments, device,
          [program = program_](const auto& args) { return program->run_pod(args); });
    return execute_on_host(
        module_->name(), parameter_shapes_, program_->output_shapes, arguments, device,
        DeviceKind::kSim,
        [program = program_](std::span<const ir::Literal* const> args) { return program->run_chip(args); });
  }

 private:
  std::unique_ptr<ir::Module> module_;
  std::shared_ptr<const SimProgram> program_;
  ReplicaRendezvous& rendezvous_;
  std::vector<ir::Shape> parameter_shapes_;
  ExecutableInfo info_;
};

class SimClient final : public Client {
 public:
  SimClient(topology::ChipConfig chip, std::optional<topology::PodConfig> pod)
      : chip_(std::move(chip)), pod_(std::move(pod)) {
    const int chips = pod_ ? pod_->chips() : 1;
    for (int d = 0; d < chips; ++d) {
      owned_.push_back(std::make_unique<HostDevice>(*this, DeviceKind::kSim, d,
                                                    static_cast<int64_t>(chip_.hbm_bytes)));
      devices_.push_back(owned_.back().get());
    }
    rendezvous_ = std::make_unique<ReplicaRendezvous>(devices_, DeviceKind::kSim);
  }

  DeviceKind kind() const override { return DeviceKind::kSim; }
  std::span<Device* const> devices() const override { return devices_; }

  // The whole configuration, not just its name: a TOML file may change any field.
  std::string target() const override {
    return fmt::format("sim/{}/{}{}", tpu::kCompilerVersion, topology::to_toml(chip_),
                       pod_ ? topology::to_toml(*pod_) : "");
  }

  // One replica: the chip's program. Several: the pod's, every chip a replica.
  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    debug::ScopedTimer timer("CompileTime");
    const int64_t devices = module.replica_count * module.num_partitions;
    isa::Executable program;
    if (devices == 1) {
      program = tpu::compile(module, chip_);
    } else {
      // On fewer devices than the pod has chips, the first ones in device order (XLA's
      // default assignment); the others idle.
      if (!pod_ || devices > pod_->chips())
        fail("{} runs on {} devices ({} replicas x {} partitions) but PODSIM_TOPOLOGY={} has "
             "{} chip(s); name a pod of at least {} chips (e.g. {}-{})",
             module.name(), devices, module.replica_count, module.num_partitions, name(),
             devices_.size(), devices, chip_.name, devices);
      tpu::Target target(*pod_, module.replica_count, module.num_partitions);
      program = tpu::compile(module, target);
    }
    return std::make_shared<SimExecutable>(ir::parse_module(ir::print_module(module), module.name()),
                                           std::move(program), *rendezvous_);
  }

  std::shared_ptr<Executable> deserialize(std::string_view serialized) override {
    uint64_t length = 0;
    if (serialized.size() < sizeof length) fail("serialized SIM executable: truncated");
    std::memcpy(&length, serialized.data(), sizeof length);
    if (length > serialized.size() - sizeof length) fail("serialized SIM executable: truncated");
    std::string_view text = serialized.substr(sizeof length, length);
    std::string_view bytes = serialized.substr(sizeof length + length);
    auto module = ir::parse_module(text, "<serialized SIM executable>");
    isa::Executable program = isa::deserialize(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               bytes.size(), "<serialized SIM executable>");
    if (!(program.chip == chip_))
      fail("serialized SIM executable: built for chip {}, not {}", program.chip.name, chip_.name);
    if (program.pod && !(pod_ && *program.pod == *pod_))
      fail("serialized SIM executable: built for pod {}, not {}", program.pod->name, name());
    return std::make_shared<SimExecutable>(std::move(module), std::move(program), *rendezvous_);
  }

  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) override {
    return host_transfer(std::move(literal), device, DeviceKind::kSim);
  }

  void replicas_starting() override { rendezvous_->start(); }
  void replica_stopped(Device& device, const std::string& why) override {
    rendezvous_->stopped(device, why);
  }

 private:
  const topology::PodConfig* pod() const override { return pod_ ? &*pod_ : nullptr; }
  const std::string& name() const { return pod_ ? pod_->name : chip_.name; }

  topology::ChipConfig chip_;
  std::optional<topology::PodConfig> pod_;
  // Each device's destructor drains its queue; the rendezvous goes first.
  std::vector<std::unique_ptr<HostDevice>> owned_;
  std::vector<Device*> devices_;
  std::unique_ptr<ReplicaRendezvous> rendezvous_;
};

}  // namespace

std::string sim_topology_from_env() {
  const char* value = std::getenv("PODSIM_TOPOLOGY");
  return value != nullptr && *value != '\0' ? value : kDefaultSimTopology;
}

std::unique_ptr<Client> make_sim_client(const std::string& topology) {
  std::string name = topology.empty() ? sim_topology_from_env() : topology;
  try {
    if (topology::names_a_chip(name))
      return std::make_unique<SimClient>(topology::chip_config(name), std::nullopt);
    std::optional<topology::PodConfig> found;
    try {
      found = topology::pod_config(name);
    } catch (const Error& e) {
      std::string chips;
      for (const std::string& preset : topology::preset_names())
        chips += (chips.empty() ? "" : ", ") + preset;
      fail("neither a chip ({}, or a chip TOML file) nor a pod: {}", chips, e.what());
    }
    topology::PodConfig pod = std::move(*found);
    topology::ChipConfig chip = pod.chip;
    return std::make_unique<SimClient>(std::move(chip), std::move(pod));
  } catch (const Error& e) {
    fail("SIM backend (PODSIM_TOPOLOGY={}): {}", name, e.what());
  }
}

void set_sim_profiling(bool on) {
  profiling() = on;
  if (!on) {
    std::lock_guard lock(last_run_mutex());
    last_run().reset();
  }
}

std::optional<SimRun> last_sim_run() {
  std::lock_guard lock(last_run_mutex());
  return last_run();
}

}  // namespace podsim::pjrt
