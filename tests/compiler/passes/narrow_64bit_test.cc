// The 64-bit narrowing pass: every s64/u64/f64 becomes s32/u32/f32, constants are
// converted, the module still verifies, and on values that fit in 32 bits the narrowed
// module computes what the original computes (the evaluator on both).
#include <gtest/gtest.h>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"

namespace podsim::passes {
namespace {

constexpr const char* kModule = R"(HloModule wide
add {
  a = s64[] parameter(0)
  b = s64[] parameter(1)
  ROOT c = s64[] add(a, b)
}
ENTRY main {
  x = s64[6] parameter(0)
  y = f64[6] parameter(1)
  i = s64[6] iota(), iota_dimension=0
  k = s64[] constant(7)
  kb = s64[6] broadcast(k), dimensions={}
  m = s64[6] multiply(x, i)
  s = s64[6] add(m, kb)
  zero = s64[] constant(0)
  total = s64[] reduce(s, zero), dimensions={0}, to_apply=add
  f = f64[6] convert(s)
  g = f64[6] multiply(f, y)
  ROOT t = (s64[], f64[6], s64[6]) tuple(total, g, i)
}
)";

TEST(Narrow64Bit, NarrowsEveryTypeAndKeepsResultsThatFit) {
  auto original = ir::parse_module(kModule);
  auto narrowed = ir::parse_module(kModule);
  EXPECT_TRUE(make_narrow_64bit_types()->run(*narrowed));
  ir::verify_module(*narrowed, "narrowed");
  for (const auto& computation : narrowed->computations())
    for (const auto& i : computation->instructions())
      for (const ir::Shape& s :
           i->shape().is_tuple() ? i->shape().elements() : std::vector<ir::Shape>{i->shape()})
        EXPECT_TRUE(s.type() != ir::PrimitiveType::kS64 && s.type() != ir::PrimitiveType::kF64)
            << i->name();

  ir::Literal x(ir::Shape(ir::PrimitiveType::kS64, {6}));
  ir::Literal y(ir::Shape(ir::PrimitiveType::kF64, {6}));
  for (int64_t k = 0; k < 6; ++k) {
    x.set_from_int64(k, 1000 * k - 2500);
    y.set_from_double(k, 0.25 * static_cast<double>(k) - 0.5);  // exact in f32
  }
  ir::Literal want = ir::evaluate(*original, std::vector<ir::Literal>{x, y});
  ir::Literal got =
      ir::evaluate(*narrowed, std::vector<ir::Literal>{narrow_literal(x), narrow_literal(y)});
  ASSERT_EQ(got.elements().size(), 3u);
  EXPECT_EQ(got.elements()[0].type(), ir::PrimitiveType::kS32);
  EXPECT_EQ(got.elements()[1].type(), ir::PrimitiveType::kF32);
  for (size_t e = 0; e < 3; ++e) {
    const ir::Literal back = convert_literal(got.elements()[e], want.elements()[e].type());
    EXPECT_TRUE(back == want.elements()[e])
        << "element " << e << ": " << back.to_string() << " vs " << want.elements()[e].to_string();
  }
}

// Saturation keeps reduction identities: a min over s64 starting from INT64_MAX still
// finds the minimum.
TEST(Narrow64Bit, ConstantsOutsideTheRangeSaturate) {
  auto module = ir::parse_module(R"(HloModule c
min {
  a = s64[] parameter(0)
  b = s64[] parameter(1)
  ROOT c = s64[] minimum(a, b)
}
ENTRY main {
  x = s64[3] parameter(0)
  big = s64[] constant(9223372036854775807)
  smallest = s64[] reduce(x, big), dimensions={0}, to_apply=min
  k = s64[3] constant({4294967301, -4294967301, -1})
  ROOT t = (s64[], s64[3]) tuple(smallest, k)
}
)");
  make_narrow_64bit_types()->run(*module);
  ir::Literal x(ir::Shape(ir::PrimitiveType::kS64, {3}));
  for (int64_t k = 0; k < 3; ++k) x.set_from_int64(k, 40 - 7 * k);
  ir::Literal got = ir::evaluate(*module, std::vector<ir::Literal>{narrow_literal(x)});
  EXPECT_EQ(got.elements()[0].get_as_int64(0), 26);
  EXPECT_EQ(got.elements()[1].get_as_int64(0), INT32_MAX);
  EXPECT_EQ(got.elements()[1].get_as_int64(1), INT32_MIN);
  EXPECT_EQ(got.elements()[1].get_as_int64(2), -1);
}

TEST(Narrow64Bit, WidthDependentOpsAreAnError) {
  auto module = ir::parse_module(R"(HloModule b
ENTRY main {
  x = f64[2] parameter(0)
  ROOT b = s64[2] bitcast-convert(x)
}
)");
  try {
    make_narrow_64bit_types()->run(*module);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "not supported with 64-bit types narrowed to 32 bits: bitcast-convert (line 4)");
  }
}

TEST(Narrow64Bit, LeavesNarrowModulesAlone) {
  auto module = ir::parse_module(R"(HloModule n
ENTRY main {
  x = f32[2] parameter(0)
  ROOT y = f32[2] negate(x)
}
)");
  EXPECT_FALSE(make_narrow_64bit_types()->run(*module));
}

}  // namespace
}  // namespace podsim::passes
