// Runs every NumPy-oracle case (tests/compiler/numpy_cases.h), and every module of
// tests/compiler/ir/testdata, that the TPU lowering
// supports on the functional chip model, for the v4 and v5e presets, after the default
// pass pipeline, and compares with the reference evaluator on the same inputs.
//
// Tolerances: the reference rounds f32 dot operands to bf16 first (DEFAULT precision is
// one bf16 MXU pass), so what remains is the order of f32 sums, which the case's own
// tolerance bounds (scaled by the number of terms); both sides are within it of the
// exact value, so they are compared within twice it. Cases without a tolerance are
// exact: integers, data movement and IEEE f32 arithmetic agree bit for bit.
// A case with an op the lowering does not support is skipped, with the lowering's
// "not supported on the TPU target: <op>" message as the reason (README lists the
// supported ops). Multi-device cases (collectives) run on a v5e pod with a chip per
// device, every chip against the evaluator's result for its device.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/printer.h"
#include "compiler/ir/sharding.h"
#include "compiler/passes/pass.h"
#include "compiler/ir/verifier.h"
#include "sim/functional/pod_model.h"
#include "topology/pod_config.h"
#include "tests/compiler/numpy_cases.h"
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

namespace cases = ::podsim::testing::numpy_cases;

class TpuNumpyOracleTest : public ::testing::TestWithParam<std::string> {};

// Whether the module has 64-bit types (the TPU compile driver narrows them to 32 bits).
bool uses_64bit_types(const std::string& text) {
  auto module = ir::parse_module(text);
  try {
    return passes::make_narrow_64bit_types()->run(*module);
  } catch (const Error&) {
    return true;  // an op whose meaning depends on the width
  }
}

// Output k of every device within the case's tolerance of the reference.
void expect_near_reference(const std::vector<ir::Literal>& actual,
                           const std::vector<ir::Literal>& expected,
                           const std::map<std::string, std::string>& meta) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    const cases::Tolerance tolerance = cases::tolerance_for(meta, k);
    std::vector<double> bounds(static_cast<size_t>(expected[k].num_elements()));
    if (ir::is_float(expected[k].type()))
      for (size_t i = 0; i < bounds.size(); ++i)
        bounds[i] = cases::allowed_error(tolerance, expected[k], static_cast<int64_t>(i), 2.0);
    EXPECT_TRUE(near(actual[k], expected[k], 0, 0, &bounds)) << "output " << k;
  }
}

// A multi-device case on a v5e pod of replicas x partitions chips (1xN, or 2xN/2 from 4
// devices up): each chip runs its device's arguments.
void run_case_on_pod(const std::string& text, const ir::NamedLiterals& tensors,
                     const std::map<std::string, std::string>& meta) {
  ir::EvalOptions options;
  options.replicas = meta.count("replicas") ? std::stoll(meta.at("replicas")) : 1;
  options.partitions = meta.count("partitions") ? std::stoll(meta.at("partitions")) : 1;
  const int64_t devices = options.replicas * options.partitions;
  const std::string shape = devices >= 4 && devices % 2 == 0
                                ? fmt::format("v5e:2x{}", devices / 2)
                                : fmt::format("v5e:1x{}", devices);
  SCOPED_TRACE(shape);
  std::vector<std::vector<ir::Literal>> args(static_cast<size_t>(devices));
  for (int64_t d = 0; d < devices; ++d)
    args[static_cast<size_t>(d)] =
        cases::copies(cases::numbered(tensors, "r" + std::to_string(d) + ".arg"));
  auto reference = with_bf16_dot_operands(text);
  const std::vector<ir::Literal> expected = ir::evaluate_spmd(*reference, args, options);
  Options compile_options;
  compile_options.passes = true;
  isa::Executable exe;
  try {
    exe = compile(*ir::parse_module(text), Target(topology::pod_config(shape), options.replicas),
                  compile_options);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("not supported on the TPU target") != std::string::npos) GTEST_SKIP() << what;
    FAIL() << what;
  }
  sim::PodFunctionalModel pod(exe);
  for (int64_t d = 0; d < devices; ++d)
    for (size_t k = 0; k < args[static_cast<size_t>(d)].size(); ++k) {
      const std::vector<uint8_t> bytes = parameter_bytes(args[static_cast<size_t>(d)][k]);
      pod.chip(static_cast<int>(d)).set_parameter(static_cast<int>(k), bytes);
    }
  pod.run_to_completion(int64_t{1} << 32);
  for (int64_t d = 0; d < devices; ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    std::vector<ir::Literal> want;
    flatten_into(expected[static_cast<size_t>(d)], want);
    std::vector<ir::Literal> got;
    for (size_t k = 0; k < want.size(); ++k)
      got.push_back(output_literal(pod.chip(static_cast<int>(d)).read_output(static_cast<int>(k)),
                                   want[k].shape(), k, "the pod run"));
    expect_near_reference(got, want, meta);
  }
}

TEST_P(TpuNumpyOracleTest, MatchesEvaluatorOnV4AndV5e) {
  cases::register_oracle_targets();
  const std::string name = GetParam();
  const std::string base = cases::case_dir() + "/" + name;
  SCOPED_TRACE("case files " + base + ".{hlo,safetensors}");
  const auto meta = ir::read_safetensors_metadata(base + ".safetensors");
  const std::string text = ir::print_module(*ir::parse_module_file(base + ".hlo"));
  const ir::NamedLiterals tensors = ir::read_safetensors(base + ".safetensors");
  if (uses_64bit_types(text))
    GTEST_SKIP() << "64-bit types: the TPU target computes them narrowed to 32 bits, which "
                    "the 64-bit reference's results do not allow for";
  if (meta.count("replicas") || meta.count("partitions")) return run_case_on_pod(text, tensors, meta);
  const std::vector<ir::Literal> args = cases::copies(cases::numbered(tensors, "arg"));
  auto reference = with_bf16_dot_operands(text);
  std::vector<ir::Literal> expected;
  flatten_into(ir::evaluate(*reference, args), expected);

  for (const char* chip : {"v4", "v5e"}) {
    SCOPED_TRACE(chip);
    isa::Executable exe;
    try {
      exe = compile_text(text, chip, /*fuse=*/true);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("not supported on the TPU target") != std::string::npos) GTEST_SKIP() << what;
      FAIL() << what;
    }
    expect_near_reference(
        run_executable(exe, args, flat_shapes(reference->entry()->root()->shape())), expected, meta);
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TpuNumpyOracleTest);
INSTANTIATE_TEST_SUITE_P(Cases, TpuNumpyOracleTest, ::testing::ValuesIn(cases::all_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// SPMD: every single-device case with each parameter split in two along its first
// dimension of two or more elements (evenly or not), partitioned (passes::spmd_partition) over the two chips of a
// v5e 1x2 pod; the pieces of the result put together against the reference.
class TpuSpmdNumpyOracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TpuSpmdNumpyOracleTest, PartitionedOverTwoChipsMatchesEvaluator) {
  cases::register_oracle_targets();
  const std::string base = cases::case_dir() + "/" + GetParam();
  const auto meta = ir::read_safetensors_metadata(base + ".safetensors");
  auto module = ir::parse_module_file(base + ".hlo");
  const std::string text = ir::print_module(*module);
  if (meta.count("replicas") || meta.count("partitions")) GTEST_SKIP() << "a multi-device case";
  if (uses_64bit_types(text)) GTEST_SKIP() << "64-bit types (see MatchesEvaluatorOnV4AndV5e)";
  constexpr int64_t kChips = 2;
  module->num_partitions = kChips;
  bool split = false;
  for (ir::Instruction* p : module->entry()->parameters()) {
    const ir::Shape& shape = p->shape();
    if (!shape.is_array()) continue;
    for (int64_t d = 0; d < shape.rank() && !p->sharding(); ++d) {
      if (shape.dim(d) < kChips) continue;  // odd sizes too: the second piece is padded
      ir::Sharding s;
      s.kind = ir::Sharding::Kind::kTiled;
      s.tile_dims.assign(static_cast<size_t>(shape.rank()), 1);
      s.tile_dims[static_cast<size_t>(d)] = kChips;
      s.devices = {0, 1};
      p->sharding() = s;
      split = true;
    }
  }
  if (!split) GTEST_SKIP() << "no parameter splits in two";
  auto partitioned = ir::parse_module(ir::print_module(*module));
  passes::spmd_partition(*partitioned, kChips);

  const ir::NamedLiterals tensors = ir::read_safetensors(base + ".safetensors");
  const std::vector<ir::Literal> args = cases::copies(cases::numbered(tensors, "arg"));
  std::vector<ir::Literal> expected;
  flatten_into(ir::evaluate(*with_bf16_dot_operands(text), args), expected);

  isa::Executable exe;
  try {
    exe = compile(*partitioned, Target(topology::pod_config("v5e:1x2"), 1, kChips), Options{});
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("not supported on the TPU target") != std::string::npos) GTEST_SKIP() << what;
    FAIL() << what;
  }
  const ir::Computation& entry = *partitioned->entry();
  sim::PodFunctionalModel pod(exe);
  for (int64_t d = 0; d < kChips; ++d)
    for (int64_t k = 0; k < entry.parameter_count(); ++k)
      pod.chip(static_cast<int>(d))
          .set_parameter(static_cast<int>(k),
                         parameter_bytes(ir::shard_literal(args[static_cast<size_t>(k)],
                                                           entry.parameter(k)->sharding().value(), d)));
  pod.run_to_completion(int64_t{1} << 32);
  const std::vector<ir::Shape> pieces = flat_shapes(entry.root()->shape());
  // The result's sharding element by element, nested tuples flattened as the outputs are.
  std::vector<ir::Sharding> shardings;
  std::function<void(const ir::Sharding&, const ir::Shape&)> flatten = [&](const ir::Sharding& s, const ir::Shape& shape) {
    if (shape.is_array()) return shardings.push_back(s);
    for (int64_t e = 0; e < shape.tuple_size(); ++e)
      flatten(s.kind == ir::Sharding::Kind::kTuple ? s.tuple_elements.at(static_cast<size_t>(e)) : s, shape.element(e));
  };
  flatten(entry.root()->sharding().value(), entry.root()->shape());
  std::vector<ir::Literal> got;
  for (size_t k = 0; k < pieces.size(); ++k) {
    std::vector<ir::Literal> per_chip;
    for (int64_t d = 0; d < kChips; ++d)
      per_chip.push_back(
          output_literal(pod.chip(static_cast<int>(d)).read_output(static_cast<int>(k)), pieces[k], k, "the pod run"));
    got.push_back(ir::unshard_literal(per_chip, shardings.at(k), expected.at(k).shape()));
  }
  expect_near_reference(got, expected, meta);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TpuSpmdNumpyOracleTest);
INSTANTIATE_TEST_SUITE_P(Cases, TpuSpmdNumpyOracleTest, ::testing::ValuesIn(cases::all_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The realistic modules of tests/compiler/ir/testdata (XLA dumps, a training step, control
// flow...) on random inputs, where the lowering supports them.
class TpuTestdataTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TpuTestdataTest, MatchesEvaluatorOnV4AndV5e) {
  const std::string path =
      std::string(PODSIM_SOURCE_DIR) + "/tests/compiler/ir/testdata/" + GetParam() + ".hlo";
  auto module = ir::parse_module_file(path);
  if (module->replica_count * module->num_partitions > 1) GTEST_SKIP() << "several devices";
  const std::string text = ir::print_module(*module);
  if (uses_64bit_types(text))
    GTEST_SKIP() << "64-bit types: the TPU target computes them narrowed to 32 bits, which "
                    "the 64-bit reference's results do not allow for";
  for (const char* chip : {"v4", "v5e"}) {
    try {
      compile_text(text, chip, /*fuse=*/true);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("not supported on the TPU target") != std::string::npos) GTEST_SKIP() << what;
      FAIL() << what;
    }
    Case c{text, chip, 1e-4, 1e-5, /*fuse=*/true};
    c.bf16_dots = true;
    check(c);
  }
}

std::vector<std::string> testdata_modules() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PODSIM_SOURCE_DIR) +
                                                               "/tests/compiler/ir/testdata"))
    if (entry.path().extension() == ".hlo") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Files, TpuTestdataTest, ::testing::ValuesIn(testdata_modules()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(TpuNumpyOracleCases, Exist) {
  EXPECT_FALSE(cases::all_cases().empty())
      << "no *.hlo cases in " << cases::case_dir() << "; target numpy_oracle_cases writes them";
}

}  // namespace
}  // namespace podsim::tpu::testing
