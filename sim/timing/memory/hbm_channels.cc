// The built-in HBM models "request-time" (the default) and "channels": hbm_channels
// independent channels sharing the chip's bandwidth equally, interleaved every
// dma_burst_bytes of address. Each channel serves a burst busy for bytes / (its
// bandwidth) cycles, plus hbm_turnaround when it switches between reads and writes; a
// burst's data is there hbm_latency_ns after its service ends. Every
// hbm_refresh_interval_ns each channel refreshes for hbm_refresh_ns, serving nothing (the
// channels in turn), which takes that fraction off the bandwidth a long transfer gets.
// "request-time" serves a burst at the first free time at or after its request
// (bookings.h): a burst that lands from another chip while a local transfer has booked
// the channel ahead goes in between, not behind it; "channels" serves a channel's bursts
// in the order they are asked for. (VMEM's side of DMA traffic is in vmem.cc.)
#include <algorithm>
#include <array>
#include <cmath>

#include "sim/timing/memory/bookings.h"
#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {
namespace {

class ChannelMemory final : public MemoryTarget {
 public:
  ChannelMemory(int channels, double bytes_per_cycle, int64_t interleave, Cycle latency,
                Cycle turnaround, Cycle refresh_interval, Cycle refresh, bool by_request_time)
      : channels_(static_cast<size_t>(std::max(channels, 1)), Bookings(turnaround, by_request_time)),
        cycles_per_byte_(1.0 / (bytes_per_cycle / std::max(channels, 1))),
        interleave_(std::max<int64_t>(interleave, 1)),
        latency_(latency) {
    // The channels refresh in turn, spread evenly over the interval; the first refreshes
    // begin half an interval into the run (a run starts with the channels refreshed, so
    // that a short one meets no refresh, as on average it would not).
    if (refresh_interval > 0 && refresh > 0)
      for (size_t c = 0; c < channels_.size(); ++c)
        channels_[c].set_blackout(refresh_interval, refresh,
                                  now_cycles() + refresh_interval / 2 +
                                      refresh_interval * (2 * c + 1) / (2 * channels_.size()));
  }

  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) override {
    const Cycle now = now_cycles();
    const auto address = static_cast<int64_t>(p.get_address());
    Bookings& ch = channels_[static_cast<size_t>(address / interleave_) % channels_.size()];
    const Cycle service = service_cycles(p.get_data_length());
    const bool write = p.get_command() == tlm::TLM_WRITE_COMMAND;
    const Cycle request = now + delay.value();
    const Cycle start = ch.book(now, request, service, write ? 1 : 0);
    stats_[write ? kWriteBytes : kReadBytes] += p.get_data_length();
    ++stats_[kBursts];
    stats_[kServiceCycles] += static_cast<double>(service);
    stats_[kQueueCycles] += static_cast<double>(start - request);
    if (on_traffic_) on_traffic_(start, start + service, static_cast<double>(p.get_data_length()));
    delay = cycles(start + service + latency_ - now);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  std::vector<double> statistics() const override { return {stats_.begin(), stats_.end()}; }

 private:
  // Bursts mostly have one length: remember the last one's service time.
  Cycle service_cycles(unsigned length) {
    if (length != last_length_) {
      last_length_ = length;
      last_service_ =
          std::max<Cycle>(static_cast<Cycle>(std::ceil(length * cycles_per_byte_ - 1e-9)), 1);
    }
    return last_service_;
  }

  std::vector<Bookings> channels_;
  double cycles_per_byte_;
  int64_t interleave_;
  Cycle latency_;
  unsigned last_length_ = 0;
  Cycle last_service_ = 1;
  enum { kReadBytes, kWriteBytes, kBursts, kServiceCycles, kQueueCycles, kStatistics };
  std::array<double, kStatistics> stats_{};
};

}  // namespace

void register_channel_hbm(HbmRegistry& registry) {
  for (const bool by_request_time : {false, true})
    registry.add(
        by_request_time ? "request-time" : "channels",
        {by_request_time
             ? "hbm_channels channels interleaved every dma_burst_bytes; a burst takes the first "
               "free time at or after its request"
             : "hbm_channels channels interleaved every dma_burst_bytes; a channel serves its "
               "bursts in the order they are asked for",
         {"hbm_channels", "hbm_bandwidth_bytes_per_s", "clock_hz", "hbm_latency_ns",
          "dma_burst_bytes", "hbm_turnaround_cycles", "hbm_refresh_interval_ns", "hbm_refresh_ns"},
         {{"read_bytes", "bytes", "bytes read"},
          {"write_bytes", "bytes", "bytes written"},
          {"bursts", "count", "bursts served"},
          {"service_cycles", "cycles", "channel cycles spent serving bursts, all channels"},
          {"queue_cycles", "cycles",
           "cycles bursts waited for their channel (other bursts, turnarounds, refresh)"}}},
        [by_request_time](const Parameters& p, const UnitContext&) -> std::unique_ptr<MemoryTarget> {
          const int64_t refresh_interval = p.ns_as_cycles("hbm_refresh_interval_ns");
          return std::make_unique<ChannelMemory>(
              static_cast<int>(p.count("hbm_channels")),
              p["hbm_bandwidth_bytes_per_s"] / p["clock_hz"], p.count("dma_burst_bytes"),
              static_cast<Cycle>(p.ns_as_cycles("hbm_latency_ns")),
              static_cast<Cycle>(std::max<int64_t>(p.count("hbm_turnaround_cycles"), 0)),
              static_cast<Cycle>(refresh_interval),
              static_cast<Cycle>(refresh_interval > 0 ? p.ns_as_cycles("hbm_refresh_ns") : 0),
              by_request_time);
        });
}

}  // namespace podsim::sim::timing
