// Remote DMA flows on a pod, for the link microbenchmark (bench/timing_pod_bench) and the
// link timing test (tests/sim/timing/pod_timing_test): each flow is one remote DMA of
// `bytes` from chip `from` to chip `to`, all issued at the start, in timing-only mode.
// Transfers up to 32 MiB go VMEM to VMEM, larger ones HBM to HBM.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "isa/isa.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"

namespace podsim::bench {

// Each flow's receiver's cycles (until its wait for the landing returned), in order.
inline std::vector<uint64_t> flow_cycles(const topology::PodConfig& pod, int64_t bytes,
                                         const std::vector<std::pair<int, int>>& flows) {
  const std::string space = bytes > (int64_t{32} << 20) ? "hbm" : "vmem[0]";
  std::string text = fmt::format(
      ".pod \"{}\"\n.region a {} 0 {}\n.region b {} {} {}\n"
      ".descriptor d0 src=a dst=b elem=4 sizes=[{}] src_strides=[4] dst_strides=[4]\n"
      ".program core 0\n  sdev s1, 0\n",
      pod.name, space, bytes, space, bytes, bytes, bytes / 4);
  std::string senders;
  for (size_t i = 0; i < flows.size(); ++i) {
    text += fmt::format("  sli s2, {}\n  seq s3, s1, s2\n  bnz s3, send{}\n", flows[i].first, i);
    text += fmt::format("  sli s2, {}\n  seq s3, s1, s2\n  bnz s3, receive\n", flows[i].second);
    senders += fmt::format(
        "send{}:\n  sli s4, {}\n  dma.remote d0, s0, s0, s4, q1, q2\n  sem.wait q1, 1\n  halt\n",
        i, flows[i].second);
  }
  text += "  halt\n" + senders + "receive:\n  sem.wait q2, 1\n  halt\n";
  sim::timing::TimingOptions options;
  options.timing_only = true;
  options.profile = false;
  isa::Executable executable = isa::assemble(text);
  executable.pod = pod;  // its figures as given
  sim::timing::PodRunResult r = sim::timing::run_timed_pod(executable, {}, options);
  std::vector<uint64_t> out;
  for (const auto& [from, to] : flows) out.push_back(r.chips.at(static_cast<size_t>(to)).cycles);
  return out;
}

inline std::vector<uint64_t> flow_cycles(const std::string& pod, int64_t bytes,
                                         const std::vector<std::pair<int, int>>& flows) {
  return flow_cycles(topology::pod_config(pod), bytes, flows);
}

}  // namespace podsim::bench
