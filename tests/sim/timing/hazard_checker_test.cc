// The hazard checker on hand-written kernels: correct ones report nothing; each injected
// missing synchronisation is reported with both instructions, their kinds and source ops.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

// z = x + y on the tiny chip (tests/isa/testdata/vector_add.s), with BODY replaced.
std::string vector_add(const std::string& body) {
  return R"(.chip tiny
.region x_hbm hbm 0 256
.region y_hbm hbm 256 256
.region z_hbm hbm 512 256
.region x vmem[0] 0 256
.region y vmem[0] 256 256
.region z vmem[0] 512 256
.descriptor d0 src=x_hbm dst=x elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.descriptor d1 src=y_hbm dst=y elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.descriptor d2 src=z dst=z_hbm elem=4 sizes=[8, 8] src_strides=[32, 4] dst_strides=[32, 4]
.descriptor d3 src=x_hbm dst=x elem=4 sizes=[8, 4] src_strides=[32, 4] dst_strides=[32, 4]
.descriptor d4 src=x_hbm dst=x elem=4 sizes=[8, 4] src_strides=[32, 4] dst_strides=[32, 4]
.param x x_hbm f32[8, 8]
.param y y_hbm f32[8, 8]
.output z z_hbm f32[8, 8]
.source 0 "add.3" "add" "jit(f)/add" "model.py" 7
.source 1 "copy.1" "copy" "jit(f)/copy" "model.py" 6
.program core 0
)" + body;
}

TimedRunResult run_checked(const std::string& text) {
  isa::Executable exe = isa::assemble(text);
  TimingOptions o;
  o.check_hazards = true;
  return run_timed(exe, small_parameters(exe), o);
}

TEST(HazardChecker, CorrectKernelsReportNothing) {
  for (const char* name : {"vector_add.s", "matmul.s", "reduce_loop.s", "every_opcode.s"}) {
    SCOPED_TRACE(name);
    isa::Executable exe = testdata_kernel(name);
    TimingOptions o;
    o.check_hazards = true;
    TimedRunResult r;
    try {
      r = run_timed(exe, small_parameters(exe), o);
    } catch (const Error& e) {
      // every_opcode.s may fault at run time on arbitrary inputs; the others must run.
      ASSERT_EQ(std::string(name), "every_opcode.s") << e.what();
      continue;
    }
    EXPECT_TRUE(r.hazards.empty()) << r.hazards.front().message;
  }
}

TEST(HazardChecker, ReadOfADmaDestinationWithoutWaiting) {
  // The sem.wait for x's copy is missing: vld reads x while (or after) d0 writes it with
  // nothing ordering the two, even though q1's wait let time pass.
  TimedRunResult r = run_checked(vector_add(R"(
  dma d0, s0, s0, q0 @1
  dma d1, s0, s0, q1 @1
  sem.wait q1, 1
  sli s1, 32
  vld.f32 v0, x[s0], s1 @0
  vld.f32 v1, y[s0], s1 @0
  vadd.f32 v2, v0, v1 @0
  vst.f32 z[s0], s1, v2 @0
  dma d2, s0, s0, q2
  sem.wait q2, 1
  sem.wait q0, 1
  halt
)"));
  ASSERT_EQ(r.hazards.size(), 1u);
  const Hazard& h = r.hazards[0];
  EXPECT_EQ(h.kind, "read-after-write");
  EXPECT_TRUE(h.first.is_dma);
  EXPECT_EQ(h.first.pc, 0);
  EXPECT_EQ(h.first.source_op, 1);
  EXPECT_EQ(h.second.pc, 4);
  EXPECT_EQ(h.second.instruction, "vld");
  EXPECT_EQ(h.second.source_op, 0);
  EXPECT_NE(h.message.find("'copy.1'"), std::string::npos) << h.message;
  EXPECT_NE(h.message.find("'add.3'"), std::string::npos) << h.message;
  EXPECT_NE(h.message.find("VMEM of core 0 bytes [0, 256)"), std::string::npos) << h.message;
  std::cout << h.message << "\n";
}

TEST(HazardChecker, WriteOfADmaSourceInFlight) {
  // z is overwritten while d2 may still be reading it.
  TimedRunResult r = run_checked(vector_add(R"(
  dma d0, s0, s0, q0
  dma d1, s0, s0, q0
  sem.wait q0, 2
  sli s1, 32
  vld.f32 v0, x[s0], s1
  vld.f32 v1, y[s0], s1
  vadd.f32 v2, v0, v1 @0
  vst.f32 z[s0], s1, v2
  dma d2, s0, s0, q2
  vst.f32 z[s0], s1, v0
  sem.wait q2, 1
  halt
)"));
  ASSERT_EQ(r.hazards.size(), 1u);
  EXPECT_EQ(r.hazards[0].kind, "write-after-read");
  EXPECT_EQ(r.hazards[0].first.pc, 8);
  EXPECT_EQ(r.hazards[0].second.pc, 9);
  EXPECT_TRUE(r.hazards[0].second.write);
}

TEST(HazardChecker, TwoDmasWritingTheSameBytes) {
  TimedRunResult r = run_checked(vector_add(R"(
  dma d0, s0, s0, q0
  dma d0, s0, s0, q0
  sem.wait q0, 2
  halt
)"));
  ASSERT_EQ(r.hazards.size(), 1u);
  EXPECT_EQ(r.hazards[0].kind, "write-after-write");
  EXPECT_EQ(r.hazards[0].first.pc, 0);
  EXPECT_EQ(r.hazards[0].second.pc, 1);
  EXPECT_TRUE(r.hazards[0].second.is_dma);
}

TEST(HazardChecker, InterleavedStridedDmasDoNotConflict) {
  // d3 writes columns 0-3 of every row of x, d4 (at byte offset 16) columns 4-7: their
  // hulls overlap, their bytes do not.
  TimedRunResult r = run_checked(vector_add(R"(
  sli s1, 16
  dma d3, s0, s0, q0
  dma d4, s1, s1, q0
  sem.wait q0, 2
  halt
)"));
  EXPECT_TRUE(r.hazards.empty()) << r.hazards.front().message;
}

TEST(HazardChecker, WaitingOnTheRightSemaphoreOrdersTheDma) {
  TimedRunResult r = run_checked(vector_add(R"(
  dma d0, s0, s0, q0
  sem.wait q0, 1
  dma d0, s0, s0, q0
  sem.wait q0, 1
  sli s1, 32
  vld.f32 v0, x[s0], s1
  halt
)"));
  EXPECT_TRUE(r.hazards.empty()) << r.hazards.front().message;
}

TEST(HazardChecker, CheckHazardsMakesThemAnError) {
  isa::Executable exe = isa::assemble(vector_add(R"(
  dma d0, s0, s0, q0
  dma d0, s0, s0, q0
  sem.wait q0, 2
  halt
)"));
  TimingOptions o;
  o.check_hazards = o.hazards_are_errors = true;
  try {
    run_timed(exe, small_parameters(exe), o);
    FAIL() << "expected a hazard error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("write-after-write hazard"), std::string::npos)
        << e.what();
  }
}

// Core 0 copies x into core 1's VMEM; core 1 doubles it and copies it out. CORE0 is core
// 0's program between its DMA and its halt.
std::string two_cores(const std::string& core0, const std::string& core1_prefix) {
  return R"(.chip v4
.region x_hbm hbm 0 4096
.region y_hbm hbm 4096 4096
.region x1 vmem[1] 0 4096
.region y1 vmem[1] 4096 4096
.descriptor d0 src=x_hbm dst=x1 elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d1 src=y1 dst=y_hbm elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.param x x_hbm f32[8, 128]
.output y y_hbm f32[8, 128]
.source 0 "copy.0" "copy" "" "" 0
.source 1 "double.1" "add" "" "" 0
.program core 0
  dma d0, s0, s0, q0 @0
)" + core0 +
         R"(
  halt
.program core 1
)" + core1_prefix +
         R"(
  sli s1, 512
  vld.f32 v0, x1[s0], s1 @1
  vadd.f32 v0, v0, v0 @1
  vst.f32 y1[s0], s1, v0 @1
  dma d1, s0, s0, q0
  sem.wait q0, 1
  barrier
  halt
)";
}

TEST(HazardChecker, BarrierAfterTheWaitOrdersAnotherCoresRead) {
  std::string text = two_cores("  sem.wait q0, 1\n  barrier\n  barrier", "  barrier");
  TimedRunResult r = run_checked(text);
  EXPECT_TRUE(r.hazards.empty()) << r.hazards.front().message;
  isa::Executable exe = isa::assemble(text);
  EXPECT_EQ(r.outputs, functional_outputs(exe, small_parameters(exe)));
}

TEST(HazardChecker, BarrierBeforeTheWaitDoesNot) {
  // Core 0 reaches the barrier before it has seen its DMA land: core 1's read after the
  // barrier races with the copy.
  TimedRunResult r = run_checked(two_cores("  barrier\n  sem.wait q0, 1\n  barrier", "  barrier"));
  ASSERT_EQ(r.hazards.size(), 1u);
  const Hazard& h = r.hazards[0];
  EXPECT_EQ(h.kind, "read-after-write");
  EXPECT_EQ(h.first.core, 0);
  EXPECT_EQ(h.first.pc, 0);
  EXPECT_EQ(h.second.core, 1);
  EXPECT_EQ(h.second.instruction, "vld");
  EXPECT_NE(h.message.find("VMEM of core 1"), std::string::npos) << h.message;
  std::cout << h.message << "\n";
}

TEST(HazardChecker, NoBarrierAtAllRacesEitherWay) {
  // Whichever of the copy and the read the simulation happens to run first, they are
  // unordered.
  TimedRunResult r = run_checked(two_cores("  sem.wait q0, 1\n  barrier", ""));
  ASSERT_EQ(r.hazards.size(), 1u);
  EXPECT_EQ(r.hazards[0].kind, "read-after-write");
  EXPECT_EQ(r.hazards[0].second.core, 1);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
