// The dot expander: integer dots become a broadcast multiply and a sum, exact against
// the evaluator (wrapping sums included); f16 dots f32 dots of the widened operands; f32 dots at HIGH / HIGHEST become 3 / 6 dots of
// bf16 pieces whose sum is within the bf16_3x / f32 error of the evaluator's f32 dot;
// DEFAULT float dots stay.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes::testing {
namespace {

TEST(DotExpander, IntegerDotsAreExact) {
  for (const char* text : {R"(HloModule m
ENTRY e {
  a = s8[2,6] parameter(0)
  b = s8[6,3] parameter(1)
  ROOT d = s32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                           R"(HloModule m
ENTRY e {
  a = s32[3,4,2,5] parameter(0)
  b = s32[5,3,4,2] parameter(1)
  ROOT d = s32[3,2,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={3,1}, rhs_contracting_dims={0,2}
})",
                           R"(HloModule m
ENTRY e {
  a = u8[4,3] parameter(0)
  b = u8[3] parameter(1)
  ROOT d = u8[4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"}) {
    auto m = check_pass(text, make_dot_expander(), 6);  // random bits: products and sums wrap
    EXPECT_EQ(count(*m, Opcode::kDot), 0) << ir::print_module(*m);
  }
}

TEST(DotExpander, F16DotsAreF32DotsOfTheWidenedOperands) {
  // Widening is exact and the evaluator accumulates f16 dots in f32: bit for bit.
  auto m = check_pass(R"(HloModule m
ENTRY e {
  a = f16[3,8] parameter(0)
  b = f16[8,2] parameter(1)
  ROOT d = f16[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                      make_dot_expander());
  EXPECT_EQ(count(*m, Opcode::kConvert), 3) << ir::print_module(*m);
}

// |expanded - f32 dot| against bound x sum |a b|, on values of a wide range of
// magnitudes (so that the low pieces matter).
void check_precise(const std::string& precision, double bound, int dots) {
  const std::string text = "HloModule m\nENTRY e {\n  a = f32[4,64] parameter(0)\n  b = f32[64,5] parameter(1)\n"
                           "  ROOT d = f32[4,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                           "operand_precision={" + precision + "," + precision + "}\n}\n";
  auto original = ir::parse_module(text);
  auto expanded = ir::parse_module(text);
  ASSERT_TRUE(make_dot_expander()->run(*expanded));
  ir::verify_module(*expanded, "expanded");
  EXPECT_EQ(count(*expanded, Opcode::kDot), dots);
  std::mt19937_64 rng(7);
  std::vector<Literal> args;
  for (const auto& shape : {ir::Shape(PrimitiveType::kF32, {4, 64}), ir::Shape(PrimitiveType::kF32, {64, 5})}) {
    Literal l(shape);
    for (int64_t i = 0; i < l.num_elements(); ++i)
      l.set_from_double(i, std::uniform_real_distribution<double>(-1, 1)(rng) *
                               std::exp2(std::uniform_int_distribution<int>(-6, 6)(rng)));
    args.push_back(std::move(l));
  }
  const Literal want = ir::evaluate(*original, args), got = ir::evaluate(*expanded, args);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 5; ++c) {
      double magnitude = 0;
      for (int64_t k = 0; k < 64; ++k)
        magnitude += std::abs(args[0].get_as_double(r * 64 + k) * args[1].get_as_double(k * 5 + c));
      EXPECT_LE(std::abs(got.get_as_double(r * 5 + c) - want.get_as_double(r * 5 + c)), bound * magnitude)
          << precision << " element " << r << "," << c;
    }
}

TEST(DotExpander, HighAndHighestPrecisionDotsTakeThreeAndSixBf16Passes) {
  check_precise("highest", 64 * std::exp2(-24), 6);  // f32: the sums' own rounding
  check_precise("high", std::exp2(-16), 3);          // bf16_3x: the mid·mid terms left out
}

TEST(DotExpander, DefaultFloatDotsStay) {
  auto module = ir::parse_module(R"(HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = bf16[3,4] parameter(1)
  c = bf16[2,3] convert(a)
  ROOT d = f32[2,4] dot(c, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  EXPECT_FALSE(make_dot_expander()->run(*module));
}

}  // namespace
}  // namespace podsim::passes::testing
