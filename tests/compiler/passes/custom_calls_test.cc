// Custom calls with a meaning: targets a user defines as HLO computations, and XLA's own
// markers. Each expanded module must compute what the same computation written out by
// hand computes (bit for bit on the reference evaluator; on the CPU target, whose
// transcendental functions are its own, within 4 ulps).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "compiler/cpu/cpu_compiler.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes::testing {
namespace {

// Within 4 float ulps element by element (the CPU target's exponential and tanh are its own).
std::string near(const Literal& a, const Literal& b) {
  if (a.shape().is_tuple()) {
    for (size_t k = 0; k < a.elements().size(); ++k)
      if (std::string d = near(a.elements()[k], b.elements()[k]); !d.empty()) return d;
    return "";
  }
  if (!a.shape().compatible(b.shape())) return "shapes differ";
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.get_as_double(i), y = b.get_as_double(i);
    if (!(x == y || std::fabs(x - y) <= 4 * 0x1p-24 * std::fabs(y)) &&
        !(std::isnan(x) && std::isnan(y)))
      return "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
  }
  return "";
}

class CustomCalls : public ::testing::Test {
 protected:
  void SetUp() override { clear_custom_call_definitions(); }
  void TearDown() override { clear_custom_call_definitions(); }

  static void define(const std::string& text) {
    define_custom_calls(*ir::parse_module(text), "defs.hlo");
  }

  // `text` expanded, checked against `by_hand` on random arguments, on the evaluator
  // and on the CPU target.
  static std::unique_ptr<Module> check_expands_to(const std::string& text,
                                                  const std::string& by_hand) {
    auto expanded = ir::parse_module(text);
    EXPECT_TRUE(make_custom_call_expander()->run(*expanded));
    ir::verify_module(*expanded);
    EXPECT_EQ(count(*expanded, Opcode::kCustomCall), 0) << ir::print_module(*expanded);
    auto expected = ir::parse_module(by_hand);
    auto on_cpu = cpu::compile(*ir::parse_module(text));  // the CPU driver expands too
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const Literal want = run_module(*expected, seed).at(0);
      EXPECT_EQ(difference(run_module(*expanded, seed).at(0), want), "")
          << ir::print_module(*expanded);
      std::mt19937_64 rng(seed);
      std::vector<Literal> args = random_arguments(*expected->entry(), rng);
      std::vector<const Literal*> pointers;
      for (const Literal& a : args) pointers.push_back(&a);
      std::vector<Literal> got = on_cpu->run(pointers);
      EXPECT_EQ(near(got.size() == 1 ? got[0] : Literal::tuple(std::move(got)), want), "") << "CPU";
    }
    return expanded;
  }
};

// The reducers of the softmax definition and of the same softmax written out.
constexpr const char* kReducers = R"(
max (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

const std::string kSoftmaxDefinition = std::string("HloModule defs") + kReducers +
                                       R"(ENTRY __vendor_softmax (x: f32[4,8]) -> f32[4,8] {
  x = f32[4,8] parameter(0)
  low = f32[] constant(-inf)
  m = f32[4] reduce(x, low), dimensions={1}, to_apply=max
  mb = f32[4,8] broadcast(m), dimensions={0}
  d = f32[4,8] subtract(x, mb)
  e = f32[4,8] exponential(d)
  zero = f32[] constant(0)
  s = f32[4] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[4,8] broadcast(s), dimensions={0}
  ROOT y = f32[4,8] divide(e, sb)
})";

TEST_F(CustomCalls, DefinitionIsInlinedWithItsHelpers) {
  define(kSoftmaxDefinition);
  // Two calls share one copy of the helpers; '$' in the target matches '_' in the name.
  auto m = check_expands_to(R"(HloModule m
ENTRY e {
  p = f32[4,8] parameter(0)
  a = f32[4,8] custom-call(p), custom_call_target="__vendor$softmax"
  b = f32[4,8] custom-call(a), custom_call_target="__vendor_softmax"
  ROOT r = (f32[4,8], f32[4,8]) tuple(a, b)
})",
                            std::string("HloModule m") + kReducers + R"(ENTRY e {
  p = f32[4,8] parameter(0)
  low = f32[] constant(-inf)
  zero = f32[] constant(0)
  m1 = f32[4] reduce(p, low), dimensions={1}, to_apply=max
  mb1 = f32[4,8] broadcast(m1), dimensions={0}
  d1 = f32[4,8] subtract(p, mb1)
  e1 = f32[4,8] exponential(d1)
  s1 = f32[4] reduce(e1, zero), dimensions={1}, to_apply=add
  sb1 = f32[4,8] broadcast(s1), dimensions={0}
  a = f32[4,8] divide(e1, sb1)
  m2 = f32[4] reduce(a, low), dimensions={1}, to_apply=max
  mb2 = f32[4,8] broadcast(m2), dimensions={0}
  d2 = f32[4,8] subtract(a, mb2)
  e2 = f32[4,8] exponential(d2)
  s2 = f32[4] reduce(e2, zero), dimensions={1}, to_apply=add
  sb2 = f32[4,8] broadcast(s2), dimensions={0}
  b = f32[4,8] divide(e2, sb2)
  ROOT r = (f32[4,8], f32[4,8]) tuple(a, b)
})");
  EXPECT_EQ(m->computations().size(), 3u) << ir::print_module(*m);
}

TEST_F(CustomCalls, ScalarDefinitionAppliesElementwise) {
  define(R"(HloModule defs
ENTRY gelu_tanh (x: f32[]) -> f32[] {
  x = f32[] parameter(0)
  half = f32[] constant(0.5)
  one = f32[] constant(1)
  c = f32[] constant(0.7978845608)
  k = f32[] constant(0.044715)
  xx = f32[] multiply(x, x)
  x3 = f32[] multiply(x, xx)
  kx3 = f32[] multiply(k, x3)
  sum = f32[] add(x, kx3)
  inner = f32[] multiply(c, sum)
  hx = f32[] multiply(half, x)
  t = f32[] tanh(inner)
  t1 = f32[] add(one, t)
  ROOT y = f32[] multiply(hx, t1)
})");
  check_expands_to(R"(HloModule m
ENTRY e {
  p = f32[3,5] parameter(0)
  ROOT g = f32[3,5] custom-call(p), custom_call_target="gelu_tanh"
})",
                   R"(HloModule m
ENTRY e {
  x = f32[3,5] parameter(0)
  h = f32[] constant(0.5)
  half = f32[3,5] broadcast(h), dimensions={}
  o = f32[] constant(1)
  one = f32[3,5] broadcast(o), dimensions={}
  cs = f32[] constant(0.7978845608)
  c = f32[3,5] broadcast(cs), dimensions={}
  ks = f32[] constant(0.044715)
  k = f32[3,5] broadcast(ks), dimensions={}
  xx = f32[3,5] multiply(x, x)
  x3 = f32[3,5] multiply(x, xx)
  kx3 = f32[3,5] multiply(k, x3)
  sum = f32[3,5] add(x, kx3)
  inner = f32[3,5] multiply(c, sum)
  hx = f32[3,5] multiply(half, x)
  t = f32[3,5] tanh(inner)
  t1 = f32[3,5] add(one, t)
  ROOT y = f32[3,5] multiply(hx, t1)
})");
}

TEST_F(CustomCalls, XlaMarkersAreTheirOperand) {
  check_expands_to(R"(HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  s = f32[2,3] custom-call(p), custom_call_target="Sharding", sharding={replicated}
  f = f32[2,3] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[2,3] negate(f)
  t = f32[2,3] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  h = f32[2,3] custom-call(t), custom_call_target="MoveToHost"
  d = f32[2,3] custom-call(h), custom_call_target="MoveToDevice"
  a = f32[2,3] custom-call(d), custom_call_target="annotate_device_placement"
  ROOT m = f32[2,3] domain(a), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
})",
                   R"(HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT n = f32[2,3] negate(p)
})");
}

TEST_F(CustomCalls, XlaTopKIsTopk) {
  for (const char* direction : {"GT", "LT"}) {
    const std::string largest = std::string(direction) == "GT" ? "true" : "false";
    check_expands_to(fmt::format(R"(HloModule m
compare (a: f32[], b: f32[]) -> pred[] {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction={}
}}
ENTRY e {{
  p = f32[3,9] parameter(0)
  ROOT t = (f32[3,4], s32[3,4]) custom-call(p), custom_call_target="TopK", to_apply=compare
}})",
                                 direction),
                     "HloModule m\nENTRY e {\n  p = f32[3,9] parameter(0)\n  ROOT t = (f32[3,4], "
                     "s32[3,4]) topk(p), k=4, "
                     "largest=" +
                         largest + "\n}");
  }
}

TEST_F(CustomCalls, ALaterDefinitionReplacesAnEarlierOne) {
  define(
      "HloModule a\nENTRY op (x: s32[4]) -> s32[4] {\n  x = s32[4] parameter(0)\n  ROOT n = s32[4] "
      "negate(x)\n}");
  const std::string key = custom_call_definitions_key();
  define(
      "HloModule b\nENTRY op (x: s32[4]) -> s32[4] {\n  x = s32[4] parameter(0)\n  ROOT n = s32[4] "
      "not(x)\n}");
  EXPECT_NE(custom_call_definitions_key(), key);  // compiled executables do not carry over
  check_expands_to(
      R"(HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  ROOT c = s32[4] custom-call(p), custom_call_target="op"
})",
      "HloModule m\nENTRY e {\n  p = s32[4] parameter(0)\n  ROOT n = s32[4] not(p)\n}");
}

TEST_F(CustomCalls, ShapesTheDefinitionDoesNotTakeAreAnError) {
  define(kSoftmaxDefinition);
  auto m = ir::parse_module(R"(HloModule m
ENTRY e {
  p = f32[4,9] parameter(0)
  ROOT c = f32[4,9] custom-call(p), custom_call_target="__vendor_softmax"
})");
  try {
    make_custom_call_expander()->run(*m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "custom-call c (line 4) of '__vendor_softmax' is (f32[4,9]) -> f32[4,9], but "
                  "its definition __vendor_softmax (defs.hlo) is (f32[4,8]) -> f32[4,8]"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CustomCalls, AnUndefinedTargetSaysHowToDefineIt) {
  auto m = ir::parse_module(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p), custom_call_target="my_kernel"
})");
  EXPECT_FALSE(make_custom_call_expander()->run(*m));
  try {
    run_module(*m, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "custom-call target 'my_kernel' (line 4, instruction c) has no definition"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--custom-calls defs.hlo"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace podsim::passes::testing
