// Profile comparison: thresholds, the noise floor, ops that appear or vanish, and the
// threshold syntax. Times are chosen so that each verdict follows by hand.
#include "traces/compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"

namespace podsim::traces {
namespace {

Summary summary_of(double total_us, std::vector<std::pair<std::string, double>> ops_us) {
  Summary s;
  s.seconds = total_us * 1e-6;
  for (auto& [name, us] : ops_us) {
    OpTime op;
    op.name = name;
    op.opcode = "op";
    op.seconds = us * 1e-6;
    s.ops.push_back(op);
  }
  return s;
}

const DiffRow& row(const Diff& d, const std::string& name) {
  for (const DiffRow& r : d.ops)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(Compare, SlowerOpPastThresholdFailsTotalWithinPasses) {
  // Total 100 -> 104 us (+4%); big 50 -> 56 (+12%); mid 30 -> 30; tiny 0.5 -> 1 (+100%, but
  // 0.5% and 0.96% of the totals, under the 1% floor).
  Summary before = summary_of(100, {{"big", 50}, {"mid", 30}, {"tiny", 0.5}});
  Summary after = summary_of(104, {{"big", 56}, {"mid", 30}, {"tiny", 1}});
  Diff d = compare_summaries(before, after, {0.05, 0.01});
  EXPECT_NEAR(d.total.change, 0.04, 1e-12);
  EXPECT_FALSE(d.total.regression);
  EXPECT_NEAR(row(d, "big").change, 0.12, 1e-12);
  EXPECT_TRUE(row(d, "big").regression);
  EXPECT_FALSE(row(d, "mid").regression);
  EXPECT_FALSE(row(d, "tiny").counted);
  EXPECT_FALSE(row(d, "tiny").regression);
  EXPECT_EQ(d.regressions(), 1u);
  EXPECT_TRUE(d.regressed());
  // A 15% threshold tolerates +12%.
  EXPECT_FALSE(compare_summaries(before, after, {0.15, 0.01}).regressed());
  // With no noise floor the doubled tiny op fails too.
  EXPECT_EQ(compare_summaries(before, after, {0.15, 0.0}).regressions(), 1u);
}

TEST(Compare, SlowerCollectivesFailOnTheirOwn) {
  // Total 100 -> 103 us (+3%); collectives 20 -> 23 (+15%): a pod whose communication got
  // slower fails even when the total stays within the threshold.
  Summary before = summary_of(100, {{"all-reduce.1", 20}});
  Summary after = summary_of(103, {{"all-reduce.1", 23}});
  before.collective_seconds = 20e-6;
  after.collective_seconds = 23e-6;
  // Exposed 10 -> 10.2 us (+2%): within the threshold.
  before.collective_exposed_seconds = 10e-6;
  after.collective_exposed_seconds = 10.2e-6;
  Diff d = compare_summaries(before, after, {0.05, 0.01});
  ASSERT_TRUE(d.collectives.has_value());
  EXPECT_NEAR(d.collectives->change, 0.15, 1e-12);
  EXPECT_TRUE(d.collectives->regression);
  ASSERT_TRUE(d.exposed_collectives.has_value());
  EXPECT_NEAR(d.exposed_collectives->change, 0.02, 1e-12);
  EXPECT_FALSE(d.exposed_collectives->regression);
  EXPECT_FALSE(d.total.regression);
  EXPECT_EQ(d.regressions(), 2u);  // the collectives in flight and the all-reduce op
  // More exposed communication fails too: 10 -> 12 us.
  after.collective_exposed_seconds = 12e-6;
  EXPECT_EQ(compare_summaries(before, after, {0.05, 0.01}).regressions(), 3u);
  EXPECT_NE(format_diff(d, {0.05, 0.01}, "a", "b").find("collectives (exposed)"),
            std::string::npos);
  // Profiles without collectives have no such row.
  EXPECT_FALSE(compare_summaries(summary_of(1, {}), summary_of(1, {}), {}).collectives);
}

TEST(Compare, SlowerTotalFails) {
  Diff d = compare_summaries(summary_of(100, {}), summary_of(106, {}), {0.05, 0.01});
  EXPECT_TRUE(d.total.regression);
  EXPECT_TRUE(d.regressed());
  // Faster is never a failure.
  EXPECT_FALSE(compare_summaries(summary_of(100, {}), summary_of(50, {}), {0.0, 0.0}).regressed());
}

TEST(Compare, NewAndVanishedOpsAreShownButDoNotFail) {
  Diff d = compare_summaries(summary_of(100, {{"old", 40}}), summary_of(100, {{"new", 40}}),
                             {0.05, 0.01});
  EXPECT_FALSE(d.regressed());
  EXPECT_TRUE(row(d, "old").in_before);
  EXPECT_FALSE(row(d, "old").in_after);
  EXPECT_TRUE(row(d, "new").in_after);
  const std::string text = format_diff(d, {0.05, 0.01}, "a.json", "b.json");
  EXPECT_NE(text.find("gone"), std::string::npos) << text;
  EXPECT_NE(text.find("new"), std::string::npos) << text;
  EXPECT_NE(text.find("OK: no figure is more than 5.0% slower"), std::string::npos) << text;
}

TEST(Compare, FormattedTableMarksFailures) {
  Diff d = compare_summaries(summary_of(100, {{"big", 50}, {"tiny", 0.5}}),
                             summary_of(104, {{"big", 56}, {"tiny", 1}}), {0.05, 0.01});
  const std::string text = format_diff(d, {0.05, 0.01}, "a.json", "b.json");
  for (const char* expected :
       {"a.json (before) -> b.json (after)", "total time", "100 us", "104 us", "+4.0%", "+12.0%",
        "WORSE", "(below noise floor)", "FAIL: 1 figure(s) more than 5.0% slower"})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in\n"
                                                      << text;
}

TEST(Compare, ComparesSecondsAcrossClocks) {
  // The same op: 1000 cycles at 1 GHz (1 us) and 1500 cycles at 2 GHz (0.75 us) is faster.
  auto profile = [](double clock, uint64_t cycles) {
    Profile p;
    p.source_ops = {{"dot.1", "dot"}};
    p.chips.push_back(
        {"chip", clock, {}, cycles, {{"mxu", "mxu", {{"mm", 0, cycles, 0, 0, 0}}}}, {}});
    return summarize(p);
  };
  Diff d = compare_summaries(profile(1e9, 1000), profile(2e9, 1500), {0.0, 0.0});
  EXPECT_NEAR(d.total.change, -0.25, 1e-12);
  EXPECT_NEAR(row(d, "dot.1").change, -0.25, 1e-12);
  EXPECT_FALSE(d.regressed());
  EXPECT_TRUE(compare_summaries(profile(2e9, 1500), profile(1e9, 1000), {0.3, 0.0}).regressed());
}

TEST(Compare, ParseFraction) {
  EXPECT_DOUBLE_EQ(parse_fraction("5%", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(parse_fraction("0.05", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(parse_fraction("0%", "--threshold"), 0.0);
  for (const char* bad : {"", "%", "five", "5%%", "-1%", "5 %", "inf"}) {
    try {
      parse_fraction(bad, "--threshold");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--threshold"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace podsim::traces
