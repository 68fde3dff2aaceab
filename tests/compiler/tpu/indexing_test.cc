// dynamic-slice, dynamic-update-slice, gather and scatter: run-time offsets from index arrays,
// clamped as XLA clamps them (bit-exact).
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

using ir::PrimitiveType;

ir::Literal iota_f32(std::vector<int64_t> dims) {
  ir::Literal l(ir::Shape(PrimitiveType::kF32, std::move(dims)));
  for (int64_t k = 0; k < l.num_elements(); ++k) l.set_from_double(k, static_cast<double>(k));
  return l;
}

ir::Literal scalar(PrimitiveType t, int64_t v) {
  ir::Literal l(ir::Shape::scalar(t));
  l.set_from_int64(0, v);
  return l;
}

TEST(TpuIndexing, DynamicSliceClampsItsStart) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[6,9] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT d = f32[3,4] dynamic-slice(x, i, j), dynamic_slice_sizes={3,4}
})";
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 0}, {2, 5}, {3, 1}, {-4, 7}, {100, -1}})
    for (const char* chip : {"tiny", "v5e"})
      check_args(hlo, chip, {iota_f32({6, 9}), scalar(PrimitiveType::kS32, i), scalar(PrimitiveType::kS32, j)});
}

TEST(TpuIndexing, DynamicSliceWithNarrowAndWideIndexTypes) {
  for (const char* type : {"s8", "u8", "s16", "u32", "s64"}) {
    std::string hlo = std::string(R"(HloModule m
ENTRY e {
  x = f32[10] parameter(0)
  i = T[] parameter(1)
  ROOT d = f32[4] dynamic-slice(x, i), dynamic_slice_sizes={4}
})");
    hlo.replace(hlo.find("T[]"), 1, type);
    auto t = *ir::type_from_name(type);
    for (int64_t v : {int64_t{3}, int64_t{-2}, int64_t{9}}) {
      if (v < 0 && ir::is_unsigned_int(t)) continue;
      check_args(hlo, "tiny", {iota_f32({10}), scalar(t, v)});
    }
  }
}

TEST(TpuIndexing, DynamicUpdateSlice) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[5,7] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT d = f32[5,7] dynamic-update-slice(x, u, i, j)
})";
  ir::Literal u = literal<float>(PrimitiveType::kF32, {2, 3}, {-1, -2, -3, -4, -5, -6});
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 0}, {3, 4}, {4, 6}, {-1, 2}})
    check_args(hlo, "tiny", {iota_f32({5, 7}), u, scalar(PrimitiveType::kS32, i), scalar(PrimitiveType::kS32, j)});
}

TEST(TpuIndexing, GatherRowsLikeAnEmbeddingLookup) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  table = f32[10,6] parameter(0)
  ids = s32[7] parameter(1)
  ROOT g = f32[7,6] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
})";
  ir::Literal ids = literal<int>(PrimitiveType::kS32, {7}, {3, 0, 9, 3, -5, 12, 7});
  for (const char* chip : {"tiny", "v4"}) check_args(hlo, chip, {iota_f32({10, 6}), ids});
}

TEST(TpuIndexing, GatherWithAnIndexVectorDimension) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[5,7,3] parameter(0)
  idx = s32[4,2] parameter(1)
  ROOT g = f32[4,4,2] gather(x, idx), offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0,2}, index_vector_dim=1, slice_sizes={1,4,2}
})";
  ir::Literal idx = literal<int>(PrimitiveType::kS32, {4, 2}, {0, 0, 4, 1, 2, 5, -1, 1});
  check_args(hlo, "tiny", {iota_f32({5, 7, 3}), idx});
}

// Scatter applies its windows in order, skipping those that do not fit (XLA's rule): an
// embedding gradient (rows added, repeated ids add twice, ids out of range dropped) on a
// table wider than a tile row, bit for bit against the evaluator (same order of adds).
TEST(TpuIndexing, ScatterAddsRowsLikeAnEmbeddingGradient) {
  const std::string hlo = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  table = f32[12,200] parameter(0)
  ids = s32[9] parameter(1)
  grads = f32[9,200] parameter(2)
  ROOT g = f32[12,200] scatter(table, ids, grads), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})";
  std::mt19937_64 rng(3);
  const ir::Literal ids =
      literal<int>(PrimitiveType::kS32, {9}, {3, 0, 11, 3, -1, 12, 7, 3, 100000});
  for (const char* chip : {"tiny", "v5e"})
    check_args(hlo, chip,
               {random_literal(ir::Shape(PrimitiveType::kF32, {12, 200}), rng), ids,
                random_literal(ir::Shape(PrimitiveType::kF32, {9, 200}), rng)});
}

// Windows of two dims at (row, column) starts, the index vector along dim 0 of the
// indices, windows partly outside skipped; the update computation returns the update
// (assign): where windows overlap, the later one wins, as in the evaluator.
TEST(TpuIndexing, ScatterAssignsWindowsInOrder) {
  const std::string hlo = R"(HloModule m
assign {
  a = s32[] parameter(0)
  ROOT b = s32[] parameter(1)
}
ENTRY e {
  x = s32[7,9] parameter(0)
  starts = s32[2,5] parameter(1)
  windows = s32[3,5,4] parameter(2)
  ROOT g = s32[7,9] scatter(x, starts, windows), update_window_dims={0,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0, to_apply=assign
})";
  // Starts (row, column): inside, overlapping the first, partly outside (skipped),
  // negative (skipped), at the far corner.
  const ir::Literal starts =
      literal<int>(PrimitiveType::kS32, {2, 5}, {0, 1, 5, -1, 4, 2, 3, 6, 0, 5});
  std::vector<int> values(60);
  for (size_t k = 0; k < values.size(); ++k) values[k] = 1000 + static_cast<int>(k);
  check_args(hlo, "tiny",
             {literal<int>(PrimitiveType::kS32, {7, 9}, std::vector<int>(63, -7)), starts,
              literal<int>(PrimitiveType::kS32, {3, 5, 4}, values)});
}

}  // namespace
}  // namespace podsim::tpu::testing
