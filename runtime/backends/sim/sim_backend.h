// The simulated-chip backend of the device interface (PODSIM_DEVICE=SIM): compiles a
// module for the TPU target (compiler/tpu) for one chip configuration and runs the
// executable on the cycle-approximate timing model of the chip (sim/timing), which
// computes through the functional model (sim/functional). The chip is PODSIM_TOPOLOGY: a
// preset name (`podsim topology list`) or a TOML file; by default the small single-core
// v5e. Each run adds its simulated cycles to the SimulatedCycles counter; with
// profiling on, the last run's profile is kept (last_sim_run()). PODSIM_CHECK_HAZARDS=1
// runs the hazard checker on every run and makes a hazard an error.
// Device data lives in host memory and is placed in the simulated HBM for each run.
// The chip has no 64-bit lanes: as PyTorch/XLA does on TPUs, s64/u64/f64 values are
// computed as s32/u32/f32 (integer inputs saturate at the 32-bit range, computed
// integers wrap, f64 rounds to f32) and converted back to their own types in the results.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/device.h"
#include "traces/profile.h"

namespace podsim::runtime {

inline constexpr const char* kDefaultSimChip = "v5e";

// The chip PODSIM_TOPOLOGY names (kDefaultSimChip when unset).
std::string sim_chip_from_env();

// A SIM client with one device, the chip given by name or TOML path ("" : from the
// environment).
std::unique_ptr<Client> make_sim_client(const std::string& chip = "");

// Profiling of SIM runs (off by default: a profile has a span per instruction).
void set_sim_profiling(bool on);

// The most recent run on a SIM device since profiling was turned on.
struct SimRun {
  std::string program;  // the module's name
  uint64_t cycles = 0;
  double seconds = 0;
  traces::Profile profile;
};
std::optional<SimRun> last_sim_run();

}  // namespace podsim::runtime
