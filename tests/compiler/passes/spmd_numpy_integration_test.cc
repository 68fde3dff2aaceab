// The SPMD partitioner on every single-device case of the NumPy oracle: each case's
// parameters (or its result) annotated with shardings over 2, 4 and 8 partitions (even
// splits, and splits that leave the last pieces padded), the
// module partitioned, run on the pieces of random arguments and compared with the
// unpartitioned module's reference evaluation (spmd_test_util.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/compiler/numpy_cases.h"
#include "tests/compiler/passes/spmd_test_util.h"

namespace podsim::passes {
namespace {

using ::podsim::testing::numpy_cases::case_dir;

// A sharding of `shape` over n devices splitting dimensions in `split` (each divisible,
// else left whole) in as many pieces as `pieces` says, or nullopt when none divides.
std::optional<ir::Sharding> split(const ir::Shape& shape, int64_t n, const std::vector<std::pair<int64_t, int64_t>>& cuts) {
  if (!shape.is_array()) return std::nullopt;
  ir::Sharding s;
  s.kind = ir::Sharding::Kind::kTiled;
  s.tile_dims.assign(static_cast<size_t>(shape.rank()), 1);
  int64_t used = 1;
  for (const auto& [dim, pieces] : cuts)
    if (dim >= 0 && dim < shape.rank() && shape.dim(dim) % pieces == 0 && shape.dim(dim) > 0) {
      s.tile_dims[static_cast<size_t>(dim)] *= pieces;
      used *= pieces;
    }
  if (used == 1) return std::nullopt;
  if (used < n) {
    s.tile_dims.push_back(n / used);
    s.last_tile_dim_replicate = true;
  }
  for (int64_t d = 0; d < n; ++d) s.devices.push_back(d);
  return s;
}

int64_t first_divisible(const ir::Shape& shape, int64_t n, bool from_end) {
  if (!shape.is_array()) return -1;
  for (int64_t k = 0; k < shape.rank(); ++k) {
    const int64_t d = from_end ? shape.rank() - 1 - k : k;
    if (shape.dim(d) > 0 && shape.dim(d) % n == 0) return d;
  }
  return -1;
}

// Each parameter split n ways on its first dimension of 2 or more, whether n divides it
// or not (the last pieces padded).
void split_first_of_two_or_more(ir::Module& m, int64_t n) {
  for (ir::Instruction* p : m.entry()->parameters()) {
    const ir::Shape& shape = p->shape();
    if (!shape.is_array()) continue;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (shape.dim(d) < 2) continue;
      ir::Sharding s;
      s.kind = ir::Sharding::Kind::kTiled;
      s.tile_dims.assign(static_cast<size_t>(shape.rank()), 1);
      s.tile_dims[static_cast<size_t>(d)] = n;
      for (int64_t k = 0; k < n; ++k) s.devices.push_back(k);
      p->sharding() = s;
      break;
    }
  }
}

struct Variant {
  const char* name;
  int64_t partitions;
  // Sets shardings on the parsed case.
  void (*annotate)(ir::Module& m, int64_t n);
};

const Variant kVariants[] = {
    {"parameters split on their first divisible dimension", 2,
     [](ir::Module& m, int64_t n) {
       for (ir::Instruction* p : m.entry()->parameters())
         p->sharding() = split(p->shape(), n, {{first_divisible(p->shape(), n, false), n}});
     }},
    {"parameters split 2x2 over their first two dimensions, or 4 ways on the last", 4,
     [](ir::Module& m, int64_t n) {
       for (ir::Instruction* p : m.entry()->parameters()) {
         auto s = split(p->shape(), n, {{0, 2}, {1, 2}});
         if (!s) s = split(p->shape(), n, {{first_divisible(p->shape(), n, true), n}});
         p->sharding() = s;
       }
     }},
    {"parameters split 4 ways on their first dimension of 2 or more, evenly or not", 4, split_first_of_two_or_more},
    {"parameters split 8 ways on their first dimension of 2 or more, evenly or not", 8, split_first_of_two_or_more},
    {"parameters split 2x4 over their first two dimensions", 8,
     [](ir::Module& m, int64_t n) {
       for (ir::Instruction* p : m.entry()->parameters()) p->sharding() = split(p->shape(), n, {{0, 2}, {1, 4}});
     }},
    {"the result split, the parameters replicated", 2,
     [](ir::Module& m, int64_t n) {
       ir::Instruction* r = m.entry()->root();
       r->sharding() = split(r->shape(), n, {{first_divisible(r->shape(), n, false), n}});
     }},
};

TEST(SpmdOnNumpyCases, PartitionedResultsEqualTheUnpartitionedOnes) {
  ::podsim::testing::numpy_cases::register_oracle_targets();
  const std::vector<std::string>& names = ::podsim::testing::numpy_cases::all_cases();
  ASSERT_GT(names.size(), 100u) << "no NumPy oracle cases in " << case_dir();
  int64_t partitioned = 0, gathers = 0, reduces = 0;
  for (const std::string& name : names) {
    auto module = ir::parse_module_file(case_dir() + "/" + name + ".hlo");
    if (module->replica_count * module->num_partitions != 1) continue;  // collective cases
    for (const Variant& v : kVariants) {
      SCOPED_TRACE(name + ": " + v.name);
      auto m = ir::parse_module_file(case_dir() + "/" + name + ".hlo");
      m->num_partitions = v.partitions;
      v.annotate(*m, v.partitions);
      auto result = testing::check_partitioned(ir::print_module(*m), v.partitions, 1, 1e-3);
      if (!result) continue;
      ++partitioned;
      gathers += testing::count(*result, ir::Opcode::kAllGather);
      reduces += testing::count(*result, ir::Opcode::kAllReduce);
    }
  }
  // Most cases move data: pieces gathered for ops that run on whole values, partial
  // results reduced.
  EXPECT_GT(partitioned, 1500);
  EXPECT_GT(gathers, 200);
  EXPECT_GT(reduces, 10);
  std::printf("%ld partitioned modules, %ld all-gathers, %ld all-reduces\n", static_cast<long>(partitioned),
              static_cast<long>(gathers), static_cast<long>(reduces));
}

}  // namespace
}  // namespace podsim::passes
