#include "traces/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include "traces/chrome_trace.h"
#include "traces/text_table.h"

namespace podsim::traces {
namespace {

using Interval = std::pair<uint64_t, uint64_t>;

// Length of the union of half-open intervals (sorts them in place).
uint64_t union_length(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0;
  uint64_t covered_to = 0;
  for (const auto& [start, end] : intervals) {
    const uint64_t from = std::max(start, covered_to);
    if (end > from) {
      total += end - from;
      covered_to = end;
    }
  }
  return total;
}

double ratio_or_nan(double num, double den) {
  return den > 0 ? num / den : std::numeric_limits<double>::quiet_NaN();
}

bool longer_first(const OpTime& a, const OpTime& b) {
  if (a.seconds != b.seconds) return a.seconds > b.seconds;
  return a.name < b.name;
}

ChipSummary summarize_chip(const Profile& profile, const ChipProfile& chip) {
  ChipSummary s;
  s.name = chip.name;
  s.clock_hz = chip.clock_hz;
  s.total_cycles = chip.total_cycles;
  s.seconds = static_cast<double>(chip.total_cycles) / chip.clock_hz;

  const bool has_hbm_track = std::any_of(chip.tracks.begin(), chip.tracks.end(),
                                         [](const Track& t) { return t.category == "hbm"; });
  const bool has_dma_track = std::any_of(chip.tracks.begin(), chip.tracks.end(),
                                         [](const Track& t) { return t.category == "dma"; });
  s.hbm_source = has_hbm_track ? "hbm" : has_dma_track ? "dma" : "";

  // Slot 0 collects unattributed work, slot i + 1 source op i.
  const size_t slots = profile.source_ops.size() + 1;
  std::vector<std::vector<Interval>> op_intervals(slots);
  std::vector<double> op_flops(slots, 0), op_bytes(slots, 0);
  std::vector<Interval> all, collective, collective_exposed;
  std::vector<bool> collective_slot(slots, false);
  for (size_t slot = 1; slot < slots; ++slot)
    collective_slot[slot] = is_collective_op(profile.source_ops[slot - 1]);
  for (const Track& track : chip.tracks) {
    const bool core = track.category == "scalar" || track.category == "vpu" || track.category == "mxu";
    const bool hbm_traffic = !s.hbm_source.empty() && track.category == s.hbm_source;
    std::vector<Interval> mine;
    mine.reserve(track.spans.size());
    for (const Span& span : track.spans) {
      const size_t slot = static_cast<size_t>(span.source_op + 1);
      op_intervals[slot].emplace_back(span.start, span.end);
      if (collective_slot[slot]) {
        collective.emplace_back(span.start, span.end);
        if (core) collective_exposed.emplace_back(span.start, span.end);
      }
      op_flops[slot] += span.flops;
      if (hbm_traffic) op_bytes[slot] += span.bytes;
      mine.emplace_back(span.start, span.end);
      s.flops += span.flops;
      if (track.category == "mxu") s.mxu_flops += span.flops;
      if (hbm_traffic) s.hbm_bytes += span.bytes;
    }
    all.insert(all.end(), mine.begin(), mine.end());
    const uint64_t busy = union_length(mine);
    s.tracks.push_back(
        {track.name, track.category, busy,
         ratio_or_nan(static_cast<double>(busy), static_cast<double>(chip.total_cycles))});
  }
  s.busy_cycles = union_length(all);
  s.collective_seconds = static_cast<double>(union_length(collective)) / chip.clock_hz;
  s.collective_exposed_seconds =
      static_cast<double>(union_length(collective_exposed)) / chip.clock_hz;

  for (size_t slot = 0; slot < slots; ++slot) {
    if (op_intervals[slot].empty()) continue;
    OpTime op;
    op.source_op = static_cast<int32_t>(slot) - 1;
    if (slot == 0) {
      op.name = "(no source op)";
    } else {
      op.name = profile.source_ops[slot - 1].name;
      op.opcode = profile.source_ops[slot - 1].opcode;
    }
    op.cycles = union_length(op_intervals[slot]);
    op.seconds = static_cast<double>(op.cycles) / chip.clock_hz;
    op.share = ratio_or_nan(static_cast<double>(op.cycles), static_cast<double>(chip.total_cycles));
    op.flops = op_flops[slot];
    op.bytes = op_bytes[slot];
    s.ops.push_back(std::move(op));
  }
  std::sort(s.ops.begin(), s.ops.end(), longer_first);

  s.peak_flops_per_s = chip.peaks.flops_per_cycle * chip.clock_hz;
  s.achieved_flops_per_s = ratio_or_nan(s.mxu_flops, s.seconds);
  s.mxu_utilization = ratio_or_nan(
      s.mxu_flops, chip.peaks.flops_per_cycle * static_cast<double>(chip.total_cycles));
  s.peak_hbm_bytes_per_s = chip.peaks.hbm_bytes_per_cycle * chip.clock_hz;
  s.hbm_bytes_per_s = ratio_or_nan(s.hbm_bytes, s.seconds);
  s.hbm_utilization = ratio_or_nan(
      s.hbm_bytes, chip.peaks.hbm_bytes_per_cycle * static_cast<double>(chip.total_cycles));
  return s;
}

std::string op_table(const std::vector<OpTime>& ops, size_t max_ops, bool with_cycles,
                     const std::string& indent) {
  std::vector<std::string> header = {"op", "opcode"};
  if (with_cycles) header.push_back("cycles");
  for (const char* h : {"time", "share", "flops", "HBM bytes"}) header.push_back(h);
  TextTable table(header, with_cycles ? "llrrrrr" : "llrrrr");
  auto row = [&](const OpTime& op) {
    std::vector<std::string> cells = {op.name, op.opcode};
    if (with_cycles) cells.push_back(format_count(op.cycles));
    cells.push_back(format_seconds(op.seconds));
    cells.push_back(format_percent(op.share));
    cells.push_back(format_si(op.flops, "FLOP"));
    cells.push_back(format_si(op.bytes, "B"));
    table.add_row(std::move(cells));
  };
  for (size_t i = 0; i < std::min(max_ops, ops.size()); ++i) row(ops[i]);
  if (ops.size() > max_ops) {
    OpTime rest;
    rest.name = fmt::format("({} more ops)", ops.size() - max_ops);
    for (size_t i = max_ops; i < ops.size(); ++i) {
      // Their times may overlap one another: the sum is an upper bound, labelled so.
      rest.cycles += ops[i].cycles;
      rest.seconds += ops[i].seconds;
      rest.share += ops[i].share;
      rest.flops += ops[i].flops;
      rest.bytes += ops[i].bytes;
    }
    rest.opcode = "(summed)";
    row(rest);
  }
  return table.render(indent);
}

}  // namespace

bool is_collective_op(const std::string& name) {
  for (std::string_view opcode : {"all-reduce", "all-gather", "reduce-scatter", "collective-permute",
                                  "all-to-all", "collective-broadcast"})
    if (name.starts_with(opcode) &&
        (name.size() == opcode.size() || name[opcode.size()] == '.' || name[opcode.size()] == '-'))
      return true;
  return false;
}

bool is_collective_op(const SourceOp& op) { return is_collective_op(op.name) || is_collective_op(op.opcode); }

CriticalPath critical_path(const ChipProfile& chip) {
  struct Piece {
    uint64_t start, end;
    size_t track;
  };
  std::vector<Piece> pieces;
  for (size_t t = 0; t < chip.tracks.size(); ++t)
    if (chip.tracks[t].category != "scalar")
      for (const Span& s : chip.tracks[t].spans)
        if (s.end > s.start) pieces.push_back({s.start, s.end, t});
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
  // latest[k]: of pieces 0..k (by start), the one that ends last.
  std::vector<size_t> latest(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k)
    latest[k] = k > 0 && pieces[latest[k - 1]].end >= pieces[k].end ? latest[k - 1] : k;
  std::map<std::string, uint64_t> by_category;
  std::vector<uint64_t> by_track(chip.tracks.size(), 0);
  uint64_t t = chip.total_cycles;
  while (t > 0) {
    // The pieces that started before t; of them, the one that ends last.
    const auto after = std::partition_point(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.start < t; });
    if (after == pieces.begin()) {
      by_category["waiting"] += t;
      break;
    }
    const Piece& p = pieces[latest[static_cast<size_t>(after - pieces.begin()) - 1]];
    if (p.end < t) {  // nothing runs from its end to t
      by_category["waiting"] += t - p.end;
      t = p.end;
      continue;
    }
    by_category[chip.tracks[p.track].category] += t - p.start;
    by_track[p.track] += t - p.start;
    t = p.start;
  }
  CriticalPath path;
  path.chip = chip.name;
  path.seconds = static_cast<double>(chip.total_cycles) / chip.clock_hz;
  for (const auto& [category, cycles] : by_category)
    path.categories.emplace_back(category, static_cast<double>(cycles) / chip.clock_hz);
  for (size_t k = 0; k < by_track.size(); ++k)
    if (by_track[k] > 0) path.tracks.emplace_back(chip.tracks[k].name, static_cast<double>(by_track[k]) / chip.clock_hz);
  auto most_first = [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; };
  std::sort(path.categories.begin(), path.categories.end(), most_first);
  std::sort(path.tracks.begin(), path.tracks.end(), most_first);
  return path;
}

Headline headline(const Profile& profile, const Summary& s) {
  Headline h;
  h.chips = static_cast<int>(profile.chips.size());
  h.seconds = s.seconds;
  for (const ChipProfile& chip : profile.chips) {
    h.cycles = std::max(h.cycles, chip.total_cycles);
    for (const Track& track : chip.tracks)
      if (track.category == "ici")
        for (const Span& span : track.spans) h.ici_bytes += span.bytes;
  }
  double flops = 0, peak_flops = 0, bytes = 0, peak_bytes = 0, links = 0, busy = 0;
  for (const ChipSummary& c : s.chips) {
    flops += c.mxu_flops;
    peak_flops += c.peak_flops_per_s;
    bytes += c.hbm_bytes;
    peak_bytes += c.peak_hbm_bytes_per_s;
    for (const TrackBusy& t : c.tracks)
      if ((t.category == "ici" || t.category == "dcn") && t.busy_cycles > 0) {
        links += 1;
        busy += t.fraction * c.seconds / s.seconds;
      }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  h.mfu = s.seconds > 0 ? ratio_or_nan(flops, peak_flops * s.seconds) : nan;
  h.hbm_utilization = s.seconds > 0 ? ratio_or_nan(bytes, peak_bytes * s.seconds) : nan;
  h.ici_utilization = links > 0 ? busy / links : nan;
  h.exposed_share = s.seconds > 0 ? s.collective_exposed_seconds / s.seconds : 0;
  return h;
}

Summary summarize(const Profile& profile) {
  validate_profile(profile);
  Summary summary;
  summary.program = profile.program;
  for (const ChipProfile& chip : profile.chips) {
    summary.chips.push_back(summarize_chip(profile, chip));
    const ChipSummary& added = summary.chips.back();
    summary.seconds = std::max(summary.seconds, added.seconds);
    summary.collective_seconds = std::max(summary.collective_seconds, added.collective_seconds);
    summary.collective_exposed_seconds =
        std::max(summary.collective_exposed_seconds, added.collective_exposed_seconds);
  }
  // Profile-wide: each op's longest time over the chips (flops and bytes summed).
  std::vector<OpTime> by_slot(profile.source_ops.size() + 1);
  std::vector<bool> seen(by_slot.size(), false);
  for (const ChipSummary& chip : summary.chips) {
    for (const OpTime& op : chip.ops) {
      const size_t slot = static_cast<size_t>(op.source_op + 1);
      OpTime& merged = by_slot[slot];
      const double flops = merged.flops + op.flops;
      const double bytes = merged.bytes + op.bytes;
      const int chips = seen[slot] ? merged.chips + 1 : 1;
      if (!seen[slot] || op.seconds > merged.seconds) merged = op;
      merged.flops = flops;
      merged.bytes = bytes;
      merged.chips = chips;
      seen[slot] = true;
    }
  }
  for (size_t slot = 0; slot < by_slot.size(); ++slot) {
    if (!seen[slot]) continue;
    by_slot[slot].share = ratio_or_nan(by_slot[slot].seconds, summary.seconds);
    summary.ops.push_back(std::move(by_slot[slot]));
  }
  std::sort(summary.ops.begin(), summary.ops.end(), longer_first);

  size_t slowest = 0;
  for (size_t c = 0; c < profile.chips.size(); ++c)
    if (profile.chips[c].total_cycles > profile.chips[slowest].total_cycles) slowest = c;
  if (!profile.chips.empty()) summary.critical_path = critical_path(profile.chips[slowest]);

  if (!profile.chips.empty()) {
    const ChipSummary& first = summary.chips[0];
    for (const OpTime& op : summary.ops) {
      if (op.flops <= 0 && op.bytes <= 0) continue;
      const double n = op.chips;
      const double compute = first.peak_flops_per_s > 0 ? op.flops / n / first.peak_flops_per_s : 0;
      const double memory = first.peak_hbm_bytes_per_s > 0 ? op.bytes / n / first.peak_hbm_bytes_per_s : 0;
      summary.roofline_losses.push_back({op.name, op.opcode, op.seconds, std::max(compute, memory)});
    }
    std::sort(summary.roofline_losses.begin(), summary.roofline_losses.end(), [](const auto& a, const auto& b) {
      return a.seconds - a.roofline_seconds > b.seconds - b.roofline_seconds;
    });
  }
  return summary;
}

std::string format_seconds(double seconds) {
  if (std::isnan(seconds)) return "n/a";
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a >= 1) return fmt::format("{:.4g} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.4g} ms", seconds * 1e3);
  if (a >= 1e-6) return fmt::format("{:.4g} us", seconds * 1e6);
  return fmt::format("{:.4g} ns", seconds * 1e9);
}

std::string format_summary(const Summary& summary, size_t max_ops) {
  std::string out;
  out += fmt::format("profile of {}: {} on {} chip(s)\n",
                     summary.program.empty() ? "(unnamed program)" : summary.program,
                     format_seconds(summary.seconds), summary.chips.size());
  if (summary.collective_seconds > 0)
    out += fmt::format(
        "collectives: {} in flight on the chip that had them longest ({} of the run), {} "
        "exposed ({}: the TensorCores in their instructions and waits; the rest overlapped "
        "other work)\n",
        format_seconds(summary.collective_seconds),
        format_percent(summary.collective_seconds / summary.seconds),
        format_seconds(summary.collective_exposed_seconds),
        format_percent(summary.collective_exposed_seconds / summary.seconds));
  for (const ChipSummary& chip : summary.chips) {
    out += fmt::format("\n{}: {} cycles at {} = {}; some unit busy {} of the time\n", chip.name,
                       format_count(chip.total_cycles), format_si(chip.clock_hz, "Hz"),
                       format_seconds(chip.seconds),
                       format_percent(static_cast<double>(chip.busy_cycles) /
                                      std::max<double>(1, static_cast<double>(chip.total_cycles))));
    out += fmt::format(
        "  MXU: {} done, {} of {} peak: utilisation {}\n", format_si(chip.mxu_flops, "FLOP"),
        format_si(chip.achieved_flops_per_s, "FLOP/s"), format_si(chip.peak_flops_per_s, "FLOP/s"),
        format_percent(chip.mxu_utilization));
    if (chip.flops > chip.mxu_flops)
      out += fmt::format("  other units: {}\n", format_si(chip.flops - chip.mxu_flops, "FLOP"));
    if (chip.hbm_source.empty())
      out += "  HBM: no hbm or dma track in this profile\n";
    else
      out += fmt::format(
          "  HBM: {} moved{}, {} of {} peak: utilisation {}\n", format_si(chip.hbm_bytes, "B"),
          chip.hbm_source == "dma" ? " (from the DMA tracks)" : "",
          format_si(chip.hbm_bytes_per_s, "B/s"), format_si(chip.peak_hbm_bytes_per_s, "B/s"),
          format_percent(chip.hbm_utilization));
    if (!chip.ops.empty()) {
      out +=
          "\n  time per IR op (union of its spans on all units; ops overlap, so shares may sum "
          "past 100%)\n";
      out += op_table(chip.ops, max_ops, true, "  ");
    }
    if (!chip.tracks.empty()) {
      out += "\n  busy and idle time per unit\n";
      TextTable table({"track", "category", "busy cycles", "busy", "idle"}, "llrrr");
      for (const TrackBusy& t : chip.tracks)
        table.add_row({t.name, t.category, format_count(t.busy_cycles), format_percent(t.fraction),
                       format_seconds(static_cast<double>(chip.total_cycles - t.busy_cycles) / chip.clock_hz)});
      out += table.render("  ");
    }
  }
  if (summary.chips.size() > 1 && !summary.ops.empty()) {
    out +=
        "\ntime per IR op over all chips (each op's longest time on any chip; flops and bytes "
        "summed)\n";
    out += op_table(summary.ops, max_ops, false, "");
  }
  const CriticalPath& path = summary.critical_path;
  if (path.seconds > 0) {
    out += fmt::format(
        "\ncritical path on {} (spans that follow one another back from the step's end; "
        "waiting: no unit but the scalar issue unit working)\n",
        path.chip);
    TextTable table({"unit", "time", "share"}, "lrr");
    for (const auto& [category, seconds] : path.categories)
      table.add_row({category, format_seconds(seconds), format_percent(seconds / path.seconds)});
    out += table.render("  ");
    out += "  busiest tracks on it: ";
    for (size_t k = 0; k < std::min<size_t>(path.tracks.size(), 3); ++k)
      out += fmt::format("{}{} {}", k ? ", " : "", path.tracks[k].first, format_percent(path.tracks[k].second / path.seconds));
    out += "\n";
  }
  if (!summary.roofline_losses.empty()) {
    out += "\ntime lost against the roofline (an op's time minus its flops at the MXU peak or its bytes at\n"
           "the HBM peak, whichever is longer; per chip)\n";
    TextTable table({"op", "opcode", "time", "roofline", "lost"}, "llrrr");
    for (size_t k = 0; k < std::min<size_t>(summary.roofline_losses.size(), 5); ++k) {
      const auto& loss = summary.roofline_losses[k];
      table.add_row({loss.name, loss.opcode, format_seconds(loss.seconds), format_seconds(loss.roofline_seconds),
                     format_seconds(loss.seconds - loss.roofline_seconds)});
    }
    out += table.render("");
  }
  return out;
}

}  // namespace podsim::traces
