// Helpers for the TPU target's tests: compile HLO text for a chip, run the executable
// on the functional model, and compare with the reference evaluator.
//
// Tolerances (see each test): integers and data movement are bit-exact. f32 vector
// arithmetic is IEEE f32 on both sides, so exact for + - * / and within a few ulps for
// transcendentals. bf16 elementwise results round once per op on both sides. Dots round
// inputs to bf16 (relative error 2^-8 per operand, so at most about 2^-7 per product)
// and accumulate K products in f32: |error| <= 2^-7 * sum_k |a_k b_k| + K * 2^-24 *
// sum_k |a_k b_k|. Reductions reorder f32 sums: |error| <= N * 2^-24 * sum |x|.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/float16.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/functional/functional_model.h"
#include "topology/chip_config.h"

namespace podsim::tpu::testing {

// Uniform floats in [lo, hi); integers in [lo, hi]; pred 0/1. With integral_floats,
// floats are whole numbers (sums of them are exact in f32).
inline ir::Literal random_literal(const ir::Shape& shape, std::mt19937_64& rng, double lo = -1, double hi = 1,
                                  bool integral_floats = false) {
  ir::Literal l(shape);
  ir::PrimitiveType t = shape.type();
  for (int64_t i = 0; i < l.num_elements(); ++i) {
    if (t == ir::PrimitiveType::kPred) {
      l.set_from_int64(i, std::uniform_int_distribution<int>(0, 1)(rng));
    } else if (ir::is_float(t) && !integral_floats) {
      l.set_from_double(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      l.set_from_int64(i, std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
    }
  }
  return l;
}

// Rounds every element of an f32 literal to bf16 (so MXU products are exact).
inline ir::Literal bf16_exact(ir::Literal l) {
  for (int64_t i = 0; i < l.num_elements(); ++i)
    l.set_from_double(i, static_cast<float>(ir::BFloat16(static_cast<float>(l.get_as_double(i)))));
  return l;
}

inline void flatten_into(const ir::Literal& l, std::vector<ir::Literal>& out) {
  if (l.shape().is_tuple()) {
    for (const ir::Literal& e : l.elements()) flatten_into(e, out);
  } else {
    out.push_back(l);
  }
}

inline std::vector<ir::Shape> flat_shapes(const ir::Shape& s) {
  if (!s.is_tuple()) return {s};
  std::vector<ir::Shape> out;
  for (const ir::Shape& e : s.elements())
    for (const ir::Shape& f : flat_shapes(e)) out.push_back(f);
  return out;
}

// The module with every f32 and f16 operand of the dots and convolutions at DEFAULT
// precision rounded to bf16 first (convert to bf16 and back): what one MXU pass computes, for the
// evaluator to reproduce up to the order of f32 sums (a dot with either operand at HIGH
// or HIGHEST takes several passes, on both operands).
inline std::unique_ptr<ir::Module> with_bf16_dot_operands(const std::string& hlo) {
  auto module = ir::parse_module(hlo);
  for (const auto& computation : module->computations()) {
    std::vector<ir::Instruction*> dots;
    for (const auto& i : computation->instructions())
      if (i->opcode() == ir::Opcode::kDot || i->opcode() == ir::Opcode::kConvolution) dots.push_back(i.get());
    for (ir::Instruction* dot : dots)
      for (int64_t k = 0; k < 2; ++k) {
        ir::Instruction* op = dot->operand(k);
        const auto& precision = dot->attrs().operand_precision;
        const bool precise = std::any_of(precision.begin(), precision.end(),
                                         [](ir::Precision p) { return p != ir::Precision::kDefault; });
        const ir::PrimitiveType type = op->shape().type();
        if ((type != ir::PrimitiveType::kF32 && type != ir::PrimitiveType::kF16) || precise) continue;
        ir::Shape bf16_shape(ir::PrimitiveType::kBF16, op->shape().dims());
        auto down = std::make_unique<ir::Instruction>(computation->unique_name("round"), ir::Opcode::kConvert, bf16_shape);
        down->add_operand(op);
        ir::Instruction* d = computation->add(std::move(down));
        auto up = std::make_unique<ir::Instruction>(computation->unique_name("round"), ir::Opcode::kConvert,
                                                    ir::Shape(type, op->shape().dims()));
        up->add_operand(d);
        dot->set_operand(k, computation->add(std::move(up)));
      }
    computation->sort_topologically();
  }
  return module;
}

// Runs exe on the functional model; outputs have the shapes given.
inline std::vector<ir::Literal> run_executable(const isa::Executable& exe, const std::vector<ir::Literal>& args,
                                               const std::vector<ir::Shape>& out_shapes) {
  sim::FunctionalModel model(exe);
  for (size_t k = 0; k < args.size(); ++k) {
    auto bytes = args[k].bytes();
    model.set_parameter(static_cast<int>(k), {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }
  model.run_to_completion(int64_t{1} << 32);
  std::vector<ir::Literal> out;
  for (size_t k = 0; k < out_shapes.size(); ++k) {
    ir::Literal l(out_shapes[k]);
    std::vector<uint8_t> bytes = model.read_output(static_cast<int>(k));
    EXPECT_EQ(bytes.size(), l.bytes().size());
    if (bytes.size() == l.bytes().size() && !bytes.empty()) std::memcpy(l.bytes().data(), bytes.data(), bytes.size());
    out.push_back(std::move(l));
  }
  return out;
}

// |a - e| <= bound[i] (or abs + rel * |e| without bounds) for floats; equality for the
// rest.
inline ::testing::AssertionResult near(const ir::Literal& actual, const ir::Literal& expected, double rel, double abs,
                                       const std::vector<double>* bounds = nullptr) {
  if (!actual.shape().compatible(expected.shape()))
    return ::testing::AssertionFailure() << "shape " << actual.shape().to_string() << " vs "
                                         << expected.shape().to_string();
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    bool ok;
    if (ir::is_float(actual.type())) {
      double a = actual.get_as_double(i), e = expected.get_as_double(i);
      double tol = bounds ? (*bounds)[static_cast<size_t>(i)] : abs + rel * std::fabs(e);
      ok = (std::isnan(a) && std::isnan(e)) || a == e || std::fabs(a - e) <= tol;
    } else {
      ok = actual.get_as_int64(i) == expected.get_as_int64(i);
    }
    if (!ok && bad++ == 0)
      first = "element " + std::to_string(i) + ": got " + std::to_string(actual.get_as_double(i)) + ", expected " +
              std::to_string(expected.get_as_double(i));
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << actual.num_elements() << " differ; " << first;
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string hlo;
  std::string chip = "tiny";
  double rel = 0, abs = 0;
  bool fuse = false;  // run the default pass pipeline (fusion) before compiling
  double lo = -1, hi = 1;
  bool integral_floats = false;
  uint64_t seed = 1;
  bool bf16_values = false;  // float inputs exactly representable in bf16
  bool bf16_dots = false;    // the reference rounds f32 dot operands to bf16 as the MXU does
  std::optional<topology::ChipConfig> custom_chip = std::nullopt;  // instead of the preset `chip`
};

inline isa::Executable compile_text(const std::string& hlo, const topology::ChipConfig& chip, bool fuse = false,
                                    Options options = {}) {
  options.passes = fuse;
  return compile(*ir::parse_module(hlo), chip, options);
}
inline isa::Executable compile_text(const std::string& hlo, const std::string& chip, bool fuse = false,
                                    const Options& options = {}) {
  return compile_text(hlo, topology::preset(chip), fuse, options);
}

// Compiles, runs on random inputs, compares every output with the evaluator.
inline void check(const Case& c) {
  SCOPED_TRACE(c.hlo + " on " + c.chip);
  auto reference = c.bf16_dots ? with_bf16_dot_operands(c.hlo) : ir::parse_module(c.hlo);
  std::mt19937_64 rng(c.seed);
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : reference->entry()->parameters())
    args.push_back(random_literal(p->shape(), rng, c.lo, c.hi, c.integral_floats));
  if (c.bf16_values)
    for (ir::Literal& a : args)
      if (ir::is_float(a.type())) a = bf16_exact(std::move(a));
  std::vector<ir::Literal> expected;
  flatten_into(ir::evaluate(*reference, args), expected);
  isa::Executable exe = compile_text(c.hlo, c.custom_chip ? *c.custom_chip : topology::preset(c.chip), c.fuse);
  std::vector<ir::Literal> actual = run_executable(exe, args, flat_shapes(reference->entry()->root()->shape()));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) EXPECT_TRUE(near(actual[k], expected[k], c.rel, c.abs)) << "output " << k;
}

// Compiles and runs on the given arguments; compares with the evaluator.
inline void check_args(const std::string& hlo, const std::string& chip, const std::vector<ir::Literal>& args,
                       double rel = 0, double abs = 0) {
  SCOPED_TRACE(hlo + " on " + chip);
  auto reference = ir::parse_module(hlo);
  std::vector<ir::Literal> expected;
  flatten_into(ir::evaluate(*reference, args), expected);
  isa::Executable exe = compile_text(hlo, chip);
  std::vector<ir::Literal> actual = run_executable(exe, args, flat_shapes(reference->entry()->root()->shape()));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) EXPECT_TRUE(near(actual[k], expected[k], rel, abs)) << "output " << k;
}

template <typename T>
ir::Literal literal(ir::PrimitiveType type, std::vector<int64_t> dims, const std::vector<T>& values) {
  ir::Literal l(ir::Shape(type, std::move(dims)));
  for (size_t k = 0; k < values.size(); ++k) l.set_from_double(static_cast<int64_t>(k), static_cast<double>(values[k]));
  return l;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a podsim::Error";
  return "";
}

}  // namespace podsim::tpu::testing
