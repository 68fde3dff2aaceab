// The Chrome trace writer and reader: the JSON has what Perfetto's importer needs (checked
// with nlohmann::json and independently with Python's json module), timestamps derived by
// hand from cycles and clocks, nesting survives the nanosecond rounding, validation
// rejects what viewers cannot draw, round trip, and clear errors for foreign files.
#include "traces/chrome_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"

namespace podsim::traces {
namespace {

using Json = nlohmann::json;

// Two chips; chip 0 at 1 GHz (1 cycle = 1 ns), chip 1 at 1.05 GHz.
Profile sample_profile() {
  Profile p;
  p.program = "mlp \"quoted\"";
  p.source_ops = {{"dot.3", "dot"}, {"add.4", "add"}};
  ChipProfile c0;
  c0.name = "chip 0 (v4)";
  c0.clock_hz = 1e9;
  c0.peaks = {100, 10};
  c0.total_cycles = 1000;
  c0.tracks.push_back({"TensorCore 0 / MXU 0",
                       "mxu",
                       {{"matmul", 100, 250, 0, 3000, 0},
                        {"push", 100, 150, 0, 0, 0},
                        {"pop", 150, 250, 0, 0, 64}}});
  c0.tracks.push_back(
      {"HBM", "hbm", {{"read", 0, 100, 0, 0, 4096}, {"write", 250, 260, kNoSourceOp, 0, 128}}});
  c0.counters.push_back(
      {"HBM bandwidth", "bytes/s", {{0, 4.096e10}, {100, 0}, {250, 1.28e10}, {260, 0}}});
  ChipProfile c1;
  c1.name = "chip 1";
  c1.clock_hz = 1.05e9;
  c1.peaks = {200, 20};
  c1.total_cycles = 2100;
  c1.tracks.push_back({"VPU", "vpu", {{"vadd", 1050, 2100, 1, 1024.5, 8192}}});
  c1.counters.push_back({"MXU utilisation", "", {{0, 0.25}, {1050, 1}}});
  p.chips = {c0, c1};
  return p;
}

std::vector<Json> events_with(const Json& root, const std::string& ph) {
  std::vector<Json> out;
  for (const Json& e : root["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("podsim_traces_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write_text(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

TEST(ChromeTrace, ProcessesAndThreadsAreNamedAndOrdered) {
  Json root = Json::parse(chrome_trace_json(sample_profile()));
  ASSERT_TRUE(root["traceEvents"].is_array());
  std::map<std::pair<int, int>, std::string> names;
  std::map<std::pair<int, int>, int> sort_index;
  for (const Json& e : events_with(root, "M")) {
    const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
    if (e["name"] == "process_name" || e["name"] == "thread_name") names[key] = e["args"]["name"];
    if (e["name"] == "process_sort_index" || e["name"] == "thread_sort_index")
      sort_index[key] = e["args"]["sort_index"];
  }
  // pid = chip + 1, tid 0 = the process, tid = track + 1.
  EXPECT_EQ(names[std::make_pair(1, 0)], "chip 0 (v4)");
  EXPECT_EQ(names[std::make_pair(2, 0)], "chip 1");
  EXPECT_EQ(names[std::make_pair(1, 1)], "TensorCore 0 / MXU 0");
  EXPECT_EQ(names[std::make_pair(1, 2)], "HBM");
  EXPECT_EQ(names[std::make_pair(2, 1)], "VPU");
  EXPECT_EQ(sort_index[std::make_pair(2, 0)], 1);
  EXPECT_EQ(sort_index[std::make_pair(1, 2)], 1);
  EXPECT_FALSE(root.contains("displayTimeUnit"));  // Perfetto would read ts as ns
}

TEST(ChromeTrace, SpansAreCompleteEventsInMicrosecondsWithTheirSourceOp) {
  Json root = Json::parse(chrome_trace_json(sample_profile()));
  std::vector<Json> spans = events_with(root, "X");
  ASSERT_EQ(spans.size(), 6u);
  // Track MXU 0: the enclosing span first, then its children by start.
  EXPECT_EQ(spans[0]["name"], "matmul");
  EXPECT_EQ(spans[1]["name"], "push");
  EXPECT_EQ(spans[2]["name"], "pop");
  const Json& matmul = spans[0];
  EXPECT_EQ(matmul["pid"], 1);
  EXPECT_EQ(matmul["tid"], 1);
  EXPECT_EQ(matmul["cat"], "mxu");
  // Cycles 100..250 at 1 GHz: 0.1 us, 0.15 us long.
  EXPECT_DOUBLE_EQ(matmul["ts"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(matmul["dur"].get<double>(), 0.15);
  EXPECT_EQ(matmul["args"]["op"], "dot.3");
  EXPECT_EQ(matmul["args"]["opcode"], "dot");
  EXPECT_EQ(matmul["args"]["cycles"], 150);
  EXPECT_EQ(matmul["args"]["flops"].get<double>(), 3000);
  EXPECT_EQ(matmul["args"]["bytes"].get<double>(), 0);
  EXPECT_FALSE(matmul["args"].contains("op_name"));  // no metadata
  EXPECT_EQ(spans[4]["name"], "write");
  EXPECT_EQ(spans[4]["args"]["op"], "");
  // Chip 1 at 1.05 GHz: cycle 1050 is 1 us, 1050 cycles last 1 us.
  EXPECT_EQ(spans[5]["name"], "vadd");
  EXPECT_DOUBLE_EQ(spans[5]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(spans[5]["dur"].get<double>(), 1.0);
  EXPECT_EQ(spans[5]["args"]["flops"].get<double>(), 1024.5);
}

TEST(ChromeTrace, CountersAreCounterEventsPerChip) {
  Json root = Json::parse(chrome_trace_json(sample_profile()));
  std::vector<Json> counters = events_with(root, "C");
  ASSERT_EQ(counters.size(), 6u);
  // Viewers name the track "<name> <arg key>": the unit is the key.
  EXPECT_EQ(counters[0]["name"], "HBM bandwidth");
  EXPECT_EQ(counters[0]["pid"], 1);
  EXPECT_DOUBLE_EQ(counters[0]["args"]["bytes/s"].get<double>(), 4.096e10);
  EXPECT_DOUBLE_EQ(counters[2]["ts"].get<double>(), 0.25);
  EXPECT_EQ(counters[5]["name"], "MXU utilisation");
  EXPECT_EQ(counters[5]["pid"], 2);
  EXPECT_DOUBLE_EQ(counters[5]["args"]["value"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(counters[5]["ts"].get<double>(), 1.0);
}

TEST(ChromeTrace, OneCycleSpansAreVisibleAtOneGigahertz) {
  Profile p;
  p.chips.push_back(
      {"chip",
       1.05e9,
       {},
       10,
       {{"u", "vpu", {{"a", 1, 2, kNoSourceOp, 0, 0}, {"b", 2, 3, kNoSourceOp, 0, 0}}}},
       {}});
  std::vector<Json> spans = events_with(Json::parse(chrome_trace_json(p)), "X");
  ASSERT_EQ(spans.size(), 2u);
  // Boundaries 0.952 ns, 1.905 ns, 2.857 ns round to 1, 2, 3 ns.
  EXPECT_DOUBLE_EQ(spans[0]["ts"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(spans[0]["dur"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(spans[1]["ts"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(spans[1]["dur"].get<double>(), 0.001);
}

// Random nested spans on a clock faster than 1 GHz: after Perfetto's conversion to whole
// nanoseconds (ts and dur each rounded), spans are still nested or disjoint.
TEST(ChromeTrace, NestingSurvivesNanosecondRounding) {
  std::mt19937_64 rng(7);
  Track track{"t", "mxu", {}};
  std::function<void(uint64_t, uint64_t, int)> fill = [&](uint64_t lo, uint64_t hi, int depth) {
    uint64_t at = lo;
    while (at < hi) {
      const uint64_t len = 1 + rng() % std::max<uint64_t>(1, (hi - at));
      const uint64_t end = std::min(hi, at + len);
      track.spans.push_back({"s", at, end, kNoSourceOp, 0, 0});
      if (depth < 3 && end - at > 1) fill(at, end, depth + 1);
      at = end + rng() % 3;
    }
  };
  fill(0, 5000, 0);
  Profile p;
  p.chips.push_back({"chip", 1.75e9, {}, 5010, {track}, {}});
  std::vector<std::pair<int64_t, int64_t>> ns;
  for (const Json& e : events_with(Json::parse(chrome_trace_json(p)), "X")) {
    const int64_t ts = std::llround(e["ts"].get<double>() * 1000.0);
    ns.emplace_back(ts, ts + std::llround(e["dur"].get<double>() * 1000.0));
  }
  ASSERT_EQ(ns.size(), track.spans.size());
  std::vector<std::pair<int64_t, int64_t>> open;
  for (const auto& s : ns) {
    while (!open.empty() && open.back().second <= s.first) open.pop_back();
    if (!open.empty()) {
      ASSERT_LE(s.second, open.back().second)
          << "span [" << s.first << ", " << s.second << ") ns crosses [" << open.back().first
          << ", " << open.back().second << ")";
    }
    open.push_back(s);
  }
}

TEST(ChromeTrace, PartialOverlapOnATrackIsAnErrorNamingBothSpans) {
  Profile p = sample_profile();
  p.chips[0].tracks[0].spans.push_back(
      {"late", 200, 300, 1, 0, 0});  // crosses pop [150, 250), its innermost parent
  try {
    chrome_trace_json(p);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("TensorCore 0 / MXU 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'pop' [150, 250)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'late' [200, 300)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("add.4"), std::string::npos) << msg;
  }
}

TEST(ChromeTrace, NestedDisjointAdjacentAndUnsortedSpansAreAccepted) {
  Profile p;
  p.chips.push_back({"chip", 1e9, {}, 100, {{"t", "dma", {}}}, {}});
  auto& spans = p.chips[0].tracks[0].spans;
  spans = {{"child2", 30, 40, kNoSourceOp, 0, 0}, {"parent", 10, 40, kNoSourceOp, 0, 0},
           {"child1", 10, 20, kNoSourceOp, 0, 0}, {"next", 40, 50, kNoSourceOp, 0, 0},
           {"empty", 50, 50, kNoSourceOp, 0, 0},  {"same", 10, 40, kNoSourceOp, 0, 0}};
  EXPECT_NO_THROW(validate_profile(p));
  std::vector<std::string> order;
  for (const Json& e : events_with(Json::parse(chrome_trace_json(p)), "X"))
    order.push_back(e["name"]);
  EXPECT_EQ(order,
            (std::vector<std::string>{"parent", "same", "child1", "child2", "next", "empty"}));
}

TEST(ChromeTrace, ValidationNamesWhatIsWrong) {
  auto expect_error = [](Profile p, const std::string& fragment) {
    try {
      validate_profile(p);
      ADD_FAILURE() << "expected an error containing " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  Profile p = sample_profile();
  p.chips[0].clock_hz = 0;
  expect_error(p, "clock_hz");
  p = sample_profile();
  p.chips[0].tracks[1].spans[1].end = 2000;
  expect_error(p, "after the run's total_cycles 1000");
  p = sample_profile();
  p.chips[0].tracks[1].spans[0].source_op = 5;
  expect_error(p, "source op 5");
  p = sample_profile();
  p.chips[1].tracks[0].spans[0].flops = std::nan("");
  expect_error(p, "finite");
  p = sample_profile();
  p.chips[0].tracks[0].spans[0].start = 300;
  expect_error(p, "before it starts");
  p = sample_profile();
  std::swap(p.chips[0].counters[0].samples[0], p.chips[0].counters[0].samples[1]);
  expect_error(p, "not sorted");
  p = sample_profile();
  p.chips[0].counters.push_back(p.chips[0].counters[0]);
  expect_error(p, "two counters");
  p = sample_profile();
  p.flows.push_back({"dma", {0, 0, 100}, {2, 0, 10}});
  expect_error(p, "flow 'dma': chip 2 is not in the profile");
  p = sample_profile();
  p.flows.push_back({"dma", {0, 0, 100}, {1, 3, 10}});
  expect_error(p, "has no track 3");
  p = sample_profile();
  p.flows.push_back({"dma", {0, 0, 1001}, {1, 0, 10}});
  expect_error(p, "cycle 1001 is after");
}

// A flow is a start event bound to the span enclosing it on the sending track and an end
// event bound to the one enclosing it on the receiving track, in microseconds of each
// chip's clock.
TEST(ChromeTrace, FlowsAreStartAndEndEventsBetweenTracks) {
  Profile p = sample_profile();
  p.flows.push_back({"dma to chip 1", {0, 1, 50}, {1, 0, 1575}});
  const Json root = Json::parse(chrome_trace_json(p));
  const std::vector<Json> starts = events_with(root, "s"), ends = events_with(root, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  EXPECT_EQ(starts[0]["bp"], "e");
  EXPECT_EQ(ends[0]["bp"], "e");
  EXPECT_EQ(starts[0]["pid"], 1);
  EXPECT_EQ(starts[0]["tid"], 2);  // the HBM track
  EXPECT_DOUBLE_EQ(starts[0]["ts"].get<double>(), 0.05);
  EXPECT_EQ(ends[0]["pid"], 2);
  EXPECT_EQ(ends[0]["tid"], 1);
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), 1.5);  // cycle 1575 at 1.05 GHz
  EXPECT_EQ(ends[0]["name"], "dma to chip 1");
}

void expect_same(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.program, b.program);
  ASSERT_EQ(a.source_ops.size(), b.source_ops.size());
  for (size_t i = 0; i < a.source_ops.size(); ++i) {
    EXPECT_EQ(a.source_ops[i], b.source_ops[i]);
  }
  EXPECT_EQ(a.flows, b.flows);
  ASSERT_EQ(a.chips.size(), b.chips.size());
  for (size_t c = 0; c < a.chips.size(); ++c) {
    const ChipProfile& x = a.chips[c];
    const ChipProfile& y = b.chips[c];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.clock_hz, y.clock_hz);
    EXPECT_EQ(x.peaks.flops_per_cycle, y.peaks.flops_per_cycle);
    EXPECT_EQ(x.peaks.hbm_bytes_per_cycle, y.peaks.hbm_bytes_per_cycle);
    EXPECT_EQ(x.total_cycles, y.total_cycles);
    ASSERT_EQ(x.tracks.size(), y.tracks.size());
    for (size_t t = 0; t < x.tracks.size(); ++t) {
      EXPECT_EQ(x.tracks[t].name, y.tracks[t].name);
      EXPECT_EQ(x.tracks[t].category, y.tracks[t].category);
      ASSERT_EQ(x.tracks[t].spans.size(), y.tracks[t].spans.size());
      for (size_t i = 0; i < x.tracks[t].spans.size(); ++i) {
        const Span& s = x.tracks[t].spans[i];
        const Span& r = y.tracks[t].spans[i];
        EXPECT_EQ(s.name, r.name);
        EXPECT_EQ(s.start, r.start);
        EXPECT_EQ(s.end, r.end);
        EXPECT_EQ(s.source_op, r.source_op);
        EXPECT_EQ(s.flops, r.flops);
        EXPECT_EQ(s.bytes, r.bytes);
      }
    }
    ASSERT_EQ(x.counters.size(), y.counters.size());
    for (size_t k = 0; k < x.counters.size(); ++k) {
      EXPECT_EQ(x.counters[k].name, y.counters[k].name);
      EXPECT_EQ(x.counters[k].unit, y.counters[k].unit);
      ASSERT_EQ(x.counters[k].samples.size(), y.counters[k].samples.size());
      for (size_t i = 0; i < x.counters[k].samples.size(); ++i) {
        EXPECT_EQ(x.counters[k].samples[i].cycle, y.counters[k].samples[i].cycle);
        EXPECT_EQ(x.counters[k].samples[i].value, y.counters[k].samples[i].value);
      }
    }
  }
}

using ChromeTraceFile = TempDir;

TEST(ChromeTrace, SpansCarryTheirOpsMetadata) {
  Profile p = sample_profile();
  p.source_ops[0].op_name = "jit(step)/dense/dot_general";
  p.source_ops[0].source_file = "model.py";
  p.source_ops[0].source_line = 42;
  const Json matmul = events_with(Json::parse(chrome_trace_json(p)), "X")[0];
  EXPECT_EQ(matmul["args"]["op_name"], "jit(step)/dense/dot_general");
  EXPECT_EQ(matmul["args"]["source_file"], "model.py");
  EXPECT_EQ(matmul["args"]["source_line"], 42);
}

TEST_F(ChromeTraceFile, RoundTripGivesBackTheProfile) {
  Profile p = sample_profile();
  // Awkward values: a large cycle count on a fast clock, fractional flops, control characters.
  p.chips[1].total_cycles = 123'456'789'012;
  p.chips[1].tracks[0].spans.push_back(
      {"far\tout\n", 123'456'789'000, 123'456'789'011, 0, 1.0 / 3, 1e20});
  p.chips[1].counters[0].samples.push_back({123'456'789'001, 0.1});
  // An op with the HLO metadata's names.
  p.source_ops[0].op_name = "jit(step)/dense/dot_general";
  p.source_ops[0].source_file = "model.py";
  p.source_ops[0].source_line = 42;
  p.flows.push_back({"dma \"out\"", {0, 1, 50}, {1, 0, 1575}});
  write_chrome_trace(p, path("p.json"));
  expect_same(read_chrome_trace(path("p.json")), p);
  // Only the file itself is left in the directory (no temporary file).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_),
                          std::filesystem::directory_iterator()),
            1);
}

// Found with the round-trip check of tests/fuzz/profile_fuzz.cc, on a seed with its spans
// swapped: a file listing a track's spans in another order than the writer's (edited, or
// merged by another tool) was read in file order, so the profile broke Track's order and
// read back differently after writing. The reader puts them in the writer's order.
TEST(ChromeTrace, SpansListedInAnyOrderAreReadInTheWritersOrder) {
  const Profile p = sample_profile();
  Json j = Json::parse(chrome_trace_json(p));
  Json& events = j["traceEvents"];
  std::reverse(events.begin(), events.end());
  const Profile back = parse_chrome_trace(j.dump(), "reversed.json");
  EXPECT_EQ(back, parse_chrome_trace(chrome_trace_json(p), "written.json"));
  EXPECT_EQ(chrome_trace_json(back), chrome_trace_json(p));
}

TEST_F(ChromeTraceFile, PythonJsonModuleReadsTheFile) {
  write_chrome_trace(sample_profile(), path("p.json"));
  const std::string cmd = std::string(PODSIM_PYTHON) +
                          " -c \"import json,sys; d=json.load(open(sys.argv[1])); "
                          "print(sum(1 for e in d['traceEvents'] if e['ph']=='X'))\" " +
                          path("p.json");
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[64] = {};
  const size_t n = fread(buf, 1, sizeof buf - 1, pipe);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(std::string(buf, n), "6\n");
}

TEST_F(ChromeTraceFile, WritingIntoAMissingDirectoryIsAnError) {
  EXPECT_THROW(write_chrome_trace(sample_profile(), path("no/such/dir/p.json")), Error);
}

TEST_F(ChromeTraceFile, ForeignAndCorruptFilesAreClearErrors) {
  auto expect_error = [&](const std::string& file, const std::string& fragment) {
    try {
      read_chrome_trace(path(file));
      ADD_FAILURE() << file << ": expected an error containing " << fragment;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
    }
  };
  expect_error("missing.json", "cannot read profile");
  write_text("text.json", "hello");
  expect_error("text.json", "not a JSON file");
  const std::string good = chrome_trace_json(sample_profile());
  write_text("truncated.json", good.substr(0, good.size() / 2));
  expect_error("truncated.json", "not a JSON file");
  write_text("foreign.json",
             R"({"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1,"name":"x"}]})");
  expect_error("foreign.json", "not a podsim profile");
  write_text("array.json", "[]");
  expect_error("array.json", "not a podsim profile");

  Json j = Json::parse(good);
  j["otherData"]["podsim"]["version"] = 99;
  write_text("version.json", j.dump());
  expect_error("version.json", "version 99");

  j = Json::parse(good);
  for (Json& e : j["traceEvents"])
    if (e["ph"] == "X") e["pid"] = 7;
  write_text("pid.json", j.dump());
  expect_error("pid.json", "pid 7");

  j = Json::parse(good);
  for (Json& e : j["traceEvents"])
    if (e["ph"] == "X") e["args"].erase("start_cycle");
  write_text("args.json", j.dump());
  expect_error("args.json", "start_cycle");

  j = Json::parse(good);
  j["otherData"]["podsim"]["chips"][0]["total_cycles"] = 10;  // spans now end past the run
  write_text("inconsistent.json", j.dump());
  expect_error("inconsistent.json", "corrupt podsim profile");
}

}  // namespace
}  // namespace podsim::traces
