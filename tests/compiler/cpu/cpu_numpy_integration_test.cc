// Runs every NumPy-oracle case (PODSIM_BINARY_DIR/tests/numpy_cases, written by
// tests/compiler/ir/numpy_oracle.py) on the CPU target, with and without the default
// pass pipeline, and compares with the reference evaluator on the same inputs and
// with NumPy's expected outputs.
//
// Tolerances:
//  * integers and pred: bit for bit, against both.
//  * floats, cases without a tolerance: bit for bit against the evaluator (the CPU
//    target computes elementwise ops with the evaluator's expressions in the same
//    types); against NumPy as the evaluator test does.
//  * floats, cases with a tolerance (sums, dots, convolutions, transcendental
//    functions): the case's tolerance bounds the distance from NumPy's value of a
//    result computed in any summation order (cases_reduce.py / cases_linalg.py scale
//    it by the number of terms). Both the evaluator and the CPU target are within it
//    of NumPy, so they are within twice it of each other: CPU vs NumPy within the
//    tolerance, CPU vs evaluator within 2x.
//  * with passes on, the simplifier may turn x+0 or x*1 into x: signed zeros may
//    differ from the evaluator (0 == -0), values otherwise as above.
// Cases for several replicas or partitions are skipped: the CPU target runs one
// device, and those cases only mean something with every device's inputs and
// collectives across devices (evaluator_numpy_integration_test covers them).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "compiler/ir/safetensors.h"
#include "compiler/ir/verifier.h"
#include "cpu_test_util.h"
#include "tests/compiler/numpy_cases.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::Bound;

using ::podsim::testing::numpy_cases::all_cases;
using ::podsim::testing::numpy_cases::case_dir;
using ::podsim::testing::numpy_cases::numbered;
using ::podsim::testing::numpy_cases::register_oracle_targets;
using ::podsim::testing::numpy_cases::Tolerance;
using ::podsim::testing::numpy_cases::tolerance_for;

// |got - want| allowed by a tolerance (scaled); exact when the tolerance is.
Bound bound_for(const Tolerance& t, const ir::Literal& want, double scale) {
  if (t.exact()) return nullptr;
  return [t, &want, scale](int64_t i) { return ::podsim::testing::numpy_cases::allowed_error(t, want, i, scale); };
}

class CpuNumpyOracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuNumpyOracleTest, MatchesEvaluatorAndNumpy) {
  register_oracle_targets();
  const std::string name = GetParam();
  const std::string base = case_dir() + "/" + name;
  SCOPED_TRACE("case files " + base + ".{hlo,safetensors}");
  const auto meta = ir::read_safetensors_metadata(base + ".safetensors");
  if (meta.count("replicas") || meta.count("partitions"))
    GTEST_SKIP() << name << " runs on several replicas/partitions; the CPU target is one device";
  try {
    std::unique_ptr<ir::Module> module = ir::parse_module_file(base + ".hlo");
    ir::verify_module(*module, base + ".hlo");
    const ir::NamedLiterals tensors = ir::read_safetensors(base + ".safetensors");
    std::vector<ir::Literal> args = ::podsim::testing::numpy_cases::copies(numbered(tensors, "arg"));
    const std::vector<const ir::Literal*> expected = numbered(tensors, "out");
    const ir::Literal reference = ir::evaluate(*module, args);
    const std::vector<const ir::Literal*> want = testing::leaves(reference);
    ASSERT_EQ(want.size(), expected.size()) << name;
    for (bool passes : {false, true}) {
      SCOPED_TRACE(passes ? "with passes" : "without passes");
      CompileOptions options;
      options.run_passes = passes;
      std::unique_ptr<Executable> executable = compile(*module, options);
      const std::vector<ir::Literal> result = executable->run(testing::pointers(args));
      const std::vector<const ir::Literal*> got = testing::leaves(result);
      ASSERT_EQ(got.size(), want.size()) << name;
      for (size_t k = 0; k < got.size(); ++k) {
        const Tolerance tol = tolerance_for(meta, k);
        EXPECT_TRUE(arrays_match(*got[k], *want[k], bound_for(tol, *want[k], 2.0), passes))
            << name << " out" << k << " vs the evaluator";
        EXPECT_TRUE(arrays_match(*got[k], *expected[k], bound_for(tol, *expected[k], 1.0),
                                 passes || !tol.exact()))
            << name << " out" << k << " vs NumPy";
      }
    }
  } catch (const std::exception& e) {
    FAIL() << name << ": " << e.what();
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuNumpyOracleTest);
INSTANTIATE_TEST_SUITE_P(Cases, CpuNumpyOracleTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(CpuNumpyOracleCases, Exist) {
  EXPECT_FALSE(all_cases().empty())
      << "no *.hlo cases in " << case_dir()
      << "; target numpy_oracle_cases writes them (needs /usr/bin/python3 with NumPy)";
}

}  // namespace
}  // namespace podsim::cpu
