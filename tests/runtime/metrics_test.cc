#include "runtime/debug/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace podsim::debug {
namespace {

// One block of a report: "Metric: X" or "Counter: X" and its "  Key: value" fields.
struct Block {
  std::string kind;
  std::string name;
  std::map<std::string, std::string> fields;
};

std::vector<Block> parse_report(const std::string& report) {
  std::vector<Block> blocks;
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) == 0) {
      EXPECT_FALSE(blocks.empty()) << line;
      size_t colon = line.find(": ");
      EXPECT_NE(colon, std::string::npos) << line;
      if (blocks.empty() || colon == std::string::npos) continue;
      blocks.back().fields[line.substr(2, colon - 2)] = line.substr(colon + 2);
    } else {
      size_t colon = line.find(": ");
      EXPECT_NE(colon, std::string::npos) << line;
      if (colon == std::string::npos) continue;
      blocks.push_back({line.substr(0, colon), line.substr(colon + 2), {}});
    }
  }
  return blocks;
}

const Block* find_block(const std::vector<Block>& blocks, const std::string& kind,
                        const std::string& name) {
  for (const Block& b : blocks)
    if (b.kind == kind && b.name == name) return &b;
  return nullptr;
}

// "1%=a; 5%=b; ..." -> {("1", "a"), ("5", "b"), ...}
std::vector<std::pair<std::string, std::string>> parse_percentiles(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    if (!item.empty() && item[0] == ' ') item.erase(0, 1);
    size_t eq = item.find("%=");
    EXPECT_NE(eq, std::string::npos) << item;
    if (eq == std::string::npos) continue;
    out.emplace_back(item.substr(0, eq), item.substr(eq + 2));
  }
  return out;
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_metrics(); }
};

TEST_F(MetricsTest, CounterReferenceIsStableAndCounts) {
  Counter& c = counter("TestStableCounter");
  EXPECT_EQ(&c, &counter("TestStableCounter"));
  EXPECT_EQ(c.value(), 0);
  c.add();
  c.add(4);
  counter_add("TestStableCounter", 2);
  EXPECT_EQ(c.value(), 7);
  EXPECT_EQ(counter_value("TestStableCounter"), 7);
  EXPECT_EQ(counter_value("TestNeverTouchedCounter"), 0);
}

TEST_F(MetricsTest, CounterNamesListTouchedCountersSorted) {
  counter("TestLookedUpOnly");
  counter_add("TestZebra");
  counter_add("TestAlpha", 3);
  std::vector<std::string> names = counter_names();
  std::vector<std::string> ours;
  for (const std::string& n : names)
    if (n.rfind("Test", 0) == 0) ours.push_back(n);
  EXPECT_EQ(ours, (std::vector<std::string>{"TestAlpha", "TestZebra"}));
}

TEST_F(MetricsTest, ConcurrentAddsAreExact) {
  Counter& c = counter("TestConcurrent");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        if (t % 2 == 0)
          c.add();
        else
          counter_add("TestConcurrent");
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 80000);
}

TEST_F(MetricsTest, SummaryPercentilesByNearestRank) {
  // Samples 1..100: the p-th percentile by nearest rank is the value p.
  for (int i = 100; i >= 1; --i) metric_record("TestCounts", i, MetricUnit::kCount);
  MetricSummary s = metric_summary("TestCounts");
  EXPECT_EQ(s.total_samples, 100);
  EXPECT_DOUBLE_EQ(s.accumulator, 5050);
  EXPECT_EQ(s.unit, MetricUnit::kCount);
  ASSERT_EQ(s.percentiles.size(), 9u);
  const double expected[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_DOUBLE_EQ(s.percentiles[i].first, expected[i]);
    EXPECT_DOUBLE_EQ(s.percentiles[i].second, expected[i]);
  }
}

TEST_F(MetricsTest, PercentilesCoverOnlyTheRecentWindow) {
  for (int i = 1; i <= 2000; ++i) metric_record("TestWindow", i, MetricUnit::kCount);
  MetricSummary s = metric_summary("TestWindow");
  EXPECT_EQ(s.total_samples, 2000);
  EXPECT_DOUBLE_EQ(s.accumulator, 2000.0 * 2001 / 2);
  // The window holds the last 1024 samples, 977..2000; nearest rank ceil(p * 1024 / 100).
  ASSERT_EQ(s.percentiles.size(), 9u);
  EXPECT_DOUBLE_EQ(s.percentiles[0].second, 977 + 11 - 1);    // p1: rank 11
  EXPECT_DOUBLE_EQ(s.percentiles[4].second, 977 + 512 - 1);   // p50: rank 512
  EXPECT_DOUBLE_EQ(s.percentiles[8].second, 977 + 1014 - 1);  // p99: rank 1014
}

TEST_F(MetricsTest, NeverRecordedMetricIsEmpty) {
  MetricSummary s = metric_summary("TestNeverRecorded");
  EXPECT_EQ(s.total_samples, 0);
  EXPECT_TRUE(s.percentiles.empty());
}

TEST_F(MetricsTest, RatesFollowTheSampleTimes) {
  metric_record("TestRate", 10, MetricUnit::kCount);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  metric_record("TestRate", 30, MetricUnit::kCount);
  MetricSummary s = metric_summary("TestRate");
  // Two samples at least 20ms apart: at most 50 per second.
  EXPECT_GT(s.rate_per_second, 0);
  EXPECT_LE(s.rate_per_second, 50.0 + 1e-9);
  EXPECT_NEAR(s.value_rate_per_second, s.rate_per_second * 20, 1e-9 * s.rate_per_second);
}

TEST_F(MetricsTest, ScopedTimerRecordsWallTime) {
  {
    ScopedTimer timer("TestTimer");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  MetricSummary s = metric_summary("TestTimer");
  EXPECT_EQ(s.total_samples, 1);
  EXPECT_EQ(s.unit, MetricUnit::kNanoseconds);
  EXPECT_GE(s.accumulator, 5e6);
}

TEST_F(MetricsTest, FormatsTimes) {
  EXPECT_EQ(format_metric_value(500, MetricUnit::kNanoseconds), "0.500us");
  EXPECT_EQ(format_metric_value(1'234'567, MetricUnit::kNanoseconds), "001ms234.567us");
  EXPECT_EQ(format_metric_value(1.5e9, MetricUnit::kNanoseconds), "01s500ms000.000us");
  // 1h 2m 3s 4ms 5.006us
  EXPECT_EQ(format_metric_value(3'723'004'005'006, MetricUnit::kNanoseconds),
            "1h02m03s004ms005.006us");
  EXPECT_EQ(format_metric_value(0, MetricUnit::kNanoseconds), "0.000us");
}

TEST_F(MetricsTest, FormatsBytesAndCounts) {
  EXPECT_EQ(format_metric_value(512, MetricUnit::kBytes), "512.00B");
  EXPECT_EQ(format_metric_value(1536, MetricUnit::kBytes), "1.50KB");
  EXPECT_EQ(format_metric_value(5.0 * 1024 * 1024, MetricUnit::kBytes), "5.00MB");
  EXPECT_EQ(format_metric_value(3.0 * 1024 * 1024 * 1024, MetricUnit::kBytes), "3.00GB");
  EXPECT_EQ(format_metric_value(42, MetricUnit::kCount), "42");
}

TEST_F(MetricsTest, ReportHasEveryMetricAndNonZeroCounter) {
  metric_record("CompileTime", 1.5e9);
  metric_record("CompileTime", 0.5e9);
  metric_record("TestBytes", 2048, MetricUnit::kBytes);
  counter_add("CachedCompile", 3);
  counter_add("TestZeroAgain", 2);
  counter_add("TestZeroAgain", -2);
  std::vector<Block> blocks = parse_report(metrics_report());

  const Block* compile = find_block(blocks, "Metric", "CompileTime");
  ASSERT_NE(compile, nullptr);
  EXPECT_EQ(compile->fields.at("TotalSamples"), "2");
  EXPECT_EQ(compile->fields.at("Accumulator"), "02s000ms000.000us");
  EXPECT_NE(compile->fields.at("ValueRate").find(" / second"), std::string::npos);
  EXPECT_NE(compile->fields.at("Rate").find(" / second"), std::string::npos);
  auto percentiles = parse_percentiles(compile->fields.at("Percentiles"));
  ASSERT_EQ(percentiles.size(), 9u);
  const char* labels[] = {"1", "5", "10", "20", "50", "80", "90", "95", "99"};
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(percentiles[i].first, labels[i]);
  // Two samples: nearest rank gives the smaller up to p50 and the larger above it.
  EXPECT_EQ(percentiles[4].second, "500ms000.000us");
  EXPECT_EQ(percentiles[5].second, "01s500ms000.000us");

  const Block* bytes = find_block(blocks, "Metric", "TestBytes");
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->fields.at("Accumulator"), "2.00KB");

  const Block* cached = find_block(blocks, "Counter", "CachedCompile");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->fields.at("Value"), "3");
  EXPECT_EQ(find_block(blocks, "Counter", "TestZeroAgain"), nullptr);

  // Metrics come before counters.
  size_t last_metric = 0, first_counter = blocks.size();
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].kind == "Metric") last_metric = i;
    if (blocks[i].kind == "Counter") first_counter = std::min(first_counter, i);
  }
  EXPECT_LT(last_metric, first_counter);
}

TEST_F(MetricsTest, ShortReportHasOnlyTheKeyEntries) {
  metric_record("ExecuteTime", 1e6);
  metric_record("TestOtherTime", 1e6);
  counter_add("MarkStep", 2);
  counter_add("UncachedCompile");
  counter_add("TestOtherCounter");
  std::vector<Block> blocks = parse_report(short_metrics_report());
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].kind, "Metric");
  EXPECT_EQ(blocks[0].name, "ExecuteTime");
  EXPECT_EQ(blocks[0].fields.at("TotalSamples"), "1");
  EXPECT_EQ(blocks[1].name, "UncachedCompile");
  EXPECT_EQ(blocks[1].fields.at("Value"), "1");
  EXPECT_EQ(blocks[2].name, "MarkStep");
  EXPECT_EQ(blocks[2].fields.at("Value"), "2");
}

TEST_F(MetricsTest, ClearResetsEverythingAndKeepsReferences) {
  Counter& c = counter("TestCleared");
  c.add(5);
  metric_record("TestClearedTime", 100);
  clear_metrics();
  EXPECT_EQ(c.value(), 0);
  EXPECT_EQ(metric_summary("TestClearedTime").total_samples, 0);
  EXPECT_TRUE(metric_names().empty());
  EXPECT_TRUE(counter_names().empty());
  EXPECT_TRUE(metrics_report().empty());
  c.add(2);
  EXPECT_EQ(counter_value("TestCleared"), 2);
  metric_record("TestClearedTime", 7);
  EXPECT_EQ(metric_summary("TestClearedTime").total_samples, 1);
  EXPECT_DOUBLE_EQ(metric_summary("TestClearedTime").accumulator, 7);
}

}  // namespace
}  // namespace podsim::debug
