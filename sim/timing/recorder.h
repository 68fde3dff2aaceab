// Internal to sim/timing: collects what a timed run did into a traces::Profile (tracks of
// spans, HBM bandwidth and MXU utilisation counters) and the instruction trace. Plain
// C++; times are absolute SystemC cycles and become run-relative here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/isa.h"
#include "sim/timing/timed_chip.h"
#include "traces/profile.h"

namespace podsim::sim::timing {

// A value accumulated over time in bins that widen (pairs merge) as the run grows, so a
// counter has at most a few thousand samples however long the run.
class BinnedSeries {
 public:
  void add(uint64_t start, uint64_t end, double amount);  // spread evenly over [start, end)
  // Samples of amount per cycle times `scale`, one per bin, and a final 0 at `end`.
  std::vector<traces::CounterSample> samples(double scale, uint64_t end) const;

 private:
  static constexpr size_t kMaxBins = 4096;
  uint64_t width_ = 16;
  std::vector<double> bins_;
};

class Recorder {
 public:
  Recorder(const isa::Executable& executable, uint64_t base, bool profile, bool trace);

  // Profile times are run-relative plus this shift (the host link's uploads come first
  // when they are profiled); the instruction trace is not shifted. Set before any span.
  void set_profile_shift(uint64_t cycles) { shift_ = cycles; }
  bool profiling() const { return profile_; }
  // A cycle of the run in profile time; a track's name.
  uint64_t profile_time(uint64_t cycle) const { return cycle - base_ + shift_; }
  const std::string& track_name(int track) const { return tracks_[static_cast<size_t>(track)].track.name; }
  bool tracing() const { return trace_; }
  uint64_t base() const { return base_; }

  // merge_gap: a span with the same source op starting at most this many cycles after
  // the previous one ends extends it (keeps profiles of long loops small). union_track:
  // spans may arrive out of order and overlap; finish() replaces them by their union.
  int add_track(std::string name, std::string category, uint64_t merge_gap,
                bool union_track = false);
  void span(int track, std::string_view name, uint64_t start, uint64_t end, int32_t source_op,
            double flops = 0, double bytes = 0);
  // A span in profile time (already relative and shifted): the host link's transfers.
  void profile_span(int track, std::string name, uint64_t start, uint64_t end, double bytes);
  void hbm_traffic(uint64_t start, uint64_t end, double bytes) {
    hbm_.add(start - base_ + shift_, end - base_ + shift_, bytes);
  }
  void mxu_work(uint64_t start, uint64_t end, double flops) {
    mxu_.add(start - base_ + shift_, end - base_ + shift_, flops);
  }
  // Bytes sent on the links this chip's profile shows (ICI ports, its DCN stages): a
  // "link bandwidth out" counter, on pods only.
  void link_traffic(uint64_t start, uint64_t end, double bytes) {
    links_used_ = true;
    links_.add(start - base_ + shift_, end - base_ + shift_, bytes);
  }

  size_t trace_instruction(int core, int pc, isa::Opcode opcode, std::string unit, uint64_t issue,
                           uint64_t start, uint64_t end, int32_t source_op);
  InstructionRecord& traced(size_t index) { return trace_records_[index]; }

  // The profile of a run whose program ended at `end` (absolute) and whose profile goes
  // on for `tail` cycles after it (the host link's downloads), and the sorted trace.
  traces::Profile finish_profile(const isa::Executable& executable, uint64_t end,
                                 uint64_t tail = 0);
  std::vector<InstructionRecord> finish_trace();

 private:
  struct TrackState {
    traces::Track track;
    std::string merged_name;  // of a span merging ops of different names
    uint64_t merge_gap = 0;
    bool union_track = false;
  };
  uint64_t base_;
  uint64_t shift_ = 0;
  bool profile_, trace_;
  std::vector<TrackState> tracks_;
  BinnedSeries hbm_, mxu_, links_;
  bool links_used_ = false;
  std::vector<InstructionRecord> trace_records_;
};

}  // namespace podsim::sim::timing
