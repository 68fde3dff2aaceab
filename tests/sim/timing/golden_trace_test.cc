// Golden cycle traces: the instruction trace (unit, issue, start, end, source op) of a
// few small kernels compared with committed files in tests/sim/timing/golden/. When the
// timing model changes on purpose, regenerate them with
//   PODSIM_UPDATE_GOLDEN=1 build/bin/tests/golden_trace_test
// and review the diff (git diff tests/sim/timing/golden) like any other change.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

struct Kernel {
  std::string name;  // golden/<name>.csv
  std::string path;  // the assembly
};

std::vector<Kernel> kernels() {
  std::string root = std::string(PODSIM_SOURCE_DIR) + "/tests/";
  return {{"vector_add", root + "isa/testdata/vector_add.s"},
          {"matmul", root + "isa/testdata/matmul.s"},
          {"reduce_loop", root + "isa/testdata/reduce_loop.s"},
          {"four_mxus", root + "sim/timing/golden/four_mxus.s"},
          {"two_cores", root + "sim/timing/golden/two_cores.s"}};
}

class GoldenTrace : public ::testing::TestWithParam<Kernel> {};

TEST_P(GoldenTrace, MatchesTheCommittedTrace) {
  const Kernel& k = GetParam();
  isa::Executable exe = isa::assemble(read_text(k.path), k.path);
  TimingOptions o;
  o.instruction_trace = true;
  o.check_hazards = true;
  TimedRunResult r = run_timed(exe, small_parameters(exe), o);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_EQ(r.outputs, functional_outputs(exe, small_parameters(exe)));
  std::string actual =
      format_instruction_trace(r.trace, exe) + "total," + std::to_string(r.cycles) + "\n";
  std::string golden =
      std::string(PODSIM_SOURCE_DIR) + "/tests/sim/timing/golden/" + k.name + ".csv";
  const char* update = std::getenv("PODSIM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << actual;
    GTEST_SKIP() << "wrote " << golden;
  }
  std::string expected = read_text(golden);
  ASSERT_FALSE(expected.empty()) << golden
                                 << " is missing; run with PODSIM_UPDATE_GOLDEN=1 to create it";
  if (actual == expected) return;
  // Name the first line that differs.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  for (int line = 1;; ++line) {
    bool ga = static_cast<bool>(std::getline(a, la)), ge = static_cast<bool>(std::getline(e, le));
    if (!ga && !ge) break;
    if (la != le) {
      ADD_FAILURE() << golden << " line " << line << ": expected '" << le << "', got '" << la
                    << "' (if the model changed on purpose: PODSIM_UPDATE_GOLDEN=1 "
                    << "golden_trace_test)";
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GoldenTrace, ::testing::ValuesIn(kernels()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace podsim::sim::timing::testing
