// Runs the default pipeline over every case the NumPy oracle writes (one module per op,
// type and shape family, with its inputs): the optimized module must verify and give
// bit-identical results to the original on the case's inputs (any NaN matches any
// NaN). Cases come from PODSIM_BINARY_DIR/tests/numpy_cases when the build made them,
// otherwise this test runs the oracle script into a directory of its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "tests/compiler/passes/fusion_contract_test_util.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

namespace fs = std::filesystem;

// Generated at build time by tests/compiler/ir/numpy_oracle.py (target numpy_oracle_cases).
fs::path case_dir() { return fs::path(PODSIM_BINARY_DIR) / "tests" / "numpy_cases"; }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(case_dir(), ec))
    if (e.path().extension() == ".hlo") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Tensors named prefix + "0", prefix + "1", ... in order.
std::vector<ir::Literal> numbered(const ir::NamedLiterals& tensors, const std::string& prefix) {
  std::vector<ir::Literal> out;
  while (true) {
    std::string name = prefix + std::to_string(out.size());
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const auto& t) { return t.first == name; });
    if (it == tensors.end()) return out;
    out.push_back(it->second);
  }
}

// Single-device cases store inputs argN; multi-device ones rD.argN for each device of
// the module's replica x partition grid.
std::vector<ir::Literal> run_case(const ir::Module& module, const ir::NamedLiterals& tensors) {
  int64_t devices = module.replica_count * module.num_partitions;
  if (devices == 1) {
    std::vector<ir::Literal> results;
    results.push_back(ir::evaluate(module, numbered(tensors, "arg")));
    return results;
  }
  std::vector<std::vector<ir::Literal>> args;
  for (int64_t d = 0; d < devices; ++d)
    args.push_back(numbered(tensors, "r" + std::to_string(d) + ".arg"));
  return ir::evaluate_spmd(module, args);
}

TEST(PipelineOnNumpyCases, KeepsEveryResult) {
  ir::register_custom_call("oracle_negate",
                           [](const ir::Instruction&, std::span<const ir::Literal* const> ops) {
                             ir::Literal out = *ops[0];
                             for (int64_t i = 0; i < out.num_elements(); ++i)
                               out.set_from_double(i, -out.get_as_double(i));
                             return out;
                           });
  std::vector<std::string> names = case_names();
  ASSERT_GT(names.size(), 100u) << "no NumPy oracle cases in " << case_dir();
  int64_t fused = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string base = (case_dir() / name).string();
    try {
      auto original = ir::parse_module_file(base + ".hlo");
      auto optimized = ir::parse_module_file(base + ".hlo");
      ir::NamedLiterals tensors = ir::read_safetensors(base + ".safetensors");
      default_pipeline().verify_each(true).run(*optimized);
      testing::expect_fusion_contract(*optimized);
      fused += testing::count(*optimized, ir::Opcode::kFusion);
      std::vector<ir::Literal> before = run_case(*original, tensors);
      std::vector<ir::Literal> after = run_case(*optimized, tensors);
      ASSERT_EQ(before.size(), after.size());
      for (size_t d = 0; d < before.size(); ++d)
        EXPECT_EQ(testing::difference(before[d], after[d]), "") << "device " << d << "\n"
                                                                << ir::print_module(*optimized);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GT(fused, 0);  // some cases have something to fuse
}

}  // namespace
}  // namespace podsim::passes
