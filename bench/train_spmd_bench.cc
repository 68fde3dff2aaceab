// SPMD: the partitioner's speed, and the small GPT of `podsim train transformer`
// trained SPMD on simulated v5e slices with three ways of splitting it: data parallel
// (--mesh data=N), FSDP (data=N --fsdp: every weight split too) and tensor parallel
// (data=N/4,model=4: attention and MLP weights Megatron-style over 4 chips).
//
// Partitioner: sharding propagation and the partitioner over the GPT's whole training
// step (tests/compiler/passes/testdata/gpt_train_step.hlo: forward, backward, AdamW)
// with FSDP shardings over 8 devices; instructions of the input per second.
// Training: per run the simulated step time, its share exposed in collectives, bytes
// over ICI per step and the host's wall time per simulated step.
//
//   build/bin/bench/train_spmd_bench [--quick]   (--quick: the partitioner and v5e-8)
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/passes/pass.h"
#include "examples/train/train.h"
#include "runtime/lazy/tensor_impl.h"
#include "topology/pod_config.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void partitioner_speed() {
  std::ifstream in(PODSIM_SOURCE_DIR "/tests/compiler/passes/testdata/gpt_train_step.hlo");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  int64_t instructions = 0, partitioned = 0;
  double seconds = 0;
  const podsim::topology::PodConfig pod = podsim::topology::pod_config("v5e-8");
  for (int rep = 0; rep < 20; ++rep) {
    auto m = podsim::ir::parse_module(text);
    for (podsim::ir::Instruction* p : m->entry()->parameters()) {
      const auto& dims = p->shape().dims();
      if (!dims.empty() && dims[0] % 8 == 0) {
        podsim::ir::Sharding s;
        s.kind = podsim::ir::Sharding::Kind::kTiled;
        s.tile_dims.assign(dims.size(), 1);
        s.tile_dims[0] = 8;
        for (int64_t d = 0; d < 8; ++d) s.devices.push_back(d);
        p->sharding() = s;
      }
    }
    instructions += m->instruction_count();
    const auto start = Clock::now();
    podsim::passes::spmd_partition(*m, 8, &pod);
    seconds += seconds_since(start);
    partitioned += m->instruction_count();
  }
  fmt::print("partitioner: GPT training step, {} instructions in, {} out (8 devices, FSDP): {:.2f} ms each, "
             "{:.0f} k instructions/s\n\n",
             instructions / 20, partitioned / 20, 1e3 * seconds / 20, instructions / seconds / 1e3);
}

void row(const std::string& topology, const std::string& mesh, bool fsdp, int64_t steps, int64_t batch) {
  podsim::lazy::reset_for_testing();
  unsetenv("PODSIM_DEVICE");
  podsim::examples::TrainOptions options;
  options.device = "sim";
  options.topology = topology;
  options.mesh = mesh;
  options.fsdp = fsdp;
  options.steps = steps;
  options.batch = batch;
  options.log_every = steps;  // one progress line: the last step is profiled
  std::ostringstream log;
  const auto start = Clock::now();
  podsim::examples::TrainResult r = podsim::examples::train_transformer(options, log);
  const double wall = seconds_since(start);
  fmt::print("{:<8} {:<18} {:>6} {:>12.1f} {:>12} {:>10.0f} {:>12.3f}\n", topology,
             mesh + (fsdp ? " fsdp" : ""), batch, r.pod_step_seconds * 1e6,
             fmt::format("{:.0f}%", 100 * r.pod_collective_seconds / r.pod_step_seconds), r.pod_ici_bytes / 1024,
             wall / static_cast<double>(steps));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  partitioner_speed();
  fmt::print("{:<8} {:<18} {:>6} {:>12} {:>12} {:>10} {:>12}\n", "pod", "mesh", "batch", "step us", "exposed comm",
             "ICI KiB", "host s/step");
  for (const auto& [topology, n, batch] : {std::tuple{"v5e-8", 8, 16}, std::tuple{"v5e-16", 16, 16},
                                          std::tuple{"v5e-64", 64, 64}}) {
    const std::string data = fmt::format("data={}", n);
    row(topology, data, false, 3, batch);
    row(topology, data, true, 3, batch);
    row(topology, fmt::format("data={},model=4", n / 4), false, 3, batch);
    if (quick) break;
  }
  podsim::lazy::reset_for_testing();
  return 0;
}
