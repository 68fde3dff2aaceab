// The SPMD partitioner's cost model (compiler/passes/spmd/cost_model.h) against the
// simulated pod: it weighs the partitioner's choices, so its estimate of a collective
// must follow what the TPU lowering and the timed pod make of it, small and large, on
// tori, open axes and across slices (bench/timing_collective_bench prints every ratio).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/passes/spmd/cost_model.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"

namespace podsim {
namespace {

// The simulated time, in ns, of one collective over every chip (timing-only).
double simulated_ns(const topology::PodConfig& pod, const std::string& hlo) {
  const isa::Executable exe = tpu::compile(*ir::parse_module(hlo), tpu::Target(pod));
  sim::timing::TimingOptions options;
  options.timing_only = true;
  return sim::timing::run_timed_pod(exe, {}, options).seconds * 1e9;
}

constexpr const char* kAdd = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

TEST(SpmdCostModel, EstimatesFollowTheSimulatedPod) {
  for (const std::string name : {"v5e:4x4", "v5e:8x4", "v4:2x2x2", "v5e:2x2:slices=2"}) {
    const topology::PodConfig pod = topology::pod_config(name);
    const passes::spmd::CostModel costs(&pod);
    const int n = pod.chips();
    std::vector<int64_t> all;
    std::vector<std::pair<int64_t, int64_t>> next;
    for (int d = 0; d < n; ++d) {
      all.push_back(d);
      next.emplace_back(d, (d + 1) % n);
    }
    const passes::spmd::Groups groups{all};
    for (const int64_t elements : {int64_t{16} << 10, int64_t{1} << 20}) {  // 64 KiB, 4 MiB
      SCOPED_TRACE(fmt::format("{}, {} elements", name, elements));
      const auto bytes = static_cast<double>(4 * elements);
      const int64_t chunk = elements / n;
      const double all_reduce = simulated_ns(
          pod, fmt::format("HloModule m\n{}ENTRY e {{\n  x = f32[{}] parameter(0)\n"
                           "  ROOT r = f32[{}] all-reduce(x), to_apply=add\n}}\n",
                           kAdd, elements, elements));
      const double all_gather = simulated_ns(pod, fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                                                              "  ROOT r = f32[{}] all-gather(x), dimensions={{0}}\n}}\n",
                                                              chunk, chunk * n));
      std::string pairs;
      for (const auto& [a, b] : next) pairs += fmt::format("{}{{{},{}}}", a ? "," : "", a, b);
      const double permute =
          simulated_ns(pod, fmt::format("HloModule m\nENTRY e {{\n  x = f32[{}] parameter(0)\n"
                                        "  ROOT r = f32[{}] collective-permute(x), source_target_pairs={{{}}}\n}}\n",
                                        elements, elements, pairs));
      // Within a factor of 1.5 either way (the bench measures 0.6 to 1.33).
      auto near = [](double estimate, double simulated) {
        return estimate > simulated / 1.5 && estimate < simulated * 1.5;
      };
      EXPECT_PRED2(near, costs.all_reduce(groups, bytes), all_reduce);
      EXPECT_PRED2(near, costs.all_gather(groups, bytes * (n - 1) / n), all_gather);
      EXPECT_PRED2(near, costs.permute(next, bytes), permute);
    }
  }
}

}  // namespace
}  // namespace podsim
