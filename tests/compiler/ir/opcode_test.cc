// The opcode table: every entry's spelling maps back to it, spellings are unique, and
// arities are sane.
#include "compiler/ir/opcode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace podsim::ir {
namespace {

class OpcodeTable : public ::testing::TestWithParam<int> {};

TEST_P(OpcodeTable, SpellingRoundTrips) {
  auto op = static_cast<Opcode>(GetParam());
  std::string_view name = opcode_name(op);
  ASSERT_FALSE(name.empty());
  auto back = opcode_from_name(name);
  ASSERT_TRUE(back.has_value()) << name;
  EXPECT_EQ(*back, op) << name;
  int arity = opcode_arity(op);
  EXPECT_TRUE(arity == kVariadic || (arity >= 0 && arity <= 5)) << name;
}

INSTANTIATE_TEST_SUITE_P(AllOpcodes, OpcodeTable, ::testing::Range(0, kOpcodeCount),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string n(opcode_name(static_cast<Opcode>(info.param)));
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(OpcodeTable, SpellingsAreUniqueAndUnknownNamesAreRejected) {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpcodeCount; ++i) EXPECT_TRUE(names.insert(opcode_name(static_cast<Opcode>(i))).second);
  EXPECT_FALSE(opcode_from_name("ad").has_value());
  EXPECT_FALSE(opcode_from_name("").has_value());
  EXPECT_FALSE(opcode_from_name("infeed").has_value());
}

}  // namespace
}  // namespace podsim::ir
