#include "runtime/pjrt/cpu/cpu_backend.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/error.h"
#include "compiler/cpu/cpu_compiler.h"
#include "compiler/ir/evaluator.h"
#include "runtime/pjrt/host_device.h"
#include "runtime/pjrt/replicated.h"
#include "runtime/debug/metrics.h"

namespace podsim::pjrt {
namespace {

std::string_view host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown-arch";
#endif
}

// A module with several replicas (or partitions) runs them together in process: the
// client's rendezvous gathers every device's arguments, then the compiled plan runs as
// each device on a thread of its own, its collectives computed by the reference
// evaluator (exactly, deterministically); one replica runs the plan on the caller's
// thread.
class CpuExecutable final : public Executable {
 public:
  CpuExecutable(std::shared_ptr<const cpu::Executable> plan, ReplicaRendezvous& rendezvous)
      : plan_(std::move(plan)),
        rendezvous_(rendezvous),
        parameter_shapes_(entry_parameter_shapes(plan_->module())),
        output_shapes_(entry_output_shapes(plan_->module())) {
    const cpu::ExecutableStats& stats = plan_->stats();
    info_.argument_bytes = stats.argument_bytes;
    info_.output_bytes = stats.output_bytes;
    info_.alias_bytes = stats.alias_bytes;
    info_.intermediate_bytes = stats.intermediate_bytes;
    info_.program_bytes = stats.program_bytes;
  }

  const ir::Module& module() const override { return plan_->module(); }
  const ExecutableInfo& info() const override { return info_; }
  std::string serialize() const override { return plan_->serialize(); }

  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override {
    const ir::Module& module = plan_->module();
    if (module.replica_count * module.num_partitions > 1)
      return rendezvous_.execute(this, module.name(), module.replica_count * module.num_partitions,
                                 parameter_shapes_, output_shapes_, arguments, device,
                                 [plan = plan_](const auto& args) { return run_replicas(*plan, args); });
    return execute_on_host(plan_->module().name(), parameter_shapes_, output_shapes_, arguments, device,
                           DeviceKind::kCpu, [plan = plan_](std::span<const ir::Literal* const> args) {
                             return plan->run(std::vector<const ir::Literal*>(args.begin(), args.end()));
                           });
  }

 private:
  static std::vector<std::vector<ir::Literal>> run_replicas(
      const cpu::Executable& plan, const std::vector<std::vector<const ir::Literal*>>& args) {
    return plan.run_devices(args);
  }

  std::shared_ptr<const cpu::Executable> plan_;
  ReplicaRendezvous& rendezvous_;
  ExecutableInfo info_;
  std::vector<ir::Shape> parameter_shapes_;
  std::vector<ir::Shape> output_shapes_;
};

class CpuClient final : public Client {
 public:
  explicit CpuClient(int device_count) {
    for (int i = 0; i < device_count; ++i) {
      owned_.push_back(std::make_unique<HostDevice>(*this, DeviceKind::kCpu, i));
      devices_.push_back(owned_.back().get());
    }
    rendezvous_ = std::make_unique<ReplicaRendezvous>(devices_, DeviceKind::kCpu);
  }

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::span<Device* const> devices() const override { return devices_; }

  // Thread counts and ISA extensions do not change what a plan computes, so they are
  // left out: a cache directory stays valid across hosts of the same architecture.
  std::string target() const override {
    return fmt::format("cpu/{}/{}", cpu::kCompilerVersion, host_arch());
  }

  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    debug::ScopedTimer timer("CompileTime");
    return std::make_shared<CpuExecutable>(cpu::compile(module), *rendezvous_);
  }

  std::shared_ptr<Executable> deserialize(std::string_view serialized) override {
    return std::make_shared<CpuExecutable>(cpu::compile_serialized(serialized), *rendezvous_);
  }

  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) override {
    return host_transfer(std::move(literal), device, DeviceKind::kCpu);
  }

  void replicas_starting() override { rendezvous_->start(); }
  void replica_stopped(Device& device, const std::string& why) override {
    rendezvous_->stopped(device, why);
  }

 private:
  // Each device's destructor drains its queue before the client is gone.
  std::vector<std::unique_ptr<HostDevice>> owned_;
  std::vector<Device*> devices_;
  std::unique_ptr<ReplicaRendezvous> rendezvous_;  // last: goes before the devices
};

}  // namespace

int cpu_device_count_from_env() {
  const char* value = std::getenv("PODSIM_CPU_DEVICES");
  if (value == nullptr || *value == '\0') return 1;
  std::string_view text(value);
  int count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (ec != std::errc() || end != text.data() + text.size() || count < 1 || count > kMaxCpuDevices)
    fail("PODSIM_CPU_DEVICES={}: expected a device count from 1 to {}", text, kMaxCpuDevices);
  return count;
}

std::unique_ptr<Client> make_cpu_client(int device_count) {
  if (device_count == 0) device_count = cpu_device_count_from_env();
  if (device_count < 1 || device_count > kMaxCpuDevices)
    fail("CPU client: device count {} is not from 1 to {}", device_count, kMaxCpuDevices);
  return std::make_unique<CpuClient>(device_count);
}

}  // namespace podsim::pjrt
