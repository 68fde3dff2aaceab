// The built-in MXU model "systolic": a weight-stationary systolic array with
// double-buffered weights. mldw shifts K weight rows in (K cycles) into the shadow
// buffer, which may happen while the previous mmul streams; an mmul latches the weights
// loaded last, streams its M LHS rows one per cycle, and its results leave the array
// fill/drain cycles (mxu_rows + mxu_cols unless set) after the last row went in; mpop
// reads the accumulator out one row per cycle once the results are there, and the next
// mmul waits until it has.
#include <algorithm>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class SystolicMxu final : public MxuModel {
 public:
  explicit SystolicMxu(const UnitContext& c) : fill_drain_(c.latencies.mxu_fill_drain) {}

  UnitTiming load_weights(Cycle t, int64_t k_rows) override {
    // The shadow buffer is free once the previous mmul latched what it held.
    Cycle start = std::max({t, weight_free_, last_latch_});
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(k_rows, 1));
    weight_free_ = weights_ready_ = end;
    return {start, end, end};
  }

  UnitTiming multiply(Cycle t, int64_t m_rows) override {
    Cycle start = std::max({t, weights_ready_, stream_free_, pop_end_});
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(m_rows, 1));
    last_latch_ = start;
    stream_free_ = end;
    result_ready_ = end + static_cast<Cycle>(fill_drain_);
    return {start, end, result_ready_};
  }

  UnitTiming pop(Cycle t, int64_t m_rows) override {
    Cycle start = std::max({t, result_ready_, pop_end_});
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(m_rows, 1));
    pop_end_ = end;
    return {start, end, end};
  }

 private:
  int64_t fill_drain_;
  Cycle weight_free_ = 0, weights_ready_ = 0, last_latch_ = 0;
  Cycle stream_free_ = 0, result_ready_ = 0, pop_end_ = 0;
};

}  // namespace

void register_systolic_mxu(MxuRegistry& registry) {
  registry.add("systolic", [](const UnitContext& c) { return std::make_unique<SystolicMxu>(c); });
}

}  // namespace podsim::sim::timing
