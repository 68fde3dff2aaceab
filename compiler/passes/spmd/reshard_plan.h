// How to move a value from one tiling to another, and what it costs: one all-to-all
// where a split moves to another dimension over the same devices, else all-gathers of
// the split dimensions that keep a device's new piece outside its current one, then a
// local slice. The SPMD partitioner emits the plan and compares plans by their bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/ir/shape.h"
#include "compiler/passes/spmd/cost_model.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes::spmd {

// A device's interval [begin, end) along dimension d of a value of `size` elements under
// t: pieces of ceil(size / tiles) elements, the last ones cut short (or empty) at the end.
struct Interval {
  int64_t begin, end;
};
Interval interval(const Tiling& t, int64_t device, int64_t d, int64_t size);

struct ReshardPlan {
  std::vector<std::pair<int64_t, int64_t>> permute;       // (source, target) devices of whole pieces
  std::optional<std::pair<int64_t, int64_t>> all_to_all;  // (from dimension, to dimension)
  std::vector<int64_t> gathers;                           // dimensions, in order
  Tiling before_slice;                                    // the tiling the gathers leave
  bool slice = false;
};

ReshardPlan plan_reshard(const Tiling& from, const Tiling& to, const ir::Shape& whole, const CostModel& costs);
// What carrying out the plan costs (its collectives).
double plan_ns(const ReshardPlan& plan, const Tiling& from, const ir::Shape& whole, const CostModel& costs);

}  // namespace podsim::passes::spmd
