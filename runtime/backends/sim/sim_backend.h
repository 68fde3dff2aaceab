// The simulated-chip backend of the device interface (PODSIM_DEVICE=SIM): compiles a
// module for the TPU target (compiler/tpu) for one chip configuration and runs the
// executable on the simulated chip (sim/). The chip is PODSIM_TOPOLOGY: a preset name
// (`podsim topology list`) or a TOML file; by default the small single-core v5e.
// Device data lives in host memory and is placed in the simulated HBM for each run.
// The chip has no 64-bit lanes: as PyTorch/XLA does on TPUs, s64/u64/f64 values are
// computed as s32/u32/f32 (integers wrap outside the 32-bit range, f64 rounds to f32)
// and converted back to their own types in the results.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/literal.h"
#include "isa/isa.h"
#include "runtime/device.h"

namespace podsim::runtime {

inline constexpr const char* kDefaultSimChip = "v5e";

// The chip PODSIM_TOPOLOGY names (kDefaultSimChip when unset).
std::string sim_chip_from_env();

// A SIM client with one device, the chip given by name or TOML path ("" : from the
// environment).
std::unique_ptr<Client> make_sim_client(const std::string& chip = "");

// Runs an executable on the functional chip model: arguments placed in their HBM
// regions, outputs (one per output binding, with these shapes) read back.
std::vector<ir::Literal> run_on_functional_model(const isa::Executable& executable,
                                                 std::span<const ir::Literal* const> arguments,
                                                 std::span<const ir::Shape> output_shapes);

}  // namespace podsim::runtime
