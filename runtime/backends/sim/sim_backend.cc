#include "runtime/backends/sim/sim_backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/tpu/tpu_compiler.h"
#include "runtime/backends/host_device.h"
#include "runtime/metrics.h"
#include "sim/timing/timed_chip.h"
#include "topology/chip_config.h"

namespace podsim::runtime {
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

// Holds the module as traced (its parameter and result types are what buffers have)
// and the program compiled from its 64-bit-narrowed form: a run converts s64/u64/f64
// arguments to 32 bits and the results back (PyTorch/XLA's behaviour on TPUs).
class SimExecutable final : public Executable {
 public:
  SimExecutable(std::unique_ptr<ir::Module> module, isa::Executable program)
      : module_(std::move(module)),
        program_(std::make_shared<const isa::Executable>(std::move(program))),
        parameter_shapes_(entry_parameter_shapes(*module_)),
        output_shapes_(entry_output_shapes(*module_)) {
    for (const ir::Shape& shape : parameter_shapes_) info_.argument_bytes += shape.byte_size();
    for (const ir::Shape& shape : output_shapes_) info_.output_bytes += shape.byte_size();
    for (const isa::Program& p : program_->programs)
      info_.program_bytes += static_cast<int64_t>(p.instructions.size() * sizeof(isa::Instruction));
  }

  const ir::Module& module() const override { return *module_; }
  const ExecutableInfo& info() const override { return info_; }

  // The module's text, then the program: deserialize() needs both.
  std::string serialize() const override {
    std::string text = ir::print_module(*module_);
    std::vector<uint8_t> bytes = isa::serialize(*program_);
    uint64_t length = text.size();
    std::string out(sizeof length, '\0');
    std::memcpy(out.data(), &length, sizeof length);
    out += text;
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return out;
  }

  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override {
    return execute_on_host(module_->name(), parameter_shapes_, output_shapes_, arguments, device,
                           DeviceKind::kSim,
                           [program = program_, name = module_->name(),
                            shapes = output_shapes_](std::span<const ir::Literal* const> args) {
                             return run_narrowed(*program, name, args, shapes);
                           });
  }

 private:
  static std::vector<ir::Literal> run_narrowed(const isa::Executable& program,
                                               const std::string& name,
                                               std::span<const ir::Literal* const> args,
                                               const std::vector<ir::Shape>& shapes) {
    std::vector<std::vector<uint8_t>> parameters;
    parameters.reserve(args.size());
    for (const ir::Literal* arg : args) parameters.push_back(tpu::parameter_bytes(*arg));
    sim::timing::TimingOptions options;
    options.profile = profiling().load();
    options.check_hazards = options.hazards_are_errors = check_hazards();
    sim::timing::TimedRunResult run = sim::timing::run_timed(program, parameters, options);
    counter_add("SimulatedCycles", static_cast<int64_t>(run.cycles));
    if (run.outputs.size() != shapes.size())
      fail("the simulated run of {} has {} outputs, expected {}", name, run.outputs.size(),
           shapes.size());
    std::vector<ir::Literal> results;
    for (size_t k = 0; k < shapes.size(); ++k)
      results.push_back(
          tpu::output_literal(run.outputs[k], shapes[k], k, "the simulated run of " + name));
    if (options.profile) {
      run.profile.program = name;
      std::lock_guard lock(last_run_mutex());
      last_run() = SimRun{name, run.cycles, run.seconds, std::move(run.profile)};
    }
    return results;
  }

  std::unique_ptr<ir::Module> module_;
  std::shared_ptr<const isa::Executable> program_;
  std::vector<ir::Shape> parameter_shapes_;
  std::vector<ir::Shape> output_shapes_;
  ExecutableInfo info_;
};

class SimClient final : public Client {
 public:
  explicit SimClient(topology::ChipConfig chip)
      : chip_(std::move(chip)),
        device_(*this, DeviceKind::kSim, 0, static_cast<int64_t>(chip_.hbm_bytes)),
        devices_{&device_} {}

  DeviceKind kind() const override { return DeviceKind::kSim; }
  std::span<Device* const> devices() const override { return devices_; }

  // The whole configuration, not just its name: a TOML file may change any field.
  std::string target() const override {
    return fmt::format("sim/{}/{}", tpu::kCompilerVersion, topology::to_toml(chip_));
  }

  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    ScopedTimer timer("CompileTime");
    isa::Executable program = tpu::compile(module, chip_);
    return std::make_shared<SimExecutable>(ir::parse_module(ir::print_module(module), module.name()),
                                           std::move(program));
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
    return std::make_shared<SimExecutable>(std::move(module), std::move(program));
  }

  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) override {
    return host_transfer(std::move(literal), device, DeviceKind::kSim);
  }

 private:
  topology::ChipConfig chip_;
  HostDevice device_;
  std::vector<Device*> devices_;
};

}  // namespace

std::string sim_chip_from_env() {
  const char* value = std::getenv("PODSIM_TOPOLOGY");
  return value != nullptr && *value != '\0' ? value : kDefaultSimChip;
}

std::unique_ptr<Client> make_sim_client(const std::string& chip) {
  std::string name = chip.empty() ? sim_chip_from_env() : chip;
  try {
    return std::make_unique<SimClient>(topology::chip_config(name));
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

}  // namespace podsim::runtime
