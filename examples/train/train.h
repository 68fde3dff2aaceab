// The training workloads behind `podsim train`: what a user reads first to see how a
// model is trained on podsim's lazy tensors (nn modules, autograd, an optimizer with a
// schedule, a device loader that marks each step), on the host CPU or on a simulated
// chip. Each prints a progress line (step, loss, steps/s) and returns what it measured.
//   mlp          a multilayer perceptron on scikit-learn's handwritten digits
//   transformer  a small character-level GPT on a text corpus from a Debian package
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "runtime/device.h"

namespace podsim::examples {

struct TrainOptions {
  std::string device = "cpu";  // "cpu" or "sim"
  std::string chip;            // sim: a preset or TOML file (default: PODSIM_TOPOLOGY, else v5e)
  int64_t steps = 0;           // 0: the workload's default
  int64_t batch = 0;           // 0: the workload's default
  double lr = 0;               // 0: the workload's default
  uint64_t seed = 0;
  int64_t log_every = 0;   // progress line every N steps (0: about 10 lines a run)
  std::string checkpoint;  // if set, model and optimizer are saved there at the end
  std::string profile;     // sim: write the profile of the last step here (Chrome trace JSON)
};

struct TrainResult {
  std::string device;  // "CPU:0", "SIM:0"
  int64_t steps = 0;
  double first_loss = 0;  // mean loss of the first logged window
  double final_loss = 0;  // mean loss of the last logged window
  double steps_per_second = 0;
  std::optional<double> test_accuracy;  // classification workloads
  int64_t compilations = 0;             // graphs compiled during training (UncachedCompile)
  int64_t simulated_cycles = 0;         // on a simulated chip: chip cycles of all steps
};

// The device the options name (creating its backend's client on first use).
runtime::Device& training_device(const TrainOptions& options);

TrainResult train_mlp(const TrainOptions& options, std::ostream& out);
TrainResult train_transformer(const TrainOptions& options, std::ostream& out);

}  // namespace podsim::examples
