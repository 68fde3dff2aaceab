// The NumPy-oracle cases (written at build time by tests/compiler/ir/numpy_oracle.py,
// target numpy_oracle_cases, into PODSIM_BINARY_DIR/tests/numpy_cases): NAME.hlo, and
// NAME.safetensors holding the inputs (arg0, arg1, ...; rD.argN per device for
// multi-device cases), NumPy's outputs (out0, ...) and metadata (tolerances, replicas,
// partitions). Shared by every test that runs the cases on a backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/safetensors.h"
#include "compiler/passes/pass.h"

namespace podsim::testing::numpy_cases {

// PODSIM_NUMPY_CASES overrides it (a test binary run away from its build tree).
inline std::string case_dir() {
  const char* dir = std::getenv("PODSIM_NUMPY_CASES");
  return dir != nullptr && *dir != '\0' ? dir : PODSIM_BINARY_DIR "/tests/numpy_cases";
}

// Case names (file stems), sorted; empty when the cases were not generated.
inline const std::vector<std::string>& all_cases() {
  static const std::vector<std::string> cases = [] {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(case_dir(), ec))
      if (entry.path().extension() == ".hlo") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
  }();
  return cases;
}

struct Tolerance {
  double rtol = 0;
  double atol = 0;
  uint64_t ulps = 0;
  bool exact() const { return rtol == 0 && atol == 0 && ulps == 0; }
};

// Case-wide "rtol"/"atol"/"ulps", overridden per output by "outN.rtol" etc.
inline Tolerance tolerance_for(const std::map<std::string, std::string>& meta, size_t output) {
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

// The allowed |got - want| at element i of want under a tolerance, times scale; ulps
// are counted in want's type.
inline double allowed_error(const Tolerance& t, const ir::Literal& want, int64_t i, double scale) {
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
}

// Tensors prefix + "0", prefix + "1", ... in order ("arg", "out", "r1.arg").
inline std::vector<const ir::Literal*> numbered(const ir::NamedLiterals& tensors,
                                                const std::string& prefix) {
  std::vector<const ir::Literal*> out;
  while (true) {
    std::string name = prefix + std::to_string(out.size());
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const auto& t) { return t.first == name; });
    if (it == tensors.end()) return out;
    out.push_back(&it->second);
  }
}

inline std::vector<ir::Literal> copies(const std::vector<const ir::Literal*>& literals) {
  std::vector<ir::Literal> out;
  for (const ir::Literal* l : literals) out.push_back(*l);
  return out;
}

// The custom-call target of the oracle's custom-call case: elementwise negation, as an
// evaluator handler (the evaluator runs modules as they are) and as a definition (the
// compile drivers expand it: the TPU target has no handlers).
inline void register_oracle_targets() {
  static const bool registered = [] {
    passes::define_custom_calls(*ir::parse_module(R"(HloModule oracle_targets
ENTRY oracle_negate (x: f32[]) -> f32[] {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
})"),
                                "numpy_cases.h");
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

}  // namespace podsim::testing::numpy_cases
