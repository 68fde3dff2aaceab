// Helpers for the SPMD tests: partition a module, run its partitions on the pieces of
// random whole arguments, put the result together and compare it with the reference
// evaluator's result for the unpartitioned module.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/sharding.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// "" when got equals want: integers and pred exactly, floats within what reordered sums
// give (rtol x (1 + |want|)); any NaN matches any NaN.
inline std::string near(const Literal& want, const Literal& got, double rtol, const std::string& where = "result") {
  if (!want.shape().compatible(got.shape()))
    return where + ": shape " + want.shape().to_string(false) + " vs " + got.shape().to_string(false);
  if (want.shape().is_tuple()) {
    for (size_t k = 0; k < want.elements().size(); ++k) {
      std::string d = near(want.elements()[k], got.elements()[k], rtol, where + "{" + std::to_string(k) + "}");
      if (!d.empty()) return d;
    }
    return "";
  }
  if (!ir::is_float(want.type())) return difference(want, got, where);
  const double tol = ir::type_byte_size(want.type()) == 2 ? std::max(rtol, 2e-2) : rtol;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = want.get_as_double(i), g = got.get_as_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (w == g || std::abs(w - g) <= tol * (1 + std::abs(w))) continue;
    return where + " element " + std::to_string(i) + ": " + std::to_string(w) + " vs " + std::to_string(g);
  }
  return "";
}

// Device d's piece with the padding of uneven splits zeroed (what it holds there is
// whatever the padding became).
inline Literal without_padding(Literal piece, const ir::Sharding& sharding, const ir::Shape& whole, int64_t d) {
  if (whole.is_tuple()) {
    for (int64_t e = 0; e < whole.tuple_size(); ++e)
      piece.elements()[static_cast<size_t>(e)] = without_padding(
          piece.elements()[static_cast<size_t>(e)],
          sharding.kind == ir::Sharding::Kind::kTuple ? sharding.tuple_elements.at(static_cast<size_t>(e)) : sharding,
          whole.element(e), d);
    return piece;
  }
  ir::Shape mask_shape = whole;
  mask_shape.set_type(ir::PrimitiveType::kS32);
  mask_shape.clear_layout();
  Literal ones(mask_shape);
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.set_from_int64(i, 1);
  const Literal mask = ir::shard_literal(ones, sharding, d);
  for (int64_t i = 0; i < piece.num_elements(); ++i)
    if (mask.get_as_int64(i) == 0) piece.set_from_int64(i, 0);
  return piece;
}

using MakeArguments = std::function<std::vector<Literal>(const ir::Computation&, std::mt19937_64&)>;

// Arguments of a training step: floats in [0.5, 1.5) (square roots and logs stay
// finite), integers in [0, 8) (valid token ids), random pred.
inline std::vector<Literal> tame_arguments(const ir::Computation& entry, std::mt19937_64& rng) {
  std::vector<Literal> args;
  for (const ir::Instruction* p : entry.parameters()) {
    Literal l(p->shape());
    for (int64_t i = 0; i < l.num_elements(); ++i) {
      if (ir::is_float(l.type()))
        l.set_from_double(i, std::uniform_real_distribution<double>(0.5, 1.5)(rng));
      else
        l.set_from_int64(i, static_cast<int64_t>(rng() % (l.type() == ir::PrimitiveType::kPred ? 2 : 8)));
    }
    args.push_back(std::move(l));
  }
  return args;
}

// Partitions `text` over `partitions` devices and checks, on random arguments from seed,
// that the pieces every device returns are its pieces of the unpartitioned result.
// Returns the partitioned module (null when partitioning failed, with a test failure).
// The partitioner's choices are costed on `pod` where given.
inline std::unique_ptr<Module> check_partitioned(const std::string& text, int64_t partitions, uint64_t seed = 1,
                                                 double rtol = 1e-5, const MakeArguments& make = random_arguments,
                                                 const topology::PodConfig* pod = nullptr) {
  auto original = ir::parse_module(text);
  ir::verify_module(*original);
  auto partitioned = ir::parse_module(text);
  try {
    spmd_partition(*partitioned, partitions, pod);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return nullptr;
  }
  // The printed form reads back.
  ir::verify_module(*ir::parse_module(ir::print_module(*partitioned)));
  std::mt19937_64 rng(seed);
  const std::vector<Literal> args = make(*original->entry(), rng);
  const Literal want = ir::evaluate(*original, args);
  std::vector<std::vector<Literal>> pieces(static_cast<size_t>(partitions));
  const ir::Computation& entry = *partitioned->entry();
  for (int64_t k = 0; k < entry.parameter_count(); ++k)
    for (int64_t d = 0; d < partitions; ++d)
      pieces[static_cast<size_t>(d)].push_back(
          ir::shard_literal(args[static_cast<size_t>(k)], entry.parameter(k)->sharding().value(), d));
  const std::vector<Literal> results = ir::evaluate_spmd(*partitioned, pieces, {1, partitions});
  const ir::Sharding& out = entry.root()->sharding().value();
  const Literal got = ir::unshard_literal(results, out, original->entry()->root()->shape());
  std::string diff = near(want, got, rtol);
  for (int64_t d = 0; d < partitions && diff.empty(); ++d)
    diff = near(ir::shard_literal(want, out, d), without_padding(results[static_cast<size_t>(d)], out, want.shape(), d),
                rtol, "device " + std::to_string(d));
  EXPECT_EQ(diff, "") << ir::print_module(*partitioned);
  return partitioned;
}

// A sharding as XLA prints it, read for a value of `shape` (over 8 partitions).
inline ir::Sharding parse_sharding(const std::string& text, const std::string& shape = "f32[8,8]") {
  auto m = ir::parse_module("HloModule s, num_partitions=8\nENTRY e {\n  ROOT p = " + shape +
                            " parameter(0), sharding=" + text + "\n}\n");
  return *m->entry()->root()->sharding();
}

// Collectives of every kind in m.
inline int64_t collectives(const Module& m) {
  return count(m, Opcode::kAllGather) + count(m, Opcode::kAllReduce) + count(m, Opcode::kAllToAll) +
         count(m, Opcode::kReduceScatter) + count(m, Opcode::kCollectivePermute);
}

}  // namespace podsim::passes::testing
