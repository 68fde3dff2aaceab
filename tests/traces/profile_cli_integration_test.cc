// `podsim profile summary|diff` end to end: exit codes for CI (0 same or within the
// threshold, 2 past it, 1 on errors) and the printed tables.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/tools/podsim_cli.h"
#include "traces/chrome_trace.h"

namespace podsim::traces {
namespace {

using cli_testing::podsim;
using cli_testing::Result;

// A dot taking dot_cycles then an add taking 100 cycles, at 1 GHz.
Profile profile(uint64_t dot_cycles) {
  Profile p;
  p.program = "mlp";
  p.source_ops = {{"dot.1", "dot"}, {"add.2", "add"}};
  ChipProfile c;
  c.name = "chip 0 (v4)";
  c.clock_hz = 1e9;
  c.peaks = {1000, 100};
  c.total_cycles = dot_cycles + 100;
  c.tracks = {{"MXU 0", "mxu", {{"mm", 0, dot_cycles, 0, 1000.0 * dot_cycles, 0}}},
              {"VPU", "vpu", {{"vadd", dot_cycles, dot_cycles + 100, 1, 100, 0}}}};
  p.chips = {c};
  return p;
}

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("podsim_profile_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const Profile& p) {
    const std::string path = (dir_ / name).string();
    write_chrome_trace(p, path);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ProfileCli, SummaryPrintsTheTable) {
  Result r = podsim("profile summary " + write("a.json", profile(900)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // 1000 cycles at 1 GHz; the dot runs 900 of them at peak: 90% MXU utilisation.
  for (const char* expected :
       {"profile of mlp: 1 us", "1,000 cycles", "utilisation 90.0%", "dot.1", "90.0%", "add.2"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << "missing '" << expected << "' in\n"
                                                          << r.output;
}

TEST_F(ProfileCli, DiffExitCodesFollowTheThreshold) {
  const std::string a = write("a.json", profile(900));
  // dot 900 -> 1000 cycles: +11.1%; total 1000 -> 1100: +10%.
  const std::string b = write("b.json", profile(1000));
  Result same = podsim("profile diff " + a + " " + a);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  Result worse = podsim("profile diff " + a + " " + b);
  EXPECT_EQ(worse.exit_code, 2) << worse.output;
  EXPECT_NE(worse.output.find("FAIL: 2 figure(s)"), std::string::npos) << worse.output;
  Result tolerated = podsim("profile diff " + a + " " + b + " --threshold 12%");
  EXPECT_EQ(tolerated.exit_code, 0) << tolerated.output;
  Result only_total_tolerated = podsim("profile diff " + a + " " + b + " --threshold 0.105");
  EXPECT_EQ(only_total_tolerated.exit_code, 2) << only_total_tolerated.output;
  Result better = podsim("profile diff " + b + " " + a);
  EXPECT_EQ(better.exit_code, 0) << better.output;
}

TEST_F(ProfileCli, ErrorsExitOne) {
  const std::string a = write("a.json", profile(900));
  Result bad_threshold = podsim("profile diff " + a + " " + a + " --threshold lots");
  EXPECT_EQ(bad_threshold.exit_code, 1) << bad_threshold.output;
  EXPECT_NE(bad_threshold.output.find("--threshold 'lots'"), std::string::npos)
      << bad_threshold.output;
  const std::string foreign = (dir_ / "foreign.json").string();
  std::ofstream(foreign) << R"({"traceEvents":[]})";
  Result r = podsim("profile summary " + foreign);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("not a podsim profile"), std::string::npos) << r.output;
  Result missing = podsim("profile diff " + a + " " + (dir_ / "missing.json").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
}

// The report of two runs: written where -o says, the runs' labels as headings; bad
// input is an error (exit 1) that names it, and nothing is written.
TEST_F(ProfileCli, ReportWritesTheRunsSideBySide) {
  const std::string a = write("a.json", profile(900)), b = write("b.json", profile(1800));
  const std::string out = (dir_ / "report.html").string();
  Result r = podsim("profile report " + a + " " + b + " --label fast --label slow -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<th>fast</th><th>slow</th>"), std::string::npos);
  EXPECT_NE(html.find("data-run=\"1\" data-metric=\"cycles\" data-value=\"1900\""), std::string::npos);

  const std::string never = (dir_ / "never.html").string();
  Result labels = podsim("profile report " + a + " " + b + " --label one -o " + never);
  EXPECT_EQ(labels.exit_code, 1);
  EXPECT_NE(labels.output.find("--label given 1 times for 2 profiles"), std::string::npos) << labels.output;
  Result missing = podsim("profile report " + (dir_ / "none.json").string() + " -o " + never);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("none.json"), std::string::npos) << missing.output;
  EXPECT_FALSE(std::filesystem::exists(never));
}

}  // namespace
}  // namespace podsim::traces
