// podsim sweep WORKLOAD --topology A,B,...: runs one workload on several chips or pods and
// compares them: an HLO module (timing-only: every chip a replica of it, as `podsim run
// --topology` runs it) or a `podsim train` model for a few steps (its last step's
// profile, from a `podsim train` of its own per topology). For each: simulated step time,
// MXU utilisation against the chips' peak (MFU), HBM and ICI utilisation, the share of
// the step exposed in collectives, ICI bytes and host time. Writes the table as CSV and
// JSON, the runs side by side as an HTML report (--report); with --baseline (a JSON it wrote before) it compares step times and exits 2 when
// one got slower by more than --threshold, for CI.
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "tools/commands.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"
#include "traces/chrome_trace.h"
#include "traces/compare.h"
#include "traces/html_report.h"
#include "traces/summary.h"

namespace podsim::tools {
namespace {

using Json = nlohmann::json;

struct SweepOptions {
  std::string workload;  // an HLO file, or mlp / transformer
  std::vector<std::string> topologies;
  int64_t steps = 3;  // for a model
  std::string csv, json, baseline, report;
  std::string threshold = "5%";
};

struct Row {
  std::string topology;
  std::string chip;
  int64_t chips = 0;
  uint64_t cycles = 0;  // of the slowest chip, at its clock
  double seconds = 0;
  double mfu = NAN, hbm = NAN, ici = NAN;  // utilisations; NaN: no peak or no links
  double exposed = 0;                      // share of the step exposed in collectives
  double ici_bytes = 0;
  double host_seconds = 0;
  std::string error;  // the row did not run
  traces::Profile profile;  // kept for --report
};

bool is_model(const std::string& workload) { return workload == "mlp" || workload == "transformer"; }

// A profile's figures (traces::headline); the profile stays with the row for a report.
void fill_figures(traces::Profile profile, Row& row, bool keep) {
  const traces::Headline h = traces::headline(profile, traces::summarize(profile));
  row.cycles = h.cycles;
  row.seconds = h.seconds;
  row.mfu = h.mfu;
  row.hbm = h.hbm_utilization;
  row.ici = h.ici_utilization;
  row.exposed = h.exposed_share;
  row.ici_bytes = h.ici_bytes;
  if (keep) row.profile = std::move(profile);
}

// The HLO module on one chip or on every chip of a pod (a replica each, or the module's
// replica_count on the first chips), timing-only.
void run_module(const ir::Module& module, const std::string& topology, Row& row, bool keep) {
  sim::timing::TimingOptions timing;
  timing.timing_only = true;
  timing.profile = true;
  isa::Executable exe;
  if (topology::names_a_chip(topology)) {
    const topology::ChipConfig chip = topology::chip_config(topology);
    if (module.replica_count > 1)
      fail("{} has {} replicas; {} is one chip (name a pod: v5e-8, v4:2x2x2)", module.name(),
           module.replica_count, topology);
    exe = tpu::compile(module, chip);
    row.chip = chip.name;
    row.chips = 1;
  } else {
    const topology::PodConfig pod = topology::pod_config(topology);
    const int64_t replicas = module.replica_count > 1 ? module.replica_count : pod.chips();
    if (replicas > pod.chips())
      fail("{} needs {} devices (replicas); {} has {} chips", module.name(), replicas, topology, pod.chips());
    exe = tpu::compile(module, tpu::Target(pod, replicas, 1));
    row.chip = pod.chip.name;
    row.chips = pod.chips();
  }
  sim::timing::PodRunResult r = sim::timing::run_timed_pod(exe, {}, timing);
  fill_figures(std::move(r.profile), row, keep);
}

// `podsim train MODEL --device sim --topology T --steps N --profile F` in a process of its
// own (the runtime's SIM client serves one topology a process); its last step's profile.
void run_model(const SweepOptions& o, const std::string& topology, Row& row) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("podsim_sweep_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string profile = (dir / "step.json").string(), log = (dir / "train.log").string();
  const std::string steps = std::to_string(o.steps);
  const pid_t child = ::fork();
  if (child < 0) fail("cannot start podsim train: {}", std::strerror(errno));
  if (child == 0) {
    if (std::freopen(log.c_str(), "w", stdout) == nullptr || ::dup2(::fileno(stdout), 2) < 0) ::_exit(127);
    ::execl("/proc/self/exe", "podsim", "train", o.workload.c_str(), "--device", "sim", "--topology",
            topology.c_str(), "--steps", steps.c_str(), "--profile", profile.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove_all(dir);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    fail("podsim train {} --topology {} failed: {}", o.workload, topology,
         text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
  }
  traces::Profile p = traces::read_chrome_trace(profile);
  std::filesystem::remove_all(dir);
  row.chips = static_cast<int64_t>(p.chips.size());
  fill_figures(std::move(p), row, !o.report.empty());
  row.chip = topology::names_a_chip(topology) ? topology::chip_config(topology).name
                                              : topology::pod_config(topology).chip.name;
}

std::string percent(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.1f}%", 100 * x); }
Json number_or_null(double x) { return std::isnan(x) ? Json(nullptr) : Json(x); }

Json to_json(const SweepOptions& o, const std::vector<Row>& rows) {
  Json out = {{"workload", o.workload}, {"rows", Json::array()}};
  if (is_model(o.workload)) out["steps"] = o.steps;
  for (const Row& r : rows) {
    Json j = {{"topology", r.topology}, {"chip", r.chip}, {"chips", r.chips}};
    if (!r.error.empty()) {
      j["error"] = r.error;
    } else {
      j.update({{"cycles", r.cycles}, {"step_seconds", r.seconds}, {"mfu", number_or_null(r.mfu)},
                {"hbm_utilization", number_or_null(r.hbm)}, {"ici_utilization", number_or_null(r.ici)},
                {"exposed_collective_share", r.exposed}, {"ici_bytes", r.ici_bytes},
                {"host_seconds", r.host_seconds}});
    }
    out["rows"].push_back(std::move(j));
  }
  return out;
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream out(path);
  if (!out) fail("cannot write {}", path);
  out << "topology,chip,chips,cycles,step_seconds,mfu,hbm_utilization,ici_utilization,"
         "exposed_collective_share,ici_bytes,host_seconds,error\n";
  auto value = [](double x) { return std::isnan(x) ? std::string() : fmt::format("{:.6g}", x); };
  for (const Row& r : rows)
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", r.topology, r.chip, r.chips, r.cycles,
                       value(r.seconds), value(r.mfu), value(r.hbm), value(r.ici), value(r.exposed),
                       value(r.ici_bytes), value(r.host_seconds), r.error);
}

// The baseline's step time per topology, from a JSON file this command wrote.
std::map<std::string, double> read_baseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open baseline {}", path);
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::exception& e) {
    fail("baseline {} is not JSON: {}", path, e.what());
  }
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array())
    fail("baseline {} has no \"rows\" array (write one with podsim sweep --json)", path);
  std::map<std::string, double> out;
  for (const Json& r : j["rows"])
    if (r.is_object() && r.contains("topology") && r["topology"].is_string() && r.contains("step_seconds") &&
        r["step_seconds"].is_number())
      out[r["topology"].get<std::string>()] = r["step_seconds"].get<double>();
  return out;
}

int sweep(const SweepOptions& o) {
  const bool model = is_model(o.workload);
  std::unique_ptr<ir::Module> module;
  if (!model) {
    module = ir::parse_module_file(o.workload);
    ir::verify_module(*module, o.workload);
  }
  // Options that can fail do so before the runs.
  const double threshold = traces::parse_fraction(o.threshold, "--threshold");
  std::map<std::string, double> baseline;
  if (!o.baseline.empty()) baseline = read_baseline(o.baseline);

  std::vector<Row> rows;
  for (size_t k = 0; k < o.topologies.size(); ++k) {
    const std::string& t = o.topologies[k];
    std::fprintf(stderr, "[%zu/%zu] %s ...\n", k + 1, o.topologies.size(), t.c_str());
    Row row;
    row.topology = t;
    const auto start = std::chrono::steady_clock::now();
    try {
      if (model)
        run_model(o, t, row);
      else
        run_module(*module, t, row, !o.report.empty());
    } catch (const Error& e) {
      row.error = e.what();
    }
    row.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rows.push_back(std::move(row));
  }

  fmt::print("{}: {}\n", model ? "model" : "module",
             model ? fmt::format("{}, last of {} steps (podsim train)", o.workload, o.steps)
                   : fmt::format("{} (timing-only, a replica per chip)", o.workload));
  fmt::print("{:<20} {:<5} {:>6} {:>12} {:>7} {:>7} {:>7} {:>8} {:>10} {:>8}{}\n", "topology", "chip", "chips",
             "step us", "MFU", "HBM", "ICI", "exposed", "ICI MB", "host s", baseline.empty() ? "" : "  vs baseline");
  int slower = 0;
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      fmt::print("{:<20} error: {}\n", r.topology, r.error);
      continue;
    }
    std::string versus;
    if (!baseline.empty()) {
      const auto it = baseline.find(r.topology);
      if (it == baseline.end() || it->second <= 0) {
        versus = "  (not in baseline)";
      } else {
        const double change = (r.seconds - it->second) / it->second;
        const bool regressed = change > threshold;
        slower += regressed ? 1 : 0;
        versus = fmt::format("  {:+.1f}%{}", 100 * change, regressed ? "  SLOWER" : "");
      }
    }
    fmt::print("{:<20} {:<5} {:>6} {:>12.2f} {:>7} {:>7} {:>7} {:>8} {:>10.3f} {:>8.2f}{}\n", r.topology, r.chip,
               r.chips, r.seconds * 1e6, percent(r.mfu), percent(r.hbm), percent(r.ici), percent(r.exposed),
               r.ici_bytes / 1e6, r.host_seconds, versus);
  }
  if (!o.csv.empty()) write_csv(o.csv, rows);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    if (!out) fail("cannot write {}", o.json);
    out << to_json(o, rows).dump(2) << "\n";
  }
  if (!o.report.empty()) {
    std::vector<traces::ReportRun> runs;
    for (Row& r : rows)
      if (r.error.empty()) runs.push_back({r.topology, std::move(r.profile)});
    if (runs.empty()) fail("no topology ran: no report written");
    traces::write_html_report(runs, o.report);
    fmt::print("wrote the report to {}\n", o.report);
  }
  if (slower > 0) {
    fmt::print("{} topolog{} slower than {} by more than {:.1f}%\n", slower, slower == 1 ? "y" : "ies", o.baseline,
               100 * threshold);
    return kRegressionExitCode;
  }
  for (const Row& r : rows)
    if (!r.error.empty()) return 1;
  return 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run one workload (an HLO module, timing-only, or a podsim train model) on several chips "
      "or pods and compare step time, MFU, HBM and ICI use and exposed collectives");
  cmd->add_option("workload", o->workload,
                  "An HLO file (every chip runs a replica of it, timing-only), or mlp / transformer "
                  "(podsim train's models, data parallel over the pod)")
      ->required();
  cmd->add_option("--topology", o->topologies, "Chips and pods to compare: v5e-4,v5e-8,v6e-8,v4-8,v5e,pod.toml")
      ->required()
      ->delimiter(',');
  cmd->add_option("--steps", o->steps, "For a model: training steps (the last one is measured)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "Write the table here as CSV");
  cmd->add_option("--json", o->json, "Write the table here as JSON (a baseline for --baseline)");
  cmd->add_option("--report", o->report, "Write an HTML report of every topology's run side by side (podsim profile report)");
  cmd->add_option("--baseline", o->baseline,
                  "A JSON this command wrote: compare each topology's step time, exit 2 when one got "
                  "slower by more than --threshold");
  cmd->add_option("--threshold", o->threshold, "Slow-down against the baseline that fails, e.g. 5% or 0.05")
      ->capture_default_str();
  return {cmd, [o] { return sweep(*o); }};
}

}  // namespace podsim::tools
