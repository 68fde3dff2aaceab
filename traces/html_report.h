// `podsim profile report`: one self-contained HTML file for one or several profiles
// (Chart.js, from Debian's libjs-chart.js, is embedded in it; nothing is fetched when
// it is opened). For each run: the headline figures (traces::headline), a zoomable
// timeline per chip and unit coloured by the category of the op each span worked for,
// the busy share of every unit, the critical path and the ops that lost the most time
// against their roofline (traces::Summary), a roofline plot of the ops linked to a sortable op table,
// and for pods a heat map of link utilisation drawn on the torus and the step time of
// every chip. Several runs are laid side by side: the headline and the longest ops in
// one table each, every run's change against the first highlighted.
//
// The figures in the page carry their exact values (data-value attributes) so that
// tests and scripts can read them back from the DOM; the page sets
// body[data-render="done"] once every chart is drawn (and body[data-render-ms]: the
// milliseconds since it began to load), and records script errors in body[data-errors].
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "traces/profile.h"

namespace podsim::traces {

struct ReportRun {
  std::string label;  // the column heading: a file name, a topology
  Profile profile;
};

struct ReportOptions {
  // Timeline segments per track (about), and in all: spans closer than the drawing can
  // tell apart merge, so that a 64-chip profile stays a few MB.
  size_t segments_per_track = 2000;
  size_t segments_total = 400000;
  // Op table rows (and roofline points) per run: the longest ops; every op by default.
  size_t table_ops = std::numeric_limits<size_t>::max();
};

// The report as HTML text (validates every profile first).
std::string html_report(const std::vector<ReportRun>& runs, const ReportOptions& options = {});

// Writes html_report(runs) to path atomically.
void write_html_report(const std::vector<ReportRun>& runs, const std::string& path,
                       const ReportOptions& options = {});

}  // namespace podsim::traces
