// Scalar unit, branches and halt, with expected values worked out by hand.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>

#include "common/error.h"
#include "tests/sim/functional/functional_test_util.h"

namespace podsim::sim {
namespace {

using testing::assemble;
using testing::tiny_chip;

// Runs `body` (then halt) on core 0 and returns the model for inspection.
FunctionalModel run(const std::string& body, const std::string& regions = "") {
  FunctionalModel model(
      assemble(tiny_chip() + regions + ".program core 0\n" + body + "\n  halt\n"));
  model.run_to_completion(10000);
  return model;
}

int64_t reg(const FunctionalModel& model, int r) {
  return model.state().core(0).scalar[static_cast<size_t>(r)];
}

TEST(ScalarOps, Arithmetic) {
  auto m = run(R"(
  sli s1, 17
  sli s2, -5
  sadd s3, s1, s2
  saddi s4, s1, 100
  ssub s5, s2, s1
  smul s6, s1, s2
  smuli s7, s1, 3
  sdiv s8, s1, s2
  srem s9, s1, s2
  smin s10, s1, s2
  smax s11, s1, s2
  slt s12, s2, s1
  slt s13, s1, s2
  seq s14, s1, s1
  seq s15, s1, s2)");
  EXPECT_EQ(reg(m, 3), 12);
  EXPECT_EQ(reg(m, 4), 117);
  EXPECT_EQ(reg(m, 5), -22);
  EXPECT_EQ(reg(m, 6), -85);
  EXPECT_EQ(reg(m, 7), 51);
  EXPECT_EQ(reg(m, 8), -3);  // truncates toward zero
  EXPECT_EQ(reg(m, 9), 2);   // sign of the dividend
  EXPECT_EQ(reg(m, 10), -5);
  EXPECT_EQ(reg(m, 11), 17);
  EXPECT_EQ(reg(m, 12), 1);
  EXPECT_EQ(reg(m, 13), 0);
  EXPECT_EQ(reg(m, 14), 1);
  EXPECT_EQ(reg(m, 15), 0);
}

TEST(ScalarOps, WrapsAndS0StaysZero) {
  auto m = run(R"(
  sli s1, 0x7fffffffffffffff
  saddi s2, s1, 1
  sli s3, 0x8000000000000000
  sli s4, -1
  sdiv s5, s3, s4
  srem s6, s3, s4
  sli s0, 42
  saddi s7, s0, 1)");
  EXPECT_EQ(reg(m, 2), INT64_MIN);
  EXPECT_EQ(reg(m, 5), INT64_MIN);
  EXPECT_EQ(reg(m, 6), 0);
  EXPECT_EQ(reg(m, 0), 0);
  EXPECT_EQ(reg(m, 7), 1);
}

TEST(ScalarOps, DivisionByZeroIsAnError) {
  for (const char* op : {"sdiv", "srem"}) {
    try {
      run(std::string("  sli s1, 5\n  ") + op + " s2, s1, s3");
      FAIL() << "expected an error";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
      EXPECT_NE(m.find("pc 1"), std::string::npos) << m;
      EXPECT_NE(m.find(op), std::string::npos) << m;
    }
  }
}

TEST(ScalarOps, LoadAndStore64BitWords) {
  auto m = run(R"(
  sli s1, 8
  sli s2, -123456789012
  sst x[s1], s2
  sld s3, x[s1]
  sld s4, x[s0])",
               ".region x vmem[0] 64 16\n");
  EXPECT_EQ(reg(m, 3), -123456789012);
  EXPECT_EQ(reg(m, 4), 0);  // untouched memory reads as zero
  auto bytes = m.read_region(0, 8, 8);
  int64_t stored;
  std::memcpy(&stored, bytes.data(), 8);
  EXPECT_EQ(stored, -123456789012);
  // A word at offset 12 would end at 20, past the 16-byte region.
  EXPECT_THROW(run("  sli s1, 12\n  sld s2, x[s1]", ".region x vmem[0] 64 16\n"), Error);
  EXPECT_THROW(run("  sli s1, -8\n  sst x[s1], s1", ".region x vmem[0] 64 16\n"), Error);
  // Offsets near the 64-bit limit are reported exactly, not wrapped.
  try {
    run("  sli s1, 0x7fffffffffffffff\n  sld s2, x[s1]", ".region x vmem[0] 64 16\n");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[9223372036854775807, 9223372036854775815)"), std::string::npos)
        << e.what();
  }
}

TEST(Control, SumsOneToTenInALoop) {
  // s1 counts 10 down to 1, s2 accumulates: 55.
  auto m = run(R"(
  sli s1, 10
  sli s2, 0
loop:
  sadd s2, s2, s1
  saddi s1, s1, -1
  bnz s1, loop)");
  EXPECT_EQ(reg(m, 2), 55);
  EXPECT_EQ(reg(m, 1), 0);
}

TEST(Control, BranchesAndHalt) {
  // bz taken skips the first sli; br jumps over the second; the final value is 3.
  FunctionalModel model(assemble(tiny_chip() + R"(
.program core 0
  bz s0, skip
  sli s1, 1
skip:
  br over
  sli s1, 2
over:
  saddi s1, s1, 3
  bnz s0, never
  halt
never:
  sli s1, 99
  halt
)"));
  RunStats stats = model.run_to_completion(100);
  EXPECT_EQ(model.state().core(0).scalar[1], 3);
  EXPECT_EQ(stats.instructions, 5);  // bz, br, saddi, bnz, halt
  EXPECT_TRUE(model.all_halted());
  EXPECT_EQ(model.state().core(0).pc, 6);  // stays at its halt
}

TEST(Control, StepReportsEachInstruction) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.program core 0
  sli s1, 2
loop:
  saddi s1, s1, -1
  bnz s1, loop
  halt
)"));
  std::vector<int32_t> pcs;
  Effect e;
  while (model.is_live(0)) {
    model.step(0, e);
    EXPECT_FALSE(e.blocked);
    EXPECT_EQ(e.unit, isa::Unit::kScalar);
    pcs.push_back(e.pc);
  }
  EXPECT_EQ(pcs, (std::vector<int32_t>{0, 1, 2, 1, 2, 3}));
  EXPECT_TRUE(e.halted);
  EXPECT_THROW(model.step(0), Error);  // halted
  EXPECT_THROW(model.step(1), Error);  // no such core
}

TEST(Control, RunawayLoopsHitTheStepLimit) {
  FunctionalModel model(assemble(tiny_chip() + R"(
.program core 0
spin:
  saddi s1, s1, 1
  br spin
)"));
  try {
    model.run_to_completion(1000);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("exceeded 1000 instructions"), std::string::npos) << m;
    EXPECT_NE(m.find("core 0: pc"), std::string::npos) << m;
  }
  EXPECT_EQ(model.state().core(0).scalar[1], 501);  // 1001 steps: saddi ran 501 times
}

}  // namespace
}  // namespace podsim::sim
