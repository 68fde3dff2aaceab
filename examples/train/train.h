// The training workloads behind `podsim train`: what a user reads first to see how a
// model is trained on podsim's lazy tensors (nn modules, autograd, an optimizer with a
// schedule, a device loader that marks each step), on the host CPU or on a simulated
// chip or pod, on one device or data parallel over several (one replica per chip of a
// simulated pod, or per CPU device). Each prints a progress line (step, loss, steps/s)
// and returns what it measured.
//   mlp          a multilayer perceptron on scikit-learn's handwritten digits
//   cnn          a small convolutional network (batch norm, pooling) on the same digits
//   transformer  a small character-level GPT on a text corpus from a Debian package
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/pjrt/device.h"

namespace podsim::examples {

struct TrainOptions {
  std::string device = "cpu";  // "cpu", "sim" or "opencl"
  // sim: a chip (preset or TOML file: one device) or a pod (v5e-8, v5e:2x2, TOML: one
  // replica per chip); default PODSIM_TOPOLOGY, else the v5e chip.
  std::string topology;
  int64_t replicas = 0;  // cpu: data-parallel replicas (0: one); sim: must match the pod
  int64_t steps = 0;     // 0: the workload's default
  int64_t batch = 0;     // global batch (split over replicas); 0: the workload's default
  double lr = 0;               // 0: the workload's default
  uint64_t seed = 0;
  int64_t log_every = 0;   // progress line every N steps (0: about 10 lines a run)
  // SPMD (runtime/distributed/spmd.h): a logical mesh "data=2,model=4" over the backend's devices
  // (cpu: that many CPU devices; sim: the pod's chips). The batch splits over the data
  // axis, attention and MLP weights Megatron-style over the model axis; with fsdp, each
  // weight's first free dimension also splits over the data axis where it divides (the
  // compiler gathers it where it is used).
  // --fsdp alone: a data axis over every device.
  std::string mesh;
  // With several slices (a multislice pod): the DCN part of a HybridMesh, e.g. "data=2";
  // `mesh` is then the ICI part, within each slice (Mesh::hybrid).
  std::string dcn_mesh;
  bool fsdp = false;
  std::string checkpoint;  // if set, model and optimizer are saved there at the end
  std::string profile;     // sim: write the profile of the last step here (Chrome trace JSON)
  // Between the log lines, a line on stderr that follows every step (steps per second,
  // host time, simulated cycles, ETA) where stderr is a terminal; false: none.
  bool progress = true;
};

struct TrainResult {
  std::string device;  // "CPU:0", "SIM:0" (the first replica's)
  int64_t replicas = 1;
  int64_t steps = 0;
  double first_loss = 0;  // mean loss of the first logged window
  double final_loss = 0;  // mean loss of the last logged window
  std::vector<double> losses;  // every logged window's mean loss, in order
  double steps_per_second = 0;
  std::optional<double> test_accuracy;  // classification workloads
  int64_t compilations = 0;             // graphs compiled during training (UncachedCompile)
  int64_t simulated_cycles = 0;         // on a simulated chip or pod: cycles of all steps
  // On a simulated pod, the last profiled step (each progress line profiles one): its
  // time, the most any chip spent exposed in collectives (traces::Summary), and the
  // bytes over ICI links.
  double pod_step_seconds = 0;
  double pod_collective_seconds = 0;
  double pod_ici_bytes = 0;
};

// The devices the options name, one per replica (creating the backend's client on first
// use); podsim::Error when the backend has too few.
std::vector<pjrt::Device*> training_devices(const TrainOptions& options);

TrainResult train_mlp(const TrainOptions& options, std::ostream& out);
TrainResult train_cnn(const TrainOptions& options, std::ostream& out);
TrainResult train_transformer(const TrainOptions& options, std::ostream& out);

}  // namespace podsim::examples
