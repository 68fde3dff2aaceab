// The HTML report (html_report.h). The page is built here in three parts: the figures
// as HTML (the headline table, the op tables, each value also in data-value), the
// drawing data as one JSON block (timeline segments in cycles, unit busy shares, ops on
// the roofline, links), and the scripts: Chart.js, embedded from Debian's
// libjs-chart.js (/usr/share/javascript/chart.js/chart.min.js, MIT licence, its banner
// kept; chartjs_source.cc is generated from it at build time), and html_report_js.cc's
// script that draws the charts, the timeline and the torus.
#include "traces/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "traces/atomic_file.h"
#include "traces/summary.h"

namespace podsim::traces {

extern const char kChartJs[];       // chartjs_source.cc (generated)
extern const char kReportScript[];  // html_report_js.cc
extern const char kReportStyle[];   // html_report_js.cc

namespace {

using nlohmann::json;

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string percent(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.1f}%", 100 * x); }

std::string count(double x) {
  if (std::isnan(x)) return "n/a";
  const double a = std::fabs(x);
  if (a >= 1e12) return fmt::format("{:.3g} T", x / 1e12);
  if (a >= 1e9) return fmt::format("{:.3g} G", x / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} M", x / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g} k", x / 1e3);
  return fmt::format("{:.3g}", x);
}

// data-value text: exact, and NaN as "" (no value).
std::string value(double x) { return std::isnan(x) ? "" : fmt::format("{}", x); }

json number_or_null(double x) { return std::isnan(x) ? json(nullptr) : json(x); }

// "chip 3 (1,1,0) (v5e)", "chip 9 (1,0,0 slice 2) (v5e)": the chip's coordinates in its
// slice's torus and its slice, when the name has them.
struct Place {
  std::array<int, 3> xyz{};
  int slice = 0;
};
std::optional<Place> chip_place(const std::string& name) {
  for (size_t open = name.find('('); open != std::string::npos; open = name.find('(', open + 1)) {
    Place p;
    int consumed = 0;
    const char* at = name.c_str() + open;
    if (std::sscanf(at, "(%d,%d,%d)%n", &p.xyz[0], &p.xyz[1], &p.xyz[2], &consumed) == 3 && consumed > 0) return p;
    if (std::sscanf(at, "(%d,%d,%d slice %d)%n", &p.xyz[0], &p.xyz[1], &p.xyz[2], &p.slice, &consumed) == 4 &&
        consumed > 0)
      return p;
  }
  return std::nullopt;
}

// The torus's extents over the chips (x, y, z, slices), or nothing if a chip has no place.
std::optional<std::array<int, 4>> extents(const Profile& p) {
  std::array<int, 4> dims{0, 0, 0, 0};
  for (const ChipProfile& c : p.chips) {
    const auto place = chip_place(c.name);
    if (!place) return std::nullopt;
    for (size_t d = 0; d < 3; ++d) dims[d] = std::max(dims[d], place->xyz[d] + 1);
    dims[3] = std::max(dims[3], place->slice + 1);
  }
  return dims;
}

// "(v5e)" at the end of a chip's name.
std::string chip_kind(const std::string& name) {
  const size_t open = name.rfind('(');
  if (open == std::string::npos || name.back() != ')') return "";
  const std::string inside = name.substr(open + 1, name.size() - open - 2);
  return inside.find(',') == std::string::npos ? inside : "";
}

// "v5e 4x2 (8 chips)", "v5e 2x2 x 2 slices (8 chips)" from the chips' names; "8 chips"
// where they carry no coordinates.
std::string topology_of(const Profile& p) {
  const auto dims = extents(p);
  const std::string kind = p.chips.empty() ? "" : chip_kind(p.chips[0].name);
  const std::string chips = fmt::format("{} chip{}", p.chips.size(), p.chips.size() == 1 ? "" : "s");
  if (!dims || p.chips.size() <= 1) return kind.empty() ? chips : fmt::format("{} ({})", kind, chips);
  std::string shape = (*dims)[2] > 1 ? fmt::format("{}x{}x{}", (*dims)[0], (*dims)[1], (*dims)[2])
                                     : fmt::format("{}x{}", (*dims)[0], (*dims)[1]);
  if ((*dims)[3] > 1) shape += fmt::format(" x {} slices", (*dims)[3]);
  return fmt::format("{}{}{} ({})", kind, kind.empty() ? "" : " ", shape, chips);
}

// "jit(step)/dense/dot_general, model.py:42": the op's metadata, where it has any.
std::string framework_names(const SourceOp& op) {
  const std::string source = op.source_file.empty() ? "" : fmt::format("{}:{}", op.source_file, op.source_line);
  return op.op_name + (op.op_name.empty() || source.empty() ? "" : ", ") + source;
}

bool is_matmul(const std::string& opcode) {
  return opcode == "dot" || opcode == "convolution" || opcode == "matmul" || opcode == "conv2d" ||
         opcode == "linear" || opcode == "bmm";
}

// The colour classes of the timeline: a span counts as its op's collective work, or as
// the kind of unit it ran on.
const std::vector<std::string> kCategories = {"collective", "mxu", "vpu", "scalar", "dma",
                                              "hbm",        "ici", "dcn", "host",   "other"};

int category_index(const std::string& name) {
  const auto it = std::find(kCategories.begin(), kCategories.end(), name);
  return static_cast<int>(it == kCategories.end() ? kCategories.size() - 1 : it - kCategories.begin());
}

// A track's spans as segments [start, end, category, op]: spans of one category closer
// than the track's length / most merge (the op kept is the longest span's), so a track
// of one category has at most most + 1 segments.
json segments(const Track& track, const std::vector<bool>& collective, uint64_t length, size_t most) {
  json out = json::array();
  const uint64_t gap = length / std::max<size_t>(most, 1);
  struct Segment {
    uint64_t start, end;
    int category;
    int32_t op;
    uint64_t op_length;
  };
  std::optional<Segment> open;
  auto flush = [&] {
    if (open) out.push_back({open->start, open->end, open->category, open->op});
  };
  const int unit = category_index(track.category);
  for (const Span& s : track.spans) {
    const bool is_collective = s.source_op >= 0 && collective[static_cast<size_t>(s.source_op)];
    const int category = is_collective ? 0 : unit;
    if (open && category == open->category && s.start <= open->end + gap) {
      open->end = std::max(open->end, s.end);
      if (s.end - s.start > open->op_length) {
        open->op = s.source_op;
        open->op_length = s.end - s.start;
      }
      continue;
    }
    flush();
    open = Segment{s.start, s.end, category, s.source_op, s.end - s.start};
  }
  flush();
  return out;
}

struct RunFigures {
  Summary summary;
  Headline headline;
  std::string topology;
};

// The op table of one run (the longest ops first), with the roofline columns.
std::string op_table(const json& ops, size_t index) {
  std::string html = fmt::format(
      "<table class=\"ops sortable\" id=\"ops-{}\"><thead><tr><th>op</th><th>opcode</th>"
      "<th class=\"num\">time</th><th class=\"num\">share</th><th class=\"num\">FLOPs</th>"
      "<th class=\"num\">HBM bytes</th><th class=\"num\">FLOP/s</th><th class=\"num\">of roofline</th>"
      "</tr></thead><tbody>\n",
      index);
  for (size_t k = 0; k < ops.size(); ++k) {
    const json& op = ops[k];
    const double achieved = op["achieved"].is_null() ? NAN : op["achieved"].get<double>();
    const double bound = op["bound"].is_null() ? NAN : op["bound"].get<double>();
    const double of_roof = achieved / bound;
    html += fmt::format(
        "<tr id=\"op-{}-{}\"><td data-value=\"{}\" title=\"{}\">{}</td><td data-value=\"{}\">{}</td>"
        "<td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td>"
        "<td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td>"
        "<td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td></tr>\n",
        index, k, escape(op["name"]), escape(op["metadata"]), escape(op["name"]), escape(op["opcode"]), escape(op["opcode"]),
        value(op["seconds"]), format_seconds(op["seconds"]), value(op["share"]), percent(op["share"]),
        value(op["flops"]), count(op["flops"]), value(op["bytes"]), count(op["bytes"]), value(achieved),
        count(achieved), value(of_roof), percent(of_roof));
  }
  return html + "</tbody></table>\n";
}

// The drawing data of one run, and its op rows (the same order as the table).
json run_data(const ReportRun& run, const RunFigures& f, const ReportOptions& options) {
  const Profile& p = run.profile;
  json data;
  data["label"] = run.label;
  data["program"] = p.program;
  data["topology"] = f.topology;
  std::vector<bool> collective;
  for (const SourceOp& op : p.source_ops) collective.push_back(is_collective_op(op));

  size_t tracks = 0;
  for (const ChipProfile& c : p.chips) tracks += c.tracks.size();
  const size_t per_track =
      std::max<size_t>(50, std::min(options.segments_per_track, options.segments_total / std::max<size_t>(tracks, 1)));
  json chips = json::array(), links = json::array();
  const auto dims = extents(p);
  json columns = json::array();  // the torus map's column headings
  if (dims)
    for (int slice = 0; slice < (*dims)[3]; ++slice)
      for (int z = 0; z < (*dims)[2]; ++z)
        columns.push_back((*dims)[3] > 1 ? (*dims)[2] > 1 ? fmt::format("slice {}, z = {}", slice, z)
                                                          : fmt::format("slice {}", slice)
                                         : fmt::format("z = {}", z));
  data["columns"] = std::move(columns);
  for (size_t c = 0; c < p.chips.size(); ++c) {
    const ChipProfile& chip = p.chips[c];
    const ChipSummary& cs = f.summary.chips[c];
    json tracks_json = json::array();
    for (size_t t = 0; t < chip.tracks.size(); ++t) {
      const Track& track = chip.tracks[t];
      const TrackBusy& busy = cs.tracks[t];
      tracks_json.push_back({{"name", track.name},
                             {"category", track.category},
                             {"busy", number_or_null(busy.fraction)},
                             {"segments", segments(track, collective, chip.total_cycles, per_track)}});
      // "ICI x+ 0->1": a link of this chip; its busy share of the profile's time.
      int from = 0, to = 0;
      char axis[8] = {0};
      if ((track.category == "ici" || track.category == "dcn") &&
          std::sscanf(track.name.c_str(), "%*s %7s %d->%d", axis, &from, &to) == 3)
        links.push_back({{"from", from},
                         {"to", to},
                         {"axis", axis},
                         {"name", track.name},
                         {"util", number_or_null(static_cast<double>(busy.busy_cycles) / chip.clock_hz /
                                                 std::max(f.summary.seconds, 1e-30))}});
    }
    // On the torus map the slices' z-planes stand side by side: column slice * z + z.
    const auto place = chip_place(chip.name);
    json coords = nullptr;
    if (place && dims)
      coords = {place->xyz[0], place->xyz[1], place->slice * (*dims)[2] + place->xyz[2]};
    chips.push_back({{"name", chip.name},
                     {"coords", std::move(coords)},
                     {"clock_hz", chip.clock_hz},
                     {"cycles", chip.total_cycles},
                     {"seconds", cs.seconds},
                     {"tracks", std::move(tracks_json)}});
  }
  data["chips"] = std::move(chips);
  data["links"] = std::move(links);
  data["categories"] = kCategories;
  std::vector<std::string> op_names;
  for (const SourceOp& op : p.source_ops) {
    const std::string names = framework_names(op);
    op_names.push_back(names.empty() ? op.name : fmt::format("{} ({})", op.name, names));
  }
  data["op_names"] = op_names;

  // Per chip, the roofs of chip 0 (the chips of a pod are of one kind).
  const double peak_flops = p.chips.empty() ? 0 : p.chips[0].peaks.flops_per_cycle * p.chips[0].clock_hz;
  const double peak_bytes = p.chips.empty() ? 0 : p.chips[0].peaks.hbm_bytes_per_cycle * p.chips[0].clock_hz;
  data["peak_flops"] = peak_flops;
  data["peak_hbm_bytes"] = peak_bytes;
  // An op's flops and bytes are summed over the chips it ran on; the roofline is per chip.
  json ops = json::array();
  for (const OpTime& op : f.summary.ops) {
    if (ops.size() >= options.table_ops) break;
    const double flops = op.flops / op.chips, bytes = op.bytes / op.chips;
    const double intensity = bytes > 0 ? flops / bytes : NAN;
    const double achieved = op.seconds > 0 && flops > 0 ? flops / op.seconds : NAN;
    const double bound = std::isnan(intensity) || peak_flops <= 0 ? NAN : std::min(peak_flops, intensity * peak_bytes);
    ops.push_back({{"name", op.name},
                   {"opcode", op.opcode},
                   {"metadata", op.source_op >= 0 ? framework_names(p.source_ops[static_cast<size_t>(op.source_op)]) : ""},
                   {"seconds", op.seconds},
                   {"share", number_or_null(op.share)},
                   {"flops", op.flops},
                   {"bytes", op.bytes},
                   {"collective", op.source_op >= 0 && collective[static_cast<size_t>(op.source_op)]},
                   {"matmul", is_matmul(op.opcode)},
                   {"intensity", number_or_null(intensity)},
                   {"achieved", number_or_null(achieved)},
                   {"bound", number_or_null(bound)}});
  }
  data["ops"] = std::move(ops);
  return data;
}

struct Metric {
  const char* key;
  const char* name;
  int better;  // -1 lower is better, +1 higher, 0 neither
};

const Metric kMetrics[] = {{"step_seconds", "step time", -1},
                           {"cycles", "cycles (slowest chip)", -1},
                           {"chips", "chips", 0},
                           {"mfu", "MFU", +1},
                           {"hbm_utilization", "HBM bandwidth utilisation", 0},
                           {"ici_utilization", "ICI utilisation", 0},
                           {"exposed_share", "exposed communication", -1},
                           {"ici_bytes", "ICI bytes (link-hops)", 0}};

double metric(const RunFigures& f, const std::string& key) {
  const Headline& h = f.headline;
  if (key == "step_seconds") return h.seconds;
  if (key == "cycles") return static_cast<double>(h.cycles);
  if (key == "chips") return h.chips;
  if (key == "mfu") return h.mfu;
  if (key == "hbm_utilization") return h.hbm_utilization;
  if (key == "ici_utilization") return h.ici_utilization;
  if (key == "exposed_share") return h.exposed_share;
  return h.ici_bytes;
}

std::string shown(const std::string& key, double x) {
  if (key == "step_seconds") return format_seconds(x);
  if (key == "cycles" || key == "chips") return fmt::format("{}", static_cast<uint64_t>(x));
  if (key == "ici_bytes") return count(x) + "B";
  return percent(x);
}

// A change against the first run: "+12.0%" and a class: better, worse, changed (past 1%).
std::pair<std::string, std::string> change(double base, double x, int better) {
  if (std::isnan(base) || std::isnan(x) || base == 0) return {"", ""};
  const double r = x / base - 1;
  if (std::fabs(r) < 0.01) return {" (=)", ""};
  const char* cls = better == 0 ? "changed" : (r < 0) == (better < 0) ? "better" : "worse";
  return {fmt::format(" ({:+.1f}%)", 100 * r), cls};
}

std::string headline_table(const std::vector<ReportRun>& runs, const std::vector<RunFigures>& figures) {
  std::string html = "<table class=\"headline\" id=\"headline\"><thead><tr><th></th>";
  for (const ReportRun& r : runs) html += fmt::format("<th>{}</th>", escape(r.label));
  html += "</tr></thead><tbody>\n<tr><td>topology</td>";
  for (const RunFigures& f : figures) html += fmt::format("<td>{}</td>", escape(f.topology));
  html += "</tr>\n<tr><td>critical path</td>";
  for (const RunFigures& f : figures) {
    std::string shares;
    const CriticalPath& path = f.summary.critical_path;
    for (size_t k = 0; k < std::min<size_t>(path.categories.size(), 3); ++k)
      shares += fmt::format("{}{} {}", k ? ", " : "", path.categories[k].first,
                            percent(path.categories[k].second / path.seconds));
    html += fmt::format("<td>{}</td>", escape(shares));
  }
  html += "</tr>\n";
  for (const Metric& m : kMetrics) {
    html += fmt::format("<tr><td>{}</td>", m.name);
    for (size_t r = 0; r < runs.size(); ++r) {
      const double x = metric(figures[r], m.key);
      const auto [delta, cls] = r == 0 ? std::pair<std::string, std::string>{} : change(metric(figures[0], m.key), x, m.better);
      html += fmt::format("<td class=\"num {}\" data-run=\"{}\" data-metric=\"{}\" data-value=\"{}\">{}{}</td>", cls, r,
                          m.key, value(x), shown(m.key, x), delta);
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

// The critical path's units and tracks, and the ops that lost the most against their roofline.
std::string analysis(const Summary& s, size_t index) {
  const CriticalPath& path = s.critical_path;
  std::string html = fmt::format(
      "<div class=\"row\"><div class=\"chart\"><h3>Critical path on {} (spans that follow one another back "
      "from the step's end; waiting: only the scalar unit at work)</h3>\n<table id=\"critical-path-{}\">"
      "<thead><tr><th>unit</th><th class=\"num\">time</th><th class=\"num\">share</th></tr></thead><tbody>\n",
      escape(path.chip), index);
  for (const auto& [category, seconds] : path.categories)
    html += fmt::format("<tr><td>{}</td><td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\">{}</td></tr>\n",
                        escape(category), value(seconds), format_seconds(seconds), percent(seconds / path.seconds));
  html += "</tbody></table>\n<p>Busiest tracks on it: ";
  for (size_t k = 0; k < std::min<size_t>(path.tracks.size(), 5); ++k)
    html += fmt::format("{}{} ({})", k ? ", " : "", escape(path.tracks[k].first), percent(path.tracks[k].second / path.seconds));
  html += fmt::format(
      "</p></div>\n<div class=\"chart\"><h3>Time lost against the roofline (per chip)</h3>\n"
      "<table id=\"roofline-losses-{}\"><thead><tr><th>op</th><th>opcode</th><th class=\"num\">time</th>"
      "<th class=\"num\">roofline</th><th class=\"num\">lost</th></tr></thead><tbody>\n",
      index);
  for (size_t k = 0; k < std::min<size_t>(s.roofline_losses.size(), 10); ++k) {
    const auto& loss = s.roofline_losses[k];
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" "
        "data-value=\"{}\">{}</td></tr>\n",
        escape(loss.name), escape(loss.opcode), format_seconds(loss.seconds), format_seconds(loss.roofline_seconds),
        value(loss.seconds - loss.roofline_seconds), format_seconds(loss.seconds - loss.roofline_seconds));
  }
  return html + "</tbody></table></div></div>\n";
}

// Several runs: the longest ops of any run, each run's time, changes against the first.
std::string op_comparison(const std::vector<ReportRun>& runs, const std::vector<RunFigures>& figures) {
  std::map<std::string, std::vector<double>> times;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const OpTime& op : figures[r].summary.ops) {
      auto& row = times.try_emplace(op.name, std::vector<double>(runs.size(), NAN)).first->second;
      row[r] = op.seconds;
    }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [name, row] : times) {
    double most = 0;
    for (double t : row) most = std::max(most, std::isnan(t) ? 0 : t);
    order.emplace_back(-most, name);
  }
  std::sort(order.begin(), order.end());
  std::string html = "<table class=\"ops sortable\" id=\"op-comparison\"><thead><tr><th>op</th>";
  for (const ReportRun& r : runs) html += fmt::format("<th class=\"num\">{}</th>", escape(r.label));
  html += "</tr></thead><tbody>\n";
  for (size_t k = 0; k < std::min<size_t>(order.size(), 30); ++k) {
    const std::vector<double>& row = times[order[k].second];
    html += fmt::format("<tr><td data-value=\"{}\">{}</td>", escape(order[k].second), escape(order[k].second));
    for (size_t r = 0; r < runs.size(); ++r) {
      const auto [delta, cls] = r == 0 ? std::pair<std::string, std::string>{} : change(row[0], row[r], -1);
      html += fmt::format("<td class=\"num {}\" data-value=\"{}\">{}{}</td>", cls, value(row[r]),
                          std::isnan(row[r]) ? "-" : format_seconds(row[r]), delta);
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

}  // namespace

std::string html_report(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  if (runs.empty()) fail("a report needs at least one profile");
  std::vector<RunFigures> figures;
  for (const ReportRun& run : runs) {
    RunFigures f;
    f.summary = summarize(run.profile);  // validates
    f.headline = headline(run.profile, f.summary);
    f.topology = topology_of(run.profile);
    figures.push_back(std::move(f));
  }
  json data = json::array();
  for (size_t r = 0; r < runs.size(); ++r) data.push_back(run_data(runs[r], figures[r], options));
  std::string data_text = data.dump();
  // Inside <script>, "</script" or "<!--" would change how the page parses: no "<" at all.
  for (size_t at = data_text.find('<'); at != std::string::npos; at = data_text.find('<', at))
    data_text.replace(at, 1, "\\u003c");

  std::string title = runs.size() == 1 ? runs[0].profile.program : fmt::format("{} runs", runs.size());
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"generator\" content=\"podsim profile report\">\n<title>podsim profile: {}</title>\n"
      "<script>window.podsimErrors=[];window.addEventListener('error',function(e){{"
      "window.podsimErrors.push(String(e.message));if(document.body)document.body.dataset.errors="
      "window.podsimErrors.join(' | ');}});</script>\n<style>{}</style>\n<script>{}</script>\n</head>\n"
      "<body data-render=\"pending\">\n<h1>podsim profile: {}</h1>\n",
      escape(title), kReportStyle, kChartJs, escape(title));
  html += "<section><h2>Headline</h2>\n" + headline_table(runs, figures);
  if (runs.size() > 1) html += "<h2>Longest ops, side by side</h2>\n" + op_comparison(runs, figures);
  html += "</section>\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const bool pod = runs[r].profile.chips.size() > 1;
    html += fmt::format(
        "<section class=\"run\" id=\"run-{0}\"><h2>{1}: {2}</h2>\n"
        "<h3>Timeline <select class=\"chip-select\" id=\"chip-select-{0}\"></select>"
        " <span class=\"hint\">wheel: zoom, drag: pan, double-click: whole run</span></h3>\n"
        "<div class=\"legend\" id=\"legend-{0}\"></div>\n"
        "<div class=\"timeline\"><canvas id=\"timeline-{0}\" height=\"100\"></canvas>"
        "<div class=\"tip\" id=\"tip-{0}\"></div></div>\n"
        "<div class=\"row\"><div class=\"chart\"><h3>Unit utilisation (selected chip)</h3>"
        "<canvas id=\"busy-{0}\"></canvas></div>\n"
        "<div class=\"chart\"><h3>Roofline (per chip; click an op)</h3><canvas id=\"roofline-{0}\"></canvas></div></div>\n",
        r, escape(runs[r].label), escape(figures[r].topology));
    if (pod)
      html += fmt::format(
          "<div class=\"row\"><div class=\"chart\"><h3>Link utilisation on the torus</h3><div class=\"heat\" "
          "id=\"heat-{0}\"></div></div>\n<div class=\"chart\"><h3>Step time per chip</h3>"
          "<canvas id=\"chip-times-{0}\"></canvas></div></div>\n",
          r);
    html += analysis(figures[r].summary, r);
    html += "<h3>Ops (click a heading to sort)</h3>\n" + op_table(data[r]["ops"], r) + "</section>\n";
  }
  html += "<script type=\"application/json\" id=\"podsim-data\">" + data_text + "</script>\n";
  html += std::string("<script>") + kReportScript + "</script>\n</body></html>\n";
  return html;
}

void write_html_report(const std::vector<ReportRun>& runs, const std::string& path, const ReportOptions& options) {
  const std::string html = html_report(runs, options);
  write_file_atomically(path, "report", [&](std::ostream& file) { file << html; });
}

}  // namespace podsim::traces
