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

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::Bound;

std::string case_dir() { return PODSIM_BINARY_DIR "/tests/numpy_cases"; }

std::vector<std::string> list_cases() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(case_dir(), ec))
    if (entry.path().extension() == ".hlo") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string>& all_cases() {
  static const std::vector<std::string> cases = list_cases();
  return cases;
}

struct Tolerance {
  double rtol = 0, atol = 0;
  uint64_t ulps = 0;
  bool exact() const { return rtol == 0 && atol == 0 && ulps == 0; }
};

Tolerance tolerance_for(const std::map<std::string, std::string>& meta, size_t output) {
  Tolerance t;
  auto apply = [&](const std::string& prefix) {
    if (auto it = meta.find(prefix + "rtol"); it != meta.end()) t.rtol = std::stod(it->second);
    if (auto it = meta.find(prefix + "atol"); it != meta.end()) t.atol = std::stod(it->second);
    if (auto it = meta.find(prefix + "ulps"); it != meta.end()) t.ulps = std::stoull(it->second);
  };
  apply("");
  apply("out" + std::to_string(output) + ".");
  return t;
}

// |got - want| allowed by a tolerance (scaled), with ulps counted on want's type.
Bound bound_for(const Tolerance& t, const ir::Literal& want, double scale) {
  if (t.exact()) return nullptr;
  return [t, &want, scale](int64_t i) {
    const double w = want.get_as_double(i);
    double ulp = 0;
    if (t.ulps > 0 && std::isfinite(w)) {
      const int digits = want.type() == ir::PrimitiveType::kF64    ? 53
                         : want.type() == ir::PrimitiveType::kF32  ? 24
                         : want.type() == ir::PrimitiveType::kBF16 ? 8
                                                                   : 11;
      int exponent = 0;
      std::frexp(w, &exponent);
      ulp = std::ldexp(1.0, exponent - digits) * static_cast<double>(t.ulps);
    }
    return scale * (t.atol + t.rtol * std::abs(w) + ulp);
  };
}

const ir::Literal* find_tensor(const ir::NamedLiterals& tensors, const std::string& name) {
  for (const auto& [n, literal] : tensors)
    if (n == name) return &literal;
  return nullptr;
}

std::vector<const ir::Literal*> numbered(const ir::NamedLiterals& tensors,
                                         const std::string& prefix) {
  std::vector<const ir::Literal*> out;
  while (const ir::Literal* l = find_tensor(tensors, prefix + std::to_string(out.size())))
    out.push_back(l);
  return out;
}

void register_oracle_targets() {
  static const bool registered = [] {
    ir::register_custom_call("oracle_negate",
                             [](const ir::Instruction&, std::span<const ir::Literal* const> ops) {
                               if (ops.size() != 1) fail("oracle_negate takes one operand");
                               ir::Literal out = *ops[0];
                               for (int64_t i = 0; i < out.num_elements(); ++i)
                                 out.set_from_double(i, -out.get_as_double(i));
                               return out;
                             });
    return true;
  }();
  (void)registered;
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
    std::vector<ir::Literal> args;
    for (const ir::Literal* l : numbered(tensors, "arg")) args.push_back(*l);
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
