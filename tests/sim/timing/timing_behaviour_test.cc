// How the timed model's cycle counts behave: they follow the work (GEMM size, HBM
// bandwidth), overlap what the ISA lets overlap, honour its asynchrony, and are the same
// run after run; a process runs many models on one SystemC elaboration, from any thread.
#include <gtest/gtest.h>

#include <thread>

#include "bench/roofline.h"
#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

double mxu_flops(const traces::Profile& p) {
  double f = 0;
  for (const traces::Track& t : p.chips.at(0).tracks)
    if (t.category == "mxu")
      for (const traces::Span& s : t.spans) f += s.flops;
  return f;
}

const InstructionRecord& record_at(const TimedRunResult& r, int pc) {
  for (const InstructionRecord& x : r.trace)
    if (x.pc == pc) return x;
  throw Error("no trace record for pc " + std::to_string(pc));
}

isa::Executable gemm(int64_t n) {
  std::string hlo = "HloModule g\nENTRY e {\n  a = f32[" + std::to_string(n) + "," +
                    std::to_string(n) + "] parameter(0)\n  b = f32[" + std::to_string(n) + "," +
                    std::to_string(n) + "] parameter(1)\n  ROOT d = f32[" + std::to_string(n) +
                    "," + std::to_string(n) +
                    "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  return tpu::compile(*ir::parse_module(hlo), topology::preset("tiny"));
}

TEST(TimingBehaviour, BiggerGemmTakesProportionallyLonger) {
  isa::Executable small = gemm(32), big = gemm(64);
  TimedRunResult rs = run_timed(small, small_parameters(small));
  TimedRunResult rb = run_timed(big, small_parameters(big));
  // MXU work is exactly the GEMM's: 2 n^3 flops (n is a multiple of the 8x8 MXU).
  EXPECT_DOUBLE_EQ(mxu_flops(rs.profile), 2.0 * 32 * 32 * 32);
  EXPECT_DOUBLE_EQ(mxu_flops(rb.profile), 2.0 * 64 * 64 * 64);
  // 8x the work: between 4.5x and 9x the cycles (fixed latencies weigh less in the big
  // one).
  double ratio = static_cast<double>(rb.cycles) / static_cast<double>(rs.cycles);
  std::cout << "GEMM 32^3: " << rs.cycles << " cycles, 64^3: " << rb.cycles << " cycles\n";
  EXPECT_GT(ratio, 4.5);
  EXPECT_LT(ratio, 9.0);
  EXPECT_TRUE(well_formed(rs.profile));
  EXPECT_TRUE(well_formed(rb.profile));
}

// With `copy`, one HBM -> VMEM copy of `bytes`; then (with mxu_passes > 0) that many
// mldw + mmul on m0, before or after waiting for the copy.
isa::Executable copy_and_multiply(int64_t bytes, bool copy, int mxu_passes, bool wait_first) {
  std::string words = std::to_string(bytes / 4);
  std::string text =
      ".chip tiny\n.region src hbm 0 " + std::to_string(bytes) + "\n.region buf vmem[0] 0 " +
      std::to_string(bytes) + "\n.region w vmem[0] " + std::to_string(bytes) +
      " 128\n.region a vmem[0] " + std::to_string(bytes + 128) + " 128\n" +
      ".descriptor d0 src=src dst=buf elem=4 sizes=[" + words +
      "] src_strides=[4] dst_strides=[4]\n" + ".param p src f32[" + words + "]\n.program core 0\n";
  if (copy) text += "  dma d0, s0, s0, q0\n";
  if (wait_first && copy) text += "  sem.wait q0, 1\n";
  if (mxu_passes > 0)
    text +=
        "  sli s1, 16\n  sli s2, 8\n  sli s3, " + std::to_string(mxu_passes) +
        "\nloop:\n  mldw.bf16 m0, w[s0], s1, s2\n  mmul.bf16 m0, a[s0], s1, 0\n  saddi s3, s3, -1\n"
        "  bnz s3, loop\n";
  if (!wait_first && copy) text += "  sem.wait q0, 1\n";
  text += "  halt\n";
  return isa::assemble(text);
}

TEST(TimingBehaviour, DmaTimeFollowsHbmBandwidth) {
  const int64_t bytes = 256 * 1024;
  isa::Executable fast = copy_and_multiply(bytes, true, 0, true);
  isa::Executable slow = fast;
  slow.chip.hbm_bandwidth_bytes_per_s /= 2;
  TimedRunResult rf = run_timed(fast, small_parameters(fast));
  TimedRunResult rs = run_timed(slow, small_parameters(slow));
  std::cout << "copy at 64 GB/s: " << rf.cycles << " cycles, at 32 GB/s: " << rs.cycles
            << " cycles\n";
  // The tiny chip: 64 GB/s at 1 GHz = 64 bytes per cycle, less what refresh takes; 100 ns
  // HBM latency.
  auto analytic = [&](const isa::Executable& exe) {
    return static_cast<double>(bytes) / (bench::sustained_hbm_bandwidth(exe.chip) / 1e9) + 100;
  };
  EXPECT_NEAR(static_cast<double>(rf.cycles), analytic(fast), 0.05 * analytic(fast));
  EXPECT_NEAR(static_cast<double>(rs.cycles), analytic(slow), 0.05 * analytic(slow));
  // The HBM track carries the bytes moved.
  const traces::Track* hbm = find_track(rf.profile, "HBM");
  ASSERT_NE(hbm, nullptr);
  double moved = 0;
  for (const traces::Span& s : hbm->spans) moved += s.bytes;
  EXPECT_DOUBLE_EQ(moved, static_cast<double>(bytes));
  EXPECT_TRUE(well_formed(rf.profile));
}

TEST(TimingBehaviour, AnHbmToHbmCopyMovesAtHbmBandwidth) {
  // One DMA copies 256 KiB within HBM: its reads and writes share the channels, so it
  // takes twice the bytes over the bandwidth plus a read's and a write's latency, with
  // either HBM model (a transfer's own writes never hold up its later reads).
  const int64_t bytes = 256 * 1024;
  const isa::Executable exe = isa::assemble(
      ".format 2\n.compiler \"hand-written\"\n.chip tiny\n"
      ".region a hbm 0 262144\n.region b hbm 262144 262144\n"
      ".descriptor d0 src=a dst=b elem=8 sizes=[32768] src_strides=[8] dst_strides=[8]\n"
      ".program core 0\n  dma d0, s0, s0, q0\n  sem.wait q0, 1\n  halt\n",
      "hbm_copy.s");
  const topology::ChipConfig& chip = exe.chip;
  const double analytic =
      2.0 * static_cast<double>(bytes) / (bench::sustained_hbm_bandwidth(chip) / chip.clock_hz) +
      2.0 * chip.hbm_latency_ns * chip.clock_hz / 1e9;
  for (const char* model : {"channels", "request-time"}) {
    SCOPED_TRACE(model);
    TimingOptions o;
    o.hbm_model = model;
    const TimedRunResult r = run_timed(exe, {}, o);
    EXPECT_NEAR(static_cast<double>(r.cycles), analytic, 0.1 * analytic);
  }
}

TEST(TimingBehaviour, MxuWorkOverlapsAnInFlightDma) {
  const int64_t bytes = 256 * 1024;  // about 4200 cycles of DMA
  const int passes = 400;            // about 16 cycles each: 6400 cycles of MXU work
  isa::Executable dma_only = copy_and_multiply(bytes, true, 0, true);
  isa::Executable mxu_only = copy_and_multiply(bytes, false, passes, true);
  isa::Executable serial = copy_and_multiply(bytes, true, passes, true);
  isa::Executable overlapped = copy_and_multiply(bytes, true, passes, false);
  uint64_t d = run_timed(dma_only, small_parameters(dma_only)).cycles;
  uint64_t m = run_timed(mxu_only, small_parameters(mxu_only)).cycles;
  uint64_t s = run_timed(serial, small_parameters(serial)).cycles;
  uint64_t o = run_timed(overlapped, small_parameters(overlapped)).cycles;
  std::cout << "DMA " << d << ", MXU " << m << ", serial " << s << ", overlapped " << o
            << " cycles\n";
  EXPECT_GE(s, d + m - 20);  // waiting first serialises them
  EXPECT_LT(o, s);
  EXPECT_LE(o, std::max(d, m) + 50);  // overlapped: about the longer of the two
}

TEST(TimingBehaviour, PipelinedEnginesOverlapTheLatencyOfTheirTransfers) {
  // Eight 4 KiB copies on the tiny chip's two engines, then one wait for all of them.
  std::string text =
      ".chip tiny\n.region src hbm 0 32768\n.region buf vmem[0] 0 32768\n"
      ".descriptor d0 src=src dst=buf elem=4 sizes=[1024] src_strides=[4] "
      "dst_strides=[4]\n.program core 0\n";
  for (int i = 0; i < 8; ++i)
    text += "  sli s1, " + std::to_string(i * 4096) + "\n  dma d0, s1, s1, q0\n";
  text += "  sem.wait q0, 8\n  halt\n";
  isa::Executable exe = isa::assemble(text);
  TimingOptions serial;
  serial.dma_model = "burst";
  uint64_t pipelined_cycles = run_timed(exe, {}).cycles;
  uint64_t serial_cycles = run_timed(exe, {}, serial).cycles;
  std::cout << "8 x 4 KiB: pipelined engines " << pipelined_cycles << ", one transfer per engine "
            << serial_cycles << " cycles\n";
  // 32 KiB at 64 bytes per cycle is 512 cycles of bandwidth, plus 100 cycles of latency
  // once when the engines overlap it. One transfer per engine pays the latency four times
  // in a row on each engine (8 transfers / 2 engines), partly hidden by the other engine.
  EXPECT_LT(pipelined_cycles, 512 + 100 + 100);
  EXPECT_GT(serial_cycles, pipelined_cycles + 100);
}

TEST(TimingBehaviour, DmaIssueIsAsynchronousAndSemWaitEndsWhenItLands) {
  isa::Executable exe = testdata_kernel("vector_add.s");
  TimingOptions o;
  o.instruction_trace = true;
  TimedRunResult r = run_timed(exe, small_parameters(exe), o);
  // pc 0, 1: dma; 2, 3: sem.wait q0, q1; 8: vst z; 9: dma z -> HBM; 10: sem.wait.
  EXPECT_EQ(record_at(r, 1).issue, record_at(r, 0).issue + 1);  // the core did not wait for d0
  EXPECT_GT(record_at(r, 0).end, record_at(r, 1).issue + 50);   // d0 took the HBM latency
  EXPECT_EQ(record_at(r, 2).start, record_at(r, 0).end);        // the wait returned as d0 landed
  EXPECT_GE(record_at(r, 3).start, record_at(r, 1).end);
  // Program order: the DMA reading z starts after the vst wrote it.
  EXPECT_GE(record_at(r, 9).start, record_at(r, 8).end);
  EXPECT_EQ(record_at(r, 10).start, record_at(r, 9).end);
  EXPECT_EQ(r.cycles, record_at(r, 11).end);  // halt
  EXPECT_EQ(r.outputs, functional_outputs(exe, small_parameters(exe)));
}

TEST(TimingBehaviour, RunsAreRepeatableAcrossChipsInOneProcess) {
  isa::Executable tiny = testdata_kernel("matmul.s");
  isa::Executable v4 = gemm(16);
  v4 = tpu::compile(
      *ir::parse_module(
          "HloModule g\nENTRY e {\n  a = f32[128,128] parameter(0)\n  b = f32[128,128] "
          "parameter(1)\n  ROOT d = f32[128,128] dot(a, b), lhs_contracting_dims={1}, "
          "rhs_contracting_dims={0}\n}\n"),
      topology::preset("v4"));
  TimedRunResult first = run_timed(tiny, small_parameters(tiny));
  TimedRunResult other = run_timed(v4, small_parameters(v4));
  TimedRunResult again = run_timed(tiny, small_parameters(tiny));
  EXPECT_EQ(first.cycles, again.cycles);
  EXPECT_EQ(first.outputs, again.outputs);
  ASSERT_EQ(first.profile.chips.at(0).tracks.size(), again.profile.chips.at(0).tracks.size());
  for (size_t t = 0; t < first.profile.chips[0].tracks.size(); ++t) {
    const auto& a = first.profile.chips[0].tracks[t].spans;
    const auto& b = again.profile.chips[0].tracks[t].spans;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(a[i].start == b[i].start && a[i].end == b[i].end);
  }
  EXPECT_EQ(other.outputs, functional_outputs(v4, small_parameters(v4)));
  EXPECT_DOUBLE_EQ(mxu_flops(other.profile), 2.0 * 128 * 128 * 128);
}

TEST(TimingBehaviour, TemporalDecouplingDoesNotChangeTheTiming) {
  // A core running ahead changes when SystemC runs things, not the cycles they get: DMA
  // engines still request HBM in simulated-time order, and waits synchronise.
  for (const isa::Executable& exe :
       {gemm(32), testdata_kernel("vector_add.s"),
        isa::assemble(
            read_text(std::string(PODSIM_SOURCE_DIR) + "/tests/sim/timing/golden/two_cores.s"))}) {
    TimingOptions o;
    o.instruction_trace = true;
    o.quantum_cycles = 1;
    TimedRunResult lockstep = run_timed(exe, small_parameters(exe), o);
    for (uint64_t quantum : {100u, 100000u}) {
      o.quantum_cycles = quantum;
      TimedRunResult r = run_timed(exe, small_parameters(exe), o);
      EXPECT_EQ(r.cycles, lockstep.cycles) << "quantum " << quantum;
      EXPECT_EQ(r.outputs, lockstep.outputs);
      EXPECT_EQ(format_instruction_trace(r.trace, exe),
                format_instruction_trace(lockstep.trace, exe));
    }
  }
}

TEST(TimingBehaviour, CallsFromSeveralThreadsAreSerialised) {
  isa::Executable exe = testdata_kernel("matmul.s");
  uint64_t expected = run_timed(exe, small_parameters(exe)).cycles;
  std::vector<uint64_t> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = run_timed(exe, small_parameters(exe)).cycles; });
  for (std::thread& t : threads) t.join();
  for (uint64_t c : got) EXPECT_EQ(c, expected);
}

TEST(TimingBehaviour, ErrorsLeaveTheKernelUsable) {
  isa::Executable deadlock =
      isa::assemble(".chip tiny\n.program core 0\n  sem.wait q3, 1\n  halt\n");
  try {
    run_timed(deadlock, {});
    FAIL() << "expected a deadlock";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sem.wait q3"), std::string::npos) << e.what();
  }
  isa::Executable loop = isa::assemble(".chip tiny\n.program core 0\nl:\n  br l\n  halt\n");
  TimingOptions o;
  o.max_instructions = 1000;
  EXPECT_THROW(run_timed(loop, {}, o), Error);
  TimingOptions unknown;
  unknown.mxu_model = "no-such-model";
  try {
    run_timed(loop, {}, unknown);
    FAIL() << "expected an unknown model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("systolic"), std::string::npos) << e.what();
  }
  isa::Executable exe = testdata_kernel("vector_add.s");
  EXPECT_EQ(run_timed(exe, small_parameters(exe)).outputs,
            functional_outputs(exe, small_parameters(exe)));
  EXPECT_THROW(run_timed(exe, {}), Error);  // missing parameters
  EXPECT_EQ(registered_unit_models("hbm"), (std::vector<std::string>{"channels", "request-time"}));
}

}  // namespace
}  // namespace podsim::sim::timing::testing
