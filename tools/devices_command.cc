// podsim devices: every backend's devices with their figures (CPU, the simulated chip or
// pod of PODSIM_TOPOLOGY, every OpenCL device found), and why a backend is unavailable.
#include <fmt/core.h>

#include <thread>

#include "common/error.h"
#include "runtime/pjrt/opencl/opencl_backend.h"
#include "runtime/pjrt/sim/sim_backend.h"
#include "runtime/pjrt/device.h"
#include "tools/commands.h"

namespace podsim::tools {
namespace {

std::string gib(int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (int64_t{1} << 30))
                   : "no limit";
}

void list(const std::string& backend, const std::string& what) {
  fmt::print("{} ({})\n", backend, what);
  try {
    pjrt::Client& client = pjrt::client(backend);
    for (pjrt::Device* d : client.devices())
      fmt::print("  {:<10} memory {}\n", d->name(), gib(d->memory_stats().bytes_limit));
  } catch (const Error& e) {
    fmt::print("  unavailable: {}\n", e.what());
  }
}

}  // namespace

Command add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "devices", "List every backend's devices (PODSIM_DEVICE chooses the default)");
  return {cmd, [] {
            list("CPU", fmt::format("the host: {} hardware threads; PODSIM_CPU_DEVICES devices",
                                    std::thread::hardware_concurrency()));
            list("SIM",
                 fmt::format("simulated {}; PODSIM_TOPOLOGY", pjrt::sim_topology_from_env()));
            list("OPENCL", "GPUs first; PODSIM_OPENCL_DEVICE keeps one");
            const std::vector<std::string> found = pjrt::describe_opencl_devices();
            for (size_t i = 0; i < found.size(); ++i) fmt::print("  found {}: {}\n", i, found[i]);
            return 0;
          }};
}

}  // namespace podsim::tools
