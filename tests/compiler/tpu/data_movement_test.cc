// Data movement lowered to DMAs (bit-exact): materialized transposes, broadcasts and
// slices, concatenate, pad, reshapes, iota, and outputs that are parameters.
#include <fmt/format.h>

#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

TEST(TpuDataMovement, TransposeBroadcastSliceAsOutputs) {
  for (const char* chip : {"tiny", "v5e"})
    check(Case{R"(HloModule m
ENTRY e {
  x = f32[3,4,5] parameter(0)
  t = f32[5,3,4] transpose(x), dimensions={2,0,1}
  b = f32[2,3,4,5,2] broadcast(x), dimensions={1,2,3}
  s = f32[2,2,2] slice(x), slice={[1:3], [0:4:2], [1:5:2]}
  ROOT r = (f32[5,3,4], f32[2,3,4,5,2], f32[2,2,2]) tuple(t, b, s)
})",
               chip});
}

TEST(TpuDataMovement, TransposeOfSixDimsSplitsIntoSeveralDmas) {
  check(Case{R"(HloModule m
ENTRY e {
  x = s32[2,3,2,3,2,3] parameter(0)
  ROOT t = s32[3,2,3,2,3,2] transpose(x), dimensions={5,4,3,2,1,0}
})"});
}

TEST(TpuDataMovement, ReverseAlsoInsideFusions) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[4,5,6] parameter(0)
  r = f32[4,5,6] reverse(x), dimensions={0,2}
  ROOT a = f32[4,5,6] add(r, x)
})";
  check(Case{hlo});
  check(Case{hlo, "tiny", 0, 0, /*fuse=*/true});
}

TEST(TpuDataMovement, ConcatenateAndPad) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  a = f32[3,4] parameter(0)
  b = f32[3,2] parameter(1)
  t = f32[4,3] parameter(2)
  tt = f32[3,4] transpose(t), dimensions={1,0}
  c = f32[3,10] concatenate(a, b, tt), dimensions={1}
  v = f32[] parameter(3)
  p = f32[10,11] pad(a, v), padding=2_3_1x-1_2_2
  z = f32[] constant(7)
  q = f32[2,3] pad(a, z), padding=-1_0x0_-1
  ROOT r = (f32[3,10], f32[10,11], f32[2,3]) tuple(c, p, q)
})";
  check(Case{hlo});
  check(Case{hlo, "tiny", 0, 0, /*fuse=*/true});
}

TEST(TpuDataMovement, PadAndConcatenateFeedingElementwiseFusions) {
  check(Case{R"(HloModule m
ENTRY e {
  a = f32[4,5] parameter(0)
  b = f32[4,3] parameter(1)
  ea = f32[4,5] exponential(a)
  c = f32[4,8] concatenate(ea, b), dimensions={1}
  z = f32[] constant(0)
  p = f32[6,8] pad(c, z), padding=1_1x0_0
  ROOT t = f32[6,8] tanh(p)
})",
             "tiny", 1e-6, 1e-7, /*fuse=*/true});
}

TEST(TpuDataMovement, ReshapesIotaAndParameterOutputs) {
  check(Case{R"(HloModule m
ENTRY e {
  x = bf16[4,6] parameter(0)
  r = bf16[2,12] reshape(x)
  i = s32[3,5] iota(), iota_dimension=1
  ROOT t = (bf16[2,12], s32[3,5], bf16[4,6], bf16[4,6]) tuple(r, i, x, x)
})"});
}

TEST(TpuDataMovement, ConstantsAreBakedIn) {
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  c = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = f32[2,3] multiply(x, c)
})"});
}

// sort (an odd-even transposition network, lower_sort.cc): keys with many ties and their
// positions as values, so any instability shows; an odd length, rows across several tiles
// (tiny's 8x8), both directions of the comparator, a length that makes the network loop
// many times; against the evaluator's stable sort, exactly.
TEST(TpuDataMovement, SortIsStableAlongAnyDimension) {
  auto module = [](const std::string& shape, int64_t dim, const char* direction) {
    return fmt::format(R"(HloModule m
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction={2}
}}
ENTRY e {{
  keys = f32{0} parameter(0)
  positions = s32{0} parameter(1)
  ROOT s = (f32{0}, s32{0}) sort(keys, positions), dimensions={{{1}}}, is_stable=true, to_apply=cmp
}})",
                       shape, dim, direction);
  };
  std::mt19937_64 rng(9);
  auto keys = [&](std::vector<int64_t> dims) {  // few distinct values: many ties
    ir::Literal l(ir::Shape(ir::PrimitiveType::kF32, std::move(dims)));
    for (int64_t k = 0; k < l.num_elements(); ++k)
      l.set_from_double(k, static_cast<double>(rng() % 5) - 2);
    return l;
  };
  auto positions = [](std::vector<int64_t> dims) {
    ir::Literal l(ir::Shape(ir::PrimitiveType::kS32, std::move(dims)));
    for (int64_t k = 0; k < l.num_elements(); ++k) l.set_from_int64(k, k);
    return l;
  };
  check_args(module("[37,150]", 0, "LT"), "tiny", {keys({37, 150}), positions({37, 150})});
  check_args(module("[6,3,11]", 2, "GT"), "tiny", {keys({6, 3, 11}), positions({6, 3, 11})});
  check_args(module("[2,130]", 1, "LT"), "v5e", {keys({2, 130}), positions({2, 130})});
}

}  // namespace
}  // namespace podsim::tpu::testing
