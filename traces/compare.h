// Comparison of two profiles (two topologies, two compiler versions, before and after a
// change): total time, time in collectives (pods) and each IR op's time, as `podsim
// profile diff` prints them, with
// a verdict for CI: did any figure get worse by more than a threshold?
//
// Times are those of summarize() (seconds, so chips with different clocks compare).
// Ops are matched by source-op name. An op's row counts towards the verdict only when both
// profiles have it and it is above the noise floor (its time is at least noise_floor of
// the total time in either profile); ops present in one profile only are shown as new or
// gone, and their cost shows up in the total time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "traces/summary.h"

namespace podsim::traces {

struct DiffOptions {
  double threshold = 0.05;    // relative slow-down that fails: 0.05 = 5% slower
  double noise_floor = 0.01;  // fraction of total time below which an op is never a failure
};

struct DiffRow {
  std::string name;
  std::string opcode;
  bool in_before = false;
  bool in_after = false;
  double before_seconds = 0;
  double after_seconds = 0;
  double change = 0;        // (after - before) / before; +inf when before is 0 and after is not
  bool counted = false;     // in both and above the noise floor (the total always counts)
  bool regression = false;  // counted and change > threshold
};

struct Diff {
  DiffRow total;
  // Summary::collective_seconds (in flight) and collective_exposed_seconds, when either
  // profile has collectives; each counted like an op.
  std::optional<DiffRow> collectives;
  std::optional<DiffRow> exposed_collectives;
  std::vector<DiffRow> ops;  // longest first (by the larger of the two times)
  bool regressed() const;
  size_t regressions() const;
};

Diff compare_summaries(const Summary& before, const Summary& after, const DiffOptions& options);

// The comparison as a table; the labels name the two profiles (file names).
std::string format_diff(const Diff& diff, const DiffOptions& options,
                        const std::string& before_label, const std::string& after_label,
                        size_t max_ops = 30);

// A fraction from "5%" or "0.05"; podsim::Error naming option otherwise or when negative.
double parse_fraction(const std::string& text, const std::string& option);

}  // namespace podsim::traces
