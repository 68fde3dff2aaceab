// The built-in VPU model "inorder": one vector instruction enters the VPU per cycle
// (vector loads and stores use the same issue slot); transcendental ops occupy it for
// transcendental_issue cycles, vxpose one cycle per register it moves, and a load or
// store as many cycles as VMEM's banks need to serve it (vmem.h). Results
// are there a fixed latency after issue: vmem for loads and stores, vector for
// arithmetic, transcendental and cross_lane for those. Register dependencies are the
// issuing core's business (it waits for its operands before calling).
#include <algorithm>
#include <array>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class InOrderVpu final : public VpuModel {
 public:
  explicit InOrderVpu(const Parameters& p)
      : vmem_(p.count("vmem_latency_cycles")),
        vector_(p.count("vector_latency_cycles")),
        transcendental_(p.count("transcendental_latency_cycles")),
        transcendental_issue_(p.count("transcendental_issue_cycles")),
        cross_lane_(p.count("cross_lane_latency_cycles")) {}

  UnitTiming issue(Cycle t, VectorClass kind, int64_t registers) override {
    int64_t occupancy = 1, latency = vector_;
    switch (kind) {
      case VectorClass::kMemory:
        occupancy = std::max<int64_t>(1, registers);
        latency = vmem_;
        break;
      case VectorClass::kSimple:
        break;
      case VectorClass::kTranscendental:
        occupancy = std::max<int64_t>(1, transcendental_issue_);
        latency = transcendental_;
        break;
      case VectorClass::kCrossLane:
        occupancy = std::max<int64_t>(1, registers);
        latency = cross_lane_;
        break;
    }
    Cycle start = std::max(t, free_);
    free_ = start + static_cast<Cycle>(occupancy);
    Cycle done = start + static_cast<Cycle>(occupancy - 1 + std::max<int64_t>(latency, 1));
    ++stats_[static_cast<size_t>(kind)];
    stats_[kBusy] += static_cast<double>(occupancy);
    stats_[kWait] += static_cast<double>(start - t);
    return {start, free_, done};
  }

  std::vector<double> statistics() const override { return {stats_.begin(), stats_.end()}; }

 private:
  int64_t vmem_, vector_, transcendental_, transcendental_issue_, cross_lane_;
  Cycle free_ = 0;
  // One count per VectorClass, in its order, then these.
  enum { kBusy = 4, kWait, kStatistics };
  std::array<double, kStatistics> stats_{};
};

}  // namespace

void register_inorder_vpu(VpuRegistry& registry) {
  registry.add(
      "inorder",
      {"one vector instruction a cycle, in order; fixed result latencies per class",
       {"vmem_latency_cycles", "vector_latency_cycles", "transcendental_latency_cycles",
        "transcendental_issue_cycles", "cross_lane_latency_cycles"},
       {{"memory_ops", "count", "vector loads and stores"},
        {"simple_ops", "count", "arithmetic, compare and select ops"},
        {"transcendental_ops", "count", "exp, log, sqrt, rsqrt, tanh, logistic, pow, div"},
        {"cross_lane_ops", "count", "cross-lane reductions and transposes"},
        {"busy_cycles", "cycles", "cycles the issue slot was taken"},
        {"wait_cycles", "cycles", "cycles ops waited for the issue slot"}}},
      [](const Parameters& p, const UnitContext&) { return std::make_unique<InOrderVpu>(p); });
}

}  // namespace podsim::sim::timing
