// Tests of the reference evaluator's driver: control flow, tuples, custom calls,
// argument checking, error locations, and rng-bit-generator against published
// known-answer vectors. Expected values are derived by hand from XLA's semantics.
#include "compiler/ir/evaluator.h"

#include <gtest/gtest.h>

#include "tests/compiler/ir/evaluator_test_util.h"

namespace podsim::ir {
namespace {

using namespace testing_util;

// ---------------------------------------------------------------- control flow

TEST(EvaluatorDriver, WhileSumsOneToTen) {
  const std::string text = R"(
HloModule m
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ten = s32[] constant(10)
  ROOT le = pred[] compare(i, ten), direction=LE
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  sum = s32[] add(acc, i)
  ROOT t = (s32[], s32[]) tuple(next, sum)
}
ENTRY main {
  one = s32[] constant(1)
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(one, zero)
  w = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=1
})";
  EXPECT_EQ(values_of<int32_t>(run(text)), (std::vector<int32_t>{55}));
}

const char* const kConditionalBranches = R"(
HloModule m
same {
  p = f32[] parameter(0)
  ROOT c = f32[] copy(p)
}
neg {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
dbl {
  p = f32[] parameter(0)
  two = f32[] constant(2)
  ROOT m = f32[] multiply(p, two)
}
)";

TEST(EvaluatorDriver, ConditionalWithPredSelector) {
  const std::string text = std::string(kConditionalBranches) + R"(
ENTRY main {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(p, x, x), true_computation=neg, false_computation=dbl
})";
  Literal x = make<float>(PrimitiveType::kF32, {}, {3.0f});
  EXPECT_EQ(values_of<float>(run(text, {make<bool>(PrimitiveType::kPred, {}, {true}), x})), (std::vector<float>{-3.0f}));
  EXPECT_EQ(values_of<float>(run(text, {make<bool>(PrimitiveType::kPred, {}, {false}), x})), (std::vector<float>{6.0f}));
}

TEST(EvaluatorDriver, ConditionalWithIndexSelectorClampsToLastBranch) {
  const std::string text = std::string(kConditionalBranches) + R"(
ENTRY main {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  y = f32[] parameter(2)
  z = f32[] parameter(3)
  ROOT c = f32[] conditional(i, x, y, z), branch_computations={same, neg, dbl}
})";
  auto at = [&](int32_t index) {
    return values_of<float>(run(text, {make<int32_t>(PrimitiveType::kS32, {}, {index}),
                                       make<float>(PrimitiveType::kF32, {}, {1.0f}),
                                       make<float>(PrimitiveType::kF32, {}, {2.0f}),
                                       make<float>(PrimitiveType::kF32, {}, {3.0f})}))[0];
  };
  EXPECT_EQ(at(0), 1.0f);   // same(x)
  EXPECT_EQ(at(1), -2.0f);  // neg(y)
  EXPECT_EQ(at(2), 6.0f);   // dbl(z)
  EXPECT_EQ(at(7), 6.0f);   // out of range: the last branch
  EXPECT_EQ(at(-1), 6.0f);
}

TEST(EvaluatorDriver, CallTuplesAndOptBarrier) {
  const std::string text = R"(
HloModule m
swap_add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  s = s32[] add(a, b)
  sw = (s32[], s32[]) tuple(b, a)
  ROOT t = (s32[], (s32[], s32[])) tuple(s, sw)
}
ENTRY main {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  c = (s32[], (s32[], s32[])) call(x, y), to_apply=swap_add
  o = (s32[], (s32[], s32[])) opt-barrier(c)
  inner = (s32[], s32[]) get-tuple-element(o), index=1
  first = s32[] get-tuple-element(inner), index=0
  sum = s32[] get-tuple-element(o), index=0
  ROOT r = (s32[], s32[], (s32[], s32[])) tuple(sum, first, inner)
})";
  Literal out = run(text, {make<int32_t>(PrimitiveType::kS32, {}, {3}), make<int32_t>(PrimitiveType::kS32, {}, {4})});
  ASSERT_TRUE(out.shape().is_tuple());
  EXPECT_EQ(values_of<int32_t>(out.elements()[0]), (std::vector<int32_t>{7}));
  EXPECT_EQ(values_of<int32_t>(out.elements()[1]), (std::vector<int32_t>{4}));
  EXPECT_EQ(values_of<int32_t>(out.elements()[2].elements()[1]), (std::vector<int32_t>{3}));
}

TEST(EvaluatorDriver, CustomCallRunsItsRegisteredHandler) {
  register_custom_call("podsim_test_double", [](const Instruction& instruction, std::span<const Literal* const> ops) {
    Literal out(instruction.shape());
    for (int64_t i = 0; i < out.num_elements(); ++i) out.set_from_double(i, 2 * ops[0]->get_as_double(i));
    return out;
  });
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="podsim_test_double"
})";
  EXPECT_EQ(values_of<float>(run(text, {vec<float>(PrimitiveType::kF32, {1.5f, -4.0f})})),
            (std::vector<float>{3.0f, -8.0f}));
}

TEST(EvaluatorDriver, CustomCallWithoutHandlerIsAnError) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="podsim_no_such_target"
})";
  std::string message = error_of([&] { run(text, {vec<float>(PrimitiveType::kF32, {1, 2})}); });
  expect_contains(
      message,
      "custom-call target 'podsim_no_such_target' (line 5, instruction c) has no definition");
}

TEST(EvaluatorDriver, ArgumentCountAndShapeErrorsNameTheParameter) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  weights = s32[3] parameter(1)
  ROOT r = f32[2] negate(x)
})";
  expect_contains(error_of([&] { run(text, {vec<float>(PrimitiveType::kF32, {1, 2})}); }), "takes 2 argument(s), got 1");
  std::string message = error_of([&] {
    run(text, {vec<float>(PrimitiveType::kF32, {1, 2}), vec<float>(PrimitiveType::kF32, {1, 2, 3})});
  });
  expect_contains(message, "weights");
  expect_contains(message, "f32[3]");
  expect_contains(message, "s32[3]");
  auto module = parse_module(text);
  expect_contains(error_of([&] { evaluate_spmd(*module, {}, EvalOptions{2, 1}); }), "need 2 argument lists");
}

TEST(EvaluatorDriver, ElementwiseShapeMismatchIsAnErrorWithLocation) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  y = f32[3] parameter(1)
  ROOT r = f32[2] add(x, y)
})";
  std::string message = error_of([&] {
    run(text, {vec<float>(PrimitiveType::kF32, {1, 2}), vec<float>(PrimitiveType::kF32, {1, 2, 3})});
  });
  expect_contains(message, "r (line 6)");
}

// ---------------------------------------------------------------- rng-bit-generator

// Random123 known-answer vectors: Threefry-2x32-20 of counter (0x243f6a88, 0x85a308d3)
// under key (0x13198a2e, 0x03707344) is (0xc4923a9c, 0x483df7a0); of zeros, (0x6b200159,
// 0x99ba4efe). Philox-4x32-10 of zeros is (0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
// 0x9b00dbd8); of counter (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344) under key
// (0xa4093822, 0x299f31d0), (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1).
TEST(EvaluatorRng, ThreeFryMatchesKnownAnswers) {
  const std::string text = R"(
HloModule m
ENTRY main {
  s = u64[2] parameter(0)
  a = (u64[2], u64[]) rng-bit-generator(s), algorithm=rng_three_fry
  b = (u64[2], u32[2]) rng-bit-generator(s), algorithm=rng_three_fry
  ROOT t = ((u64[2], u64[]), (u64[2], u32[2])) tuple(a, b)
})";
  Literal out = run(text, {vec<uint64_t>(PrimitiveType::kU64, {0x0370734413198a2eull, 0x85a308d3243f6a88ull})});
  const Literal& wide = out.elements()[0];
  EXPECT_EQ(values_of<uint64_t>(wide.elements()[1]), (std::vector<uint64_t>{0x483df7a0c4923a9cull}));
  EXPECT_EQ(values_of<uint64_t>(wide.elements()[0]),
            (std::vector<uint64_t>{0x0370734413198a2eull, 0x85a308d3243f6a89ull}));
  // u32[2] halves to one counter whose two words fill the two elements.
  const Literal& narrow = out.elements()[1];
  EXPECT_EQ(values_of<uint32_t>(narrow.elements()[1]), (std::vector<uint32_t>{0xc4923a9cu, 0x483df7a0u}));
  EXPECT_EQ(values_of<uint64_t>(narrow.elements()[0])[1], 0x85a308d3243f6a89ull);

  Literal zero = run(text, {vec<uint64_t>(PrimitiveType::kU64, {0, 0})});
  EXPECT_EQ(values_of<uint64_t>(zero.elements()[0].elements()[1]), (std::vector<uint64_t>{0x99ba4efe6b200159ull}));
}

TEST(EvaluatorRng, ThreeFryNarrowAndOddShapesSplitAsXlaDoes) {
  const std::string text = R"(
HloModule m
ENTRY main {
  s = u64[2] parameter(0)
  a = (u64[2], u16[2]) rng-bit-generator(s), algorithm=rng_three_fry
  b = (u64[2], u32[3,2]) rng-bit-generator(s), algorithm=rng_three_fry
  c = (u64[2], u32[3]) rng-bit-generator(s), algorithm=rng_three_fry
  ROOT t = ((u64[2], u16[2]), (u64[2], u32[3,2]), (u64[2], u32[3])) tuple(a, b, c)
})";
  Literal out = run(text, {vec<uint64_t>(PrimitiveType::kU64, {0, 0})});
  // u16 keeps the low half of each 32-bit word of Threefry(counter 0).
  EXPECT_EQ(values_of<uint16_t>(out.elements()[0].elements()[1]), (std::vector<uint16_t>{0x0159, 0x4efe}));
  EXPECT_EQ(values_of<uint64_t>(out.elements()[0].elements()[0]), (std::vector<uint64_t>{0, 1}));
  // [3,2] halves along dimension 1 (the first even one) to [3,1]: row i holds the two
  // words of counter i, and 3 counters are used.
  auto rows = values_of<uint32_t>(out.elements()[1].elements()[1]);
  EXPECT_EQ(rows[0], 0x6b200159u);
  EXPECT_EQ(rows[1], 0x99ba4efeu);
  EXPECT_EQ(values_of<uint64_t>(out.elements()[1].elements()[0]), (std::vector<uint64_t>{0, 3}));
  // [3] has no even dimension: it halves to [2] (rounding up), elements 0 and 1 come
  // from counter 0, and 2 counters are used.
  auto odd = values_of<uint32_t>(out.elements()[2].elements()[1]);
  EXPECT_EQ(odd[0], 0x6b200159u);
  EXPECT_EQ(odd[1], 0x99ba4efeu);
  EXPECT_EQ(values_of<uint64_t>(out.elements()[2].elements()[0]), (std::vector<uint64_t>{0, 2}));
}

TEST(EvaluatorRng, PhiloxMatchesKnownAnswers) {
  const std::string text = R"(
HloModule m
ENTRY main {
  s = u64[3] parameter(0)
  ROOT r = (u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_philox
})";
  Literal out = run(text, {vec<uint64_t>(PrimitiveType::kU64,
                                         {0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull})});
  EXPECT_EQ(values_of<uint32_t>(out.elements()[1]),
            (std::vector<uint32_t>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
  EXPECT_EQ(values_of<uint64_t>(out.elements()[0]),
            (std::vector<uint64_t>{0x299f31d0a4093822ull, 0x85a308d3243f6a89ull, 0x0370734413198a2eull}));
}

TEST(EvaluatorRng, PhiloxTwoWordStateAndDefaultAlgorithm) {
  // u64[2] {key, low}: the counter's high word is the key; rng_default is Philox.
  const std::string text = R"(
HloModule m
ENTRY main {
  s = u64[2] parameter(0)
  a = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_default
  b = (u64[2], u64[2]) rng-bit-generator(s), algorithm=rng_philox
  ROOT t = ((u64[2], u32[4]), (u64[2], u64[2])) tuple(a, b)
})";
  Literal out = run(text, {vec<uint64_t>(PrimitiveType::kU64, {0, 0})});
  EXPECT_EQ(values_of<uint32_t>(out.elements()[0].elements()[1]),
            (std::vector<uint32_t>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(values_of<uint64_t>(out.elements()[0].elements()[0]), (std::vector<uint64_t>{0, 1}));
  // 64-bit outputs pair words (0, 1) and (2, 3) of a block, low word first.
  EXPECT_EQ(values_of<uint64_t>(out.elements()[1].elements()[1]),
            (std::vector<uint64_t>{0xe169c58d6627e8d5ull, 0x9b00dbd8bc57ac4cull}));
}

TEST(EvaluatorRng, PhiloxCounterCarriesIntoHighWord) {
  const std::string text = R"(
HloModule m
ENTRY main {
  s = u64[3] parameter(0)
  ROOT r = (u64[3], u32[5]) rng-bit-generator(s), algorithm=rng_philox
})";
  // 5 words need 2 blocks: the counter {2^64 - 1, 7} advances by 2 to {1, 8}.
  Literal out = run(text, {vec<uint64_t>(PrimitiveType::kU64, {42, ~0ull, 7})});
  EXPECT_EQ(values_of<uint64_t>(out.elements()[0]), (std::vector<uint64_t>{42, 1, 8}));
}

}  // namespace
}  // namespace podsim::ir
