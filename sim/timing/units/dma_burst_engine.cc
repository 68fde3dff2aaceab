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
#include <vector>

#include "sim/timing/interconnect/interconnect.h"
#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {

DmaTiming run_bursts(DmaHost& host, const DmaJob& job, Cycle start, int64_t burst_bytes,
                     int engine_core, int engine) {
  const DmaTransfer& d = job.transfer;
  MemoryTarget& src = host.memory(d.src.space, d.src.core);
  const bool src_hbm = d.src.space == isa::MemorySpace::kHbm;
  DmaTiming t{start, start, start, std::numeric_limits<Cycle>::max(), 0};
  tlm::tlm_generic_payload p;
  const int64_t burst = std::max<int64_t>(burst_bytes, 1);
  const int64_t bursts = (d.bytes + burst - 1) / burst;
  auto read = [&](int64_t i, Cycle now) {  // burst i requested at start + i: when it is here
    p.set_command(tlm::TLM_READ_COMMAND);
    p.set_address(static_cast<uint64_t>(d.src.begin + i * burst));
    p.set_data_length(static_cast<unsigned>(std::min(burst, d.bytes - i * burst)));
    const Cycle request = std::max(start + static_cast<Cycle>(i), now);
    sc_core::sc_time delay = cycles(request - now);
    src.b_transport(p, delay);
    const Cycle arrived = now + delay.value();
    if (src_hbm)
      t.hbm_start = std::min(t.hbm_start, request), t.hbm_end = std::max(t.hbm_end, arrived);
    return arrived;
  };

  if (d.dst_device >= 0) {
    // Remote: each burst goes to the interconnect as it arrives; simulated time passes
    // while the first link has no room.
    Interconnect& net = *host.interconnect();
    MemoryTarget& dst = host.remote_memory(d);
    RemoteDelivery* delivery = net.new_delivery();
    *delivery = RemoteDelivery{&host, job, engine_core, engine, t, bursts, bursts, 0};
    for (int64_t i = 0; i < bursts && !host.aborted(); ++i) {
      const Cycle arrived = read(i, now_cycles());
      net.send(host.device(), d.dst_device, arrived, std::min(burst, d.bytes - i * burst), dst,
               d.dst.begin + i * burst, delivery);
    }
    if (t.hbm_end == 0) t.hbm_start = t.hbm_end = start;
    t.busy_end = std::max(now_cycles(), start + 1);
    t.remote = true;
    delivery->timing = t;
    delivery->timing.end = start;
    return t;
  }

  MemoryTarget& dst = host.memory(d.dst.space, d.dst.core);
  const bool dst_hbm = d.dst.space == isa::MemorySpace::kHbm;
  const Cycle now = now_cycles();
  // Every read is asked for before any write: a burst's write waits for its data, and
  // a memory serves the reads asked for meanwhile first (booked in call order, a write
  // booked first would hold up the transfer's own later reads on that channel).
  std::vector<Cycle> arrivals(static_cast<size_t>(bursts));
  for (int64_t i = 0; i < bursts; ++i) arrivals[static_cast<size_t>(i)] = read(i, now);
  for (int64_t i = 0; i < bursts; ++i) {
    const Cycle arrived = arrivals[static_cast<size_t>(i)];
    p.set_command(tlm::TLM_WRITE_COMMAND);
    p.set_address(static_cast<uint64_t>(d.dst.begin + i * burst));
    p.set_data_length(static_cast<unsigned>(std::min(burst, d.bytes - i * burst)));
    sc_core::sc_time delay = cycles(arrived - now);
    dst.b_transport(p, delay);
    const Cycle written = now + delay.value();
    if (dst_hbm)
      t.hbm_start = std::min(t.hbm_start, arrived), t.hbm_end = std::max(t.hbm_end, written);
    t.end = std::max(t.end, written);
  }
  if (t.hbm_end == 0) t.hbm_start = t.hbm_end = start;
  return t;
}

ModelDeclaration dma_engine_declaration(std::string_view summary) {
  return {summary,
          {"dma_burst_bytes"},
          {{"transfers", "count", "transfers within the chip"},
           {"remote_transfers", "count", "transfers to another chip (dma.remote)"},
           {"bytes", "bytes", "bytes transferred"},
           {"busy_cycles", "cycles", "cycles the engine worked on transfers"},
           {"queue_cycles", "cycles", "cycles transfers waited for the engine once ready"}}};
}

namespace {

class BurstDmaEngine final : public DmaEngineModel {
 public:
  BurstDmaEngine(const Parameters& p, const UnitContext& c, DmaHost& host)
      : host_(host), core_(c.core), index_(c.index), burst_(p.count("dma_burst_bytes")) {}

  void submit(DmaJob job) override {
    queue_.push_back(std::move(job));
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
  size_t queued() const override { return queue_.size(); }
  void start() override {
    sc_core::sc_spawn([this] { run(); });
  }
  void wake() override { wake_.notify(sc_core::SC_ZERO_TIME); }
  std::vector<double> statistics() const override { return stats_.values; }

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
        DmaTiming t = run_bursts(host_, job, start, burst_, core_, index_);
        if (t.remote) {  // the interconnect completes it
          stats_.count(job, t, start);
          continue;
        }
        t.busy_end = std::max(t.end, start + 1);
        stats_.count(job, t, start);
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
  DmaEngineStatistics stats_;
};

}  // namespace

void register_burst_dma(DmaRegistry& registry) {
  registry.add("burst",
               dma_engine_declaration("one transfer at a time, the next once the last has landed"),
               [](const Parameters& p, const UnitContext& c,
                  DmaHost& host) -> std::unique_ptr<DmaEngineModel> {
                 return std::make_unique<BurstDmaEngine>(p, c, host);
               });
}

}  // namespace podsim::sim::timing
