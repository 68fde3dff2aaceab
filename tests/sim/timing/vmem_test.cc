// VMEM's ports and banks (sim/timing/memory/vmem.h): strided loads whose rows share a bank
// serialise, and DMA traffic into VMEM waits for ports the vector unit holds.
#include <gtest/gtest.h>

#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

// On the tiny chip a register is 8 rows of 8 f32 (32 bytes); by default VMEM has 8 banks
// (vpu_sublanes) of 32-byte words (vpu_lanes * 4).
isa::Executable strided_loads(int64_t stride, int loads) {
  std::string s = R"(.format 1
.compiler "hand-written"
.chip tiny
.region t vmem[0] 0 65536
.program core 0
  sli s1, )" + std::to_string(stride) +
                  "\n";
  for (int i = 0; i < loads; ++i) s += "  vld.f32 v" + std::to_string(i % 8) + ", t[s0], s1\n";
  s += "  halt\n";
  return isa::assemble(s, "strided_loads.s");
}

// The cycles between the first and the last load's start.
uint64_t load_spread(const isa::Executable& exe) {
  TimingOptions o;
  o.instruction_trace = true;
  TimedRunResult r = run_timed(exe, {}, o);
  std::vector<uint64_t> starts;
  for (const InstructionRecord& i : r.trace)
    if (i.opcode == isa::Opcode::kVld) starts.push_back(i.start);
  EXPECT_EQ(starts.size(), 10u);
  return starts.back() - starts.front();
}

TEST(Vmem, RowsInOneBankAreServedOneACycle) {
  // Contiguous rows (stride 32) fill the 8 banks once: one cycle a load, 9 cycles
  // between the first and the tenth.
  EXPECT_EQ(load_spread(strided_loads(32, 10)), 9u);
  // Stride 64: words 0, 2, ..., 14 fall in banks 0, 2, 4, 6 twice each: 2 cycles a load.
  EXPECT_EQ(load_spread(strided_loads(64, 10)), 18u);
  // Stride 256 = 8 banks x 32 bytes: every row in bank 0, 8 cycles a load.
  EXPECT_EQ(load_spread(strided_loads(256, 10)), 72u);
  // Stride 0 reads one word 8 times: one access.
  EXPECT_EQ(load_spread(strided_loads(0, 10)), 9u);
  // Stride 40 is not word aligned: rows 0..7 start at 0, 40, ..., 280 and each spans two
  // words: words {0}, {1,2}, {2,3}, {3,4}, {5}, {6,7}, {7,8}, {8,9}: word 8 and word 0
  // share bank 0, word 9 and word 1 bank 1: 2 cycles a load.
  EXPECT_EQ(load_spread(strided_loads(40, 10)), 18u);
}

TEST(Vmem, MoreBanksRemoveTheConflict) {
  TimingOptions o;
  o.instruction_trace = true;
  isa::Executable exe = strided_loads(256, 2);
  exe.chip.vmem_banks = 64;  // stride 256 = 8 words: rows in banks 0, 8, ..., 56
  TimedRunResult r = run_timed(exe, {}, o);
  ASSERT_GE(r.trace.size(), 3u);
  EXPECT_EQ(r.trace[2].start - r.trace[1].start, 1u);
}

TEST(Vmem, NarrowBankWordsSerialiseEvenAContiguousTile) {
  // 2-byte words: a contiguous 8 x 32-byte tile is 128 words, 16 in each of 8 banks.
  TimingOptions o;
  o.instruction_trace = true;
  isa::Executable exe = strided_loads(32, 2);
  exe.chip.vmem_bank_bytes = 2;
  TimedRunResult r = run_timed(exe, {}, o);
  ASSERT_GE(r.trace.size(), 3u);
  EXPECT_EQ(r.trace[2].start - r.trace[1].start, 16u);
}

// A VMEM -> VMEM DMA of 8 KiB (2 KiB bursts, each read then written through VMEM's
// ports) while `loads` contiguous loads hold a port each cycle.
isa::Executable dma_and_loads(int loads) {
  std::string s = R"(.format 1
.compiler "hand-written"
.chip tiny
.region a vmem[0] 0 8192
.region b vmem[0] 8192 8192
.region t vmem[0] 16384 4096
.descriptor d0 src=a dst=b elem=4 sizes=[2048] src_strides=[4] dst_strides=[4]
.program core 0
  dma d0, s0, s0, q0
  sli s1, 32
)";
  for (int i = 0; i < loads; ++i) s += "  vld.f32 v" + std::to_string(i % 8) + ", t[s0], s1\n";
  s += "  sem.wait q0, 1\n  halt\n";
  return isa::assemble(s, "dma_and_loads.s");
}

uint64_t dma_end(isa::Executable exe, int64_t ports) {
  TimingOptions o;
  o.instruction_trace = true;
  exe.chip.vmem_ports = ports;
  TimedRunResult r = run_timed(exe, {}, o);
  for (const InstructionRecord& i : r.trace)
    if (i.opcode == isa::Opcode::kDma) return i.end;
  ADD_FAILURE() << "no DMA in the trace";
  return 0;
}

TEST(Vmem, DmaTrafficWaitsForPortsTheVectorUnitHolds) {
  const int loads = 60;
  uint64_t alone = dma_end(dma_and_loads(0), 1);
  // Two ports: the loads take one, the DMA the other; it ends as if alone.
  EXPECT_EQ(dma_end(dma_and_loads(loads), 2), alone);
  // One port: each cycle a load holds it is a cycle the DMA's traffic cannot use, so it
  // ends later, by at most the loads' cycles.
  uint64_t shared = dma_end(dma_and_loads(loads), 1);
  EXPECT_GT(shared, alone);
  EXPECT_LE(shared, alone + loads);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
