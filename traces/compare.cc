#include "traces/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "common/error.h"
#include "traces/text_table.h"

namespace podsim::traces {
namespace {

double relative_change(double before, double after) {
  if (before > 0) return (after - before) / before;
  return after > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

// Change, counted and regression of a row present in both profiles.
void judge(DiffRow& row, const Summary& before, const Summary& after, const DiffOptions& options) {
  if (!row.in_before || !row.in_after) return;
  row.change = relative_change(row.before_seconds, row.after_seconds);
  row.counted = row.before_seconds >= options.noise_floor * before.seconds ||
                row.after_seconds >= options.noise_floor * after.seconds;
  row.regression = row.counted && row.change > options.threshold;
}

std::string format_change(const DiffRow& row) {
  if (!row.in_before) return "new";
  if (!row.in_after) return "gone";
  if (std::isinf(row.change)) return "+inf";
  return fmt::format("{:+.1f}%", row.change * 100);
}

std::string verdict(const DiffRow& row) {
  if (row.regression) return "WORSE";
  if (row.in_before && row.in_after && !row.counted) return "(below noise floor)";
  return "";
}

}  // namespace

bool Diff::regressed() const { return regressions() > 0; }

size_t Diff::regressions() const {
  return static_cast<size_t>(total.regression) +
         static_cast<size_t>(collectives && collectives->regression) +
         static_cast<size_t>(exposed_collectives && exposed_collectives->regression) +
         static_cast<size_t>(
             std::count_if(ops.begin(), ops.end(), [](const DiffRow& r) { return r.regression; }));
}

Diff compare_summaries(const Summary& before, const Summary& after, const DiffOptions& options) {
  Diff diff;
  diff.total.name = "total time";
  diff.total.in_before = diff.total.in_after = true;
  diff.total.before_seconds = before.seconds;
  diff.total.after_seconds = after.seconds;
  diff.total.change = relative_change(before.seconds, after.seconds);
  diff.total.counted = true;
  diff.total.regression = diff.total.change > options.threshold;
  auto collective_row = [&](std::optional<DiffRow>& row, const char* name, double in_before,
                            double in_after) {
    row.emplace();
    row->name = name;
    row->in_before = before.collective_seconds > 0;
    row->in_after = after.collective_seconds > 0;
    row->before_seconds = in_before;
    row->after_seconds = in_after;
    judge(*row, before, after, options);
  };
  if (before.collective_seconds > 0 || after.collective_seconds > 0) {
    collective_row(diff.collectives, "collectives (in flight)", before.collective_seconds,
                   after.collective_seconds);
    collective_row(diff.exposed_collectives, "collectives (exposed)",
                   before.collective_exposed_seconds, after.collective_exposed_seconds);
  }

  std::map<std::string, DiffRow> rows;
  for (const OpTime& op : before.ops) {
    DiffRow& row = rows[op.name];
    row.name = op.name;
    row.opcode = op.opcode;
    row.in_before = true;
    row.before_seconds = op.seconds;
  }
  for (const OpTime& op : after.ops) {
    DiffRow& row = rows[op.name];
    row.name = op.name;
    if (row.opcode.empty()) row.opcode = op.opcode;
    row.in_after = true;
    row.after_seconds = op.seconds;
  }
  for (auto& [name, row] : rows) {
    judge(row, before, after, options);
    diff.ops.push_back(std::move(row));
  }
  std::stable_sort(diff.ops.begin(), diff.ops.end(), [](const DiffRow& a, const DiffRow& b) {
    return std::max(a.before_seconds, a.after_seconds) >
           std::max(b.before_seconds, b.after_seconds);
  });
  return diff;
}

std::string format_diff(const Diff& diff, const DiffOptions& options,
                        const std::string& before_label, const std::string& after_label,
                        size_t max_ops) {
  std::string out = fmt::format(
      "profile diff: {} (before) -> {} (after); fails past {} slower, ops below {} of total time "
      "ignored\n\n",
      before_label, after_label, format_percent(options.threshold),
      format_percent(options.noise_floor));
  TextTable table({"op", "opcode", "before", "after", "change", ""}, "llrrrl");
  auto add = [&](const DiffRow& row) {
    table.add_row({row.name, row.opcode, row.in_before ? format_seconds(row.before_seconds) : "-",
                   row.in_after ? format_seconds(row.after_seconds) : "-", format_change(row),
                   verdict(row)});
  };
  add(diff.total);
  if (diff.collectives) add(*diff.collectives);
  if (diff.exposed_collectives) add(*diff.exposed_collectives);
  size_t shown = 0;
  for (const DiffRow& row : diff.ops) {
    // Every failing row is shown, however long the list.
    if (shown < max_ops || row.regression) {
      add(row);
      ++shown;
    }
  }
  out += table.render();
  if (diff.ops.size() > shown)
    out += fmt::format("({} shorter ops not shown)\n", diff.ops.size() - shown);
  const size_t n = diff.regressions();
  out += n == 0 ? fmt::format("\nOK: no figure is more than {} slower\n",
                              format_percent(options.threshold))
                : fmt::format("\nFAIL: {} figure(s) more than {} slower\n", n,
                              format_percent(options.threshold));
  return out;
}

double parse_fraction(const std::string& text, const std::string& option) {
  std::string digits = text;
  const bool percent = !digits.empty() && digits.back() == '%';
  if (percent) digits.pop_back();
  double value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0)
    fail("{} '{}' is not a non-negative fraction; write e.g. 5% or 0.05", option, text);
  return percent ? value / 100 : value;
}

}  // namespace podsim::traces
