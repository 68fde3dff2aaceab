#include "compiler/ir/literal.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/native_types.h"

namespace podsim::ir {
namespace {

TEST(Shape, TextAndSizes) {
  Shape s(PrimitiveType::kF32, {2, 3});
  EXPECT_EQ(s.to_string(), "f32[2,3]");
  s.set_layout(Layout{{1, 0}, ""});
  EXPECT_EQ(s.to_string(), "f32[2,3]{1,0}");
  EXPECT_EQ(s.to_string(false), "f32[2,3]");
  EXPECT_EQ(s.num_elements(), 6);
  EXPECT_EQ(s.byte_size(), 24);
  Shape t = Shape::tuple({s, Shape::scalar(PrimitiveType::kPred)});
  EXPECT_EQ(t.to_string(), "(f32[2,3]{1,0}, pred[])");
  EXPECT_TRUE(t.compatible(Shape::tuple({Shape(PrimitiveType::kF32, {2, 3}), Shape::scalar(PrimitiveType::kPred)})));
  Shape other_layout(PrimitiveType::kF32, {2, 3});
  other_layout.set_layout(Layout{{0, 1}, ""});
  EXPECT_TRUE(s.compatible(other_layout));
  EXPECT_FALSE(s == other_layout);
}

TEST(Shape, CheckedElementCountRejectsAbsurdShapes) {
  EXPECT_EQ(checked_num_elements({}), 1);
  EXPECT_EQ(checked_num_elements({0, int64_t{1} << 30}), 0);
  EXPECT_EQ(checked_num_elements({-1}), -1);
  EXPECT_EQ(checked_num_elements({int64_t{1} << 21, int64_t{1} << 21}), -1);  // 2^42 > 2^40
  EXPECT_EQ(checked_num_elements({int64_t{1} << 62, 0}), -1);
  EXPECT_EQ(row_major_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Literal, ConvertsThroughDoubleAsConvertDoes) {
  Literal l(Shape(PrimitiveType::kS8, {3}));
  l.set_from_double(0, 300.0);   // saturates
  l.set_from_double(1, -2.7);    // truncates toward zero
  l.set_from_double(2, NAN);     // NaN -> 0
  EXPECT_EQ(l.get_as_int64(0), 127);
  EXPECT_EQ(l.get_as_int64(1), -2);
  EXPECT_EQ(l.get_as_int64(2), 0);
  Literal b(Shape(PrimitiveType::kBF16, {1}));
  b.set_from_double(0, 1.0 + 1.0 / 256);  // halfway between 1 and 1+2^-7: ties to even
  EXPECT_EQ(b.get_as_double(0), 1.0);
}

TEST(Literal, TextForm) {
  Literal l(Shape(PrimitiveType::kF32, {2, 2}));
  for (int i = 0; i < 4; ++i) l.set_from_double(i, i + 0.5);
  EXPECT_EQ(l.to_string(), "{{0.5, 1.5}, {2.5, 3.5}}");
  Literal p(Shape(PrimitiveType::kPred, {2}));
  p.set_from_int64(1, 1);
  Literal s8(Shape(PrimitiveType::kS8, {}));
  s8.set_from_int64(0, -5);
  EXPECT_EQ(Literal::tuple({p, s8}).to_string(), "({false, true}, -5)");
  Literal special(Shape(PrimitiveType::kF64, {3}));
  special.set_from_double(0, INFINITY);
  special.set_from_double(1, -INFINITY);
  special.set_from_double(2, NAN);
  EXPECT_EQ(special.to_string(), "{inf, -inf, nan}");
}

TEST(Literal, ForEachIndexVisitsRowMajor) {
  std::vector<int64_t> dims = {2, 3};
  int64_t expected = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& index) {
    EXPECT_EQ(linear_index(dims, index), expected++);
  });
  EXPECT_EQ(expected, 6);
  int calls = 0;
  for_each_index({2, 0, 3}, [&](const std::vector<int64_t>&) { ++calls; });
  EXPECT_EQ(calls, 0);
  for_each_index({}, [&](const std::vector<int64_t>& index) { EXPECT_TRUE(index.empty()); ++calls; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace podsim::ir
