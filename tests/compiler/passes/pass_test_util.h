// Helpers shared by the pass tests: random arguments from a seed, running a module (on
// every device of its replica x partition grid), bitwise comparison of results, and
// "the pass keeps the results" checks that evaluate a module before and after a pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"

namespace podsim::passes::testing {

using ir::Literal;
using ir::Module;
using ir::Opcode;
using ir::PrimitiveType;

// Random values that exercise the corners the passes must respect: signed zeros,
// infinities, NaN, ones, integer extremes.
inline Literal random_literal(const ir::Shape& shape, std::mt19937_64& rng) {
  if (shape.is_tuple()) {
    std::vector<Literal> elements;
    for (const ir::Shape& e : shape.elements()) elements.push_back(random_literal(e, rng));
    return Literal::tuple(std::move(elements));
  }
  Literal l(shape);
  const PrimitiveType t = shape.type();
  std::uniform_int_distribution<int> pick(0, 9);
  for (int64_t i = 0; i < l.num_elements(); ++i) {
    int choice = pick(rng);
    if (t == PrimitiveType::kPred) {
      l.set_from_uint64(i, rng() & 1);
    } else if (ir::is_float(t)) {
      static constexpr double kSpecial[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0.5};
      if (choice < 4)
        l.set_from_double(i, kSpecial[rng() % 8]);
      else
        l.set_from_double(i, std::uniform_real_distribution<double>(-4.0, 4.0)(rng));
    } else if (choice < 5) {
      l.set_from_int64(i, static_cast<int64_t>(rng() % 17) - 8);
    } else {
      uint64_t bits = rng();
      std::memcpy(l.bytes().data() + i * ir::type_byte_size(t), &bits,
                  static_cast<size_t>(ir::type_byte_size(t)));
    }
  }
  return l;
}

inline std::vector<Literal> random_arguments(const ir::Computation& entry, std::mt19937_64& rng) {
  std::vector<Literal> args;
  for (int64_t p = 0; p < entry.parameter_count(); ++p)
    args.push_back(random_literal(entry.parameter(p)->shape(), rng));
  return args;
}

// The results of every device (one for a single-device module) on arguments drawn
// from seed.
inline std::vector<Literal> run_module(const Module& module, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t devices = module.replica_count * module.num_partitions;
  if (devices == 1) {
    std::vector<Literal> results;
    results.push_back(ir::evaluate(module, random_arguments(*module.entry(), rng)));
    return results;
  }
  std::vector<std::vector<Literal>> args;
  for (int64_t d = 0; d < devices; ++d) args.push_back(random_arguments(*module.entry(), rng));
  return ir::evaluate_spmd(module, args);
}

// Identical bits, except that any NaN matches any NaN (the evaluator does not promise
// NaN payloads or signs). Returns "" or what differs.
inline std::string difference(const Literal& a, const Literal& b,
                              const std::string& where = "result") {
  if (!a.shape().compatible(b.shape()))
    return where + ": shape " + a.shape().to_string(false) + " vs " + b.shape().to_string(false);
  if (a.shape().is_tuple()) {
    for (size_t k = 0; k < a.elements().size(); ++k) {
      std::string d =
          difference(a.elements()[k], b.elements()[k], where + "{" + std::to_string(k) + "}");
      if (!d.empty()) return d;
    }
    return "";
  }
  const auto size = static_cast<size_t>(ir::type_byte_size(a.type()));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const std::byte* x = a.bytes().data() + static_cast<size_t>(i) * size;
    const std::byte* y = b.bytes().data() + static_cast<size_t>(i) * size;
    if (std::memcmp(x, y, size) == 0) continue;
    if (ir::is_float(a.type()) && std::isnan(a.get_as_double(i)) && std::isnan(b.get_as_double(i)))
      continue;
    return where + " element " + std::to_string(i) + ": " + std::to_string(a.get_as_double(i)) +
           " vs " + std::to_string(b.get_as_double(i));
  }
  return "";
}

// Counts instructions with opcode in the computations that are not fusion bodies.
inline int64_t count(const Module& module, Opcode opcode) {
  std::vector<const ir::Computation*> fused;
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kFusion) fused.push_back(i->called(0));
  int64_t n = 0;
  for (const auto& c : module.computations()) {
    if (std::find(fused.begin(), fused.end(), c.get()) != fused.end()) continue;
    for (const auto& i : c->instructions()) n += i->opcode() == opcode;
  }
  return n;
}

using Transform = std::function<void(Module&)>;

inline Transform run_pass(std::shared_ptr<Pass> pass) {
  return [pass](Module& m) { pass->run(m); };
}
inline Transform run_default_pipeline(FusionOptions options = {}) {
  return [options](Module& m) { default_pipeline(options).verify_each(true).run(m); };
}

// Parses text twice, transforms one copy, checks that it verifies and that both give
// the same results on `trials` random argument sets; returns the transformed module.
inline std::unique_ptr<Module> check_preserves(const std::string& text, const Transform& transform,
                                               int trials = 4) {
  auto original = ir::parse_module(text);
  ir::verify_module(*original);
  auto transformed = ir::parse_module(text);
  transform(*transformed);
  std::vector<std::string> problems = ir::check_module(*transformed);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << ir::print_module(*transformed);
  if (!problems.empty()) return transformed;
  // The printed form must read back (backends cache optimized modules as text).
  auto reparsed = ir::parse_module(ir::print_module(*transformed));
  ir::verify_module(*reparsed);
  for (int seed = 1; seed <= trials; ++seed) {
    std::vector<Literal> before = run_module(*original, static_cast<uint64_t>(seed));
    for (const Module* m : {transformed.get(), reparsed.get()}) {
      std::vector<Literal> after = run_module(*m, static_cast<uint64_t>(seed));
      for (size_t d = 0; d < before.size(); ++d) {
        std::string diff = difference(before[d], after[d]);
        EXPECT_EQ(diff, "") << "seed " << seed << " device " << d << "\nafter:\n"
                            << ir::print_module(*m);
        if (!diff.empty()) return transformed;
      }
    }
  }
  return transformed;
}

inline std::unique_ptr<Module> check_pass(const std::string& text, std::unique_ptr<Pass> pass,
                                          int trials = 4) {
  return check_preserves(text, run_pass(std::shared_ptr<Pass>(std::move(pass))), trials);
}

}  // namespace podsim::passes::testing
