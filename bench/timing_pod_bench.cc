// The timed pod model (sim/timing: ICI links, DCN) against the analytic figures, and its
// speed.
//
// 1. Link microbenchmarks on a v5e 4x4 slice (no wraparound) and a two-slice v5e:2x2 pod
//    (bench/pod_flows.h): one remote DMA of 4 KiB ... 256 MiB between neighbours, across 2
//    and 4 hops, two flows sharing one link, and one flow over DCN. Each row has the simulated time (from
//    the sender's first instruction to the receiver's wait returning) and the analytic
//    one: hops x latency + bytes / bandwidth (per flow share; DCN: the slowest stage's
//    bandwidth and the latencies of all four stages). Transfers up to 32 MiB go VMEM to
//    VMEM, larger ones HBM to HBM.
// 2. Speed: a ring all-reduce of 64 MiB per chip (reduce-scatter then all-gather, one
//    remote DMA per chunk, the sums on the VPU) on v5e slices of 8, 64 and 256 chips,
//    timing-only and (8 chips) with data: simulated chip-cycles per host second (chips x
//    cycles / seconds) and host memory per chip (the growth of the process's peak during
//    the run, each row in a process of its own; and the simulated memories alone). The chips' VMEM is raised to 256 MiB so
//    that the three 64 MiB buffers fit (a benchmark of the simulator, not of a v5e).
//
//   build/bin/bench/timing_pod_bench [--quick]   (--quick: 8 and 64 chips only)
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/pod_flows.h"
#include "isa/isa.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"
#include "topology/torus.h"

namespace {

using podsim::bench::flow_cycles;
using podsim::isa::Executable;
using podsim::sim::timing::PodRunResult;
using podsim::sim::timing::TimingOptions;
using podsim::topology::PodConfig;

void link_table() {
  const PodConfig slice = podsim::topology::pod_config("v5e:4x4");
  const PodConfig two = podsim::topology::pod_config("v5e:2x2:slices=2");
  const double clock = slice.chip.clock_hz;
  const double per_byte = 1e6 / slice.ici_link_bandwidth_bytes_per_s;  // us
  const double hop = slice.ici_link_latency_ns / 1e3;
  // DCN: host link up, NIC out (+ switch), NIC in, host link down.
  const double dcn_per_byte =
      1e6 / std::min(two.chip.host_link_bandwidth_bytes_per_s, two.dcn_host_bandwidth_bytes_per_s);
  const double dcn_latency = (2 * two.chip.host_link_latency_ns + two.dcn_latency_ns) / 1e3;
  fmt::print("Link microbenchmarks (v5e: {:.0f} GB/s per link direction, {:.2f} us per hop; "
             "DCN {:.0f} GB/s, {:.1f} us end to end)\n",
             slice.ici_link_bandwidth_bytes_per_s / 1e9, hop,
             1e6 / dcn_per_byte / 1e9, dcn_latency);
  fmt::print("{:<34} {:>10} {:>14} {:>14} {:>8}\n", "case", "bytes", "simulated us",
             "analytic us", "ratio");
  double worst = 0;
  auto row = [&](const std::string& name, int64_t bytes, uint64_t cycles, double analytic) {
    const double simulated = static_cast<double>(cycles) / clock * 1e6;
    worst = std::max(worst, std::abs(simulated / analytic - 1));
    fmt::print("{:<34} {:>10} {:>14.3f} {:>14.3f} {:>8.3f}\n", name, bytes, simulated, analytic,
               simulated / analytic);
    std::fflush(stdout);
  };
  for (int64_t bytes = 4096; bytes <= (int64_t{256} << 20); bytes *= 16) {
    const double b = static_cast<double>(bytes);
    row("neighbour (1 hop)", bytes, flow_cycles("v5e:4x4", bytes, {{0, 1}})[0],
        hop + b * per_byte);
    row("2 hops", bytes, flow_cycles("v5e:4x4", bytes, {{0, 2}})[0], 2 * hop + b * per_byte);
    row("4 hops (x then y)", bytes, flow_cycles("v5e:4x4", bytes, {{0, 10}})[0],
        4 * hop + b * per_byte);
    // Flow 1->3 has link 1->2 to itself until flow 0->2's head arrives, one hop later;
    // from then on they share it, and both land one hop after it has sent 2 x bytes (or,
    // when they do not overlap, each takes its 2 hops alone).
    const double shared_time = std::max(2 * hop + b * per_byte, hop + 2 * b * per_byte);
    std::vector<uint64_t> shared = flow_cycles("v5e:4x4", bytes, {{0, 2}, {1, 3}});
    row("2 flows share link 1->2: 0->2", bytes, shared[0], shared_time);
    row("2 flows share link 1->2: 1->3", bytes, shared[1], shared_time);
    row("DCN (slice 0 -> slice 1)", bytes,
        flow_cycles("v5e:2x2:slices=2", bytes, {{0, 4}})[0],
        dcn_latency + b * dcn_per_byte);
  }
  fmt::print("worst |simulated / analytic - 1|: {:.1f}%\n\n", 100 * worst);
}

// The ring all-reduce of `bytes` per chip with one remote DMA per chunk (see the header).
Executable ring_all_reduce(PodConfig pod, int64_t bytes) {
  const int n = pod.chips();
  const int64_t chunk = bytes / n, tile = 4096;
  pod.chip.vmem_bytes = int64_t{256} << 20;
  pod.name += " (VMEM 256 MiB)";
  std::string text = fmt::format(R"(.region x_hbm hbm 0 {0}
.region y_hbm hbm {0} {0}
.region acc vmem[0] 0 {0}
.region recv vmem[0] {0} {1}
.region out vmem[0] {2} {0}
.descriptor d0 src=x_hbm dst=acc elem=4 sizes=[{3}] src_strides=[4] dst_strides=[4]
.descriptor d1 src=acc dst=recv elem=4 sizes=[{4}] src_strides=[4] dst_strides=[4]
.descriptor d2 src=out dst=out elem=4 sizes=[{4}] src_strides=[4] dst_strides=[4]
.descriptor d3 src=out dst=y_hbm elem=4 sizes=[{3}] src_strides=[4] dst_strides=[4]
.descriptor d4 src=acc dst=out elem=4 sizes=[{4}] src_strides=[4] dst_strides=[4]
.param x x_hbm f32[{5}, 128]
.output y y_hbm f32[{5}, 128]
.program core 0
  sdev s1, 0
  sli s2, {6}
  saddi s4, s1, 1
  srem s4, s4, s2
  sli s6, {7}
  sli s7, 512
  sli s8, {8}
  saddi s9, s2, -1
  dma d0, s0, s0, q0
  sem.wait q0, 1
  sli s10, 0
rs_step:
  slt s17, s10, s9
  bz s17, rs_done
  ssub s11, s1, s10
  sadd s11, s11, s2
  srem s11, s11, s2
  smul s11, s11, s8
  smul s12, s10, s8
  dma.remote d1, s11, s12, s4, q1, q2
  sem.wait q2, 1
  ssub s18, s1, s10
  saddi s18, s18, -1
  sadd s18, s18, s2
  srem s18, s18, s2
  smul s18, s18, s8
  sli s13, 0
rs_add:
  smul s14, s13, s6
  sadd s15, s18, s14
  sadd s16, s12, s14
  vld.f32 v0, acc[s15], s7
  vld.f32 v1, recv[s16], s7
  vadd.f32 v0, v0, v1
  vst.f32 acc[s15], s7, v0
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, rs_add
  sem.wait q1, 1
  saddi s10, s10, 1
  br rs_step
rs_done:
  smul s11, s4, s8
  dma d4, s11, s11, q0
  sem.wait q0, 1
  sli s10, 0
ag_step:
  slt s17, s10, s9
  bz s17, ag_done
  saddi s11, s1, 1
  ssub s11, s11, s10
  sadd s11, s11, s2
  srem s11, s11, s2
  smul s11, s11, s8
  dma.remote d2, s11, s11, s4, q1, q3
  sem.wait q3, 1
  sem.wait q1, 1
  saddi s10, s10, 1
  br ag_step
ag_done:
  dma d3, s0, s0, q0
  sem.wait q0, 1
  halt
)",
                                 bytes, chunk * (n - 1), 2 * bytes, bytes / 4, chunk / 4,
                                 bytes / 512, n, tile, chunk);
  // The tile count of a chunk, for the add loop.
  const size_t at = text.find("  sli s6,");
  text.insert(at, fmt::format("  sli s3, {}\n", chunk / tile));
  Executable exe = podsim::isa::assemble(".pod_toml\n" + podsim::topology::to_toml(pod) +
                                         ".end\n" + text);
  return exe;
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// One row of the speed table, run in a child process so that its peak host memory is its
// own (the parent has not started SystemC's kernel when it forks).
void speed_row(const char* pod_name, bool data) {
  const int64_t bytes = int64_t{64} << 20;
  const PodConfig pod = podsim::topology::pod_config(pod_name);
  const int n = pod.chips();
  Executable exe = ring_all_reduce(pod, bytes);
  std::vector<std::vector<std::vector<uint8_t>>> params;
  if (data)
    for (int d = 0; d < n; ++d) {
      std::vector<float> x(static_cast<size_t>(bytes / 4), static_cast<float>(d));
      std::vector<uint8_t> raw(static_cast<size_t>(bytes));
      std::memcpy(raw.data(), x.data(), raw.size());
      params.push_back({std::move(raw)});
    }
  TimingOptions options;
  options.timing_only = !data;
  options.profile = false;
  const int64_t before = peak_rss_bytes();
  auto start = std::chrono::steady_clock::now();
  PodRunResult r = podsim::sim::timing::run_timed_pod(exe, params, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (data) {  // every chip's y is 0 + 1 + ... + (n - 1) everywhere
    const float want = static_cast<float>(n * (n - 1) / 2);
    for (const auto& chip : r.chips) {
      float got;
      std::memcpy(&got, chip.outputs[0].data() + bytes - 4, 4);
      if (got != want) fmt::print("WRONG RESULT: {} instead of {}\n", got, want);
    }
  }
  // Bus bandwidth, as NCCL defines it for all-reduce: 2 (n - 1) / n x bytes / time.
  const double bus = 2.0 * (n - 1) / n * static_cast<double>(bytes) / r.seconds / 1e9;
  // Host memory per chip: the run's growth of the peak (parameters made before it are not
  // counted), and the simulated memories alone.
  fmt::print("{:<9} {:>6} {:>12} {:>14.1f} {:>10.2f} {:>16.3g} {:>13.2f} {:>13.2f} {:>10.1f}\n",
             pod_name, n, data ? "with data" : "timing-only", r.seconds * 1e6, seconds,
             static_cast<double>(r.cycles) * n / seconds,
             static_cast<double>(peak_rss_bytes() - before) / n / (1 << 20),
             static_cast<double>(r.host_memory_bytes) / n / (1 << 20), bus);
  std::fflush(stdout);
}

void speed_table(bool quick) {
  fmt::print("Ring all-reduce of 64 MiB per chip (v5e slices, ICI only)\n");
  fmt::print("{:<9} {:>6} {:>12} {:>14} {:>10} {:>16} {:>13} {:>13} {:>10}\n", "slice", "chips",
             "mode", "simulated us", "host s", "chip-cycles/s", "host MiB/chip", "sim MiB/chip",
             "bus GB/s");
  std::fflush(stdout);
  struct Case {
    const char* pod;
    bool data;
  };
  std::vector<Case> cases = {{"v5e-8", true}, {"v5e-8", false}, {"v5e-64", false}};
  if (!quick) cases.push_back({"v5e-256", false});
  for (const Case& c : cases) {
    pid_t child = fork();
    if (child == 0) {
      speed_row(c.pod, c.data);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fmt::print("{}: the run failed\n", c.pod);
  }
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  speed_table(quick);  // first: its rows fork before this process starts SystemC
  link_table();
  return 0;
}
