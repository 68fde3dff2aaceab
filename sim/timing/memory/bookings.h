// Internal to sim/timing: a resource that serves one request at a time (an HBM channel).
// Requests come from processes that run ahead of SystemC time (a DMA engine books all of
// a transfer's bursts when it starts it), so a request made later may be for an earlier
// time. In call order, it waits for everything booked before it; by request time, it
// takes the first gap at or after its time where it fits between the bookings already
// made, as a memory controller serves what has arrived. Bookings are never moved once
// made (no preemption). A request of another kind than its neighbour (a write after a
// read) needs `switch_cycles` between them (turnaround).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace podsim::sim::timing {

using Cycle = uint64_t;  // as unit_models.h (this header stays free of SystemC's)

class Bookings {
 public:
  Bookings(Cycle switch_cycles, bool by_request_time)
      : switch_(switch_cycles), by_request_time_(by_request_time) {}

  // Every `period` cycles from `first` on, the resource is unavailable for `duration`
  // cycles (DRAM refresh); no booking overlaps such a window.
  void set_blackout(Cycle period, Cycle duration, Cycle first) {
    period_ = period;
    blackout_ = period > 0 ? std::min(duration, period - 1) : 0;
    phase_ = first;
  }

  // Books `service` cycles (>= 1) for a request of `kind` at `request` (>= SystemC time
  // `now`); returns the start of the booking.
  Cycle book(Cycle now, Cycle request, Cycle service, uint8_t kind) {
    prune(now);
    service = std::max<Cycle>(service, 1);
    // By request time, the first candidate is the gap before the first booking that ends
    // after the request; in call order, after the last booking.
    auto next = by_request_time_
                    ? std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(),
                                       request, [](Cycle t, const Span& s) { return t < s.end; })
                    : busy_.end();
    for (;; ++next) {
      const Span* prev = next == busy_.begin() + static_cast<std::ptrdiff_t>(head_)
                             ? nullptr
                             : &*(next - 1);
      Cycle start = request;
      if (prev) start = std::max(start, prev->end + (prev->last != kind ? switch_ : 0));
      start = after_blackout(start, service);
      if (next == busy_.end()) return insert(next, start, service, kind);
      const Cycle after = start + service + (next->first != kind ? switch_ : 0);
      if (after <= next->start) return insert(next, start, service, kind);
    }
  }

 private:
  struct Span {
    Cycle start, end;
    uint8_t first, last;  // the kinds of its first and last request
  };

  // Inserts [start, start + service) before `next`, merged with a neighbour it touches or
  // that leaves a gap no request of this length fits in (keeps the list short: a busy
  // stretch is one span).
  Cycle insert(std::vector<Span>::iterator next, Cycle start, Cycle service, uint8_t kind) {
    const Cycle end = start + service;
    const auto first = busy_.begin() + static_cast<std::ptrdiff_t>(head_);
    const bool join_prev = next != first && start - (next - 1)->end < service;
    const bool join_next = next != busy_.end() && next->start - end < service;
    if (join_prev && join_next) {
      (next - 1)->end = next->end;
      (next - 1)->last = next->last;
      busy_.erase(next);
    } else if (join_prev) {
      (next - 1)->end = end;
      (next - 1)->last = kind;
    } else if (join_next) {
      next->start = start;
      next->first = kind;
    } else {
      busy_.insert(next, Span{start, end, kind, kind});
    }
    return start;
  }

  // Forgets the bookings that ended before `now` (nothing is requested before it), and
  // in call order all but the last (only it is ever looked at).
  void prune(Cycle now) {
    while (head_ < busy_.size() && busy_[head_].end < now) ++head_;
    if (!by_request_time_ && head_ + 1 < busy_.size()) head_ = busy_.size() - 1;
    if (head_ > 64 && head_ * 2 > busy_.size()) {
      busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // The first start at or after `start` at which `service` cycles miss every blackout.
  Cycle after_blackout(Cycle start, Cycle service) const {
    if (blackout_ == 0) return start;
    if (start < phase_) {
      if (start + service <= phase_) return start;
      start = phase_;
    }
    const Cycle into = (start - phase_) % period_;  // 0: a window begins at `start`
    if (into < blackout_) return start - into + blackout_;
    if (into + service > period_) return start - into + period_ + blackout_;
    return start;
  }

  Cycle switch_;
  bool by_request_time_;
  Cycle period_ = 0, blackout_ = 0, phase_ = 0;
  std::vector<Span> busy_;  // sorted, disjoint; busy_[head_..] may still matter
  size_t head_ = 0;
};

}  // namespace podsim::sim::timing
