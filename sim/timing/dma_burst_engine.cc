// The built-in DMA engine model "burst": a SystemC process per engine that runs its
// transfers one at a time, in the order they were handed to it: the next starts when
// the previous has landed (so an engine has one transfer in flight; see "pipelined" for
// engines that overlap them). A transfer starts dma_setup cycles after issue (or when the
// engine is free), splits into dma_burst_bytes bursts, requests one burst per cycle from
// its source memory and writes each to its destination when it has arrived (store and
// forward per burst), so a long transfer takes about latency + bytes / (the bandwidth it
// gets): the memories' channels decide the share. It completes when its last burst is
// written. Burst addresses run linearly from the transfer's first byte (a strided
// transfer's gaps are not modelled).
#include <algorithm>
#include <deque>
#include <limits>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {

DmaTiming run_bursts(DmaHost& host, const DmaTransfer& d, Cycle start, Cycle now,
                     int64_t burst_bytes) {
  MemoryTarget& src = host.memory(d.src.space, d.src.core);
  MemoryTarget& dst = host.memory(d.dst.space, d.dst.core);
  bool src_hbm = d.src.space == isa::MemorySpace::kHbm,
       dst_hbm = d.dst.space == isa::MemorySpace::kHbm;
  DmaTiming t{start, start, start, std::numeric_limits<Cycle>::max(), 0};
  tlm::tlm_generic_payload p;
  int64_t burst = std::max<int64_t>(burst_bytes, 1);
  int64_t bursts = (d.bytes + burst - 1) / burst;
  for (int64_t i = 0; i < bursts; ++i) {
    int64_t offset = i * burst;
    auto length = static_cast<unsigned>(std::min(burst, d.bytes - offset));
    Cycle request = start + static_cast<Cycle>(i);
    p.set_command(tlm::TLM_READ_COMMAND);
    p.set_address(static_cast<uint64_t>(d.src.begin + offset));
    p.set_data_length(length);
    sc_core::sc_time delay = cycles(request - now);
    src.b_transport(p, delay);
    Cycle arrived = now + delay.value();
    p.set_command(tlm::TLM_WRITE_COMMAND);
    p.set_address(static_cast<uint64_t>(d.dst.begin + offset));
    delay = cycles(arrived - now);
    dst.b_transport(p, delay);
    Cycle written = now + delay.value();
    if (src_hbm)
      t.hbm_start = std::min(t.hbm_start, request), t.hbm_end = std::max(t.hbm_end, arrived);
    if (dst_hbm)
      t.hbm_start = std::min(t.hbm_start, arrived), t.hbm_end = std::max(t.hbm_end, written);
    t.end = std::max(t.end, written);
  }
  if (t.hbm_end == 0) t.hbm_start = t.hbm_end = start;
  return t;
}

namespace {

class BurstDmaEngine final : public DmaEngineModel {
 public:
  BurstDmaEngine(const UnitContext& c, DmaHost& host)
      : host_(host), core_(c.core), index_(c.index), burst_(c.latencies.dma_burst_bytes) {}

  void submit(DmaJob job) override {
    queue_.push_back(std::move(job));
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
  void start() override {
    sc_core::sc_spawn([this] { run(); });
  }
  void wake() override { wake_.notify(sc_core::SC_ZERO_TIME); }

 private:
  void run() {
    try {
      for (;;) {
        if (host_.aborted()) return;
        if (queue_.empty()) {
          if (host_.finishing()) return;
          sc_core::wait(wake_);
          continue;
        }
        DmaJob job = std::move(queue_.front());
        queue_.pop_front();
        Cycle now = now_cycles();
        Cycle start = std::max(job.ready, now);
        if (start > now) {
          sc_core::wait(cycles(start - now));
          if (host_.aborted()) return;
          now = start;
        }
        DmaTiming t = run_bursts(host_, job.transfer, start, now, burst_);
        t.busy_end = std::max(t.end, start + 1);
        if (t.end > now) sc_core::wait(cycles(t.end - now));
        if (host_.aborted()) return;
        host_.dma_completed(job, core_, index_, t);
      }
    } catch (...) {
      host_.fail_run(std::current_exception());
    }
  }

  DmaHost& host_;
  int core_, index_;
  int64_t burst_;
  std::deque<DmaJob> queue_;
  sc_core::sc_event wake_;
};

}  // namespace

void register_burst_dma(DmaRegistry& registry) {
  registry.add("burst", [](const UnitContext& c, DmaHost& host) -> std::unique_ptr<DmaEngineModel> {
    return std::make_unique<BurstDmaEngine>(c, host);
  });
}

}  // namespace podsim::sim::timing
