// The IR mutation API that passes use: replacing uses, removing, reordering, users and
// fresh names.
#include "compiler/ir/module.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"

namespace podsim::ir {
namespace {

const char* kModule = R"(HloModule m
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  n = f32[3] negate(a)
  nn = f32[3] negate(n)
  s = f32[3] add(nn, b)
  ROOT r = f32[3] multiply(s, s)
})";

Literal vec(std::initializer_list<double> v) {
  Literal l(Shape(PrimitiveType::kF32, {static_cast<int64_t>(v.size())}));
  int64_t i = 0;
  for (double x : v) l.set_from_double(i++, x);
  return l;
}

TEST(ModuleMutation, ReplaceUsesThenRemoveDeadKeepsResults) {
  auto m = parse_module(kModule);
  Computation* c = m->entry();
  std::vector<Literal> args = {vec({1, -2, 3}), vec({0.5, 0.25, 4})};
  Literal before = evaluate(*m, args);

  // negate(negate(a)) -> a
  c->replace_all_uses(c->find("nn"), c->find("a"));
  EXPECT_EQ(c->find("s")->operand(0), c->find("a"));
  auto users = c->users();
  EXPECT_TRUE(users[c->find("nn")].empty());
  EXPECT_EQ(users[c->find("s")].size(), 1u);  // multiply(s, s) counts once
  c->remove_if([](const Instruction* i) { return i->name() == "n" || i->name() == "nn"; });
  EXPECT_EQ(c->instruction_count(), 4);
  verify_module(*m);
  EXPECT_EQ(evaluate(*m, args), before);
}

TEST(ModuleMutation, RemovingAUsedInstructionOrTheRootIsRefused) {
  auto m = parse_module(kModule);
  Computation* c = m->entry();
  EXPECT_THROW(c->remove_if([](const Instruction* i) { return i->name() == "n"; }), Error);
  EXPECT_THROW(c->remove_if([](const Instruction* i) { return i->name() == "r"; }), Error);
  EXPECT_EQ(c->instruction_count(), 6);
}

TEST(ModuleMutation, SortTopologicallyPlacesNewInstructionsBeforeTheirUsers) {
  auto m = parse_module(kModule);
  Computation* c = m->entry();
  std::vector<Literal> args = {vec({1, 2, 3}), vec({4, 5, 6})};
  Literal before = evaluate(*m, args);
  // Append an equivalent of s at the end and let r use it: r now precedes its operand.
  Instruction* s = c->find("s");
  Instruction* s2 = c->add(s->clone(c->unique_name("s"), s->operands()));
  c->replace_all_uses(s, s2);
  c->remove_if([&](const Instruction* i) { return i == s; });
  EXPECT_FALSE(check_module(*m).empty());  // use before definition
  c->sort_topologically();
  EXPECT_TRUE(check_module(*m).empty()) << check_module(*m)[0];
  EXPECT_EQ(evaluate(*m, args), before);
  EXPECT_EQ(c->instructions().back().get(), c->root());
}

TEST(ModuleMutation, UniqueNamesDoNotCollide) {
  auto m = parse_module(R"(HloModule m
ENTRY main {
  x.0 = f32[] parameter(0)
  ROOT x.1 = f32[] negate(x.0)
})");
  Computation* c = m->entry();
  std::string a = c->unique_name("x");
  std::string b = c->unique_name("x");
  EXPECT_NE(a, "x.0");
  EXPECT_NE(a, "x.1");
  EXPECT_NE(a, b);
  EXPECT_EQ(m->unique_computation_name("main"), "main.0");
}

}  // namespace
}  // namespace podsim::ir
