// Runs every NumPy-oracle case (PODSIM_BINARY_DIR/tests/numpy_cases) on the OpenCL
// backend (PoCL on the CPU where there is no GPU) through the device interface, and
// compares with the reference evaluator on the same inputs and with NumPy's outputs.
//
// Tolerances as the CPU target's test (tests/compiler/cpu/cpu_numpy_integration_test.cc):
// integers and pred bit for bit; floats of cases without a tolerance bit for bit against
// the evaluator (generated kernels compute + - * / sqrt and tanh with the evaluator's
// expressions, correctly rounded, without contraction); cases with a tolerance (sums,
// dots, transcendental functions) within it of NumPy and within twice it of the
// evaluator. The simplifier may change the sign of zeros (x + 0 -> x).
// Cases for several replicas or partitions are skipped (one device per module).
#include <gtest/gtest.h>

#include "compiler/ir/safetensors.h"
#include "compiler/ir/verifier.h"
#include "runtime/pjrt/device.h"
#include "tests/compiler/cpu/cpu_test_util.h"
#include "tests/compiler/numpy_cases.h"

namespace podsim::pjrt {
namespace {

using ::podsim::cpu::testing::arrays_match;
using ::podsim::cpu::testing::Bound;
using ::podsim::testing::numpy_cases::all_cases;
using ::podsim::testing::numpy_cases::case_dir;
using ::podsim::testing::numpy_cases::numbered;
using ::podsim::testing::numpy_cases::Tolerance;
using ::podsim::testing::numpy_cases::tolerance_for;

Bound bound_for(const Tolerance& t, const ir::Literal& want, double scale) {
  if (t.exact()) return nullptr;
  return [t, &want, scale](int64_t i) {
    return ::podsim::testing::numpy_cases::allowed_error(t, want, i, scale);
  };
}

// The OpenCL client, or null (with the reason) when this machine has no OpenCL platform.
Client* opencl_client(std::string& why) {
  try {
    return &client("OPENCL");
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

class OpenClNumpyOracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenClNumpyOracleTest, MatchesEvaluatorAndNumpy) {
  std::string why;
  Client* opencl = opencl_client(why);
  if (opencl == nullptr) GTEST_SKIP() << why;
  ::podsim::testing::numpy_cases::register_oracle_targets();
  const std::string name = GetParam();
  const std::string base = case_dir() + "/" + name;
  SCOPED_TRACE("case files " + base + ".{hlo,safetensors}");
  const auto meta = ir::read_safetensors_metadata(base + ".safetensors");
  if (meta.count("replicas") || meta.count("partitions"))
    GTEST_SKIP() << name
                 << " runs on several replicas/partitions; an OpenCL module runs on one device";
  try {
    std::unique_ptr<ir::Module> module = ir::parse_module_file(base + ".hlo");
    ir::verify_module(*module, base + ".hlo");
    const ir::NamedLiterals tensors = ir::read_safetensors(base + ".safetensors");
    std::vector<ir::Literal> args =
        ::podsim::testing::numpy_cases::copies(numbered(tensors, "arg"));
    const std::vector<const ir::Literal*> expected = numbered(tensors, "out");
    const ir::Literal reference = ir::evaluate(*module, args);
    const std::vector<const ir::Literal*> want = cpu::testing::leaves(reference);
    ASSERT_EQ(want.size(), expected.size()) << name;
    std::shared_ptr<Executable> executable = opencl->compile(*module);
    Device& device = *opencl->devices()[0];
    std::vector<std::shared_ptr<Buffer>> buffers;
    for (ir::Literal& a : args) buffers.push_back(opencl->transfer_to_device(a, device));
    std::vector<ir::Literal> result;
    for (const auto& b : executable->execute(buffers, device)) result.push_back(b->to_literal());
    const std::vector<const ir::Literal*> got = cpu::testing::leaves(result);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t k = 0; k < got.size(); ++k) {
      const Tolerance tol = tolerance_for(meta, k);
      EXPECT_TRUE(arrays_match(*got[k], *want[k], bound_for(tol, *want[k], 2.0), true))
          << name << " out" << k << " vs the evaluator";
      EXPECT_TRUE(arrays_match(*got[k], *expected[k], bound_for(tol, *expected[k], 1.0), true))
          << name << " out" << k << " vs NumPy";
    }
  } catch (const std::exception& e) {
    FAIL() << name << ": " << e.what();
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpenClNumpyOracleTest);
INSTANTIATE_TEST_SUITE_P(Cases, OpenClNumpyOracleTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace podsim::pjrt
