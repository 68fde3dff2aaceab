// podsim profile summary FILE.json | diff BEFORE.json AFTER.json | report FILE.json... -o
// OUT.html: read profiles that a simulated run wrote (Chrome trace JSON), print where the
// time went, compare two and exit 2 when a figure got worse past the threshold (for CI),
// or write one HTML report of one or several runs side by side.
#include <fmt/core.h>

#include <filesystem>

#include "common/error.h"
#include "tools/commands.h"
#include "traces/chrome_trace.h"
#include "traces/compare.h"
#include "traces/html_report.h"
#include "traces/summary.h"

namespace podsim::tools {

Command add_profile_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("profile", "Profiles of simulated runs: summarise one, compare two, report on several");
  cmd->require_subcommand(1);

  auto* summary = cmd->add_subcommand(
      "summary", "Print a profile's time per IR op, unit busy times, MXU and HBM use");
  auto file = std::make_shared<std::string>();
  auto max_ops = std::make_shared<size_t>(20);
  summary->add_option("profile", *file, "Profile JSON written by a simulated run")->required();
  summary
      ->add_option("--ops", *max_ops, "How many IR ops to list (the rest are summed in one line)")
      ->capture_default_str();

  auto* diff = cmd->add_subcommand(
      "diff",
      "Compare two profiles' total and per-op times; exit 2 when one got worse past the threshold");
  auto before = std::make_shared<std::string>();
  auto after = std::make_shared<std::string>();
  auto threshold = std::make_shared<std::string>("5%");
  auto noise_floor = std::make_shared<std::string>("1%");
  diff->add_option("before", *before, "Baseline profile JSON")->required();
  diff->add_option("after", *after, "Profile JSON to check against it")->required();
  diff->add_option("--threshold", *threshold, "Slow-down that fails, e.g. 5% or 0.05")
      ->capture_default_str();
  diff->add_option("--noise-floor", *noise_floor, "Ops below this share of total time never fail")
      ->capture_default_str();

  auto* report = cmd->add_subcommand(
      "report", "Write an HTML report (plots, timeline, op table, torus) of one or several runs side by side");
  auto reported = std::make_shared<std::vector<std::string>>();
  auto labels = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  report->add_option("profiles", *reported, "Profile JSON files written by simulated runs")->required();
  report->add_option("-o,--output", *output, "The HTML file to write")->required();
  report->add_option("--label", *labels, "A heading per profile (default: the file names)");

  return {cmd, [=]() {
            if (report->parsed()) {
              if (!labels->empty() && labels->size() != reported->size())
                throw Error(fmt::format("--label given {} times for {} profiles", labels->size(), reported->size()));
              std::vector<traces::ReportRun> runs;
              for (size_t k = 0; k < reported->size(); ++k)
                runs.push_back({labels->empty() ? std::filesystem::path((*reported)[k]).filename().string() : (*labels)[k],
                                traces::read_chrome_trace((*reported)[k])});
              traces::write_html_report(runs, *output);
              fmt::print("wrote {} ({} run{})\n", *output, runs.size(), runs.size() == 1 ? "" : "s");
              return 0;
            }
            if (summary->parsed()) {
              fmt::print("{}", traces::format_summary(
                                   traces::summarize(traces::read_chrome_trace(*file)), *max_ops));
              return 0;
            }
            traces::DiffOptions options;
            options.threshold = traces::parse_fraction(*threshold, "--threshold");
            options.noise_floor = traces::parse_fraction(*noise_floor, "--noise-floor");
            const traces::Summary a = traces::summarize(traces::read_chrome_trace(*before));
            const traces::Summary b = traces::summarize(traces::read_chrome_trace(*after));
            const traces::Diff result = traces::compare_summaries(a, b, options);
            fmt::print("{}", traces::format_diff(result, options, *before, *after));
            return result.regressed() ? kRegressionExitCode : 0;
          }};
}

}  // namespace podsim::tools
