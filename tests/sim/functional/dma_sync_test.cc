// DMA, semaphores and barriers: strided copies, completion under the caller's control,
// lazy completion in a plain run, multi-core synchronisation, deadlocks and faults.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "tests/sim/functional/functional_test_util.h"

namespace podsim::sim {
namespace {

using testing::assemble;
using testing::tiny_chip;

std::string error_of(FunctionalModel& model, int64_t max_steps = 1000) {
  try {
    model.run_to_completion(max_steps);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Dma, StridedCopyPicksASubBlock) {
  // src: a 5 x 10 s32 matrix m[r][c] = 10 r + c in HBM. The descriptor copies the 4 x 3
  // block at rows 1.., columns 2.. (src offset 1 * 40 + 2 * 4 = 48 from s1), skipping
  // every other column: element (i, j) = m[1 + i][2 + 2 j], packed densely in VMEM.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region m hbm 4096 200
.region out vmem[0] 0 48
.descriptor d0 src=m dst=out elem=4 sizes=[4, 3] src_strides=[40, 8] dst_strides=[12, 4]
.param m m s32[5, 10]
.output out out s32[4, 3]
.program core 0
  sli s1, 48
  dma d0, s1, s0, q0
  sem.wait q0, 1
  halt
)"));
  std::vector<int32_t> m(50);
  for (int k = 0; k < 50; ++k) m[k] = 10 * (k / 10) + k % 10;
  model.set_parameter(0, testing::to_bytes(m));
  RunStats stats = model.run_to_completion(100);
  EXPECT_EQ(stats.dmas, 1);
  auto out = testing::from_bytes<int32_t>(model.read_output(0));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(out[i * 3 + j], 10 * (1 + i) + 2 + 2 * j) << i << "," << j;
}

TEST(Dma, TransposesThroughStrides) {
  // A 4 x 6 f32 matrix to its 6 x 4 transpose: destination (j, i) = source (i, j), so
  // the outer loop walks source columns (stride 4) and the inner one source rows (24).
  FunctionalModel model(assemble(tiny_chip() + R"(
.region a hbm 0 96
.region t hbm 1024 96
.descriptor d0 src=a dst=t elem=4 sizes=[6, 4] src_strides=[4, 24] dst_strides=[16, 4]
.param a a f32[4, 6]
.output t t f32[6, 4]
.program core 0
  dma d0, s0, s0, q3
  sem.wait q3, 1
  halt
)"));
  std::vector<float> a(24);
  for (int k = 0; k < 24; ++k) a[k] = static_cast<float>(k) + 0.5f;
  model.set_parameter(0, testing::to_bytes(a));
  model.run_to_completion(100);
  auto t = testing::from_bytes<float>(model.read_output(0));
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(t[j * 4 + i], a[i * 6 + j]);
}

TEST(Dma, LargeContiguousCopiesGoThroughInChunks) {
  // 3 MiB, more than one staging chunk and many pages.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region src hbm 0 3145728
.region dst hbm 8388608 3145728
.descriptor d0 src=src dst=dst elem=4 sizes=[786432] src_strides=[4] dst_strides=[4]
.param src src s32[786432]
.output dst dst s32[786432]
.program core 0
  dma d0, s0, s0, q0
  sem.wait q0, 1
  halt
)"));
  std::vector<int32_t> v(786432);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int32_t>(k * 7);
  model.set_parameter(0, testing::to_bytes(v));
  model.run_to_completion(100);
  EXPECT_EQ(testing::from_bytes<int32_t>(model.read_output(0)), v);
}

const char* kCopyThenLoad = R"(
.region src hbm 0 256
.region x vmem[0] 0 256
.region y vmem[0] 256 256
.descriptor d0 src=src dst=x elem=256 sizes=[1] src_strides=[0] dst_strides=[0]
.param src src f32[8, 8]
.output y y f32[8, 8]
.program core 0
  sli s2, 32
  dma d0, s0, s0, q0
)";

TEST(Dma, WaitingMakesTheDataVisible) {
  FunctionalModel model(assemble(tiny_chip() + kCopyThenLoad + R"(
  sem.wait q0, 1
  vld.f32 v0, x[s0], s2
  vst.f32 y[s0], s2, v0
  halt
)"));
  model.set_parameter(0, testing::to_bytes(std::vector<float>(64, 2.5f)));
  model.run_to_completion(100);
  for (float v : testing::from_bytes<float>(model.read_output(0))) EXPECT_EQ(v, 2.5f);
}

TEST(Dma, AMissingWaitReadsTheOldData) {
  // A plain run completes a DMA only when its semaphore is waited on (or at the end),
  // so reading the destination without waiting sees what was there before.
  FunctionalModel model(assemble(tiny_chip() + kCopyThenLoad + R"(
  vld.f32 v0, x[s0], s2
  vst.f32 y[s0], s2, v0
  halt
)"));
  model.set_parameter(0, testing::to_bytes(std::vector<float>(64, 2.5f)));
  RunStats stats = model.run_to_completion(100);
  EXPECT_EQ(stats.dmas, 1);  // completed at the end of the run
  for (float v : testing::from_bytes<float>(model.read_output(0))) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(model.read_region(1, 0, 4), testing::to_bytes(std::vector<float>{2.5f}));
}

TEST(Dma, TheCallerDecidesWhenATransferCompletes) {
  FunctionalModel model(assemble(tiny_chip() + kCopyThenLoad + R"(
  sem.wait q0, 1
  halt
)"));
  model.set_parameter(0, testing::to_bytes(std::vector<float>(64, 4.0f)));
  model.step(0);  // sli
  Effect e = model.step(0);
  ASSERT_TRUE(e.has_dma);
  EXPECT_EQ(e.unit, isa::Unit::kDma);
  EXPECT_EQ(e.dma.bytes, 256);
  EXPECT_EQ(e.dma.src.space, isa::MemorySpace::kHbm);
  EXPECT_EQ(e.dma.src.begin, 0);
  EXPECT_EQ(e.dma.src.end, 256);
  EXPECT_EQ(e.dma.dst.space, isa::MemorySpace::kVmem);
  EXPECT_EQ(e.dma.dst.core, 0);
  EXPECT_EQ(e.dma.semaphore, 0);
  ASSERT_EQ(model.dmas_in_flight().size(), 1u);
  EXPECT_EQ(model.read_region(1, 0, 4), testing::to_bytes(std::vector<float>{0.0f}));  // not yet

  Effect wait = model.step(0);
  EXPECT_TRUE(wait.blocked);
  EXPECT_EQ(wait.next_pc, wait.pc);
  EXPECT_TRUE(model.step(0).blocked);  // still

  model.complete_dma(e.dma.id);
  EXPECT_TRUE(model.dmas_in_flight().empty());
  EXPECT_EQ(model.state().core(0).semaphores[0], 1);
  EXPECT_EQ(model.read_region(1, 0, 4), testing::to_bytes(std::vector<float>{4.0f}));
  EXPECT_THROW(model.complete_dma(e.dma.id), Error);  // already done

  wait = model.step(0);
  EXPECT_FALSE(wait.blocked);
  EXPECT_EQ(model.state().core(0).semaphores[0], 0);
  EXPECT_TRUE(model.step(0).halted);
}

TEST(Dma, AWaitCanCoverSeveralTransfers) {
  // Two DMAs on q1, one wait for both; a third on q2 is waited for separately.
  FunctionalModel model(assemble(tiny_chip() + R"(
.region src hbm 0 12
.region dst vmem[0] 0 12
.descriptor d0 src=src dst=dst elem=4 sizes=[1] src_strides=[0] dst_strides=[0]
.param src src s32[3]
.output dst dst s32[3]
.program core 0
  sli s1, 4
  sli s2, 8
  dma d0, s0, s0, q1
  dma d0, s1, s1, q1
  dma d0, s2, s2, q2
  sem.wait q1, 2
  sem.wait q2, 1
  halt
)"));
  model.set_parameter(0, testing::to_bytes(std::vector<int32_t>{7, 8, 9}));
  RunStats stats = model.run_to_completion(100);
  EXPECT_EQ(stats.dmas, 3);
  EXPECT_EQ(testing::from_bytes<int32_t>(model.read_output(0)), (std::vector<int32_t>{7, 8, 9}));
  for (int64_t sem : model.state().core(0).semaphores) EXPECT_EQ(sem, 0);
}

TEST(Dma, FaultsNameTheInstruction) {
  const std::string regions = tiny_chip() + R"(
.region src hbm 0 64
.region dst vmem[0] 0 64
.descriptor d0 src=src dst=dst elem=4 sizes=[4, 4] src_strides=[16, 4] dst_strides=[16, 4]
.program core 0
)";
  FunctionalModel outside(
      assemble(regions + "  sli s1, 4\n  dma d0, s1, s0, q0\n  sem.wait q0, 1\n  halt\n"));
  std::string m = error_of(outside);
  for (const char* part : {"core 0", "pc 1", "dma d0", "reads bytes [4, 68)", "region src"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " missing from: " << m;

  FunctionalModel overlap(assemble(tiny_chip() + R"(
.region a hbm 0 64
.region b hbm 32 64
.descriptor d0 src=a dst=b elem=4 sizes=[16] src_strides=[4] dst_strides=[4]
.program core 0
  dma d0, s0, s0, q0
  sem.wait q0, 1
  halt
)"));
  EXPECT_NE(error_of(overlap).find("overlap"), std::string::npos);

  // A chip of a pod, run outside its pod, has no peers to write to.
  FunctionalModel remote(assemble(".pod \"tiny:1x2\"\n" + regions.substr(tiny_chip().size()) +
                                  "  dma.remote d0, s0, s0, s0, q0, q1\n  halt\n"));
  EXPECT_NE(error_of(remote).find("needs a pod: this chip runs alone"), std::string::npos)
      << error_of(remote);
}

TEST(Sync, SemaphoreSignalAndWaitCount) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.program core 0
  sem.signal q5, 3
  sem.wait q5, 2
  sem.wait q5, 1
  sem.signal q6, 1
  halt
)"));
  model.run_to_completion(100);
  EXPECT_EQ(model.state().core(0).semaphores[5], 0);
  EXPECT_EQ(model.state().core(0).semaphores[6], 1);
}

TEST(Sync, DeadlockListsEveryCore) {
  FunctionalModel model(assemble(tiny_chip(2) + R"(
.program core 0
  sem.signal q1, 1
  sem.wait q1, 2
  halt
.program core 1
  barrier
  halt
)"));
  std::string m = error_of(model);
  EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
  EXPECT_NE(m.find("core 0: pc 1 sem.wait q1, 2 (semaphore q1 is 1, needs 2; 0 DMA(s) in flight"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("core 1: pc 0 barrier (at the barrier; 1 of 2 cores arrived)"),
            std::string::npos)
      << m;
}

TEST(Sync, AHaltedCoreNeverReachesTheBarrier) {
  FunctionalModel model(assemble(tiny_chip(2) + R"(
.program core 0
  barrier
  halt
.program core 1
  halt
)"));
  std::string m = error_of(model);
  EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
  EXPECT_NE(m.find("core 1: pc 0 halt (halted)"), std::string::npos) << m;
}

TEST(Sync, BarrierOrdersAWriteIntoAnotherCoresVmem) {
  // Core 0 copies x into core 1's VMEM and waits for it; after the barrier core 1 adds 1
  // and stores its result.
  FunctionalModel model(assemble(tiny_chip(2) + R"(
.region x hbm 0 256
.region in1 vmem[1] 0 256
.region out1 vmem[1] 256 256
.descriptor d0 src=x dst=in1 elem=256 sizes=[1] src_strides=[0] dst_strides=[0]
.param x x f32[8, 8]
.output out out1 f32[8, 8]
.program core 0
  dma d0, s0, s0, q0
  sem.wait q0, 1
  barrier
  halt
.program core 1
  sli s2, 32
  vbcasti.f32 v1, 0x3f800000
  barrier
  vld.f32 v0, in1[s0], s2
  vadd.f32 v0, v0, v1
  vst.f32 out1[s0], s2, v0
  halt
)"));
  model.set_parameter(0, testing::to_bytes(std::vector<float>(64, 1.5f)));
  model.run_to_completion(100);
  for (float v : testing::from_bytes<float>(model.read_output(0))) EXPECT_EQ(v, 2.5f);
}

TEST(Sync, BarrierBlocksUntilEveryCoreArrives) {
  FunctionalModel model(assemble(tiny_chip(2) + R"(
.program core 0
  barrier
  barrier
  halt
.program core 1
  sli s1, 1
  barrier
  barrier
  halt
)"));
  EXPECT_TRUE(model.step(0).blocked);
  EXPECT_TRUE(model.step(0).blocked);
  EXPECT_FALSE(model.step(1).blocked);  // sli
  EXPECT_FALSE(model.step(1).blocked);  // the last to arrive passes at once
  EXPECT_TRUE(model.step(1).blocked);   // the second barrier
  EXPECT_FALSE(model.step(0).blocked);  // core 0 passes the first
  EXPECT_FALSE(model.step(0).blocked);  // and completes the second
  EXPECT_FALSE(model.step(1).blocked);
  EXPECT_TRUE(model.step(0).halted);
  EXPECT_TRUE(model.step(1).halted);
  EXPECT_TRUE(model.all_halted());
}

TEST(Model, HostTransfersAndConstants) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.region c vmem[0] 0 8
.region p hbm 64 16
.constant c
.bytes 0102030405060708
.param p p s32[4]
.output c c u8[8]
.program core 0
  halt
)"));
  EXPECT_EQ(model.read_output(0), (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(model.set_parameter(0, std::vector<uint8_t>(15)), Error);
  EXPECT_THROW(model.set_parameter(1, std::vector<uint8_t>(16)), Error);
  EXPECT_THROW(model.read_output(1), Error);
  EXPECT_THROW(model.read_region(0, 4, 8), Error);
  model.set_parameter(0, std::vector<uint8_t>(16, 9));
  EXPECT_EQ(model.read_region(1, 12, 4), std::vector<uint8_t>(4, 9));
}

}  // namespace
}  // namespace podsim::sim
