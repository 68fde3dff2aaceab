// The SPMD passes' view of shardings: tilings, the geometry of pieces, and sharding
// propagation.
#include <gtest/gtest.h>

#include "compiler/passes/spmd/tiling.h"
#include "tests/compiler/passes/spmd_test_util.h"

namespace podsim::passes {
namespace {

using spmd::Tiling;
using testing::check_partitioned;
using ir::Literal;
using ir::Opcode;
using testing::count;
using testing::parse_sharding;

TEST(Tiling, ReadsXlaShardingsAndWritesThemBack) {
  const Tiling t = Tiling::of(parse_sharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), 2, 8);
  EXPECT_EQ(t.tiles(0), 2);
  EXPECT_EQ(t.tiles(1), 1);
  EXPECT_EQ(t.replication(), 4);
  EXPECT_EQ(t.pieces(), 2);
  EXPECT_EQ(t.sharding().to_string(), "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_TRUE(Tiling::of(parse_sharding("{replicated}"), 2, 8).is_replicated());
  EXPECT_EQ(Tiling::of(parse_sharding("{replicated}"), 2, 8).sharding().to_string(), "{replicated}");
  // The same placement written two ways is the same tiling.
  EXPECT_EQ(Tiling::of(parse_sharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"), 2, 8),
            Tiling::of(parse_sharding("{devices=[2,1,4]3,2,1,0,7,6,5,4 last_tile_dim_replicate}"), 2, 8));
  EXPECT_THROW(Tiling::of(parse_sharding("{manual}"), 2, 8), Error);
}

TEST(Tiling, RemapMovesSplitsAndTurnsDroppedOnesIntoCopies) {
  // [2,4] over devices 0..7 row-major: device 5 is at (1, 1).
  const Tiling t = Tiling::of(parse_sharding("{devices=[2,4]<=[8]}"), 2, 8);
  const Tiling swapped = t.remap({1, 0});
  EXPECT_EQ(swapped.tiles(0), 4);
  EXPECT_EQ(swapped.tiles(1), 2);
  EXPECT_EQ(swapped.position(5), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(t.position(6), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(swapped.position(6), (std::vector<int64_t>{2, 1, 0}));
  // Dimension 1 dropped: its 4 devices hold copies of each row half.
  const Tiling rows = t.remap({0, -1, -1});
  EXPECT_EQ(rows.rank(), 3);
  EXPECT_EQ(rows.replication(), 4);
  EXPECT_EQ(rows.sharding().to_string(), "{devices=[2,1,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_EQ(t.unsplit(0).sharding().to_string(), "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}");
}

TEST(Tiling, GroupsAlongDimensionsListDevicesInPieceOrder) {
  const Tiling t = Tiling::of(parse_sharding("{devices=[2,4]<=[8]}"), 2, 8);
  EXPECT_EQ(t.groups_along({1}), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(t.groups_along({0}), (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(t.groups_along({0, 1}), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  const Tiling transposed = Tiling::of(parse_sharding("{devices=[2,4]<=[4,2]T(1,0)}"), 2, 8);
  EXPECT_EQ(transposed.groups_along({0}), (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(Tiling, MergeSplitsEachDimensionAsEitherDoes) {
  // A 2x2 mesh [[0, 1], [2, 3]]: rows over axis 0, columns over axis 1.
  const Tiling rows = Tiling::of(parse_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), 2, 4);
  const Tiling cols = Tiling::of(parse_sharding("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"), 2, 4);
  const auto both = rows.merge(cols);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->sharding().to_string(), "{devices=[2,2]0,1,2,3}");
  EXPECT_EQ(both->unsplit(1), rows);
  EXPECT_EQ(both->unsplit(0), cols);
  // Columns over the same axis as the rows: each device's two pieces do not meet in one.
  const Tiling cols_on_rows_axis = Tiling::of(parse_sharding("{devices=[1,2,2]<=[4] last_tile_dim_replicate}"), 2, 4);
  EXPECT_FALSE(rows.merge(cols_on_rows_axis));
  EXPECT_FALSE(rows.merge(Tiling::of(parse_sharding("{devices=[4,1]<=[4]}"), 2, 4)));
  EXPECT_EQ(rows.merge(rows), rows);
}

TEST(ShardingGeometry, PiecesPutTogetherGiveTheWholeValue) {
  ir::Literal whole(ir::Shape(ir::PrimitiveType::kS32, {5, 4}));
  for (int64_t i = 0; i < whole.num_elements(); ++i) whole.set_from_int64(i, i);
  const ir::Sharding s = parse_sharding("{devices=[2,2]0,2,1,3}", "s32[5,4]");
  EXPECT_EQ(ir::shard_shape(whole.shape(), s).to_string(false), "s32[3,2]");
  std::vector<ir::Literal> pieces;
  for (int64_t d = 0; d < 4; ++d) pieces.push_back(ir::shard_literal(whole, s, d));
  // Device 2 holds the top right piece: rows 0-2, columns 2-3.
  EXPECT_EQ(pieces[2].to_string(), "{{2, 3}, {6, 7}, {10, 11}}");
  // Device 3 holds the bottom right piece: rows 3-4 and a row of padding.
  EXPECT_EQ(pieces[3].to_string(), "{{14, 15}, {18, 19}, {0, 0}}");
  EXPECT_EQ(ir::unshard_literal(pieces, s, whole.shape()), whole);
}

TEST(ShardingGeometry, TheVerifierChecksShardingsAgainstShapesAndDevices) {
  auto problems = [](const std::string& sharding, int partitions) {
    auto m = ir::parse_module(fmt::format("HloModule s, num_partitions={}\nENTRY e {{\n  ROOT p = f32[8,8] "
                                          "parameter(0), sharding={}\n}}\n",
                                          partitions, sharding));
    auto found = ir::check_module(*m);
    return found.empty() ? std::string() : found.front();
  };
  EXPECT_EQ(problems("{devices=[2,2]<=[4]}", 4), "");
  EXPECT_EQ(problems("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4), "");
  EXPECT_NE(problems("{devices=[2,2]<=[4]}", 2).find("names device 2, but the module has 2 devices"), std::string::npos);
  EXPECT_NE(problems("{devices=[4]<=[4]}", 4).find("tiles 1 dimensions, but the value has rank 2"), std::string::npos);
  EXPECT_NE(problems("{devices=[2,1]0,0}", 2).find("names device 0 twice"), std::string::npos);
  EXPECT_NE(problems("{maximal device=3}", 2).find("maximal device 3"), std::string::npos);
}

TEST(ShardingPropagation, CarriesUserShardingsThroughTheGraph) {
  auto m = ir::parse_module(R"(HloModule m, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,32] parameter(1)
  h = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[32,8] transpose(h), dimensions={1,0}
  c1 = f32[] constant(0)
  ROOT r = f32[32] reduce(t, c1), dimensions={1}, to_apply=add
})");
  ASSERT_TRUE(make_sharding_propagation()->run(*m));
  const ir::Computation& e = *m->entry();
  EXPECT_EQ(e.find("w")->sharding()->to_string(), "{replicated}");  // unannotated parameter
  EXPECT_EQ(e.find("h")->sharding()->to_string(), "{devices=[4,1]0,1,2,3}");
  EXPECT_EQ(e.find("t")->sharding()->to_string(), "{devices=[1,4]0,1,2,3}");
  EXPECT_EQ(e.find("r")->sharding()->to_string(), "{replicated}");
}

TEST(ShardingPropagation, GoesBackwardFromAnnotatedResults) {
  auto m = ir::parse_module(R"(HloModule m, num_partitions=2
ENTRY e {
  a = f32[8,4] parameter(0)
  b = f32[8,4] exponential(a)
  c = f32[4,8] transpose(b), dimensions={1,0}
  ROOT d = f32[4,8] negate(c), sharding={devices=[1,2]0,1}
})");
  make_sharding_propagation()->run(*m);
  EXPECT_EQ(m->entry()->find("b")->sharding()->to_string(), "{devices=[2,1]0,1}");
  EXPECT_EQ(m->entry()->find("a")->sharding()->to_string(), "{replicated}");
}


}  // namespace
}  // namespace podsim::passes
