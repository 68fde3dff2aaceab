// dynamic-slice, dynamic-update-slice and gather: run-time offsets from index arrays,
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

}  // namespace
}  // namespace podsim::tpu::testing
