// Summaries of small synthetic profiles, every figure derived by hand in the comments.
#include "traces/summary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"

namespace podsim::traces {
namespace {

// Chip at 1 GHz (1 cycle = 1 ns), 1000 cycles, peaks 100 FLOP/cycle and 10 B/cycle.
ChipProfile hand_chip() {
  ChipProfile c;
  c.name = "chip 0";
  c.clock_hz = 1e9;
  c.peaks = {100, 10};
  c.total_cycles = 1000;
  c.tracks = {
      {"MXU 0", "mxu", {{"mm", 0, 400, 0, 20000, 0}, {"mm", 500, 600, 0, 5000, 0}}},
      {"MXU 1", "mxu", {{"mm", 200, 700, 0, 30000, 0}}},
      {"VPU", "vpu", {{"vadd", 600, 900, 1, 300, 0}, {"inner", 650, 700, 1, 0, 0}}},
      {"HBM",
       "hbm",
       {{"rd", 0, 100, 0, 0, 2000},
        {"wr", 800, 850, 1, 0, 1000},
        {"sync", 900, 950, kNoSourceOp, 0, 500}}},
      {"DMA 0", "dma", {{"copy", 0, 100, 0, 0, 2000}}},
  };
  return c;
}

Profile hand_profile() {
  Profile p;
  p.program = "hand";
  p.source_ops = {{"dot.1", "dot"}, {"add.2", "add"}, {"unused.3", "exp"}};
  p.chips = {hand_chip()};
  return p;
}

TEST(Summary, ChipFiguresDerivedByHand) {
  Summary s = summarize(hand_profile());
  ASSERT_EQ(s.chips.size(), 1u);
  const ChipSummary& c = s.chips[0];
  EXPECT_EQ(c.total_cycles, 1000u);
  EXPECT_DOUBLE_EQ(c.seconds, 1e-6);
  EXPECT_DOUBLE_EQ(s.seconds, 1e-6);
  // Some span covers [0, 950).
  EXPECT_EQ(c.busy_cycles, 950u);
  // MXU flops 20000 + 5000 + 30000; all units add the VPU's 300.
  EXPECT_DOUBLE_EQ(c.mxu_flops, 55000);
  EXPECT_DOUBLE_EQ(c.flops, 55300);
  EXPECT_DOUBLE_EQ(c.mxu_utilization, 55000.0 / (100 * 1000));
  EXPECT_DOUBLE_EQ(c.achieved_flops_per_s, 55000 / 1e-6);
  EXPECT_DOUBLE_EQ(c.peak_flops_per_s, 100 * 1e9);
  // HBM bytes from the hbm track only (the dma track's 2000 are the same traffic seen
  // from the engine): 2000 + 1000 + 500.
  EXPECT_EQ(c.hbm_source, "hbm");
  EXPECT_DOUBLE_EQ(c.hbm_bytes, 3500);
  EXPECT_DOUBLE_EQ(c.hbm_utilization, 3500.0 / (10 * 1000));
  EXPECT_DOUBLE_EQ(c.hbm_bytes_per_s, 3500 / 1e-6);
  EXPECT_DOUBLE_EQ(c.peak_hbm_bytes_per_s, 10 * 1e9);
}

TEST(Summary, OpTimeIsTheUnionOfItsSpansOverAllUnits) {
  const ChipSummary c = summarize(hand_profile()).chips[0];
  ASSERT_EQ(c.ops.size(), 3u);  // unused.3 has no spans and is left out
  // dot.1: [0,400) u [500,600) u [200,700) u [0,100) u [0,100) = [0,700).
  EXPECT_EQ(c.ops[0].name, "dot.1");
  EXPECT_EQ(c.ops[0].opcode, "dot");
  EXPECT_EQ(c.ops[0].source_op, 0);
  EXPECT_EQ(c.ops[0].cycles, 700u);
  EXPECT_DOUBLE_EQ(c.ops[0].seconds, 700e-9);
  EXPECT_DOUBLE_EQ(c.ops[0].share, 0.7);
  EXPECT_DOUBLE_EQ(c.ops[0].flops, 55000);
  // HBM bytes only: the hbm track's 2000, not again the DMA's view of the same traffic.
  EXPECT_DOUBLE_EQ(c.ops[0].bytes, 2000);
  // add.2: [600,900) u [650,700) u [800,850) = [600,900).
  EXPECT_EQ(c.ops[1].name, "add.2");
  EXPECT_EQ(c.ops[1].cycles, 300u);
  EXPECT_DOUBLE_EQ(c.ops[1].share, 0.3);
  EXPECT_DOUBLE_EQ(c.ops[1].flops, 300);
  EXPECT_DOUBLE_EQ(c.ops[1].bytes, 1000);
  // Unattributed: [900,950).
  EXPECT_EQ(c.ops[2].name, "(no source op)");
  EXPECT_EQ(c.ops[2].source_op, kNoSourceOp);
  EXPECT_EQ(c.ops[2].cycles, 50u);
}

TEST(Summary, CollectiveTimeIsTheMostAnyChipSpentInCollectiveOps) {
  // Rename add.2 an all-reduce: chip 0 spends its 300 cycles in it; a second chip with the
  // add's spans moved later spends 400 ([600,1000) on its VPU): the summary takes 400 ns.
  Profile p = hand_profile();
  p.source_ops[1].name = "all-reduce.2";
  ChipProfile second = hand_chip();
  second.name = "chip 1";
  second.tracks[2].spans[0].end = 1000;
  p.chips.push_back(second);
  Summary s = summarize(p);
  EXPECT_DOUBLE_EQ(s.chips[0].collective_seconds, 300e-9);
  EXPECT_DOUBLE_EQ(s.chips[1].collective_seconds, 400e-9);
  EXPECT_DOUBLE_EQ(s.collective_seconds, 400e-9);
  EXPECT_DOUBLE_EQ(summarize(hand_profile()).collective_seconds, 0);
  EXPECT_NE(format_summary(s).find("collectives: 400 ns"), std::string::npos) << format_summary(s);
}

TEST(Summary, CollectiveTimeSplitsIntoExposedAndOverlapped) {
  // add.2 renamed an all-reduce, with a link track carrying its traffic [300,600) while
  // dot.1 computes: in flight [300,600) u [600,900) (VPU) u [800,850) (HBM) = [300,900),
  // 600 ns; exposed only on the cores' tracks, its VPU spans [600,900): 300 ns.
  Profile p = hand_profile();
  p.source_ops[1].name = "all-reduce.2";
  p.chips[0].tracks.push_back({"ICI x+ 0->1", "ici", {{"burst", 300, 600, 1, 0, 4096}}});
  const Summary s = summarize(p);
  EXPECT_DOUBLE_EQ(s.chips[0].collective_seconds, 600e-9);
  EXPECT_DOUBLE_EQ(s.chips[0].collective_exposed_seconds, 300e-9);
  EXPECT_DOUBLE_EQ(s.collective_exposed_seconds, 300e-9);
  EXPECT_NE(format_summary(s).find("collectives: 600 ns in flight"), std::string::npos)
      << format_summary(s);
  EXPECT_NE(format_summary(s).find("300 ns exposed"), std::string::npos) << format_summary(s);
}

TEST(Summary, CollectiveOpsByInstructionName) {
  for (const char* name : {"all-reduce", "all-reduce.3", "all-gather.1", "reduce-scatter",
                           "all-reduce-start.2", "collective-permute-done", "all-to-all.7"})
    EXPECT_TRUE(is_collective_op(name)) << name;
  for (const char* name : {"fusion.3", "all-reducer", "reduce.2", "add.1", "my-all-reduce"})
    EXPECT_FALSE(is_collective_op(name)) << name;
  // Or by opcode: a hand-written module's all-reduce named "s1"; a torch op type is not one.
  EXPECT_TRUE(is_collective_op(SourceOp{"s1", "all-reduce"}));
  EXPECT_TRUE(is_collective_op(SourceOp{"g", "all-gather-start"}));
  EXPECT_FALSE(is_collective_op(SourceOp{"fusion.17", "all_reduce"}));
  EXPECT_FALSE(is_collective_op(SourceOp{"d", "dot"}));
}

TEST(Summary, TrackBusyFractions) {
  const ChipSummary c = summarize(hand_profile()).chips[0];
  ASSERT_EQ(c.tracks.size(), 5u);
  EXPECT_EQ(c.tracks[0].busy_cycles, 500u);  // [0,400) + [500,600)
  EXPECT_DOUBLE_EQ(c.tracks[0].fraction, 0.5);
  EXPECT_EQ(c.tracks[1].busy_cycles, 500u);
  EXPECT_EQ(c.tracks[2].busy_cycles, 300u);  // the nested span counts once
  EXPECT_EQ(c.tracks[3].busy_cycles, 200u);  // 100 + 50 + 50
  EXPECT_DOUBLE_EQ(c.tracks[3].fraction, 0.2);
  EXPECT_EQ(c.tracks[3].category, "hbm");
}

TEST(Summary, HbmBytesFallBackToDmaTracksAndUnknownPeaksAreNaN) {
  Profile p = hand_profile();
  p.chips[0].tracks.erase(p.chips[0].tracks.begin() + 3);  // no hbm track left
  p.chips[0].peaks = {0, 0};
  const ChipSummary c = summarize(p).chips[0];
  EXPECT_EQ(c.hbm_source, "dma");
  EXPECT_DOUBLE_EQ(c.hbm_bytes, 2000);
  EXPECT_DOUBLE_EQ(c.ops[0].bytes, 2000);  // dot.1's copy on the DMA track
  EXPECT_TRUE(std::isnan(c.mxu_utilization));
  EXPECT_TRUE(std::isnan(c.hbm_utilization));
  const std::string text = format_summary(summarize(p));
  EXPECT_NE(text.find("(from the DMA tracks)"), std::string::npos) << text;
  EXPECT_NE(text.find("utilisation n/a"), std::string::npos) << text;
}

TEST(Summary, NoHbmOrDmaTrackMeansNoHbmBytes) {
  Profile p;
  p.chips.push_back({"chip", 1e9, {}, 10, {{"misc", "", {{"x", 0, 5, kNoSourceOp, 0, 64}}}}, {}});
  const ChipSummary c = summarize(p).chips[0];
  EXPECT_EQ(c.hbm_source, "");
  EXPECT_EQ(c.hbm_bytes, 0);
  EXPECT_EQ(c.ops[0].bytes, 0);
  EXPECT_NE(format_summary(summarize(p)).find("no hbm or dma track"), std::string::npos);
}

TEST(Summary, ProfileTimeIsTheSlowestChipsAndOpsTheirLongestTime) {
  Profile p = hand_profile();
  ChipProfile c1;
  c1.name = "chip 1";
  c1.clock_hz = 2e9;                                             // 0.5 ns per cycle
  c1.total_cycles = 4000;                                        // 2 us
  c1.tracks = {{"VPU", "vpu", {{"vadd", 0, 3000, 1, 700, 0}}}};  // add.2: 1.5 us
  p.chips.push_back(c1);
  Summary s = summarize(p);
  EXPECT_DOUBLE_EQ(s.seconds, 2e-6);
  ASSERT_EQ(s.ops.size(), 3u);
  // add.2: max(300 ns on chip 0, 1.5 us on chip 1); dot.1: 700 ns; flops summed over chips.
  EXPECT_EQ(s.ops[0].name, "add.2");
  EXPECT_DOUBLE_EQ(s.ops[0].seconds, 1.5e-6);
  EXPECT_DOUBLE_EQ(s.ops[0].share, 0.75);
  EXPECT_DOUBLE_EQ(s.ops[0].flops, 1000);
  EXPECT_EQ(s.ops[1].name, "dot.1");
  EXPECT_DOUBLE_EQ(s.ops[1].seconds, 700e-9);
  EXPECT_DOUBLE_EQ(s.ops[1].share, 0.35);
  EXPECT_NE(format_summary(s).find("over all chips"), std::string::npos);
}

TEST(Summary, FormattedTableShowsTheFigures) {
  const std::string text = format_summary(summarize(hand_profile()));
  for (const char* expected :
       {"profile of hand: 1 us on 1 chip(s)", "chip 0: 1,000 cycles at 1 GHz = 1 us", "busy 95.0%",
        "55 kFLOP done, 55 GFLOP/s of 100 GFLOP/s peak: utilisation 55.0%",
        "3.5 kB moved, 3.5 GB/s of 10 GB/s peak: utilisation 35.0%", "dot.1", "70.0%",
        "(no source op)", "MXU 0", "50.0%"})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in\n"
                                                      << text;
  // Rows of the op table come longest first.
  EXPECT_LT(text.find("dot.1"), text.find("add.2"));
}

TEST(Summary, LongOpListsAreFolded) {
  Profile p;
  p.chips.push_back({"chip", 1e9, {}, 100, {{"t", "vpu", {}}}, {}});
  for (int i = 0; i < 5; ++i) {
    p.source_ops.push_back({"op" + std::to_string(i), "add"});
    p.chips[0].tracks[0].spans.push_back(
        {"x", static_cast<uint64_t>(10 * i), static_cast<uint64_t>(10 * i + 5), i, 0, 0});
  }
  const std::string text = format_summary(summarize(p), 2);
  EXPECT_NE(text.find("(3 more ops)"), std::string::npos) << text;
  EXPECT_EQ(text.find("op4"), std::string::npos) << text;
}

// At 1 GHz: the MXU works 0-100, HBM 100-300, an ICI link 350-400, the scalar unit the
// whole time (its spans include its waits: never on the path). Back from 400: the link
// (50), nothing but the scalar unit (300-350), HBM (200), the MXU (100).
TEST(Summary, CriticalPathFollowsTheLatestEndingSpanBack) {
  Profile p;
  p.program = "path";
  p.source_ops = {{"op", "dot"}};
  ChipProfile c;
  c.name = "chip 0";
  c.clock_hz = 1e9;
  c.total_cycles = 400;
  c.tracks = {{"issue", "scalar", {{"scalar ops", 0, 400, 0, 0, 0}}},
              {"MXU", "mxu", {{"mmul", 0, 100, 0, 0, 0}}},
              {"HBM", "hbm", {{"dma", 100, 300, 0, 0, 0}}},
              {"ICI x+ 0->1", "ici", {{"send", 350, 400, 0, 0, 0}}}};
  p.chips = {c};
  const CriticalPath path = summarize(p).critical_path;
  EXPECT_EQ(path.chip, "chip 0");
  using Share = std::pair<std::string, double>;
  EXPECT_EQ(path.categories, (std::vector<Share>{{"hbm", 200e-9}, {"mxu", 100e-9}, {"ici", 50e-9}, {"waiting", 50e-9}}));
  EXPECT_EQ(path.tracks.front(), (Share{"HBM", 200e-9}));
  EXPECT_NE(format_summary(summarize(p)).find("critical path on chip 0"), std::string::npos);
}

// The hand-made chip's peaks: 1000 flops and 100 bytes a cycle at 1 GHz.
TEST(Summary, RooflineLossesAreTimeBeyondTheSlowerRoof) {
  Profile p;
  p.program = "roof";
  p.source_ops = {{"dot", "dot"}, {"add", "add"}, {"copy", "copy"}};
  ChipProfile c;
  c.name = "chip 0";
  c.clock_hz = 1e9;
  c.peaks = {1000, 100};
  c.total_cycles = 1200;
  // The dot at its MXU roof (900 cycles for 900,000 flops); the add takes 100 cycles for
  // 1,000 bytes (10 at the HBM roof); the copy moves nothing and is left out.
  c.tracks = {{"MXU", "mxu", {{"mmul", 0, 900, 0, 900000, 0}}},
              {"HBM", "hbm", {{"dma", 900, 1000, 1, 0, 1000}}},
              {"VPU", "vpu", {{"vcopy", 1000, 1200, 2, 0, 0}}}};
  p.chips = {c};
  const Summary s = summarize(p);
  ASSERT_EQ(s.roofline_losses.size(), 2u);
  EXPECT_EQ(s.roofline_losses[0].name, "add");
  EXPECT_DOUBLE_EQ(s.roofline_losses[0].seconds, 100e-9);
  EXPECT_DOUBLE_EQ(s.roofline_losses[0].roofline_seconds, 10e-9);
  EXPECT_EQ(s.roofline_losses[1].name, "dot");
  EXPECT_DOUBLE_EQ(s.roofline_losses[1].seconds - s.roofline_losses[1].roofline_seconds, 0);
}

TEST(Summary, RejectsInvalidProfiles) {
  Profile p = hand_profile();
  p.chips[0].tracks[0].spans.push_back({"bad", 350, 450, 0, 0, 0});  // crosses [0,400)
  EXPECT_THROW(summarize(p), Error);
}

TEST(Summary, FormatSeconds) {
  EXPECT_EQ(format_seconds(0), "0 s");
  EXPECT_EQ(format_seconds(1.5), "1.5 s");
  EXPECT_EQ(format_seconds(0.0012345), "1.234 ms");
  EXPECT_EQ(format_seconds(2e-6), "2 us");
  EXPECT_EQ(format_seconds(7e-9), "7 ns");
}

}  // namespace
}  // namespace podsim::traces
