// Checks the reference evaluator against NumPy: runs every case numpy_oracle.py wrote to
// PODSIM_BINARY_DIR/tests/numpy_cases (CASE.hlo + CASE.safetensors with inputs argN,
// expected outputs outN and tolerances in __metadata__) and compares each output
// element. Integers and pred must match bit for bit; floats within the case's tolerance
// (ulps counted on the output type; NaN matches any NaN; no tolerance means identical
// bits, so -0 and +0 differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/safetensors.h"
#include "compiler/ir/verifier.h"
#include "tests/compiler/numpy_cases.h"

namespace podsim::ir {
namespace {

using ::podsim::testing::numpy_cases::all_cases;
using ::podsim::testing::numpy_cases::case_dir;
using ::podsim::testing::numpy_cases::numbered;
using ::podsim::testing::numpy_cases::register_oracle_targets;
using ::podsim::testing::numpy_cases::Tolerance;
using ::podsim::testing::numpy_cases::tolerance_for;

void flatten(const Literal& literal, std::vector<const Literal*>& out) {
  if (literal.shape().is_tuple()) {
    for (const Literal& e : literal.elements()) flatten(e, out);
  } else {
    out.push_back(&literal);
  }
}

uint64_t element_bits(const Literal& literal, int64_t i) {
  auto width = static_cast<size_t>(type_byte_size(literal.type()));
  uint64_t bits = 0;
  std::memcpy(&bits, literal.bytes().data() + static_cast<size_t>(i) * width,
              width);  // little-endian host
  return bits;
}

// Distance in representable values between two floats of bit width w (±0 are 0 apart).
uint64_t ulp_distance(uint64_t a, uint64_t b, int w) {
  const uint64_t sign = uint64_t{1} << (w - 1);
  const uint64_t ma = a & (sign - 1), mb = b & (sign - 1);
  if ((a & sign) == (b & sign)) return ma > mb ? ma - mb : mb - ma;
  return ma + mb;  // both below 2^63: no overflow
}

bool is_nan_bits(uint64_t bits, PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16:
      return (bits & 0x7fff) > 0x7c00;
    case PrimitiveType::kBF16:
      return (bits & 0x7fff) > 0x7f80;
    case PrimitiveType::kF32:
      return (bits & 0x7fffffffu) > 0x7f800000u;
    case PrimitiveType::kF64:
      return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default:
      return false;
  }
}

bool float_matches(const Literal& got, const Literal& want, int64_t i, const Tolerance& tol) {
  const PrimitiveType t = want.type();
  const uint64_t g = element_bits(got, i), w = element_bits(want, i);
  const bool g_nan = is_nan_bits(g, t), w_nan = is_nan_bits(w, t);
  if (g_nan || w_nan) return g_nan && w_nan;
  if (g == w) return true;
  if (tol.exact()) return false;
  if (ulp_distance(g, w, type_bit_width(t)) <= tol.ulps) return true;
  const double gd = got.get_as_double(i), wd = want.get_as_double(i);
  return std::isfinite(gd) && std::isfinite(wd) &&
         std::abs(gd - wd) <= tol.atol + tol.rtol * std::abs(wd);
}

std::string index_text(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> index(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    index[k] = linear % dims[k];
    linear /= dims[k];
  }
  std::string s = "[";
  for (size_t k = 0; k < index.size(); ++k) s += (k ? "," : "") + std::to_string(index[k]);
  return s + "]";
}

std::string element_text(const Literal& literal, int64_t i) {
  const PrimitiveType t = literal.type();
  std::ostringstream s;
  if (is_float(t)) {
    s.precision(17);
    s << literal.get_as_double(i) << " (bits 0x" << std::hex << element_bits(literal, i) << ")";
  } else if (is_unsigned_int(t) || t == PrimitiveType::kPred) {
    s << literal.get_as_uint64(i);
  } else {
    s << literal.get_as_int64(i);
  }
  return s.str();
}

// Compares one output; reports the first few mismatching elements.
void compare_output(const std::string& where, const Literal& got, const Literal& want,
                    const Tolerance& tol) {
  if (got.type() != want.type() || got.shape().dims() != want.shape().dims()) {
    ADD_FAILURE() << where << ": got shape " << got.shape().to_string(false) << ", expected "
                  << want.shape().to_string(false);
    return;
  }
  int64_t mismatches = 0;
  const int64_t n = want.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    bool ok = is_float(want.type())
                  ? float_matches(got, want, i, tol)
                  : (want.type() == PrimitiveType::kPred
                         ? (element_bits(got, i) != 0) == (element_bits(want, i) != 0)
                         : element_bits(got, i) == element_bits(want, i));
    if (ok) continue;
    if (++mismatches <= 8)
      ADD_FAILURE() << where << " index " << index_text(want.shape().dims(), i) << ": got "
                    << element_text(got, i) << ", expected " << element_text(want, i)
                    << " (tolerance rtol=" << tol.rtol << " atol=" << tol.atol
                    << " ulps=" << tol.ulps << ")";
  }
  if (mismatches > 8)
    ADD_FAILURE() << where << ": " << mismatches << " of " << n << " elements differ";
}

class NumpyOracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NumpyOracleTest, MatchesNumpy) {
  register_oracle_targets();
  const std::string name = GetParam();
  const std::string base = case_dir() + "/" + name;
  SCOPED_TRACE("case files " + base + ".{hlo,safetensors}");
  try {
    std::unique_ptr<Module> module = parse_module_file(base + ".hlo");
    verify_module(*module, base + ".hlo");
    const NamedLiterals tensors = read_safetensors(base + ".safetensors");
    const auto meta = read_safetensors_metadata(base + ".safetensors");
    const bool spmd = meta.count("replicas") || meta.count("partitions");
    std::vector<std::vector<const Literal*>> expected;
    std::vector<Literal> results;
    if (!spmd) {
      std::vector<Literal> args;
      for (const Literal* l : numbered(tensors, "arg")) args.push_back(*l);
      results.push_back(evaluate(*module, args));
      expected.push_back(numbered(tensors, "out"));
    } else {
      EvalOptions options;
      options.replicas = meta.count("replicas") ? std::stoll(meta.at("replicas")) : 1;
      options.partitions = meta.count("partitions") ? std::stoll(meta.at("partitions")) : 1;
      const int64_t devices = options.replicas * options.partitions;
      std::vector<std::vector<Literal>> args(static_cast<size_t>(devices));
      for (int64_t d = 0; d < devices; ++d) {
        const std::string prefix = "r" + std::to_string(d) + ".";
        for (const Literal* l : numbered(tensors, prefix + "arg"))
          args[static_cast<size_t>(d)].push_back(*l);
        expected.push_back(numbered(tensors, prefix + "out"));
      }
      results = evaluate_spmd(*module, args, options);
      ASSERT_EQ(results.size(), static_cast<size_t>(devices)) << name << ": one result per device";
    }
    for (size_t d = 0; d < results.size(); ++d) {
      std::vector<const Literal*> got;
      flatten(results[d], got);
      ASSERT_FALSE(expected[d].empty()) << name << ": the case file holds no expected outputs";
      ASSERT_EQ(got.size(), expected[d].size())
          << name << ": result has " << got.size() << " arrays, expected " << expected[d].size();
      for (size_t k = 0; k < got.size(); ++k) {
        std::string where =
            name + (spmd ? " device " + std::to_string(d) : "") + " out" + std::to_string(k);
        compare_output(where, *got[k], *expected[d][k],
                       tolerance_for(meta, k));
      }
    }
  } catch (const std::exception& e) {
    FAIL() << name << ": " << e.what();
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NumpyOracleTest);
INSTANTIATE_TEST_SUITE_P(Cases, NumpyOracleTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Never pass vacuously: a missing or empty case directory is a failure.
TEST(NumpyOracleCases, Exist) {
  EXPECT_FALSE(all_cases().empty())
      << "no *.hlo cases in " << case_dir()
      << "; numpy_oracle.py writes them when target evaluator_numpy_integration_test "
         "is built (needs /usr/bin/python3 with NumPy)";
}

}  // namespace
}  // namespace podsim::ir
