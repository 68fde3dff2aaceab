// Data-parallel training steps on simulated pods: the MLP and the small GPT of `podsim
// train`, one replica per chip, on one v5e chip and on v5e slices of 4, 8, 16 and 64
// chips (global batch 64 for the MLP, 16 for the GPT, 64 for the GPT on 64 chips: each
// chip's share shrinks as the slice grows). Per run: the simulated step time, the share
// of it exposed in collectives (the TensorCores in their own instructions, waits
// included; the steps the TPU target runs between their ring steps count as compute, so
// this is the communication compute did not hide: traces::Summary), bytes over ICI per
// step, and the host's wall time per simulated step.
//
//   build/bin/bench/train_data_parallel_bench [--quick]   (--quick: the MLP only)
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "examples/train/train.h"
#include "runtime/lazy/tensor_impl.h"

namespace {

using podsim::examples::TrainOptions;
using podsim::examples::TrainResult;

void row(const std::string& workload, const std::string& topology, int64_t steps, int64_t batch) {
  podsim::lazy::reset_for_testing();
  TrainOptions options;
  options.device = "sim";
  options.topology = topology;
  options.steps = steps;
  options.batch = batch;
  options.log_every = steps;  // one progress line: the last step is profiled
  std::ostringstream log;
  const auto start = std::chrono::steady_clock::now();
  TrainResult r = workload == "mlp" ? podsim::examples::train_mlp(options, log)
                                    : podsim::examples::train_transformer(options, log);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool pod = r.replicas > 1;
  fmt::print("{:<12} {:<10} {:>6} {:>6} {:>14} {:>10} {:>12} {:>10} {:>12}\n", workload, topology,
             r.replicas, options.batch, r.simulated_cycles / std::max<int64_t>(1, r.steps),
             pod ? fmt::format("{:.1f}", r.pod_step_seconds * 1e6) : std::string("-"),
             pod ? fmt::format("{:.0f}%", 100 * r.pod_collective_seconds / r.pod_step_seconds)
                 : std::string("-"),
             pod ? fmt::format("{:.0f}", r.pod_ici_bytes / 1024) : std::string("-"),
             fmt::format("{:.3f}", wall / static_cast<double>(steps)));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  fmt::print("{:<12} {:<10} {:>6} {:>6} {:>14} {:>10} {:>12} {:>10} {:>12}\n", "workload", "topology",
             "chips", "batch", "cycles/step", "step us", "exposed comm", "ICI KiB", "host s/step");
  for (const char* topology : {"v5e", "v5e-4", "v5e-8", "v5e-16"}) row("mlp", topology, 20, 64);
  if (quick) return 0;
  row("mlp", "v5e-64", 4, 64);
  for (const char* topology : {"v5e", "v5e-4", "v5e-8", "v5e-16"}) row("transformer", topology, 6, 16);
  row("transformer", "v5e-64", 2, 64);
  return 0;
}
