// Runs every module in tests/compiler/ir/testdata (hand-written and XLA-dumped HLO:
// attention, convolutions with pooling and its gradient, loops, conditionals,
// collectives, shardings, a training step) on the CPU target, with and without passes,
// against the evaluator on random inputs; modules that the evaluator cannot run on one
// device must fail on the CPU target too. Integers and pred must match
// bit for bit. Floats are checked against |got - want| <= 1e-3 (1 + |want|): inputs are
// drawn from [-1, 1), every reduction in these modules has at most a few hundred terms,
// so float accumulation (the only difference, see cpu_dot_test.cc / reduce_kernel.h)
// stays far below it, while wrong indexing or a wrong op gives errors of order one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "common/error.h"
#include "compiler/ir/verifier.h"
#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::leaves;
using testing::pointers;
using testing::random_literal;

std::vector<std::string> testdata_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(PODSIM_SOURCE_DIR "/tests/compiler/ir/testdata", ec))
    if (entry.path().extension() == ".hlo") files.push_back(entry.path().stem().string());
  std::sort(files.begin(), files.end());
  return files;
}

class TestdataTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TestdataTest, MatchesEvaluator) {
  // JAX's placement annotation is the identity on its operand.
  ir::register_custom_call(
      "annotate_device_placement",
      [](const ir::Instruction&, std::span<const ir::Literal* const> operands) {
        if (operands.size() != 1) fail("annotate_device_placement takes one operand");
        return *operands[0];
      });
  const std::string path = PODSIM_SOURCE_DIR "/tests/compiler/ir/testdata/" + GetParam() + ".hlo";
  std::unique_ptr<ir::Module> module = ir::parse_module_file(path);
  ir::verify_module(*module, path);
  std::mt19937_64 rng(std::hash<std::string>{}(GetParam()));
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module->entry()->parameters()) {
    // Integer scalars are loop bounds and indices in these modules: keep them small.
    const bool index = !ir::is_float(p->shape().type());
    ir::Literal arg(p->shape());
    std::vector<ir::Literal*> stack{&arg};
    while (!stack.empty()) {
      ir::Literal* l = stack.back();
      stack.pop_back();
      if (l->shape().is_tuple()) {
        for (ir::Literal& e : l->elements()) stack.push_back(&e);
      } else {
        *l = random_literal(l->shape(), rng, index ? 0 : -1, index ? 3 : 1);
      }
    }
    args.push_back(std::move(arg));
  }
  ir::Literal want;
  try {
    want = ir::evaluate(*module, args);
  } catch (const Error& e) {
    // Modules the evaluator cannot run on one device (collectives over several
    // replicas, custom calls without a handler): the CPU target must refuse them too.
    EXPECT_THROW(compile(*module)->run(pointers(args)), Error)
        << "the evaluator failed with: " << e.what();
    GTEST_SKIP() << GetParam() << " does not run on one device: " << e.what();
  }
  const auto w = leaves(want);
  for (bool passes : {false, true}) {
    SCOPED_TRACE(passes ? "with passes" : "without passes");
    CompileOptions options;
    options.run_passes = passes;
    const std::vector<ir::Literal> got = compile(*module, options)->run(pointers(args));
    const auto g = leaves(got);
    ASSERT_EQ(g.size(), w.size());
    for (size_t k = 0; k < g.size(); ++k) {
      const ir::Literal* ref = w[k];
      EXPECT_TRUE(arrays_match(
          *g[k], *ref, [ref](int64_t i) { return 1e-3 * (1 + std::abs(ref->get_as_double(i))); },
          true))
          << GetParam() << " leaf " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, TestdataTest, ::testing::ValuesIn(testdata_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(TestdataFiles, Exist) { EXPECT_GE(testdata_files().size(), 5u); }

}  // namespace
}  // namespace podsim::cpu
