// The built-in VPU model "inorder": one vector instruction enters the VPU per cycle
// (vector loads and stores use the same issue slot); transcendental ops occupy it for
// transcendental_issue cycles, vxpose one cycle per register it moves, and a load or
// store as many cycles as VMEM's banks need to serve it (vmem.h). Results
// are there a fixed latency after issue: vmem for loads and stores, vector for
// arithmetic, transcendental and cross_lane for those. Register dependencies are the
// issuing core's business (it waits for its operands before calling).
#include <algorithm>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class InOrderVpu final : public VpuModel {
 public:
  explicit InOrderVpu(const UnitContext& c) : l_(c.latencies) {}

  UnitTiming issue(Cycle t, VectorClass kind, int64_t registers) override {
    int64_t occupancy = 1, latency = l_.vector;
    switch (kind) {
      case VectorClass::kMemory:
        occupancy = std::max<int64_t>(1, registers);
        latency = l_.vmem;
        break;
      case VectorClass::kSimple:
        break;
      case VectorClass::kTranscendental:
        occupancy = std::max<int64_t>(1, l_.transcendental_issue);
        latency = l_.transcendental;
        break;
      case VectorClass::kCrossLane:
        occupancy = std::max<int64_t>(1, registers);
        latency = l_.cross_lane;
        break;
    }
    Cycle start = std::max(t, free_);
    free_ = start + static_cast<Cycle>(occupancy);
    Cycle done = start + static_cast<Cycle>(occupancy - 1 + std::max<int64_t>(latency, 1));
    return {start, free_, done};
  }

 private:
  const UnitLatencies& l_;
  Cycle free_ = 0;
};

}  // namespace

void register_inorder_vpu(VpuRegistry& registry) {
  registry.add("inorder", [](const UnitContext& c) { return std::make_unique<InOrderVpu>(c); });
}

}  // namespace podsim::sim::timing
