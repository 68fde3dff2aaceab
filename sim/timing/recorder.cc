#include "sim/timing/recorder.h"

#include <fmt/format.h>

#include <algorithm>

namespace podsim::sim::timing {

void BinnedSeries::add(uint64_t start, uint64_t end, double amount) {
  if (end <= start) end = start + 1;
  while ((end - 1) / width_ >= kMaxBins) {
    std::vector<double> merged((bins_.size() + 1) / 2, 0.0);
    for (size_t i = 0; i < bins_.size(); ++i) merged[i / 2] += bins_[i];
    bins_ = std::move(merged);
    width_ *= 2;
  }
  size_t first = static_cast<size_t>(start / width_),
         last = static_cast<size_t>((end - 1) / width_);
  if (bins_.size() <= last) bins_.resize(last + 1, 0.0);
  if (first == last) {  // most bursts and spans lie in one bin
    bins_[first] += amount;
    return;
  }
  double per_cycle = amount / static_cast<double>(end - start);
  for (size_t b = first; b <= last; ++b) {
    uint64_t lo = std::max<uint64_t>(start, b * width_),
             hi = std::min<uint64_t>(end, (b + 1) * width_);
    bins_[b] += per_cycle * static_cast<double>(hi - lo);
  }
}

std::vector<traces::CounterSample> BinnedSeries::samples(double scale, uint64_t end) const {
  std::vector<traces::CounterSample> out;
  for (size_t b = 0; b < bins_.size(); ++b) {
    uint64_t cycle = b * width_;
    if (cycle >= end && end > 0) break;
    uint64_t span = std::min<uint64_t>(width_, end > cycle ? end - cycle : width_);
    out.push_back({cycle, bins_[b] / static_cast<double>(std::max<uint64_t>(span, 1)) * scale});
  }
  // The last bin's value holds for its width only: nothing was added after it.
  const uint64_t after = bins_.size() * width_;
  if (!out.empty() && after < end && out.back().value != 0) out.push_back({after, 0.0});
  if (out.empty() || out.back().cycle < end) out.push_back({end, 0.0});
  return out;
}

Recorder::Recorder(const isa::Executable&, uint64_t base, bool profile, bool trace)
    : base_(base), profile_(profile), trace_(trace) {}

int Recorder::add_track(std::string name, std::string category, uint64_t merge_gap,
                        bool union_track) {
  TrackState t;
  t.track.name = std::move(name);
  t.track.category = std::move(category);
  t.merged_name = t.track.category + " ops";
  t.merge_gap = merge_gap;
  t.union_track = union_track;
  tracks_.push_back(std::move(t));
  return static_cast<int>(tracks_.size() - 1);
}

void Recorder::span(int track, std::string_view name, uint64_t start, uint64_t end,
                    int32_t source_op, double flops, double bytes) {
  if (!profile_) return;
  TrackState& t = tracks_[static_cast<size_t>(track)];
  start = start - base_ + shift_;
  end = end - base_ + shift_;
  if (end <= start) end = start + 1;
  std::vector<traces::Span>& spans = t.track.spans;
  if (!t.union_track && !spans.empty()) {
    traces::Span& last = spans.back();
    if (last.source_op == source_op && start >= last.end && start - last.end <= t.merge_gap) {
      if (last.name != name && last.name != t.merged_name) last.name = t.merged_name;
      last.end = end;
      last.flops += flops;
      last.bytes += bytes;
      return;
    }
  }
  spans.push_back({std::string(name), start, end, source_op, flops, bytes});
}

void Recorder::profile_span(int track, std::string name, uint64_t start, uint64_t end,
                            double bytes) {
  if (!profile_) return;
  tracks_[static_cast<size_t>(track)].track.spans.push_back(
      {std::move(name), start, std::max(end, start + 1), traces::kNoSourceOp, 0, bytes});
}

size_t Recorder::trace_instruction(int core, int pc, isa::Opcode opcode, std::string unit,
                                   uint64_t issue, uint64_t start, uint64_t end,
                                   int32_t source_op) {
  trace_records_.push_back(
      {core, pc, opcode, std::move(unit), issue - base_, start - base_, end - base_, source_op});
  return trace_records_.size() - 1;
}

traces::Profile Recorder::finish_profile(const isa::Executable& executable, uint64_t end,
                                         uint64_t tail) {
  traces::Profile p;
  p.program =
      executable.programs.empty() ? std::string("(empty)") : executable.chip.name + " executable";
  for (const isa::SourceOp& s : executable.source_ops)
    p.source_ops.push_back({s.instruction, s.op_type, s.op_name, s.source_file, s.source_line});
  const topology::ChipConfig& chip = executable.chip;
  traces::ChipProfile c;
  c.name = fmt::format("chip 0 ({})", chip.name);
  c.clock_hz = chip.clock_hz;
  c.peaks.flops_per_cycle =
      2.0 * chip.mxu_rows * chip.mxu_cols * chip.mxus_per_core * chip.tensor_cores;
  c.peaks.hbm_bytes_per_cycle = chip.hbm_bandwidth_bytes_per_s / chip.clock_hz;
  c.total_cycles = end - base_ + shift_ + tail;
  for (TrackState& t : tracks_) {
    if (t.track.spans.empty()) continue;
    if (!t.union_track) {
      // Spans of a track never overlap partially, but some arrive out of order (DMA
      // transfers are recorded when they land, not in the order they started).
      std::stable_sort(t.track.spans.begin(), t.track.spans.end(),
                       [](const traces::Span& a, const traces::Span& b) {
                         return a.start != b.start ? a.start < b.start : a.end > b.end;
                       });
    } else {
      std::vector<traces::Span>& s = t.track.spans;
      std::sort(s.begin(), s.end(), [](const traces::Span& a, const traces::Span& b) {
        return a.start != b.start ? a.start < b.start : a.end < b.end;
      });
      std::vector<traces::Span> merged;
      for (traces::Span& x : s) {
        if (!merged.empty() && x.start <= merged.back().end) {
          traces::Span& m = merged.back();
          m.end = std::max(m.end, x.end);
          m.bytes += x.bytes;
          m.flops += x.flops;
          if (m.source_op != x.source_op) {
            m.source_op = traces::kNoSourceOp;
            m.name = t.track.category + " traffic";
          }
        } else {
          merged.push_back(std::move(x));
        }
      }
      s = std::move(merged);
    }
    c.tracks.push_back(std::move(t.track));
  }
  c.counters.push_back({"HBM bandwidth", "bytes/s", hbm_.samples(chip.clock_hz, c.total_cycles)});
  c.counters.push_back(
      {"MXU utilisation", "fraction",
       mxu_.samples(c.peaks.flops_per_cycle > 0 ? 1.0 / c.peaks.flops_per_cycle : 0.0,
                    c.total_cycles)});
  if (links_used_)
    c.counters.push_back(
        {"link bandwidth out", "bytes/s", links_.samples(chip.clock_hz, c.total_cycles)});
  p.chips.push_back(std::move(c));
  return p;
}

std::vector<InstructionRecord> Recorder::finish_trace() {
  std::stable_sort(trace_records_.begin(), trace_records_.end(),
                   [](const InstructionRecord& a, const InstructionRecord& b) {
                     if (a.issue != b.issue) return a.issue < b.issue;
                     if (a.core != b.core) return a.core < b.core;
                     return a.start < b.start;
                   });
  return std::move(trace_records_);
}

}  // namespace podsim::sim::timing
