// `podsim run --backend sim` end to end: the same outputs as --backend sim-functional,
// a summary, a profile that reads back, an instruction trace, and --check-hazards.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/ir/parser.h"
#include "compiler/ir/safetensors.h"
#include "tests/sim/timing/timing_test_util.h"
#include "tests/tools/podsim_cli.h"
#include "traces/chrome_trace.h"

namespace podsim::sim::timing::testing {
namespace {

using cli_testing::podsim;
using cli_testing::Result;

// The "  outN: ..." lines of a run.
std::string output_lines(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("  out", 0) == 0) out += line + "\n";
  return out;
}

TEST(CliSim, RunPrintsTheFunctionalResultsASummaryAndWritesTheProfileAndTrace) {
  auto dir =
      std::filesystem::temp_directory_path() / ("podsim_cli_sim_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  std::string profile = (dir / "p.json").string(), trace = (dir / "t.csv").string();
  Result timed =
      podsim("run " + hlo + " --backend sim --chip tiny --seed 3 --check-hazards --profile " +
             profile + " --trace-instructions " + trace);
  Result functional = podsim("run " + hlo + " --backend sim-functional --chip tiny --seed 3");
  ASSERT_EQ(timed.exit_code, 0) << timed.output;
  ASSERT_EQ(functional.exit_code, 0) << functional.output;
  EXPECT_FALSE(output_lines(timed.output).empty());
  EXPECT_EQ(output_lines(timed.output), output_lines(functional.output));
  EXPECT_NE(timed.output.find("MXU"), std::string::npos) << timed.output;
  EXPECT_NE(timed.output.find("cycles"), std::string::npos) << timed.output;

  traces::Profile p = traces::read_chrome_trace(profile);
  ASSERT_EQ(p.chips.size(), 1u);
  EXPECT_GT(p.chips[0].total_cycles, 0u);
  std::string plain = timed.output;  // the summary groups digits: 11,551
  std::erase(plain, ',');
  EXPECT_NE(plain.find(std::to_string(p.chips[0].total_cycles) + " cycles"), std::string::npos)
      << "the summary names the profile's " << p.chips[0].total_cycles << " cycles:\n"
      << timed.output;
  bool has_mxu = false, has_hbm = false;
  for (const traces::Track& t : p.chips[0].tracks) {
    has_mxu = has_mxu || (t.category == "mxu" && !t.spans.empty());
    has_hbm = has_hbm || (t.category == "hbm" && !t.spans.empty());
  }
  EXPECT_TRUE(has_mxu);
  EXPECT_TRUE(has_hbm);
  EXPECT_TRUE(well_formed(p));

  std::string csv = read_text(trace);
  EXPECT_EQ(csv.rfind("core,pc,instruction,unit,issue,start,end,source_op\n", 0), 0u);
  EXPECT_NE(csv.find(",mmul,mxu0,"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CliSim, TimingOnlyPrintsTheSameCyclesAndNoOutputs) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podsim_cli_timing_only_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  std::string full_trace = (dir / "full.csv").string(), fast_trace = (dir / "fast.csv").string();
  Result full =
      podsim("run " + hlo + " --backend sim --chip tiny --trace-instructions " + full_trace);
  Result fast = podsim("run " + hlo + " --backend sim --chip tiny --timing-only " +
                       "--trace-instructions " + fast_trace);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  ASSERT_EQ(fast.exit_code, 0) << fast.output;
  EXPECT_TRUE(output_lines(fast.output).empty()) << fast.output;
  EXPECT_NE(fast.output.find("no outputs computed"), std::string::npos) << fast.output;
  // The summary (from "profile of" to the line naming the trace file) and the trace are
  // the same.
  auto summary = [](const std::string& text) {
    size_t from = text.find("profile of");
    return from == std::string::npos ? text : text.substr(from, text.find("wrote ") - from);
  };
  EXPECT_EQ(summary(full.output), summary(fast.output));
  EXPECT_EQ(read_text(full_trace), read_text(fast_trace));

  Result wrong = podsim("run " + hlo + " --backend eval --timing-only");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.output.find("--timing-only needs --backend sim"), std::string::npos)
      << wrong.output;
  std::filesystem::remove_all(dir);
}

// The hand-written ring all-reduce on a simulated pod from the CLI: each chip's y is the
// sum of every chip's x, on the timed and the functional pod.
// `podsim models` shows what each model reads, with the pod's values; `--stats` prints
// the run's statistics, the interconnect's bytes being the summary's ICI bytes.
TEST(CliSim, ModelsListTheirParametersAndRunsPrintTheirStatistics) {
  Result models = podsim("models v4-8");
  ASSERT_EQ(models.exit_code, 0) << models.output;
  EXPECT_NE(models.output.find("mxu model 'systolic' (default)"), std::string::npos) << models.output;
  EXPECT_NE(models.output.find("interconnect model 'torus' (default)"), std::string::npos);
  // v4's links: 45 GB/s (the pod preset's published figure).
  std::istringstream lines(models.output);
  std::string line;
  bool bandwidth = false;
  while (std::getline(lines, line))
    if (line.find("parameter ici_link_bandwidth_bytes_per_s") != std::string::npos)
      bandwidth = line.find("45 GB/s") != std::string::npos;
  EXPECT_TRUE(bandwidth) << models.output;
  EXPECT_NE(podsim("models no-such-pod").exit_code, 0);

  const std::string program = std::string(PODSIM_SOURCE_DIR) + "/examples/pods/ring_all_reduce.s";
  Result r = podsim("run " + program + " --topology v5e:2x2 --backend sim --timing-only --stats");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  double summary_mb = -1, statistic_bytes = -1;
  std::istringstream out(r.output);
  while (std::getline(out, line)) {
    if (line.rfind("ICI: ", 0) == 0) summary_mb = std::stod(line.substr(5));
    if (line.rfind("interconnect torus", 0) == 0 && line.find(" ici_bytes ") != std::string::npos) {
      std::istringstream fields(line);
      std::string kind, model, name;
      fields >> kind >> model >> name >> statistic_bytes;
    }
  }
  ASSERT_GT(summary_mb, 0) << r.output;
  EXPECT_NEAR(statistic_bytes / 1e6, summary_mb, summary_mb * 1e-3) << r.output;
}

// shard-search ranks every candidate by its simulated time; the best one, written out with
// its parameters annotated, runs in those very cycles under `podsim run --spmd`.
TEST(CliSim, ShardSearchRanksCandidatesByTheirSimulatedTime) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podsim_cli_shard_search_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  const std::string best = (dir / "best.hlo").string();
  Result r = podsim("shard-search " + hlo + " --topology v5e:2x2 --write-best " + best);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Ranking rows: rank, the sharding (several words), cycles, step us, exposed %, HBM MiB.
  std::vector<uint64_t> cycles;
  std::vector<std::string> names;
  std::istringstream lines(r.output);
  std::string line;
  bool table = false;
  while (std::getline(lines, line)) {
    if (line.find("rank  sharding") != std::string::npos) table = true;
    if (!table || line.empty() || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string w; fields >> w;) words.push_back(w);
    ASSERT_GE(words.size(), 6u) << line;
    cycles.push_back(std::stoull(words[words.size() - 4]));
    names.push_back(line);
  }
  ASSERT_EQ(cycles.size(), 8u) << r.output;  // 2 on data=4, 3 on data=2,model=2, 2 on model=4, whole
  EXPECT_TRUE(std::is_sorted(cycles.begin(), cycles.end())) << r.output;
  Result run = podsim("run " + best + " --spmd --backend sim --timing-only --topology v5e:2x2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find(fmt::format("pod: 4 chips, {} cycles", cycles.front())), std::string::npos)
      << names.front() << "\n" << run.output;

  const std::string scalar = (dir / "scalar.hlo").string();
  std::ofstream(scalar) << "HloModule s\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n";
  Result no_batch = podsim("shard-search " + scalar + " --topology v5e:2x2");
  EXPECT_NE(no_batch.exit_code, 0);
  EXPECT_NE(no_batch.output.find("give --batch"), std::string::npos) << no_batch.output;
  // --batch-params names the batch inputs and their batch dimension: x's rows here, as the
  // default; a name or dimension the entry lacks is an error saying so.
  Result named = podsim("shard-search " + hlo + " --topology v5e:2x2 --batch-params x:0");
  ASSERT_EQ(named.exit_code, 0) << named.output;
  EXPECT_NE(named.output.find("batch inputs: x (dimension 0)"), std::string::npos) << named.output;
  EXPECT_NE(named.output.find(fmt::format("{:>12}", cycles.front())), std::string::npos) << named.output;
  Result unknown = podsim("shard-search " + hlo + " --topology v5e:2x2 --batch-params y");
  EXPECT_NE(unknown.output.find("the entry has no parameter 'y'"), std::string::npos) << unknown.output;
  Result bad_dim = podsim("shard-search " + hlo + " --topology v5e:2x2 --batch-params x:2");
  EXPECT_NE(bad_dim.output.find("'2' is no dimension of f32[8,64]"), std::string::npos) << bad_dim.output;
  std::filesystem::remove_all(dir);
}

// The first number after `key` in text (0 when there is none).
double number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + key.size()));
}

TEST(CliSim, SweepComparesTopologiesAndFailsPastItsBaseline) {
  auto dir = std::filesystem::temp_directory_path() / ("podsim_cli_sweep_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string hlo = (dir / "step.hlo").string(), json = (dir / "sweep.json").string(),
                    csv = (dir / "sweep.csv").string();
  std::ofstream(hlo) << "HloModule step\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[64,256] parameter(0)\n"
                        "  w = f32[256,256] parameter(1)\n  d = f32[64,256] dot(x, w), lhs_contracting_dims={1}, "
                        "rhs_contracting_dims={0}\n  ROOT all-reduce = f32[64,256] all-reduce(d), to_apply=add\n}\n";
  const std::string report = (dir / "sweep.html").string();
  Result r = podsim("sweep " + hlo + " --topology v5e:2x2,v4:2x2x1,v5e --json " + json + " --csv " + csv +
                    " --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["rows"].size(), 3u) << doc.dump(2);
  // The report has the three runs side by side, each with the cycles of its row.
  std::ifstream report_in(report);
  const std::string html((std::istreambuf_iterator<char>(report_in)), std::istreambuf_iterator<char>());
  for (int k = 0; k < 3; ++k) {
    const std::string cell = fmt::format("data-run=\"{}\" data-metric=\"cycles\" data-value=\"{}\"", k,
                                         doc["rows"][k]["cycles"].get<uint64_t>());
    EXPECT_NE(html.find(cell), std::string::npos) << cell;
  }
  EXPECT_NE(html.find("<th>v4:2x2x1</th>"), std::string::npos);
  // Each pod's row has the cycles and ICI bytes of `podsim run --timing-only` on that pod.
  for (const std::string pod : {"v5e:2x2", "v4:2x2x1"}) {
    const auto& row = *std::find_if(doc["rows"].begin(), doc["rows"].end(),
                                    [&](const auto& j) { return j["topology"] == pod; });
    Result run = podsim("run " + hlo + " --backend sim --timing-only --quiet --topology " + pod);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(row["chips"].get<int>(), 4);
    EXPECT_EQ(row["cycles"].get<double>(), number_after(run.output, "pod: 4 chips, ")) << run.output;
    EXPECT_NEAR(row["ici_bytes"].get<double>() / 1e6, number_after(run.output, "ICI: "), 1e-3) << run.output;
    EXPECT_GT(row["exposed_collective_share"].get<double>(), 0.0);
    EXPECT_GT(row["ici_utilization"].get<double>(), 0.0);
  }
  // One chip: the MXU and HBM utilisation `podsim run` prints, no links.
  const auto& chip = doc["rows"][2];
  Result run = podsim("run " + hlo + " --backend sim --timing-only --quiet --chip v5e");
  EXPECT_NEAR(100 * chip["mfu"].get<double>(), number_after(run.output, "peak: utilisation "), 0.05) << run.output;
  EXPECT_TRUE(chip["ici_utilization"].is_null());
  std::ifstream csv_in(csv);
  std::string header, line;
  std::getline(csv_in, header);
  int lines = 0;
  while (std::getline(csv_in, line)) ++lines;
  EXPECT_EQ(header.rfind("topology,chip,chips,cycles,step_seconds", 0), 0u) << header;
  EXPECT_EQ(lines, 3);

  // Against its own output as the baseline nothing is slower; against one whose v4 step
  // took half as long, that row is, and the exit code says so unless the threshold allows it.
  EXPECT_EQ(podsim("sweep " + hlo + " --topology v5e:2x2,v4:2x2x1 --baseline " + json).exit_code, 0);
  auto faster = doc;
  for (auto& row : faster["rows"])
    if (row["topology"] == "v4:2x2x1") row["step_seconds"] = row["step_seconds"].get<double>() / 2;
  const std::string baseline = (dir / "baseline.json").string();
  std::ofstream(baseline) << faster.dump();
  Result slower = podsim("sweep " + hlo + " --topology v5e:2x2,v4:2x2x1,v6e-8 --baseline " + baseline);
  EXPECT_EQ(slower.exit_code, 2) << slower.output;
  EXPECT_NE(slower.output.find("+100.0%  SLOWER"), std::string::npos) << slower.output;
  EXPECT_NE(slower.output.find("(not in baseline)"), std::string::npos) << slower.output;
  EXPECT_EQ(podsim("sweep " + hlo + " --topology v4:2x2x1 --baseline " + baseline + " --threshold 150%").exit_code, 0);

  // A topology that does not exist is a row's error (the others still run) and exit 1.
  Result bad = podsim("sweep " + hlo + " --topology v5e:2x2,nonesuch");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("nonesuch             error: 'nonesuch' is no pod name"), std::string::npos) << bad.output;
  // A training model: its last step, data parallel over the pod's chips.
  Result model = podsim("sweep mlp --topology v5e:2x2 --steps 2");
  ASSERT_EQ(model.exit_code, 0) << model.output;
  EXPECT_NE(model.output.find("model: mlp, last of 2 steps"), std::string::npos) << model.output;
  EXPECT_NE(model.output.find("v5e:2x2              v5e        4"), std::string::npos) << model.output;
  std::filesystem::remove_all(dir);
}

TEST(CliSim, RunsAHandWrittenExecutableOnAPod) {
  auto dir =
      std::filesystem::temp_directory_path() / ("podsim_cli_pod_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string program = std::string(PODSIM_SOURCE_DIR) + "/examples/pods/ring_all_reduce.s";
  const int chips = 8;
  ir::NamedLiterals inputs;
  std::vector<float> sum(512 * 128, 0.0f);
  for (int d = 0; d < chips; ++d) {
    ir::Literal x(ir::Shape(ir::PrimitiveType::kF32, {512, 128}));
    auto v = x.data<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<float>((static_cast<int>(i) * (d + 3)) % 17 - 8);
      sum[i] += v[i];
    }
    inputs.emplace_back("r" + std::to_string(d) + ".x", std::move(x));
  }
  const std::string in = (dir / "in.safetensors").string();
  ir::write_safetensors(in, inputs);
  for (const char* backend : {"sim", "sim-functional"}) {
    const std::string out = (dir / (std::string(backend) + ".safetensors")).string();
    Result r = podsim("run " + program + " --topology v5e:2x2:slices=2 --backend " + backend +
                      " --inputs " + in + " --output " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("pod v5e:2x2:slices=2, 8 chips"), std::string::npos) << r.output;
    if (std::string(backend) == "sim") {
      EXPECT_NE(r.output.find("pod: 8 chips"), std::string::npos) << r.output;
    }
    int found = 0;
    for (auto& [name, value] : ir::read_safetensors(out)) {
      ++found;
      auto y = value.data<float>();
      ASSERT_EQ(y.size(), sum.size()) << name;
      for (size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(y[i], sum[i]) << name << " element " << i;
    }
    EXPECT_EQ(found, chips);
  }
  Result eval = podsim("run " + program + " --backend eval");
  EXPECT_NE(eval.exit_code, 0);
  EXPECT_NE(eval.output.find("runs on --backend sim or sim-functional"), std::string::npos)
      << eval.output;
  Result bad = podsim("run " + program + " --topology v5e:3x5");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("v5e:3x5"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

// podsim asm / disasm keep a pod program's pod and remote DMAs; the .pex runs on the pod
// it records and on another one given with --topology.
TEST(CliSim, AssemblesDisassemblesAndRunsAPodProgram) {
  auto dir =
      std::filesystem::temp_directory_path() / ("podsim_cli_asm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string program = std::string(PODSIM_SOURCE_DIR) + "/examples/pods/ring_all_gather.s";
  const std::string pex = (dir / "gather.pex").string();
  Result assembled = podsim("asm " + program + " -o " + pex);
  ASSERT_EQ(assembled.exit_code, 0) << assembled.output;
  Result text = podsim("disasm " + pex);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find(".pod \"v5e:2x2\""), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("dma.remote d1, s15, s15, s4, q1, q3"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("sdev s1, 0"), std::string::npos) << text.output;
  for (const char* topology : {"", " --topology v4:2x2x2"}) {
    Result run = podsim("run " + pex + " --backend sim-functional" + topology);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const int chips = std::string(topology).empty() ? 4 : 8;
    EXPECT_NE(run.output.find(fmt::format("{} chips)", chips)), std::string::npos) << run.output;
    EXPECT_NE(run.output.find(fmt::format("r{}.y", chips - 1)), std::string::npos) << run.output;
  }
  std::filesystem::remove_all(dir);
}

// An HLO module on every chip of a pod (no collectives: each chip its own replica): the
// timed pod prints what the functional pod does, chip by chip.
TEST(CliSim, RunsAModuleOnEveryChipOfAPod) {
  std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  Result timed = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --seed 5");
  Result functional = podsim("run " + hlo + " --backend sim-functional --topology tiny:2x2 --seed 5");
  ASSERT_EQ(timed.exit_code, 0) << timed.output;
  ASSERT_EQ(functional.exit_code, 0) << functional.output;
  EXPECT_NE(timed.output.find("(4 devices)"), std::string::npos) << timed.output;
  EXPECT_NE(timed.output.find("r3.out0"), std::string::npos) << timed.output;
  auto lines = [](const std::string& text) {
    std::istringstream in(text);
    std::string line, out;
    while (std::getline(in, line))
      if (line.rfind("  r", 0) == 0 && line.size() > 3 && std::isdigit(line[3]))
        out += line + "\n";
    return out;
  };
  EXPECT_FALSE(lines(timed.output).empty());
  EXPECT_EQ(lines(timed.output), lines(functional.output));
  // One chip's instruction trace: chip 3 runs the same program, so its trace has the
  // same instructions as chip 0's (each row: core, pc, instruction, ...).
  const auto dir = std::filesystem::temp_directory_path() / ("podsim_cli_pod_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string t0 = (dir / "t0.csv").string(), t3 = (dir / "t3.csv").string();
  Result traced0 = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --trace-instructions " + t0);
  Result traced3 =
      podsim("run " + hlo + " --backend sim --topology tiny:2x2 --trace-chip 3 --trace-instructions " + t3);
  ASSERT_EQ(traced0.exit_code, 0) << traced0.output;
  ASSERT_EQ(traced3.exit_code, 0) << traced3.output;
  auto instructions = [](const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) out += line.substr(0, line.find(',', line.find(',', line.find(',') + 1) + 1)) + "\n";
    return out;
  };
  const std::string csv0 = read_text(t0), csv3 = read_text(t3);
  EXPECT_GT(std::count(csv3.begin(), csv3.end(), '\n'), 10);
  EXPECT_EQ(instructions(csv0), instructions(csv3));
  Result no_chip = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --trace-chip 4 --trace-instructions " + t3);
  EXPECT_NE(no_chip.exit_code, 0);
  EXPECT_NE(no_chip.output.find("runs on chips 0 to 3"), std::string::npos) << no_chip.output;
  std::filesystem::remove_all(dir);
  // Fewer replicas than chips run on the first chips; more are an error.
  Result two = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --replicas 2 --seed 5");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("(2 devices)"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("r1.out0"), std::string::npos) << two.output;
  EXPECT_EQ(two.output.find("r2.out0"), std::string::npos) << two.output;
  Result many = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --replicas 8");
  EXPECT_NE(many.exit_code, 0);
  EXPECT_NE(many.output.find("needs 8 devices (replicas); --topology tiny:2x2 has 4 chips"), std::string::npos)
      << many.output;
  Result eval = podsim("run " + hlo + " --topology tiny:2x2");
  EXPECT_NE(eval.exit_code, 0);
  EXPECT_NE(eval.output.find("--topology runs on the simulated pod"), std::string::npos)
      << eval.output;
}

TEST(CliSim, CpuReplicasRunTheCollectivesAsTheEvaluatorDoes) {
  // --backend cpu with a topology (a replica per chip) or --replicas: the same outputs
  // as the reference evaluator on the same inputs (integers: exact), the async shorthand
  // included.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "podsim_cli_cpu_replicas";
  std::filesystem::create_directories(dir);
  const std::string hlo = (dir / "collectives.hlo").string();
  std::ofstream(hlo) << R"(HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[8,2] parameter(0)
  s = ((s32[8,2]), s32[8,2]) all-to-all-start(x), dimensions={0}
  d = s32[8,2] all-to-all-done(s)
  ROOT r = s32[8,2] all-reduce(d), replica_groups={{0,1},{2,3}}, to_apply=add
}
)";
  auto outputs = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.find(".out0:") != std::string::npos) lines.push_back(line);
    return lines;
  };
  Result cpu = podsim("run " + hlo + " --backend cpu --topology tiny:2x2 --seed 3");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("ran on cpu (4 devices)"), std::string::npos) << cpu.output;
  Result cpu_replicas = podsim("run " + hlo + " --backend cpu --replicas 4 --seed 3");
  Result eval = podsim("run " + hlo + " --backend eval --replicas 4 --seed 3");
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_EQ(outputs(cpu.output).size(), 4u) << cpu.output;
  EXPECT_EQ(outputs(cpu.output), outputs(eval.output));
  EXPECT_EQ(outputs(cpu_replicas.output), outputs(eval.output));
  Result one_chip = podsim("run " + hlo + " --backend sim --replicas 4");
  EXPECT_NE(one_chip.exit_code, 0);
  EXPECT_NE(one_chip.output.find("several replicas need --topology"), std::string::npos) << one_chip.output;
  std::filesystem::remove_all(dir);
}

TEST(CliSim, SpmdRunsGiveTheUnpartitionedResultOnEveryBackend) {
  // examples/hlo/spmd_mlp.hlo: a data-parallel input and a Megatron-style MLP, which
  // needs one all-reduce (the second layer's partial products); spmd_layers_loop.hlo: the
  // same layers run by a while loop (the all-reduce in its body); spmd_causal_conv.hlo:
  // a causal filter over a split sequence (the shifted copies' halos). Each is
  // partitioned over 4 devices; small integer inputs keep every sum exact, whatever its
  // order and the MXU's bf16 passes.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "podsim_cli_spmd";
  std::filesystem::create_directories(dir);
  for (const auto& [example, collectives] : std::vector<std::pair<std::string, std::string>>{
           {"spmd_mlp", "1 all-reduce ("},
           {"spmd_layers_loop", "1 all-reduce ("},
           {"spmd_causal_conv", "2 collective-permute ("}}) {
    SCOPED_TRACE(example);
    const std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/" + example + ".hlo";
    const std::string inputs = (dir / "in.safetensors").string();
    ir::NamedLiterals in;
    int64_t next = 0;
    const auto module = ir::parse_module(read_text(hlo));
    for (const ir::Instruction* p : module->entry()->parameters()) {
      ir::Literal l(ir::Shape(ir::PrimitiveType::kF32, p->shape().dims()));
      for (int64_t i = 0; i < l.num_elements(); ++i) l.set_from_double(i, static_cast<double>((next++ * 7) % 5) - 2);
      in.emplace_back(p->name(), std::move(l));
    }
    ir::write_safetensors(inputs, in);
    const std::string run = "run " + hlo + " --inputs " + inputs;
    Result whole = podsim(run + " --backend eval --partitions 1");
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    ASSERT_NE(output_lines(whole.output), "");
    for (const std::string& how :
         {std::string("--backend eval --partitions 4"), std::string("--backend cpu --partitions 4"),
          std::string("--backend sim-functional --topology tiny:2x2 --partitions 4"),
          std::string("--backend sim --topology tiny:2x2 --spmd --check-hazards")}) {
      SCOPED_TRACE(how);
      Result r = podsim(run + " " + how);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_EQ(output_lines(r.output), output_lines(whole.output)) << r.output;
      const auto summary = r.output.find("partitioned over 4 devices: " + collectives);
      ASSERT_NE(summary, std::string::npos) << r.output;
      EXPECT_EQ(r.output.substr(summary, r.output.find('\n', summary) - summary).find(", "), std::string::npos)
          << r.output;
    }
  }
  const std::string run = "run " + std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/spmd_mlp.hlo";
  Result too_many = podsim(run + " --backend sim --topology tiny:2x2 --partitions 8");
  EXPECT_NE(too_many.exit_code, 0);
  EXPECT_NE(too_many.output.find("needs 8 devices (partitions); --topology tiny:2x2 has 4 chips"), std::string::npos)
      << too_many.output;
  // --save-partitioned writes the program every device runs.
  const std::string saved = (dir / "partitioned.hlo").string();
  Result save = podsim(run + " --partitions 4 --save-partitioned " + saved);
  ASSERT_EQ(save.exit_code, 0) << save.output;
  auto partitioned = ir::parse_module(read_text(saved));
  EXPECT_EQ(partitioned->entry()->parameter(0)->shape().to_string(false), "f32[4,16]");
  std::filesystem::remove_all(dir);
}

// --local-flows adds arrows inside each chip (engine to HBM) to those between chips.
TEST(CliSim, LocalFlowsAreOptIn) {
  const auto dir = std::filesystem::temp_directory_path() / ("podsim_cli_flows_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  auto flows = [&](const std::string& flag) {
    const std::string profile = (dir / "p.json").string();
    Result r = podsim("run " + hlo + " --backend sim --topology tiny:2x2 --timing-only --quiet --profile " + profile +
                      flag);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(profile);
    const auto doc = nlohmann::json::parse(in);
    size_t local = 0;
    for (const auto& f : doc["otherData"]["podsim"].value("flows", nlohmann::json::array()))
      local += f[1] == f[4] ? 1 : 0;
    return local;
  };
  EXPECT_EQ(flows(""), 0u);
  EXPECT_GT(flows(" --local-flows"), 0u);
  std::filesystem::remove_all(dir);
}

TEST(CliSim, BadChipIsAnError) {
  std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  Result r = podsim("run " + hlo + " --backend sim --chip no-such-chip");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no-such-chip"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace podsim::sim::timing::testing
