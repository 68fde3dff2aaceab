// The window expander: convolution, reduce-window, select-and-scatter and narrow reduces
// become pads, slices, a dot and elementwise ops (and the map inliner, which shares its
// inlining: maps become their ops), and the expanded module computes what the original
// computes on the reference evaluator, bit for bit (convolutions on finite inputs: a
// padding zero times an infinite kernel value is NaN after expansion, where the
// evaluator skips the term).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes::testing {
namespace {

// No window op is left in the entry computation.
void expect_expanded(const Module& module) {
  EXPECT_EQ(count(module, Opcode::kConvolution), 0) << ir::print_module(module);
  EXPECT_EQ(count(module, Opcode::kReduceWindow), 0) << ir::print_module(module);
  EXPECT_EQ(count(module, Opcode::kSelectAndScatter), 0) << ir::print_module(module);
}

// Finite arguments (quarters in [-4, 4], so that products and short sums are exact
// enough to show any reordering as a difference in the last bits only when there is one).
std::vector<Literal> finite_arguments(const ir::Computation& entry, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Literal> args;
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    Literal l(entry.parameter(p)->shape());
    for (int64_t i = 0; i < l.num_elements(); ++i)
      l.set_from_double(i, std::uniform_real_distribution<double>(-4.0, 4.0)(rng));
    args.push_back(std::move(l));
  }
  return args;
}

void check_convolution(const std::string& text) {
  auto original = ir::parse_module(text);
  ir::verify_module(*original, "original");
  auto expanded = ir::parse_module(text);
  ASSERT_TRUE(make_window_expander()->run(*expanded));
  ir::verify_module(*expanded, "expanded");
  expect_expanded(*expanded);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::vector<Literal> args = finite_arguments(*original->entry(), seed);
    EXPECT_EQ(difference(ir::evaluate(*original, args), ir::evaluate(*expanded, args)), "")
        << "seed " << seed << "\n" << ir::print_module(*expanded);
  }
}

TEST(WindowExpander, ConvolutionWithPaddingStridesDilationsAndReversal) {
  check_convolution(R"(HloModule m
ENTRY e {
  x = f32[2,3,7,6] parameter(0)
  k = f32[4,3,3,2] parameter(1)
  ROOT c = f32[2,4,7,3] convolution(x, k), window={size=3x2 stride=2x3 pad=2_1x1_2 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01
})");
}

TEST(WindowExpander, ConvolutionInOtherLayoutsAndOneDimension) {
  check_convolution(R"(HloModule m
ENTRY e {
  x = f32[5,2,3] parameter(0)
  k = f32[3,3,4] parameter(1)
  ROOT c = f32[4,5,2] convolution(x, k), window={size=3 stride=1 pad=1_1}, dim_labels=0bf_0io->f0b
})");
}

TEST(WindowExpander, GroupedAndDepthwiseConvolutions) {
  check_convolution(R"(HloModule m
ENTRY e {
  x = f32[2,5,5,6] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,5,5,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
})");
  check_convolution(R"(HloModule m
ENTRY e {
  x = f32[1,4,6,6] parameter(0)
  k = f32[8,1,3,3] parameter(1)
  ROOT c = f32[1,8,3,3] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=4
})");
}

TEST(WindowExpander, BatchGroupedConvolution) {
  // The form XLA gives the kernel gradient of a depthwise convolution.
  check_convolution(R"(HloModule m
ENTRY e {
  x = f32[4,3,5,5] parameter(0)
  k = f32[6,3,2,2] parameter(1)
  ROOT c = f32[2,6,4,4] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01, batch_group_count=2
})");
}

TEST(WindowExpander, Bf16AndF16ConvolutionsAccumulateInF32) {
  check_convolution(R"(HloModule m
ENTRY e {
  x = bf16[1,3,6,6] parameter(0)
  k = bf16[2,3,3,3] parameter(1)
  ROOT c = bf16[1,2,6,6] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})");
  check_convolution(R"(HloModule m
ENTRY e {
  x = f16[2,8,3] parameter(0)
  k = f16[3,3,5] parameter(1)
  ROOT c = f16[2,4,5] convolution(x, k), window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f
})");
}

TEST(WindowExpander, IntegerConvolutionsBecomeIntegerDots) {
  check_convolution(R"(HloModule m
ENTRY e {
  x = s32[1,2,5] parameter(0)
  k = s32[3,2,3] parameter(1)
  ROOT c = s32[1,3,10] convolution(x, k), window={size=3 pad=2_1 lhs_dilate=2}, dim_labels=bf0_oi0->bf0
})");
}

TEST(WindowExpander, HugeWindowsStay) {
  auto module = ir::parse_module(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  y = f32[100] parameter(0)
  z = f32[] constant(0)
  ROOT w = f32[100] reduce-window(y, z), window={size=100 pad=99_0}, to_apply=add
})");
  EXPECT_FALSE(make_window_expander()->run(*module));
}

TEST(WindowExpander, ReduceWindowMaxPooling) {
  auto m = check_pass(R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2,3,7,7] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT p = f32[2,3,4,4] reduce-window(x, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max
})",
                      make_window_expander());
  expect_expanded(*m);
}

TEST(WindowExpander, ReduceWindowKeepsHolesOutWhateverTheInit) {
  // Init 1.5 is no identity of add: padding and base-dilation holes must not add it.
  auto m = check_pass(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,5] parameter(0)
  init = f32[] constant(1.5)
  ROOT r = f32[7,2] reduce-window(x, init), window={size=2x3 stride=1x2 pad=1_0x2_1 lhs_dilate=2x1 rhs_dilate=1x2}, to_apply=add
})",
                      make_window_expander());
  expect_expanded(*m);
  // A reducer of several ops, on integers, with a scalar constant inside.
  m = check_pass(R"(HloModule m
f {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  two = s32[] constant(2)
  m = s32[] multiply(b, two)
  ROOT s = s32[] add(a, m)
}
ENTRY e {
  x = s32[9] parameter(0)
  init = s32[] constant(-3)
  ROOT r = s32[4] reduce-window(x, init), window={size=3 stride=2 pad=0_1}, to_apply=f
})",
                 make_window_expander());
  expect_expanded(*m);
}

TEST(WindowExpander, NarrowReducesBecomeWindows) {
  // Max pooling as a reshape and a reduce; a sum over 4 positions (f32: the order shows);
  // an integer min over the last dimension.
  for (const char* text : {R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[3,2,4,2,4,2] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT r = f32[3,2,4,4] reduce(x, ninf), dimensions={3,5}, to_apply=max
})",
                           R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[3,5,4] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[5] reduce(x, one), dimensions={0,2}, to_apply=add
})"}) {
    auto m = check_pass(text, make_window_expander());
    EXPECT_EQ(count(*m, Opcode::kReduce), 0) << ir::print_module(*m);
  }
  // Wide or long reductions stay for the vector unit's lanes.
  for (const char* text : {R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,128] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=add
})",
                           R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(x, z), dimensions={0}, to_apply=add
})"}) {
    auto module = ir::parse_module(text);
    EXPECT_FALSE(make_window_expander()->run(*module));
  }
}

TEST(MapInliner, ElementwiseMapsBecomeTheirOps) {
  auto m = check_pass(R"(HloModule m
scale {
  q1 = s32[] parameter(0)
  q2 = f32[] parameter(1)
  half = f32[] constant(0.5)
  f = f32[] convert(q1)
  p = f32[] multiply(f, q2)
  ROOT r = f32[] add(p, half)
}
ENTRY e {
  a = s32[3,4] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT m = f32[3,4] map(a, b), dimensions={0,1}, to_apply=scale
})",
                      make_map_inliner());
  EXPECT_EQ(count(*m, Opcode::kMap), 0) << ir::print_module(*m);
}

TEST(WindowExpander, SelectAndScatterWithOverlappingWindowsAndTies) {
  // Overlapping windows (stride 1 < size 3) select some elements several times: the
  // scatter order decides the f32 sums.
  auto m = check_pass(R"(HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[6,5] parameter(0)
  src = f32[6,5] parameter(1)
  zero = f32[] constant(0)
  ROOT r = f32[6,5] select-and-scatter(x, src, zero), window={size=3x3 stride=1x1 pad=1_1x1_1}, select=ge, scatter=add
})",
                      make_window_expander());
  expect_expanded(*m);
  // Integer ties (values in [-8, 8]): the first of equal maxima is kept under GE; an
  // init of 5 and windows that reach past the end.
  m = check_pass(R"(HloModule m
ge {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[7,4] parameter(0)
  src = s32[4,4] parameter(1)
  five = s32[] constant(5)
  ROOT r = s32[7,4] select-and-scatter(x, src, five), window={size=3x2 stride=2x1 pad=1_1x0_1}, select=ge, scatter=add
})",
                 make_window_expander(), 8);
  expect_expanded(*m);
}

}  // namespace
}  // namespace podsim::passes::testing
