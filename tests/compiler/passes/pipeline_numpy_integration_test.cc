// Runs the default pipeline over every case the NumPy oracle writes (one module per op,
// type and shape family, with its inputs): the optimized module must verify and give
// bit-identical results to the original on the case's inputs (any NaN matches any
// NaN). The cases are tests/compiler/numpy_cases.h's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "tests/compiler/numpy_cases.h"
#include "tests/compiler/passes/fusion_contract_test_util.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes {
namespace {

using ::podsim::testing::numpy_cases::case_dir;
using ::podsim::testing::numpy_cases::copies;
using ::podsim::testing::numpy_cases::numbered;

// Single-device cases store inputs argN; multi-device ones rD.argN for each device of
// the module's replica x partition grid.
std::vector<ir::Literal> run_case(const ir::Module& module, const ir::NamedLiterals& tensors) {
  int64_t devices = module.replica_count * module.num_partitions;
  if (devices == 1) {
    std::vector<ir::Literal> results;
    results.push_back(ir::evaluate(module, copies(numbered(tensors, "arg"))));
    return results;
  }
  std::vector<std::vector<ir::Literal>> args;
  for (int64_t d = 0; d < devices; ++d)
    args.push_back(copies(numbered(tensors, "r" + std::to_string(d) + ".arg")));
  return ir::evaluate_spmd(module, args);
}

TEST(PipelineOnNumpyCases, KeepsEveryResult) {
  ::podsim::testing::numpy_cases::register_oracle_targets();
  const std::vector<std::string>& names = ::podsim::testing::numpy_cases::all_cases();
  ASSERT_GT(names.size(), 100u) << "no NumPy oracle cases in " << case_dir();
  int64_t fused = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string base = case_dir() + "/" + name;
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
