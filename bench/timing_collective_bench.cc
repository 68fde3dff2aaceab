// Collectives the compiler lowers (compiler/tpu/lower_collectives.cc) on the timed pod,
// timing-only: all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute
// (a cyclic shift over device order) of 8 KiB up to 64 MiB (1 GiB with --large) in f32,
// the bytes of the full array (the all-reduce's operand, the all-gather's result, the
// reduce-scatter's operand; one chip's array for the others), over every chip of several
// pods. Each row has the simulated time, the bus bandwidth (bytes x 2 (n - 1) / n / time
// for all-reduce, x (n - 1) / n for all-gather, reduce-scatter and all-to-all, bytes /
// time for collective-permute, as NCCL counts them) and the analytic torus model of the
// reference sheet (Google's scaling book): the larger of
//   bandwidth: those bytes over the sum of every axis's bandwidth per chip (both
//     directions, 2 x the link figure, where an axis wraps; one direction on a line);
//     all-to-all V max(A, B, C) / (4 N W) per the sheet (V: every chip's bytes, W: the
//     longest axis's bandwidth); a permute over one link;
//   latency: the group's diameter in hops x the per-hop latency (twice for all-reduce;
//     a permute: its longest route inside a slice),
// and the ratio simulated / analytic; then the SPMD partitioner's estimate of the same
// collective (compiler/passes/spmd/cost_model.h, which it weighs its choices by) and the
// ratio simulated / estimate. For a pod of several slices, all-reduce,
// all-gather and reduce-scatter add the hierarchical schedule's DCN part (a 1 / n piece
// of each chip's bytes at its share of its host's NICs, and the DCN latency); all-to-all
// and permute take the larger of their ICI time and their DCN time: the bytes that
// leave each host for another slice (all-to-all: the other slices' share of every chip's
// blocks; permute: each chip whose next chip is in another slice) through the host's NICs
// or each chip's host link, whichever is slower, plus the DCN path's latency (host link,
// switch and NIC, host link).
//
//   build/bin/bench/timing_collective_bench [--quick | --large] [--hbm MODEL] [--algorithm A] [pod ...]
//     --quick: up to 1 MiB on two pods; --large: up to 1 GiB; --hbm: the HBM model
//     (request-time, the default, or channels: sim/timing/README.md); --algorithm: the
//     all-reduce, all-gather and reduce-scatter algorithm (auto, the default: the
//     compiler's cost model; ring, one-shot, two-shot: tpu::Options::AllReduce)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/passes/spmd/cost_model.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"
#include "topology/torus.h"

namespace {

using podsim::topology::PodConfig;

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kPermute };

struct Op {
  const char* name;
  Kind kind;
};

// A module of one collective over every chip on an f32 array of `bytes` (see above).
std::string module_text(const Op& op, int64_t bytes, int chips) {
  const int64_t elements = bytes / 4, chunk = elements / chips;
  const std::string add =
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";
  switch (op.kind) {
    case Kind::kAllReduce:
      return fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[{}] parameter(0)\n"
                         "  ROOT r = f32[{}] all-reduce(x), to_apply=add\n}}\n",
                         add, elements, elements);
    case Kind::kAllGather:
      return fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                         "  ROOT r = f32[{}] all-gather(x), dimensions={{0}}\n}}\n",
                         chunk, chunk * chips);
    case Kind::kReduceScatter:
      return fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[{}] parameter(0)\n"
                         "  ROOT r = f32[{}] reduce-scatter(x), dimensions={{0}}, to_apply=add\n}}\n",
                         add, chunk * chips, chunk);
    case Kind::kAllToAll:
      return fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                         "  ROOT r = f32[{}] all-to-all(x), dimensions={{0}}\n}}\n",
                         chunk * chips, chunk * chips);
    case Kind::kPermute: {
      std::string pairs;
      for (int d = 0; d < chips; ++d) pairs += fmt::format("{}{{{},{}}}", d ? "," : "", d, (d + 1) % chips);
      return fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                         "  ROOT r = f32[{}] collective-permute(x), source_target_pairs={{{}}}\n}}\n",
                         elements, elements, pairs);
    }
  }
  return {};
}

// The bytes the bus bandwidth counts.
double bus_bytes(const Op& op, double bytes, int n) {
  switch (op.kind) {
    case Kind::kAllReduce: return bytes * 2 * (n - 1) / n;
    case Kind::kPermute: return bytes;
    default: return bytes * (n - 1) / n;
  }
}

// The analytic torus model (see above), in seconds, for one slice of the pod.
double analytic_seconds(const Op& op, double bytes, const PodConfig& pod) {
  const podsim::topology::Torus torus(pod);
  const double link = pod.ici_link_bandwidth_bytes_per_s;
  double axes_bandwidth = 0, longest = 1, longest_bandwidth = link;
  int diameter = 0;
  for (int a = 0; a < 3; ++a) {
    const int n = pod.dims()[static_cast<size_t>(a)];
    if (n < 2) continue;
    const bool wraps = pod.wraps()[static_cast<size_t>(a)];
    axes_bandwidth += wraps ? 2 * link : link;
    diameter += wraps ? n / 2 : n - 1;
    if (n >= longest) longest = n, longest_bandwidth = wraps ? 2 * link : link;
  }
  const int n = pod.chips_per_slice();
  double bandwidth = 0;
  switch (op.kind) {
    case Kind::kAllToAll:  // the sheet's V is every chip's bytes: n x bytes
      bandwidth = bytes * longest / (4.0 * longest_bandwidth);
      break;
    case Kind::kPermute: {  // each chip to the next in device order: the longest of those routes
      bandwidth = bytes / link;
      diameter = 0;
      for (int d = 0; d < n; ++d)
        if (torus.coord(d).slice == torus.coord((d + 1) % n).slice)
          diameter = std::max(diameter, torus.hops(d, (d + 1) % n));
      break;
    }
    default:
      bandwidth = bus_bytes(op, bytes, n) / axes_bandwidth;
      if (pod.slices > 1) {  // hierarchical: a 1 / n piece of each chip's bytes over DCN
        const double dcn_per_chip = pod.dcn_host_bandwidth_bytes_per_s / pod.chips_per_host();
        bandwidth += bus_bytes(op, bytes / n, pod.slices) / dcn_per_chip;
      }
  }
  double latency = (op.kind == Kind::kAllReduce ? 2 : 1) * diameter * pod.ici_link_latency_ns * 1e-9;
  if (pod.slices > 1 && op.kind != Kind::kPermute && op.kind != Kind::kAllToAll)
    latency += (op.kind == Kind::kAllReduce ? 2 : 1) * pod.dcn_latency_ns * 1e-9;
  if (pod.slices > 1 && (op.kind == Kind::kPermute || op.kind == Kind::kAllToAll)) {
    const int chips = pod.chips();
    std::vector<double> host_bytes(static_cast<size_t>(pod.hosts()), 0.0);
    double chip_bytes = 0;  // the most one chip sends over its host link
    for (int d = 0; d < chips; ++d) {
      double out = 0;
      if (op.kind == Kind::kAllToAll)
        out = bytes * (chips - pod.chips_per_slice()) / chips;
      else if (torus.coord(d).slice != torus.coord((d + 1) % chips).slice)
        out = bytes;
      host_bytes[static_cast<size_t>(torus.host(d))] += out;
      chip_bytes = std::max(chip_bytes, out);
    }
    const double dcn = std::max(*std::max_element(host_bytes.begin(), host_bytes.end()) /
                                    pod.dcn_host_bandwidth_bytes_per_s,
                                chip_bytes / pod.chip.host_link_bandwidth_bytes_per_s);
    bandwidth = std::max(bandwidth, dcn);
    latency = std::max(latency, (2 * pod.chip.host_link_latency_ns + pod.dcn_latency_ns) * 1e-9);
  }
  return std::max(bandwidth, latency);
}

// The SPMD partitioner's estimate, in seconds, of the collective over every chip.
double partitioner_seconds(const Op& op, double bytes, const PodConfig& pod) {
  const podsim::passes::spmd::CostModel costs(&pod);
  const int n = pod.chips();
  std::vector<int64_t> all;
  for (int d = 0; d < n; ++d) all.push_back(d);
  const podsim::passes::spmd::Groups groups{all};
  const double others = bytes * (n - 1) / n;
  switch (op.kind) {
    case Kind::kAllReduce: return costs.all_reduce(groups, bytes) * 1e-9;
    case Kind::kAllGather: return costs.all_gather(groups, others) * 1e-9;
    case Kind::kReduceScatter: return costs.reduce_scatter(groups, bytes) * 1e-9;
    case Kind::kAllToAll: return costs.all_to_all(groups, others) * 1e-9;
    case Kind::kPermute: {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (int d = 0; d < n; ++d) pairs.emplace_back(d, (d + 1) % n);
      return costs.permute(pairs, bytes) * 1e-9;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace podsim;
  bool quick = false, large = false;
  std::string hbm = "request-time";
  tpu::Options compile_options;
  std::vector<std::string> pods;
  for (int k = 1; k < argc; ++k) {
    if (std::strcmp(argv[k], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[k], "--hbm") == 0 && k + 1 < argc)
      hbm = argv[++k];
    else if (std::strcmp(argv[k], "--large") == 0)
      large = true;
    else if (std::strcmp(argv[k], "--algorithm") == 0 && k + 1 < argc) {
      const std::string a = argv[++k];
      using A = tpu::Options::AllReduce;
      if (a == "auto" || a == "ring" || a == "one-shot" || a == "two-shot")
        compile_options.all_reduce = a == "auto" ? A::kAuto : a == "ring" ? A::kRing : a == "one-shot" ? A::kOneShot : A::kTwoShot;
      else
        return fmt::print(stderr, "--algorithm: auto, ring, one-shot or two-shot, not '{}'\n", a), 2;
    } else if (argv[k][0] == '-') {
      fmt::print(stderr, "usage: {} [--quick | --large] [--hbm MODEL] [--algorithm A] [pod ...]\n", argv[0]);
      return std::strcmp(argv[k], "--help") == 0 ? 0 : 2;
    }
    else
      pods.emplace_back(argv[k]);
  }
  if (pods.empty())
    pods = quick ? std::vector<std::string>{"v5e:2x2", "v4:2x2x2"}
                 : std::vector<std::string>{"v5e:2x2", "v5e:4x4", "v5e:8x4", "v4:2x2x2", "v5e:2x2:slices=2"};
  const Op ops[] = {{"all-reduce", Kind::kAllReduce},
                    {"all-gather", Kind::kAllGather},
                    {"reduce-scatter", Kind::kReduceScatter},
                    {"all-to-all", Kind::kAllToAll},
                    {"permute", Kind::kPermute}};
  const int64_t max_bytes = quick ? int64_t{1} << 20 : large ? int64_t{1} << 30 : int64_t{64} << 20;
  fmt::print("{:<18} {:<15} {:>10} {:>12} {:>10} {:>12} {:>7} {:>12} {:>7} {:>8}\n", "pod", "collective", "bytes",
             "sim us", "busbw GB/s", "torus us", "ratio", "spmd est us", "ratio", "host s");
  for (const std::string& name : pods) {
    const topology::PodConfig pod = topology::pod_config(name);
    const int n = pod.chips();
    for (const Op& op : ops)
      for (int64_t bytes = 8192; bytes <= max_bytes; bytes *= 8) {
        const auto host_start = std::chrono::steady_clock::now();
        const isa::Executable exe =
            tpu::compile(*ir::parse_module(module_text(op, bytes, n)), tpu::Target(pod), compile_options);
        sim::timing::TimingOptions options;
        options.timing_only = true;
        options.hbm_model = hbm;
        const sim::timing::PodRunResult r = sim::timing::run_timed_pod(exe, {}, options);
        const double host =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
        const double b = static_cast<double>(bytes), analytic = analytic_seconds(op, b, pod);
        const double estimate = partitioner_seconds(op, b, pod);
        fmt::print("{:<18} {:<15} {:>10} {:>12.2f} {:>10.2f} {:>12.2f} {:>7.2f} {:>12.2f} {:>7.2f} {:>8.2f}\n", name,
                   op.name, bytes, r.seconds * 1e6, bus_bytes(op, b, n) / r.seconds / 1e9, analytic * 1e6,
                   r.seconds / analytic, estimate * 1e6, r.seconds / estimate, host);
        std::fflush(stdout);
      }
  }
  return 0;
}
