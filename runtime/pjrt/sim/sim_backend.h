// The simulated-chip backend of the device interface (PODSIM_DEVICE=SIM): compiles a
// module for the TPU target (compiler/tpu) and runs the executable on the
// cycle-approximate timing model (sim/timing), which computes through the functional
// model (sim/functional). PODSIM_TOPOLOGY names what is simulated: a chip (a preset
// name from `podsim topology list`, or a chip TOML file; one device) or a pod (a slice
// name such as v5e-8, a shape such as v5e:2x2, or a pod TOML file; one device per chip,
// in the pod's device order). By default the small single-core v5e chip.
//
// A module with one replica runs on the chip of the device it is launched on. A module
// with replica_count R > 1 (collectives between replicas) is compiled for the pod, and
// its launches on devices 0 .. R-1 (one per device, from any threads) run together as
// one pod simulation: every chip and the ICI/DCN links between them in one SystemC run
// (runtime/pjrt/replicated.h says how launches meet and how mismatches fail). R
// must be the pod's chip count.
//
// Each run adds its simulated cycles to the SimulatedCycles counter (a pod run once, its
// last chip's end); with profiling on, the last run's profile is kept (last_sim_run()).
// PODSIM_CHECK_HAZARDS=1 runs the hazard checker on every run and makes a hazard an
// error. Device data lives in host memory and is placed in the simulated HBM for each
// run. The chip has no 64-bit lanes: as PyTorch/XLA does on TPUs, s64/u64/f64 values are
// computed as s32/u32/f32 (integer inputs saturate at the 32-bit range, computed
// integers wrap, f64 rounds to f32) and converted back to their own types in the results.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/pjrt/device.h"
#include "traces/profile.h"

namespace podsim::pjrt {

inline constexpr const char* kDefaultSimTopology = "v5e";

// The chip or pod PODSIM_TOPOLOGY names (kDefaultSimTopology when unset).
std::string sim_topology_from_env();

// A SIM client for a chip or pod given by name or TOML path ("" : from the environment).
std::unique_ptr<Client> make_sim_client(const std::string& topology = "");

// Profiling of SIM runs (off by default: a profile has a span per instruction).
void set_sim_profiling(bool on);

// The most recent run on SIM devices since profiling was turned on (a pod run: every
// chip's profile and its links).
struct SimRun {
  std::string program;  // the module's name
  uint64_t cycles = 0;
  double seconds = 0;
  int chips = 1;
  double ici_bytes = 0;  // pod runs: bytes over ICI links (a byte counts once per hop)
  double dcn_bytes = 0;
  traces::Profile profile;
};
std::optional<SimRun> last_sim_run();

}  // namespace podsim::pjrt
