// A profile's headline figures: per chip the run's cycles and time, where the time went
// by IR op, how busy each unit was, and MXU and HBM throughput against the chip's peaks.
// `podsim profile summary` and `podsim run --profile` print it; `podsim profile diff`
// compares two of them.
//
// Definitions (the figures are only as good as these are clear):
// - An op's time on a chip is the union, over all tracks of that chip, of the intervals of
//   the spans attributed to it: a cycle counts once for an op however many units worked
//   for it then. Different ops can run at the same time on different units, so shares of
//   total time can add up past 100%; cycles where no unit works count for no op.
// - A track's busy time is the union of its spans (nested spans count once).
// - Flops and bytes are summed over spans as given: a simulator that puts work on a span
//   must not repeat it on a span nested in it.
// - MXU flops are those of spans on tracks of category "mxu"; HBM bytes those of tracks of
//   category "hbm", or, where a chip has no such track, of its "dma" tracks (a simulator
//   may show the same traffic on both). An op's flops are from all its spans, its bytes
//   from those HBM-bytes tracks only.
// - MXU utilisation = MXU flops / (peak flops per cycle * total cycles); HBM utilisation
//   likewise with bytes. A peak of 0 (unknown) gives NaN, printed as "n/a".
// - The profile's time is its slowest chip's (chips run concurrently); an op's time in
//   the profile is its longest time on any chip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/profile.h"

namespace podsim::traces {

struct OpTime {
  int32_t source_op = kNoSourceOp;  // index into Profile::source_ops
  std::string name;                 // "(no source op)" for unattributed work
  std::string opcode;
  uint64_t cycles = 0;  // chip tables: union of the op's spans; profile table: on its slowest chip
  double seconds = 0;
  double share = 0;  // seconds / total seconds (of the chip, or of the profile)
  double flops = 0;  // all units
  double bytes = 0;  // HBM traffic (see above)
  int chips = 1;     // profile table: the chips it ran on (its flops and bytes are their sums)
};

struct TrackBusy {
  std::string name;
  std::string category;
  uint64_t busy_cycles = 0;
  double fraction = 0;  // of the chip's total cycles
};

struct ChipSummary {
  std::string name;
  double clock_hz = 0;
  uint64_t total_cycles = 0;
  double seconds = 0;
  // Time in collective ops (is_collective_op), the union of their spans: on every track
  // (in flight: their instructions, DMAs, HBM and link traffic), and on the TensorCores'
  // tracks alone (exposed: the cores in the collectives' own instructions and waits; the
  // rest of the time in flight overlapped other ops' work).
  double collective_seconds = 0;
  double collective_exposed_seconds = 0;
  uint64_t busy_cycles = 0;  // union of all spans on all tracks

  double flops = 0;      // all units
  double mxu_flops = 0;  // tracks of category "mxu"
  double peak_flops_per_s = 0;
  double achieved_flops_per_s = 0;  // MXU flops / seconds
  double mxu_utilization = 0;       // NaN when the peak is unknown

  std::string hbm_source;  // "hbm", "dma", or "" when the chip has neither kind of track
  double hbm_bytes = 0;
  double peak_hbm_bytes_per_s = 0;
  double hbm_bytes_per_s = 0;
  double hbm_utilization = 0;  // NaN when the peak is unknown

  std::vector<OpTime> ops;        // by time, longest first; ops without spans left out
  std::vector<TrackBusy> tracks;  // in the profile's order
};

// What bounds the step, on the slowest chip: a chain of spans walked back from the
// step's end, each one the span (of any unit but the scalar issue unit, whose spans
// include its waits) that started before the previous one did and ended last. Where no
// such span is running, the chain waits: the scalar unit issues, synchronises, or waits
// for latency. Its time is split by the chain's units (their track categories) and by its
// tracks; the shares add up to the step.
struct CriticalPath {
  std::string chip;
  double seconds = 0;
  std::vector<std::pair<std::string, double>> categories;  // seconds, most first; "waiting"
  std::vector<std::pair<std::string, double>> tracks;      // seconds, most first
};

struct Summary {
  std::string program;
  double seconds = 0;  // the slowest chip's
  double collective_seconds = 0;          // the most any chip had collectives in flight
  double collective_exposed_seconds = 0;  // the most any chip spent exposed in them
  std::vector<ChipSummary> chips;
  std::vector<OpTime> ops;  // over all chips: each op's longest time on any chip, longest first
  CriticalPath critical_path;
  // The ops that lost the most time against their roofline, most first: an op's time
  // minus the larger of its flops over the MXU peak and its HBM bytes over the HBM peak
  // (per chip: flops and bytes divided among the chips it ran on; chip 0's peaks). Ops
  // with neither flops nor bytes are left out.
  struct RooflineLoss {
    std::string name, opcode;
    double seconds = 0, roofline_seconds = 0;
  };
  std::vector<RooflineLoss> roofline_losses;
};

// Whether a source op is a collective: its instruction is named after an HLO collective
// opcode ("all-reduce.3", "all-gather", "reduce-scatter.1", "collective-permute.2",
// "all-to-all", "collective-broadcast", with -start/-done forms), as podsim's lowering
// and XLA's dumps name them.
bool is_collective_op(const std::string& name);
// The same by the op's name or its opcode (an all-reduce named "s1" whose opcode is
// "all-reduce"): how the summary and the report tell collectives.
bool is_collective_op(const SourceOp& op);

// Validates the profile (validate_profile) and derives the figures defined above.
Summary summarize(const Profile& profile);

// A run's headline figures over all of its chips, as `podsim sweep` tabulates them and
// the HTML report leads with them:
// - mfu: the MXU flops of every chip over every chip's peak for the profile's time;
//   hbm_utilization likewise with HBM bytes (NaN when no peak is known);
// - ici_utilization: the mean over the ICI and DCN links that carried anything of their
//   busy share of the profile's time (NaN when none did);
// - exposed_share: the collectives' exposed time over the profile's time;
// - ici_bytes: the bytes of every span on an ICI link's track (a burst counts once per
//   link it crossed).
struct Headline {
  int chips = 0;
  uint64_t cycles = 0;  // the slowest chip's
  double seconds = 0;   // the slowest chip's
  double mfu = 0, hbm_utilization = 0, ici_utilization = 0;
  double exposed_share = 0;
  double ici_bytes = 0;
};
Headline headline(const Profile& profile, const Summary& summary);

// A table for a terminal: per chip the headline figures, the max_ops longest ops (the rest
// folded into one line) and the busy fraction of every track.
std::string format_summary(const Summary& summary, size_t max_ops = 20);

// "1.25 ms", "830 ns": seconds with a unit that keeps 3-4 significant digits.
std::string format_seconds(double seconds);

}  // namespace podsim::traces
