// The built-in DMA engine model "pipelined" (the default): like "burst", but the engine
// is busy only while it requests a transfer's bursts (one per cycle) and then starts the
// next transfer, so several transfers of one engine are in flight at once and the
// memory latency overlaps, as DMA engines with many outstanding requests do. Transfers
// land in the order their last bursts are written. Two processes per engine: one issues,
// one completes. The engine's track shows the issue phase of each transfer; the HBM
// track shows the whole of its traffic.
#include <algorithm>
#include <deque>
#include <vector>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class PipelinedDmaEngine final : public DmaEngineModel {
 public:
  PipelinedDmaEngine(const Parameters& p, const UnitContext& c, DmaHost& host)
      : host_(host), core_(c.core), index_(c.index), burst_(p.count("dma_burst_bytes")) {}

  void submit(DmaJob job) override {
    queue_.push_back(std::move(job));
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
  size_t queued() const override { return queue_.size(); }
  void start() override {
    sc_core::sc_spawn([this] { issue(); });
    sc_core::sc_spawn([this] { complete(); });
  }
  void wake() override {
    wake_.notify(sc_core::SC_ZERO_TIME);
    landed_.notify(sc_core::SC_ZERO_TIME);
  }
  std::vector<double> statistics() const override { return stats_.values; }

 private:
  struct InFlight {
    DmaJob job;
    DmaTiming timing;
    uint64_t order = 0;
  };

  void issue() {
    try {
      for (;;) {
        if (host_.aborted()) break;
        if (queue_.empty()) {
          if (host_.finishing()) break;
          sc_core::wait(wake_);
          continue;
        }
        DmaJob job = std::move(queue_.front());
        queue_.pop_front();
        Cycle now = now_cycles();
        Cycle start = std::max({job.ready, now, free_});
        if (start > now) {
          sc_core::wait(cycles(start - now));
          if (host_.aborted()) break;
          now = start;
        }
        DmaTiming t = run_bursts(host_, job, start, burst_, core_, index_);
        if (t.remote) {  // the interconnect completes it
          free_ = t.busy_end;
          stats_.count(job, t, start);
          continue;
        }
        int64_t bursts =
            (job.transfer.bytes + std::max<int64_t>(burst_, 1) - 1) / std::max<int64_t>(burst_, 1);
        t.busy_end = start + static_cast<Cycle>(std::max<int64_t>(bursts, 1));
        free_ = t.busy_end;
        stats_.count(job, t, start);
        in_flight_.push_back({std::move(job), t, next_order_++});
        landed_.notify(sc_core::SC_ZERO_TIME);
      }
    } catch (...) {
      host_.fail_run(std::current_exception());
    }
    issuing_done_ = true;
    landed_.notify(sc_core::SC_ZERO_TIME);
  }

  void complete() {
    try {
      for (;;) {
        if (host_.aborted()) return;
        if (in_flight_.empty()) {
          if (issuing_done_) return;
          sc_core::wait(landed_);
          continue;
        }
        auto first = std::min_element(
            in_flight_.begin(), in_flight_.end(), [](const InFlight& a, const InFlight& b) {
              return a.timing.end != b.timing.end ? a.timing.end < b.timing.end : a.order < b.order;
            });
        Cycle now = now_cycles();
        if (first->timing.end > now) {
          // A transfer issued meanwhile may land earlier: wake for either.
          sc_core::wait(cycles(first->timing.end - now), landed_);
          continue;
        }
        InFlight done = std::move(*first);
        in_flight_.erase(first);
        host_.dma_completed(done.job, core_, index_, done.timing);
      }
    } catch (...) {
      host_.fail_run(std::current_exception());
    }
  }

  DmaHost& host_;
  int core_, index_;
  int64_t burst_;
  std::deque<DmaJob> queue_;
  std::vector<InFlight> in_flight_;
  uint64_t next_order_ = 0;
  Cycle free_ = 0;
  bool issuing_done_ = false;
  sc_core::sc_event wake_, landed_;
  DmaEngineStatistics stats_;
};

}  // namespace

void register_pipelined_dma(DmaRegistry& registry) {
  registry.add("pipelined",
               dma_engine_declaration("requests a transfer's bursts one a cycle, then starts the "
                                      "next: several transfers in flight"),
               [](const Parameters& p, const UnitContext& c,
                  DmaHost& host) -> std::unique_ptr<DmaEngineModel> {
                 return std::make_unique<PipelinedDmaEngine>(p, c, host);
               });
}

}  // namespace podsim::sim::timing
