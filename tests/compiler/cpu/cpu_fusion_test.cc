// Randomized tests of the CPU target's block engine and reduce kernel against the
// reference evaluator: long elementwise chains with broadcasts, transposes, slices,
// reverses and iota over shapes that are not multiples of the block size, in f32 and
// bf16 (bit-exact: the CPU target evaluates elementwise ops with the evaluator's
// expressions); reductions over every axis and axis set, fused with their producers
// or not (integers and 16-bit floats bit-exact, f32 sums within the reassociation
// bound 2 (R - 1) u sum|x| documented in compiler/cpu/reduce_kernel.h, max/min
// exact up to the sign of zero).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::leaves;
using testing::pointers;
using testing::random_literal;

std::unique_ptr<ir::Module> parse(const std::string& text) {
  return ir::parse_module(text, "<test>");
}

// Runs text on the evaluator and on the CPU target (passes off and on) and checks
// every result leaf with `bound` (null: bit-exact).
void check_against_evaluator(const std::string& text, const std::vector<ir::Literal>& args,
                             const testing::Bound& bound = nullptr) {
  SCOPED_TRACE(text);
  std::unique_ptr<ir::Module> module = parse(text);
  const ir::Literal want = ir::evaluate(*module, args);
  for (bool passes : {false, true}) {
    SCOPED_TRACE(passes ? "with passes" : "without passes");
    CompileOptions options;
    options.run_passes = passes;
    const std::vector<ir::Literal> got = compile(*module, options)->run(pointers(args));
    const auto g = leaves(got), w = leaves(want);
    ASSERT_EQ(g.size(), w.size());
    for (size_t k = 0; k < g.size(); ++k)
      EXPECT_TRUE(arrays_match(*g[k], *w[k], bound, passes)) << "leaf " << k;
  }
}

// A random DAG of elementwise ops over [a, b] values, fed by parameters read directly,
// broadcast along either dimension, transposed, sliced, reversed, and by iota and
// scalar constants.
class ChainBuilder {
 public:
  ChainBuilder(std::string type, int64_t a, int64_t b, uint64_t seed)
      : t_(std::move(type)), a_(a), b_(b), rng_(seed) {}

  std::string build(int ops) {
    const std::string s = shape();
    param(s);                                                                     // p0 [a,b]
    param(s);                                                                     // p1 [a,b]
    const std::string row = param(fmt::format("{}[{}]", t_, b_));                 // p2 [b]
    const std::string col = param(fmt::format("{}[{}]", t_, a_));                 // p3 [a]
    const std::string tr = param(fmt::format("{}[{},{}]", t_, b_, a_));           // p4 [b,a]
    const std::string big = param(fmt::format("{}[{},{}]", t_, a_ + 2, b_ + 3));  // p5
    add(fmt::format("broadcast({}), dimensions={{1}}", row));
    add(fmt::format("broadcast({}), dimensions={{0}}", col));
    add(fmt::format("transpose({}), dimensions={{1,0}}", tr));
    add(fmt::format("slice({}), slice={{[1:{}], [2:{}]}}", big, a_ + 1, b_ + 2));
    add(fmt::format("reverse({}), dimensions={{0,1}}", pick()));
    const std::string iota = def(fmt::format("s32[{},{}]", a_, b_), "iota(), iota_dimension=1");
    add(fmt::format("convert({})", iota));
    for (int k = 0; k < ops; ++k) step();
    body_ += fmt::format("  ROOT out = ({0}, {0}) tuple({1}, {2})\n", s, values_.back(),
                         values_[values_.size() / 2]);
    return "HloModule chain\n\nENTRY main {\n" + body_ + "}\n";
  }

  const std::vector<ir::Shape>& parameters() const { return params_; }

 private:
  std::string shape() const { return fmt::format("{}[{},{}]", t_, a_, b_); }

  std::string def(const std::string& shape, const std::string& expr) {
    const std::string name = fmt::format("v{}", counter_++);
    body_ += fmt::format("  {} = {} {}\n", name, shape, expr);
    return name;
  }
  std::string param(const std::string& s) {
    const std::string name = def(s, fmt::format("parameter({})", params_.size()));
    params_.push_back(ir::parse_shape(s));
    if (params_.size() <= 2) values_.push_back(name);
    return name;
  }
  void add(const std::string& expr) { values_.push_back(def(shape(), expr)); }

  std::string pick() {
    // Recent values more likely, so that chains get long.
    std::geometric_distribution<size_t> back(0.3);
    const size_t k = std::min(back(rng_), values_.size() - 1);
    return values_[values_.size() - 1 - k];
  }

  void step() {
    static const char* binary[] = {"add", "subtract", "multiply", "maximum", "minimum", "divide"};
    static const char* unary[] = {"negate", "abs",  "tanh",    "exponential",
                                  "floor",  "sine", "logistic"};
    switch (rng_() % 6) {
      case 0:
      case 1:
      case 2:
        add(fmt::format("{}({}, {})", binary[rng_() % 6], pick(), pick()));
        break;
      case 3:
        add(fmt::format("{}({})", unary[rng_() % 7], pick()));
        break;
      case 4: {
        const std::string x = pick(), y = pick();
        const std::string p = def(fmt::format("pred[{},{}]", a_, b_),
                                  fmt::format("compare({}, {}), direction=LT", x, y));
        add(fmt::format("select({}, {}, {})", p, x, y));
        break;
      }
      default: {
        const std::string c =
            def(t_ + "[]", fmt::format("constant({})", static_cast<int>(rng_() % 7) - 3));
        add(fmt::format("multiply({}, {})", pick(),
                        def(shape(), fmt::format("broadcast({}), dimensions={{}}", c))));
      }
    }
  }

  std::string t_;
  int64_t a_, b_;
  std::mt19937_64 rng_;
  std::string body_;
  std::vector<std::string> values_;
  std::vector<ir::Shape> params_;
  int counter_ = 0;
};

struct ChainCase {
  std::string type;
  int64_t a, b;
};

class ElementwiseChainTest : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ElementwiseChainTest, MatchesEvaluatorBitForBit) {
  const ChainCase c = GetParam();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    ChainBuilder builder(c.type, c.a, c.b, seed * 7919 + static_cast<uint64_t>(c.a * 31 + c.b));
    const std::string text = builder.build(40);
    std::mt19937_64 rng(seed);
    std::vector<ir::Literal> args;
    for (const ir::Shape& s : builder.parameters()) args.push_back(random_literal(s, rng));
    check_against_evaluator(text, args);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseChainTest,
                         ::testing::Values(ChainCase{"f32", 1, 1}, ChainCase{"f32", 3, 5},
                                           ChainCase{"f32", 7, 4099}, ChainCase{"f32", 130, 129},
                                           ChainCase{"f32", 64, 1024}, ChainCase{"bf16", 5, 3001},
                                           ChainCase{"f16", 33, 65}, ChainCase{"f64", 9, 911}),
                         [](const ::testing::TestParamInfo<ChainCase>& info) {
                           return fmt::format("{}_{}x{}", info.param.type, info.param.a,
                                              info.param.b);
                         });

TEST(ElementwiseChain, IntegerOpsAndFallbacksMatchBitForBit) {
  // Ops with typed loops (add, multiply, max, and, xor, compare/select) and ops the
  // engine leaves to the evaluator's implementation (divide, remainder, shifts).
  const std::string text = R"(HloModule ints
ENTRY main {
  a = s32[3,5000] parameter(0)
  b = s32[3,5000] parameter(1)
  s = s32[3,5000] add(a, b)
  m = s32[3,5000] multiply(s, a)
  d = s32[3,5000] divide(m, b)
  r = s32[3,5000] remainder(d, a)
  sh = s32[3,5000] shift-right-arithmetic(m, b)
  x = s32[3,5000] xor(r, sh)
  c = pred[3,5000] compare(x, a), direction=GT
  mx = s32[3,5000] maximum(x, b)
  sel = s32[3,5000] select(c, mx, d)
  u = u8[3,5000] convert(sel)
  f = f32[3,5000] convert(sel)
  ROOT out = (s32[3,5000], u8[3,5000], f32[3,5000]) tuple(sel, u, f)
})";
  std::mt19937_64 rng(5);
  const ir::Shape s = ir::parse_shape("s32[3,5000]");
  std::vector<ir::Literal> args{random_literal(s, rng, -100, 100), random_literal(s, rng, -40, 40)};
  check_against_evaluator(text, args);
}

TEST(ElementwiseChain, ConcatenateAndPadInsideFusionsMatchBitForBit) {
  // Concatenations along each dimension (one operand empty, one a single element wide),
  // pads with negative, interior and ordinary padding, mixed with elementwise ops so that
  // the fusion pass puts them in loop fusions.
  const std::string text = R"(HloModule concat_pad
ENTRY main {
  a = f32[37,50] parameter(0)
  b = f32[37,1] parameter(1)
  e = f32[37,0] parameter(2)
  c = f32[37,77] parameter(3)
  v = f32[21,128] parameter(4)
  na = f32[37,50] negate(a)
  cat1 = f32[37,128] concatenate(na, e, b, c), dimensions={1}
  t = f32[37,128] tanh(cat1)
  cat0 = f32[58,128] concatenate(t, v), dimensions={0}
  z = f32[] constant(-1.5)
  p = f32[59,257] pad(cat0, z), padding=3_-2_0x-1_3_1
  s = f32[59,257] sine(p)
  ea = f32[37,50] exponential(a)
  q = f32[40,103] pad(ea, z), padding=1_2_0x0_4_1
  one = f32[] constant(1)
  ob = f32[40,103] broadcast(one), dimensions={}
  r = f32[40,103] add(q, ob)
  ROOT out = (f32[59,257], f32[40,103], f32[37,128]) tuple(s, r, cat1)
})";
  std::mt19937_64 rng(21);
  std::vector<ir::Literal> args;
  for (const char* shape : {"f32[37,50]", "f32[37,1]", "f32[37,0]", "f32[37,77]", "f32[21,128]"})
    args.push_back(random_literal(ir::parse_shape(shape), rng));
  check_against_evaluator(text, args);
}

TEST(ElementwiseChain, LargeResultsAreWrittenAroundTheCacheAndMatch) {
  // More than kStreamingBytes (8 MiB) of result: non-temporal stores.
  const std::string text = R"(HloModule big
ENTRY main {
  x = f32[2500000] parameter(0)
  y = f32[2500000] parameter(1)
  m = f32[2500000] multiply(x, y)
  ROOT s = f32[2500000] subtract(m, x)
})";
  std::mt19937_64 rng(22);
  const ir::Shape shape = ir::parse_shape("f32[2500000]");
  check_against_evaluator(text, {random_literal(shape, rng), random_literal(shape, rng)});
}

TEST(ElementwiseChain, FusionWithExponentiallyManyIndexRemappingsStillRuns) {
  // v(k+1) = v(k) + transpose(v(k)) in one hand-written fusion: the block engine would
  // evaluate v(0) under 2^24 different index remappings; the fusion runs through the
  // evaluator instead.
  std::string fused = "fused {\n  v0 = f32[2,2] parameter(0)\n";
  for (int k = 0; k < 24; ++k)
    fused += fmt::format(
        "  t{0} = f32[2,2] transpose(v{0}), dimensions={{1,0}}\n  v{1} = f32[2,2] add(v{0}, "
        "t{0})\n",
        k, k + 1);
  fused += "  ROOT r = f32[2,2] negate(v24)\n}\n\n";
  const std::string text = "HloModule diamonds\n\n" + fused +
                           "ENTRY main {\n  x = f32[2,2] parameter(0)\n"
                           "  ROOT f = f32[2,2] fusion(x), kind=kLoop, calls=fused\n}\n";
  std::mt19937_64 rng(23);
  check_against_evaluator(text, {random_literal(ir::parse_shape("f32[2,2]"), rng)});
}

// ---------------------------------------------------------------------------
// Reductions.

std::string reducer(const std::string& t, const std::string& op) {
  return fmt::format(
      "{0}_{1} {{\n  x = {0}[] parameter(0)\n  y = {0}[] parameter(1)\n  ROOT r = {0}[] {1}(x, "
      "y)\n}}\n\n",
      t, op);
}

std::string dims_text(const std::vector<int64_t>& d) {
  return fmt::format("{}", fmt::join(d, ","));
}

struct ReduceCase {
  std::string type, op;
  std::vector<int64_t> dims, reduced;
};

// reduce(x * y + z) over `reduced`, so that with passes the producers fuse into it.
std::string reduce_module(const ReduceCase& c) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < c.dims.size(); ++d)
    if (std::find(c.reduced.begin(), c.reduced.end(), static_cast<int64_t>(d)) == c.reduced.end())
      out.push_back(c.dims[d]);
  const std::string in = fmt::format("{}[{}]", c.type, dims_text(c.dims));
  const char* init = c.op == "add"        ? "0"
                     : c.op == "multiply" ? "1"
                     : c.op == "maximum"  ? "-inf"
                                          : "inf";
  if (!ir::is_float(*ir::type_from_name(c.type)))
    init = c.op == "maximum" ? "-100000" : c.op == "minimum" ? "100000" : init;
  return "HloModule reduce\n\n" + reducer(c.type, c.op) + "ENTRY main {\n" +
         fmt::format("  x = {0} parameter(0)\n  y = {0} parameter(1)\n  z = {0} parameter(2)\n",
                     in) +
         fmt::format(
             "  xy = {0} multiply(x, y)\n  v = {0} add(xy, z)\n  init = {1}[] constant({2})\n", in,
             c.type, init) +
         fmt::format("  ROOT r = {}[{}] reduce(v, init), dimensions={{{}}}, to_apply={}_{}\n}}\n",
                     c.type, dims_text(out), dims_text(c.reduced), c.type, c.op);
}

// Per output element: 2 (R - 1) u sum|x| for float sums (u = 2^-24 for f32, 2^-53 for
// f64), from the inputs.
testing::Bound sum_bound(const ReduceCase& c, const std::vector<ir::Literal>& args, double u) {
  const int64_t n = args[0].num_elements();
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < c.dims.size(); ++d)
    if (std::find(c.reduced.begin(), c.reduced.end(), static_cast<int64_t>(d)) == c.reduced.end())
      out_dims.push_back(c.dims[d]);
  const int64_t outputs = ir::checked_num_elements(out_dims);
  const int64_t reduced = n / std::max<int64_t>(outputs, 1);
  auto sums = std::make_shared<std::vector<double>>(static_cast<size_t>(outputs), 0.0);
  std::vector<int64_t> index(c.dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < c.dims.size(); ++d)
      if (std::find(c.reduced.begin(), c.reduced.end(), static_cast<int64_t>(d)) == c.reduced.end())
        o = o * c.dims[d] + index[d];
    const double x = args[0].get_as_double(i) * args[1].get_as_double(i) + args[2].get_as_double(i);
    (*sums)[static_cast<size_t>(o)] += std::abs(x);
    for (size_t d = c.dims.size(); d-- > 0;) {
      if (++index[d] < c.dims[d]) break;
      index[d] = 0;
    }
  }
  // The evaluator's own products and sums carry rounding too: one more term of slack.
  const double scale = 2.0 * static_cast<double>(reduced + 1) * u;
  return [sums, scale](int64_t o) { return scale * (*sums)[static_cast<size_t>(o)] + 1e-30; };
}

void PrintTo(const ReduceCase& c, std::ostream* os) {
  *os << c.type << " " << c.op << " [" << dims_text(c.dims) << "] over {" << dims_text(c.reduced)
      << "}";
}

class ReduceTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceTest, MatchesEvaluator) {
  const ReduceCase c = GetParam();
  std::mt19937_64 rng(c.dims.size() * 131 + c.reduced.size());
  const ir::Shape s(*ir::type_from_name(c.type), c.dims);
  const bool product = c.op == "multiply";
  // Products of many factors stay finite and exact-ish near 1; integer data is small.
  std::vector<ir::Literal> args{random_literal(s, rng, product ? 0.9 : -3, product ? 1.1 : 3),
                                random_literal(s, rng, product ? 0.9 : -3, product ? 1.1 : 3),
                                random_literal(s, rng, product ? 0 : -3, product ? 0.01 : 3)};
  testing::Bound bound;
  if ((c.type == "f32" || c.type == "f64") && c.op == "add") {
    bound = sum_bound(c, args, c.type == "f32" ? 0x1p-24 : 0x1p-53);
  } else if (c.type == "f32" && c.op == "multiply") {
    // Products of R factors in any order: relative error below (R + 2) u each way.
    std::unique_ptr<ir::Module> module = parse(reduce_module(c));
    auto want = std::make_shared<ir::Literal>(ir::evaluate(*module, args));
    const double r =
        static_cast<double>(s.num_elements() / std::max<int64_t>(want->num_elements(), 1));
    bound = [want, r](int64_t o) {
      return 2.0 * (r + 2) * 0x1p-24 * std::abs(want->get_as_double(o));
    };
  }
  check_against_evaluator(reduce_module(c), args, bound);
}

std::vector<ReduceCase> reduce_cases() {
  std::vector<ReduceCase> cases;
  const std::vector<std::vector<int64_t>> shapes = {
      {7, 300, 5}, {3, 5, 20000}, {40000, 3, 2}, {1, 65536, 1}};
  const std::vector<std::vector<int64_t>> axes = {{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  for (const auto& dims : shapes)
    for (const auto& reduced : axes) {
      cases.push_back({"f32", "add", dims, reduced});
      cases.push_back({"s32", "add", dims, reduced});
    }
  for (const auto& reduced : axes) {
    cases.push_back({"f32", "maximum", {6, 700, 9}, reduced});
    cases.push_back({"f32", "minimum", {9, 33, 700}, reduced});
    cases.push_back({"bf16", "add", {5, 40, 300}, reduced});
    cases.push_back({"f32", "multiply", {4, 30, 70}, reduced});
    cases.push_back({"s32", "maximum", {6, 5000, 3}, reduced});
    cases.push_back({"f64", "add", {3, 17, 4100}, reduced});
  }
  cases.push_back({"f32", "add", {1 << 20}, {0}});
  cases.push_back({"f32", "add", {0, 5}, {0}});
  cases.push_back({"f32", "add", {5, 0}, {1}});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReduceTest, ::testing::ValuesIn(reduce_cases()),
                         [](const ::testing::TestParamInfo<ReduceCase>& info) {
                           const ReduceCase& c = info.param;
                           return fmt::format(
                               "{}_{}_{}_over_{}", c.type, c.op, fmt::join(c.dims, "x"),
                               c.reduced.empty() ? "none"
                                                 : fmt::format("{}", fmt::join(c.reduced, "")));
                         });

TEST(Reduce, GeneralToApplyAndVariadicRunThroughTheEvaluator) {
  const std::string text = R"(HloModule argmax
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GE
  v = f32[] select(gt, v0, v1)
  i = s32[] select(gt, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
sumsq {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  bb = f32[] multiply(b, b)
  ROOT s = f32[] add(a, bb)
}
ENTRY main {
  x = f32[6,50] parameter(0)
  idx = s32[6,50] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  am = (f32[6], s32[6]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
  z = f32[] constant(0)
  sq = f32[50] reduce(x, z), dimensions={0}, to_apply=sumsq
  m = f32[6] get-tuple-element(am), index=0
  i = s32[6] get-tuple-element(am), index=1
  ROOT out = (f32[6], s32[6], f32[50]) tuple(m, i, sq)
})";
  std::mt19937_64 rng(3);
  std::vector<ir::Literal> args{random_literal(ir::parse_shape("f32[6,50]"), rng)};
  check_against_evaluator(text, args);
}

}  // namespace
}  // namespace podsim::cpu
