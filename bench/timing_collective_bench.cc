// Collectives the compiler lowers (compiler/tpu/lower_collectives.cc) on the timed pod,
// timing-only: all-reduce, all-gather and reduce-scatter of 8 KiB ... 64 MiB (f32, the
// bytes of the all-reduce's array and of the all-gather's result) on several pods. Each row
// has the simulated time, the bus bandwidth (bytes x 2 (n - 1) / n / time for all-reduce,
// x (n - 1) / n for the others, as NCCL counts it) and the analytic time of a
// one-direction ring over one link per chip: that factor x bytes / link bandwidth, plus
// one hop's latency per ring step (2 (n - 1) or n - 1 steps). The ratio simulated /
// analytic says how close the lowering gets to its own algorithm's bound (for a pod of
// several slices the ring also crosses DCN, slower than the ICI link the column assumes);
// the torus bounds of the published pod figures (both directions, every axis) are lower
// still.
//
//   build/bin/bench/timing_collective_bench [--quick]   (--quick: up to 1 MiB, two pods)
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"

namespace {

struct Op {
  const char* name;
  bool all_reduce;  // else all-gather / reduce-scatter: (n - 1) / n of the bytes per chip
};

// A module of one collective over every chip on an f32 array of `bytes` (the full array:
// the all-reduce's operand, the all-gather's result, the reduce-scatter's operand).
std::string module_text(const Op& op, int64_t bytes, int chips) {
  const int64_t elements = bytes / 4;
  const std::string add =
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";
  if (op.all_reduce)
    return fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[{}] parameter(0)\n"
                       "  ROOT r = f32[{}] all-reduce(x), to_apply=add\n}}\n",
                       add, elements, elements);
  if (std::string(op.name) == "all-gather")
    return fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                       "  ROOT r = f32[{}] all-gather(x), dimensions={{0}}\n}}\n",
                       elements / chips, elements / chips * chips);
  return fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[{}] parameter(0)\n"
                     "  ROOT r = f32[{}] reduce-scatter(x), dimensions={{0}}, to_apply=add\n}}\n",
                     add, elements / chips * chips, elements / chips);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace podsim;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::vector<std::string> pods =
      quick ? std::vector<std::string>{"v5e:2x2", "v4:2x2x2"}
            : std::vector<std::string>{"v5e:2x2", "v5e:4x4", "v5e:8x4", "v4:2x2x2",
                                       "v5e:2x2:slices=2"};
  const Op ops[] = {{"all-reduce", true}, {"all-gather", false}, {"reduce-scatter", false}};
  const int64_t max_bytes = quick ? int64_t{1} << 20 : int64_t{64} << 20;
  fmt::print("{:<18} {:<15} {:>10} {:>12} {:>10} {:>12} {:>7} {:>8}\n", "pod", "collective",
             "bytes", "sim us", "busbw GB/s", "ring us", "ratio", "host s");
  for (const std::string& name : pods) {
    const topology::PodConfig pod = topology::pod_config(name);
    const int n = pod.chips();
    for (const Op& op : ops)
      for (int64_t bytes = 8192; bytes <= max_bytes; bytes *= 8) {
        const auto host_start = std::chrono::steady_clock::now();
        const isa::Executable exe =
            tpu::compile(*ir::parse_module(module_text(op, bytes, n)), tpu::Target(pod));
        sim::timing::TimingOptions options;
        options.timing_only = true;
        const sim::timing::PodRunResult r = sim::timing::run_timed_pod(exe, {}, options);
        const double host =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
        const double factor = (op.all_reduce ? 2.0 : 1.0) * (n - 1) / n;
        const int steps = (op.all_reduce ? 2 : 1) * (n - 1);
        const double ring = factor * static_cast<double>(bytes) / pod.ici_link_bandwidth_bytes_per_s +
                            steps * pod.ici_link_latency_ns * 1e-9;
        fmt::print("{:<18} {:<15} {:>10} {:>12.2f} {:>10.2f} {:>12.2f} {:>7.2f} {:>8.2f}\n", name,
                   op.name, bytes, r.seconds * 1e6, factor * static_cast<double>(bytes) / r.seconds / 1e9,
                   ring * 1e6, r.seconds / ring, host);
        std::fflush(stdout);
      }
  }
  return 0;
}
