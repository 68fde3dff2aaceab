// The built-in MXU model "systolic": a weight-stationary systolic array with
// double-buffered weights and `mxu_accumulators` accumulator buffers.
// - mldw shifts K weight rows in (K cycles) into the shadow buffer, which may happen
//   while the previous mmul streams.
// - An mmul latches the weights loaded last, streams its M LHS rows one per cycle (and
//   holds the array mxu_pass_overhead_cycles more: see ChipConfig), and
//   its results leave the array fill/drain cycles (mxu_rows + mxu_cols unless set) after
//   the last row went in. An mmul that starts a new output tile (accumulate 0) takes the
//   next accumulator buffer, once that buffer's previous tile has been popped.
// - mpop reads the current tile's accumulator out one row per cycle once its results are
//   there, through the MXU's one result path (pops run in order, one at a time).
// With two or more accumulators the pop of one tile overlaps the next tile's passes.
// Published for TPUv1, whose accumulators were doubled "so that the compiler could use
// double buffering while running at peak performance" (Jouppi et al., ISCA 2017);
// assumed for the later TPUs, which publish no accumulator figures (the default of
// ChipConfig::mxu_accumulators is 2). The core then hands an mpop over and goes on
// (pop_is_queued); what reads the popped bytes waits for them through the VMEM
// interlock. With one accumulator the next mmul waits until the pop has ended, and the
// mpop holds issue until it starts (the model as it was before accumulators).
#include <algorithm>
#include <array>
#include <vector>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class SystolicMxu final : public MxuModel {
 public:
  explicit SystolicMxu(const Parameters& p)
      : fill_drain_(p.count("mxu_fill_drain_cycles") > 0
                        ? p.count("mxu_fill_drain_cycles")
                        : p.count("mxu_rows") + p.count("mxu_cols")),
        pass_overhead_(std::max<int64_t>(p.count("mxu_pass_overhead_cycles"), 0)),
        buffers_(static_cast<size_t>(std::max<int64_t>(p.count("mxu_accumulators"), 1))) {}

  UnitTiming load_weights(Cycle t, int64_t k_rows) override {
    // The shadow buffer is free once the previous mmul latched what it held.
    Cycle start = std::max({t, weight_free_, last_latch_});
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(k_rows, 1));
    weight_free_ = weights_ready_ = end;
    ++stats_[kWeightLoads];
    return {start, end, end};
  }

  UnitTiming multiply(Cycle t, int64_t m_rows, bool accumulate) override {
    Cycle start = std::max({t, weights_ready_, stream_free_});
    const Cycle ready = start;
    if (!accumulate) {
      // A new output tile: the next accumulator, free once its last tile was popped.
      current_ = (current_ + 1) % buffers_.size();
      start = std::max(start, buffers_[current_].popped);
    } else if (buffers_.size() == 1) {
      start = std::max(start, buffers_[current_].popped);
    }
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(m_rows, 1) + pass_overhead_);
    ++stats_[kPasses];
    stats_[kRows] += static_cast<double>(std::max<int64_t>(m_rows, 1));
    stats_[kStreamCycles] += static_cast<double>(end - start);
    stats_[kAccumulatorWait] += static_cast<double>(start - ready);
    last_latch_ = start;
    stream_free_ = end;
    buffers_[current_].ready = end + static_cast<Cycle>(fill_drain_);
    return {start, end, buffers_[current_].ready};
  }

  UnitTiming pop(Cycle t, int64_t m_rows) override {
    Buffer& b = buffers_[current_];
    Cycle start = std::max({t, b.ready, result_path_free_});
    Cycle end = start + static_cast<Cycle>(std::max<int64_t>(m_rows, 1));
    b.popped = result_path_free_ = end;
    ++stats_[kPops];
    return {start, end, end};
  }

  bool pop_is_queued() const override { return buffers_.size() > 1; }
  std::vector<double> statistics() const override { return {stats_.begin(), stats_.end()}; }

 private:
  struct Buffer {
    Cycle ready = 0;   // the last pass's results are in
    Cycle popped = 0;  // its last pop has ended
  };
  int64_t fill_drain_;
  int64_t pass_overhead_;
  std::vector<Buffer> buffers_;
  size_t current_ = 0;
  Cycle weight_free_ = 0, weights_ready_ = 0, last_latch_ = 0;
  Cycle stream_free_ = 0, result_path_free_ = 0;
  enum { kWeightLoads, kPasses, kRows, kPops, kStreamCycles, kAccumulatorWait, kStatistics };
  std::array<double, kStatistics> stats_{};
};

}  // namespace

void register_systolic_mxu(MxuRegistry& registry) {
  registry.add(
      "systolic",
      {"a weight-stationary systolic array: double-buffered weights, mxu_accumulators "
       "accumulator buffers, one result path",
       {"mxu_rows", "mxu_cols", "mxu_fill_drain_cycles", "mxu_pass_overhead_cycles",
        "mxu_accumulators"},
       {{"weight_loads", "count", "weight tiles shifted in (mldw)"},
        {"passes", "count", "passes streaming LHS rows (mmul)"},
        {"rows", "count", "LHS rows streamed"},
        {"pops", "count", "result pops (mpop)"},
        {"stream_cycles", "cycles", "cycles the array streamed rows (with each pass's overhead)"},
        {"accumulator_wait_cycles", "cycles",
         "cycles passes waited for their accumulator to be popped"}}},
      [](const Parameters& p, const UnitContext&) { return std::make_unique<SystolicMxu>(p); });
}

}  // namespace podsim::sim::timing
