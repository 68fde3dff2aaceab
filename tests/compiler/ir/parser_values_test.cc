// HLO text parser: parsed values are what the text says (shardings and device lists,
// replica groups, shapes, literals), and print back to the same text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace podsim::ir {
namespace {

const Instruction& find(const Module& m, std::string_view name) {
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->name() == name) return *i;
  throw Error("no instruction " + std::string(name));
}

std::string read_testdata(const std::string& name) {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/tests/compiler/ir/testdata/" + name,
                   std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------
// Shardings and device lists.

Sharding sharding_of(const std::string& text) {
  auto m = parse_module(
      "HloModule m\nENTRY e {\n  ROOT p = f32[8,8] parameter(0), sharding=" + text + "\n}\n");
  return *m->entry()->root()->sharding();
}

TEST(ParserSharding, EveryKindParsesAndPrintsBack) {
  for (const char* text :
       {"{replicated}", "{maximal device=1}", "{devices=[2,1]0,1}",
        "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}", "{devices=[2,2]<=[4]}",
        "{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[1,2,2]0,1,2,3 last_tile_dims={manual}}",
        "{manual}", "{unknown}", "{{replicated}, {maximal device=0}}"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(sharding_of(text).to_string(), text);
  }
}

TEST(ParserSharding, Fields) {
  Sharding max = sharding_of("{maximal device=3}");
  EXPECT_EQ(max.kind, Sharding::Kind::kMaximal);
  EXPECT_EQ(max.maximal_device, 3);
  Sharding tiled = sharding_of("{devices=[2,1,2]3,2,1,0 last_tile_dim_replicate}");
  EXPECT_EQ(tiled.kind, Sharding::Kind::kTiled);
  EXPECT_EQ(tiled.tile_dims, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(tiled.devices, (std::vector<int64_t>{3, 2, 1, 0}));
  EXPECT_TRUE(tiled.last_tile_dim_replicate);
  EXPECT_FALSE(tiled.iota.has_value());
  // iota [0,1,2,3] as a 2x2 array transposed: [[0,2],[1,3]].
  Sharding iota = sharding_of("{devices=[2,2]<=[2,2]T(1,0)}");
  EXPECT_EQ(iota.devices, (std::vector<int64_t>{0, 2, 1, 3}));
  ASSERT_TRUE(iota.iota.has_value());
  Sharding sub = sharding_of("{devices=[1,2,2]0,1,2,3 last_tile_dims={manual}}");
  EXPECT_EQ(sub.last_tile_dims, std::vector<std::string>{"manual"});
  Sharding tuple = sharding_of("{{replicated}, {{manual}, {devices=[2]1,0}}}");
  ASSERT_EQ(tuple.kind, Sharding::Kind::kTuple);
  ASSERT_EQ(tuple.tuple_elements.size(), 2u);
  EXPECT_EQ(tuple.tuple_elements[1].tuple_elements[1].devices, (std::vector<int64_t>{1, 0}));
  // Sharding metadata is accepted and dropped.
  EXPECT_EQ(sharding_of("{replicated metadata={op_name=\"a\"}}").to_string(), "{replicated}");
}

TEST(ParserSharding, IotaExpansion) {
  IotaList l;
  l.reshape_dims = {4, 2};
  l.iota_dims = {2, 2, 2};
  l.transpose = {2, 1, 0};
  // Element (a,b,c) of the transposed array is iota element (c,b,a) = 4c + 2b + a.
  EXPECT_EQ(l.expand(), (std::vector<int64_t>{0, 4, 2, 6, 1, 5, 3, 7}));
  EXPECT_EQ(l.to_string(), "[4,2]<=[2,2,2]T(2,1,0)");
  IotaList plain;
  plain.reshape_dims = {3};
  plain.iota_dims = {3};
  EXPECT_EQ(plain.expand(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(ParserCollectives, ReplicaGroupForms) {
  auto m = parse_module(read_testdata("collectives.hlo"));
  EXPECT_TRUE(find(*m, "all").attrs().replica_groups->groups.empty());
  EXPECT_FALSE(find(*m, "all").attrs().replica_groups->iota.has_value());
  EXPECT_EQ(find(*m, "pairs").attrs().replica_groups->groups,
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(find(*m, "pairs").attrs().constrain_layout);
  EXPECT_EQ(find(*m, "iota_groups").attrs().replica_groups->groups,
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(find(*m, "strided_groups").attrs().replica_groups->groups,
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(find(*m, "scattered").attrs().replica_groups->groups,
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}}));
  const Instruction& shifted = find(*m, "shifted");
  EXPECT_EQ(shifted.attrs().channel_id, 7);
  EXPECT_EQ(shifted.attrs().source_target_pairs,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  std::string printed = print_module(*m);
  EXPECT_NE(printed.find("replica_groups=[2,2]<=[2,2]T(1,0)"), std::string::npos);
  EXPECT_NE(printed.find("replica_groups={}"), std::string::npos);
}

// ---------------------------------------------------------------------------------
// Shapes and literals.

TEST(ParserWindow, KeysAndAliases) {
  auto m = parse_module(
      "HloModule m\nENTRY e {\n  a = f32[1,5,5,2] parameter(0)\n  k = f32[3,3,2,4] parameter(1)\n"
      "  ROOT r = f32[1,2,5,4] convolution(a, k), window={size=3x3 stride=2x1 pad=0_-1x1_1 "
      "lhs_dilate=1x1 rhs_dilate=1x1 window_reversal=0x1}, dim_labels=b01f_01io->b01f\n}\n");
  const Window& w = *m->entry()->root()->attrs().window;
  ASSERT_EQ(w.dims.size(), 2u);
  EXPECT_EQ(w.dims[0], (WindowDim{3, 2, 0, -1, 1, 1, false}));
  EXPECT_EQ(w.dims[1], (WindowDim{3, 1, 1, 1, 1, 1, true}));
  // XLA's spelling is printed; default-valued keys are left out.
  const std::string line = print_instruction(*m->entry()->root());
  EXPECT_NE(line.find("window={size=3x3 stride=2x1 pad=0_-1x1_1 rhs_reversal=0x1}"),
            std::string::npos)
      << line;
  EXPECT_THROW(
      parse_module("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  z = f32[] "
                   "constant(0)\n  ROOT r = f32[2] reduce-window(a, z), window={stride=2}, "
                   "to_apply=e\n}\n"),
      Error);
}

TEST(ParserShape, Forms) {
  Shape s = parse_shape("f32[2,3]{1,0}");
  EXPECT_EQ(s.type(), PrimitiveType::kF32);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  Shape t = parse_shape("(f32[], (s32[2], pred[]), bf16[0,4])");
  ASSERT_TRUE(t.is_tuple());
  ASSERT_EQ(t.tuple_size(), 3);
  EXPECT_TRUE(t.element(0).is_scalar());
  EXPECT_EQ(t.element(1).element(1).type(), PrimitiveType::kPred);
  EXPECT_EQ(t.element(2).dims(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(parse_shape("()").tuple_size(), 0);
  for (const char* text : {"pred[]", "s8[1]", "s16[2]", "s32[3]", "s64[4]", "u8[5]", "u16[6]",
                           "u32[7]", "u64[8]", "f16[9]", "bf16[10]", "f32[11]", "f64[12]",
                           "f32[2,3]{0,1:T(8,128)(2,1)}", "(f32[], (s32[2]{0}, pred[]))"})
    EXPECT_EQ(parse_shape(text).to_string(), text);
  EXPECT_THROW(parse_shape("f32[2] extra"), Error);
  EXPECT_THROW(parse_shape("c64[2]"), Error);
}

Literal constant_of(const std::string& shape, const std::string& value) {
  auto m =
      parse_module("HloModule m\nENTRY e {\n  ROOT c = " + shape + " constant(" + value + ")\n}\n");
  return *m->entry()->root()->attrs().literal;
}

TEST(ParserLiteral, Values) {
  Literal a = constant_of("f32[2,2]", "{{1.5, -2}, {3e2, 0x1.8p1}}");
  EXPECT_EQ(a.get_as_double(0), 1.5);
  EXPECT_EQ(a.get_as_double(1), -2.0);
  EXPECT_EQ(a.get_as_double(2), 300.0);
  EXPECT_EQ(a.get_as_double(3), 3.0);
  Literal special = constant_of("f32[4]", "{nan, -nan, inf, -inf}");
  EXPECT_TRUE(std::isnan(special.get_as_double(0)));
  EXPECT_FALSE(std::signbit(special.get_as_double(0)));
  EXPECT_TRUE(std::isnan(special.get_as_double(1)));
  EXPECT_TRUE(std::signbit(special.get_as_double(1)));
  EXPECT_EQ(special.get_as_double(2), INFINITY);
  EXPECT_EQ(special.get_as_double(3), -INFINITY);
  Literal payload = constant_of("f64[2]", "{nan(0x8000000000001), -nan(0x1)}");
  EXPECT_TRUE(std::isnan(payload.get_as_double(0)));
  EXPECT_TRUE(std::signbit(payload.get_as_double(1)));
  Literal s64 = constant_of("s64[2]", "{9223372036854775807, -9223372036854775808}");
  EXPECT_EQ(s64.get_as_int64(0), INT64_MAX);
  EXPECT_EQ(s64.get_as_int64(1), INT64_MIN);
  Literal u64 = constant_of("u64[]", "18446744073709551615");
  EXPECT_EQ(u64.get_as_uint64(0), UINT64_MAX);
  Literal big = constant_of("s64[]", "9007199254740993");  // 2^53 + 1: not a double
  EXPECT_EQ(big.get_as_int64(0), 9007199254740993);
  Literal pred = constant_of("pred[3]", "{true, false, 1}");
  EXPECT_EQ(pred.get_as_int64(0), 1);
  EXPECT_EQ(pred.get_as_int64(1), 0);
  EXPECT_EQ(pred.get_as_int64(2), 1);
  Literal tuple = constant_of("(s32[], (f32[2], pred[]))", "(1, ({2, 3}, true))");
  ASSERT_EQ(tuple.elements().size(), 2u);
  EXPECT_EQ(tuple.elements()[0].get_as_int64(0), 1);
  EXPECT_EQ(tuple.elements()[1].elements()[0].get_as_double(1), 3.0);
  EXPECT_EQ(constant_of("f32[0]", "{}").num_elements(), 0);
  EXPECT_EQ(constant_of("f32[2,0]", "{{}, {}}").num_elements(), 0);
  EXPECT_EQ(constant_of("f32[]", "1e-50").get_as_double(0), 0.0);  // underflows to zero
}

TEST(ParserLiteral, FloatsReadBackBitIdentically) {
  const std::string text =
      "HloModule m\nENTRY e {\n"
      "  a = f32[5] constant({0.1, 3.4028235e38, 1.4e-45, -0, 0.3333333})\n"
      "  b = f64[3] constant({0.1, 2.2250738585072014e-308, 1.7976931348623157e308})\n"
      "  c = bf16[3] constant({0.1, 3.3895314e38, -1.5})\n"
      "  d = f16[3] constant({0.1, 65504, 6e-08})\n"
      "  ROOT t = (f32[5], f64[3], bf16[3], f16[3]) tuple(a, b, c, d)\n}\n";
  auto first = parse_module(text);
  auto second = parse_module(print_module(*first));
  for (const char* name : {"a", "b", "c", "d"}) {
    SCOPED_TRACE(name);
    const Literal& x = *find(*first, name).attrs().literal;
    const Literal& y = *find(*second, name).attrs().literal;
    EXPECT_TRUE(x == y);
    ASSERT_EQ(x.bytes().size(), y.bytes().size());
    EXPECT_EQ(std::memcmp(x.bytes().data(), y.bytes().data(), x.bytes().size()), 0);
  }
  EXPECT_TRUE(std::signbit(find(*second, "a").attrs().literal->get_as_double(3)));
}

TEST(ParserLiteral, RangeErrors) {
  EXPECT_THROW(constant_of("s8[]", "128"), Error);
  EXPECT_THROW(constant_of("u8[]", "-1"), Error);
  EXPECT_THROW(constant_of("u64[]", "18446744073709551616"), Error);
  EXPECT_THROW(constant_of("f16[]", "70000"), Error);
  EXPECT_THROW(constant_of("f32[]", "1e39"), Error);
  EXPECT_THROW(constant_of("s32[]", "1.5"), Error);
  EXPECT_THROW(constant_of("pred[]", "2"), Error);
  EXPECT_THROW(constant_of("f32[2]", "{1, 2, 3}"), Error);
  EXPECT_THROW(constant_of("f32[2]", "{1}"), Error);
  EXPECT_THROW(constant_of("(f32[], f32[])", "(1)"), Error);
}

}  // namespace
}  // namespace podsim::ir
