// Elementwise ops and fusions on the vector unit, run on the functional model and
// compared with the reference evaluator (tolerances: tpu_test_util.h).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

// Shapes that are and are not multiples of the tiles (8x8 on tiny, 8x128 elsewhere).
const char* const kShapes[] = {"[]", "[1]", "[5]", "[64]", "[13,37]", "[8,8]", "[2,3,17]", "[130,9]", "[3,1,4,1,5]"};

std::string binary_module(const std::string& op, const std::string& type, const std::string& shape) {
  return fmt::format(R"(HloModule m
ENTRY e {{
  x = {0}{1} parameter(0)
  y = {0}{1} parameter(1)
  ROOT r = {0}{1} {2}(x, y)
}})",
                     type, shape, op);
}

std::string unary_module(const std::string& op, const std::string& type, const std::string& shape) {
  return fmt::format(R"(HloModule m
ENTRY e {{
  x = {0}{1} parameter(0)
  ROOT r = {0}{1} {2}(x)
}})",
                     type, shape, op);
}

TEST(TpuElementwise, F32BinaryOpsAllShapesOnTiny) {
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"})
    for (const char* shape : kShapes) check(Case{binary_module(op, "f32", shape), "tiny"});
}

TEST(TpuElementwise, F32BinaryOpsOnV5eAndV4) {
  for (const char* chip : {"v5e", "v4"})
    for (const char* shape : {"[5]", "[13,37]", "[3,200]", "[2,9,130]"})
      check(Case{binary_module("multiply", "f32", shape), chip});
}

TEST(TpuElementwise, PowerOfPositiveBase) {
  Case c{binary_module("power", "f32", "[7,11]"), "tiny", 1e-6, 0};
  c.lo = 0.1;
  c.hi = 2;
  check(c);
}

TEST(TpuElementwise, F32UnaryOps) {
  for (const char* op : {"negate", "abs", "exponential", "tanh", "logistic", "floor", "ceil", "sign"})
    check(Case{unary_module(op, "f32", "[9,21]"), "tiny", 1e-6, 1e-7});
  for (const char* op : {"log", "sqrt", "rsqrt"}) {
    Case c{unary_module(op, "f32", "[9,21]"), "tiny", 1e-6, 1e-7};
    c.lo = 0.01;
    c.hi = 4;
    check(c);
  }
}

// Zeros, infinities, NaN, the smallest and largest magnitudes, and a few plain values.
std::vector<float> float_specials() {
  const float inf = std::numeric_limits<float>::infinity(), max = std::numeric_limits<float>::max();
  return {0.0f,
          -0.0f,
          inf,
          -inf,
          std::numeric_limits<float>::quiet_NaN(),
          std::numeric_limits<float>::denorm_min(),
          std::numeric_limits<float>::min(),
          max,
          -max,
          1.0f,
          -3.0f,
          0.1f};
}

// Runs hlo on v5e: its result within `ulps` units in the last place (of the evaluator's
// f32 result, subnormals counted as the smallest normals) of the evaluator's.
void expect_within_ulps(const std::string& hlo, const std::vector<ir::Literal>& args, double ulps) {
  SCOPED_TRACE(hlo);
  const ir::Literal want = ir::evaluate(*ir::parse_module(hlo), args);
  const std::vector<ir::Literal> got =
      run_executable(compile_text(hlo, "v5e"), args, {want.shape()});
  std::vector<double> bounds;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    int exponent = 0;
    std::frexp(want.get_as_double(i), &exponent);
    bounds.push_back(std::ldexp(ulps, std::max(exponent, -125) - 24));
  }
  EXPECT_TRUE(near(got.at(0), want, 0, 0, &bounds));
}

// erf and atan2 are composed of vector instructions (polynomial fits, vector_codegen.cc):
// within 4 ulps of the evaluator's f32 result (C's erf and atan2 in double, rounded) from
// subnormals to huge values, both signs, zeros, infinities and NaN.
TEST(TpuElementwise, ErfAndAtan2WithinFourUlpsAcrossTheRange) {
  const std::vector<float> specials = float_specials();
  std::mt19937_64 rng(7);
  auto magnitude = [&](double lo_exp, double hi_exp) {  // 10^U(lo, hi), either sign
    const double m = std::pow(10.0, std::uniform_real_distribution<double>(lo_exp, hi_exp)(rng));
    return static_cast<float>(rng() % 2 ? m : -m);
  };
  std::vector<float> x = specials;
  while (x.size() < 4096) x.push_back(magnitude(-44, 1.2));  // erf is 1 from |x| = 4 on
  expect_within_ulps(unary_module("erf", "f32", "[4096]"),
                     {literal(ir::PrimitiveType::kF32, {4096}, x)}, 4);

  std::vector<float> y, z;
  for (float a : specials)
    for (float b : specials) y.push_back(a), z.push_back(b);
  while (y.size() < 4096) {
    const double scale = std::uniform_real_distribution<double>(-30, 30)(rng);
    y.push_back(magnitude(scale - 3, scale + 3));  // ratios from 1e-6 to 1e6
    z.push_back(y.size() % 7 ? magnitude(scale - 3, scale + 3) : magnitude(-30, 30));
  }
  expect_within_ulps(
      binary_module("atan2", "f32", "[4096]"),
      {literal(ir::PrimitiveType::kF32, {4096}, y), literal(ir::PrimitiveType::kF32, {4096}, z)},
      4);
}

// Sine, cosine and tangent reduce by pi / 2 exactly enough for any f32 (Payne-Hanek in
// integers, vector_codegen.cc): within 4 ulps of the evaluator (C's in double, rounded)
// from subnormals to the largest floats, at the f32 values nearest multiples of pi / 2
// (the hardest to reduce) too, with zeros, infinities and NaN.
TEST(TpuElementwise, SineCosineTangentWithinFourUlpsAcrossTheRange) {
  std::vector<float> x = float_specials();
  for (float v : {0.785398185f, -0.785398185f, 1.57079637f})
    x.push_back(v);  // pi / 4, pi / 2 rounded
  std::mt19937_64 rng(5);
  while (x.size() < 8192) {
    const double m = x.size() % 3
                         ? std::pow(10.0, std::uniform_real_distribution<double>(-40, 38.5)(rng))
                         : static_cast<double>(rng() % 2000000) * std::numbers::pi / 2;
    x.push_back(static_cast<float>(rng() % 2 ? m : -m));
  }
  const std::vector<ir::Literal> args = {literal(ir::PrimitiveType::kF32, {8192}, x)};
  for (const char* op : {"sine", "cosine", "tan"})
    expect_within_ulps(unary_module(op, "f32", "[8192]"), args, 4);
}

// Float remainder is exact (fmod, vector_codegen.cc): random bit patterns (every
// exponent, subnormals, both signs), pairs of nearby magnitudes and every pair of
// specials, bit for bit against the evaluator (NaN only as NaN).
TEST(TpuElementwise, FloatRemainderIsExactFmod) {
  const std::vector<float> specials = float_specials();
  std::mt19937 rng(11);
  std::vector<float> x, y;
  for (float a : specials)
    for (float b : specials) x.push_back(a), y.push_back(b);
  while (x.size() < 8192) {
    const float a = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    float b = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (x.size() % 2)
      b = a /
          std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000, static_cast<int>(rng() % 30));
    x.push_back(a);
    y.push_back(b);
  }
  const std::string hlo = binary_module("remainder", "f32", "[8192]");
  const std::vector<ir::Literal> args = {literal(ir::PrimitiveType::kF32, {8192}, x),
                                         literal(ir::PrimitiveType::kF32, {8192}, y)};
  const ir::Literal want = ir::evaluate(*ir::parse_module(hlo), args);
  const ir::Literal got = run_executable(compile_text(hlo, "v5e"), args, {want.shape()}).at(0);
  int64_t bad = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const float a = static_cast<float>(got.get_as_double(i)),
                b = static_cast<float>(want.get_as_double(i));
    if ((std::isnan(a) && std::isnan(b)) ||
        std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b))
      continue;
    if (bad++ == 0)
      ADD_FAILURE() << "fmod(" << x[static_cast<size_t>(i)] << ", " << y[static_cast<size_t>(i)]
                    << "): got " << a << ", expected " << b;
  }
  EXPECT_EQ(bad, 0);
}

// Lanes hold f16 widened to f32, so its bitcasts rebuild the bits (expr.cc): every one
// of the 65536 patterns to f16 and back, to s16 and bf16, fused and not, as the evaluator,
// bit for bit but for signaling NaNs: a store to a 16-bit float quiets them, as hardware
// conversions do (sets the quiet bit: f16's 0x200, bf16's 0x40), where the evaluator keeps
// the pattern.
TEST(TpuElementwise, F16BitcastsOfEveryPattern) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = u16[65536] parameter(0)
  f = f16[65536] bitcast-convert(x)
  b = bf16[65536] bitcast-convert(x)
  back = u16[65536] bitcast-convert(f)
  s = s16[65536] bitcast-convert(f)
  fb = f16[65536] bitcast-convert(b)
  bb = bf16[65536] bitcast-convert(f)
  ROOT t = (f16[65536], u16[65536], s16[65536], f16[65536], bf16[65536]) tuple(f, back, s, fb, bb)
})";
  std::vector<double> patterns(65536);
  for (size_t k = 0; k < patterns.size(); ++k) patterns[k] = static_cast<double>(k);
  const std::vector<ir::Literal> args = {literal(ir::PrimitiveType::kU16, {65536}, patterns)};
  auto reference = ir::parse_module(hlo);
  std::vector<ir::Literal> want;
  flatten_into(ir::evaluate(*reference, args), want);
  auto patterns_of = [](const ir::Literal& l) {
    std::vector<uint16_t> v(static_cast<size_t>(l.num_elements()));
    std::memcpy(v.data(), l.bytes().data(), v.size() * 2);
    return v;
  };
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "fused" : "op by op");
    const std::vector<ir::Literal> got = run_executable(
        compile_text(hlo, "v5e", fuse), args, flat_shapes(reference->entry()->root()->shape()));
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      // The 16-bit float stores on the way, in order: f16 (f, back, s), bf16 then f16 (fb),
      // f16 then bf16 (bb); each may quiet what comes to it.
      const std::vector<uint16_t> stores = k == 3   ? std::vector<uint16_t>{0x7F80, 0x7C00}
                                           : k == 4 ? std::vector<uint16_t>{0x7C00, 0x7F80}
                                                    : std::vector<uint16_t>{0x7C00};
      const std::vector<uint16_t> a = patterns_of(got[k]), b = patterns_of(want[k]);
      int64_t bad = 0;
      for (size_t q = 0; q < a.size(); ++q) {
        std::vector<uint16_t> allowed = {b[q]};
        for (uint16_t exponent : stores)
          for (size_t n = allowed.size(); n-- > 0;) {
            const uint16_t h = allowed[n];
            if ((h & exponent) == exponent &&
                (h & ~exponent & 0x7FFF) != 0)  // a NaN of that format
              allowed.push_back(static_cast<uint16_t>(h | (exponent == 0x7C00 ? 0x200 : 0x40)));
          }
        const bool ok = std::find(allowed.begin(), allowed.end(), a[q]) != allowed.end();
        if (!ok && bad++ == 0)
          ADD_FAILURE() << "output " << k << ", pattern " << q << ": got " << a[q] << ", expected "
                        << b[q];
      }
      EXPECT_EQ(bad, 0) << "output " << k;
    }
  }
}

TEST(TpuElementwise, Bf16InMemoryRoundsLikeTheEvaluator) {
  // Both sides compute in f32 and round every bf16 result once: exact.
  for (const char* op : {"add", "multiply", "divide", "maximum"}) {
    check(Case{binary_module(op, "bf16", "[17,19]")});
    check(Case{binary_module(op, "f16", "[17,19]")});
  }
  check(Case{unary_module("exponential", "bf16", "[33]")});
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[10,12] parameter(0)
  b = bf16[10,12] convert(x)
  c = bf16[10,12] multiply(b, b)
  ROOT r = f32[10,12] convert(c)
})"});
}

TEST(TpuElementwise, BroadcastsOfScalarsRowsAndColumns) {
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[13,21] parameter(0)
  bias = f32[21] parameter(1)
  m = f32[13] parameter(2)
  s = f32[] parameter(3)
  c = f32[] constant(0.5)
  b1 = f32[13,21] broadcast(bias), dimensions={1}
  b2 = f32[13,21] broadcast(m), dimensions={0}
  b3 = f32[13,21] broadcast(s), dimensions={}
  b4 = f32[13,21] broadcast(c), dimensions={}
  t1 = f32[13,21] add(x, b1)
  t2 = f32[13,21] subtract(t1, b2)
  t3 = f32[13,21] multiply(t2, b3)
  ROOT r = f32[13,21] add(t3, b4)
})",
             "tiny", 0, 0, /*fuse=*/true});
}

TEST(TpuElementwise, ReluAndItsGradient) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[19,23] parameter(0)
  g = f32[19,23] parameter(1)
  zero = f32[] constant(0)
  z = f32[19,23] broadcast(zero), dimensions={}
  relu = f32[19,23] maximum(x, z)
  positive = pred[19,23] compare(x, z), direction=GT
  grad = f32[19,23] select(positive, g, z)
  ROOT t = (f32[19,23], f32[19,23], pred[19,23]) tuple(relu, grad, positive)
})";
  check(Case{hlo, "tiny"});
  check(Case{hlo, "tiny", 0, 0, /*fuse=*/true});
  check(Case{hlo, "v5e", 0, 0, /*fuse=*/true});
}

TEST(TpuElementwise, CompareDirectionsAndSelect) {
  for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
    Case c{fmt::format(R"(HloModule m
ENTRY e {{
  x = s32[7,9] parameter(0)
  y = s32[7,9] parameter(1)
  p = pred[7,9] compare(x, y), direction={}
  ROOT r = s32[7,9] select(p, x, y)
}})",
                       dir)};
    c.lo = -3;
    c.hi = 3;
    check(c);
  }
}

TEST(TpuElementwise, IntegerArithmeticIsExact) {
  for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor"}) {
    Case c{binary_module(op, "s32", "[11,13]")};
    c.lo = -20;  // divisors include 0: XLA's x / 0 = -1 and x % 0 = x
    c.hi = 20;
    check(c);
  }
  for (const char* op : {"add", "multiply", "maximum"}) {
    Case c{binary_module(op, "u8", "[40]")};
    c.lo = 0;
    c.hi = 255;  // wraps
    check(c);
  }
  for (const char* type : {"s16", "u16"}) {
    Case c{binary_module("multiply", type, "[9,5]")};
    c.lo = 0;
    c.hi = 400;  // products wrap
    check(c);
  }
  Case s8{binary_module("add", "s8", "[30]")};
  s8.lo = -128;
  s8.hi = 127;
  check(s8);
}

TEST(TpuElementwise, ConvertsBetweenTypes) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  x = f32[6,10] parameter(0)
  i = s32[6,10] convert(x)
  f = f32[6,10] convert(i)
  b = bf16[6,10] convert(x)
  p = pred[6,10] convert(i)
  q = f32[6,10] convert(p)
  u = u8[6,10] convert(i)
  ROOT t = (s32[6,10], f32[6,10], bf16[6,10], pred[6,10], f32[6,10], u8[6,10]) tuple(i, f, b, p, q, u)
})";
  Case c{hlo};
  c.lo = -300;
  c.hi = 300;
  check(c);
}

TEST(TpuElementwise, PredicateLogic) {
  check(Case{R"(HloModule m
ENTRY e {
  a = pred[5,9] parameter(0)
  b = pred[5,9] parameter(1)
  x = pred[5,9] and(a, b)
  y = pred[5,9] or(a, b)
  z = pred[5,9] xor(x, y)
  n = pred[5,9] not(z)
  ROOT t = (pred[5,9], pred[5,9], pred[5,9], pred[5,9]) tuple(x, y, z, n)
})"});
}

TEST(TpuElementwise, ClampAndIsFinite) {
  check(Case{R"(HloModule m
ENTRY e {
  lo = f32[] constant(-0.25)
  hi = f32[] constant(0.5)
  x = f32[9,9] parameter(0)
  c = f32[9,9] clamp(lo, x, hi)
  l = f32[9,9] log(x)
  f = pred[9,9] is-finite(l)
  ROOT t = (f32[9,9], pred[9,9]) tuple(c, f)
})"});
}

TEST(TpuElementwise, FusedSoftmaxStyleKernel) {
  // exp(x - broadcast(max)) / broadcast(sum) as the fusion pass leaves it, with the
  // reductions done on the evaluator's side by parameters.
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[6,37] parameter(0)
  mx = f32[6] parameter(1)
  sum = f32[6] parameter(2)
  bm = f32[6,37] broadcast(mx), dimensions={0}
  d = f32[6,37] subtract(x, bm)
  ex = f32[6,37] exponential(d)
  bs = f32[6,37] broadcast(sum), dimensions={0}
  ROOT r = f32[6,37] divide(ex, bs)
})",
             "tiny", 1e-6, 1e-7, /*fuse=*/true});
}

TEST(TpuElementwise, ViewsInsideKernels) {
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[12,7] parameter(0)
  y = f32[7,12] parameter(1)
  t = f32[7,12] transpose(x), dimensions={1,0}
  s = f32[7,12] add(t, y)
  r = f32[84] reshape(s)
  sl = f32[40] slice(r), slice={[3:83:2]}
  io = s32[40] iota(), iota_dimension=0
  f = f32[40] convert(io)
  ROOT o = f32[40] add(sl, f)
})",
             "tiny", 0, 0, /*fuse=*/true});
}

TEST(TpuElementwise, RandomShapesAndChains) {
  std::mt19937_64 rng(7);
  const char* const ops[] = {"add", "multiply", "subtract", "maximum"};
  for (int trial = 0; trial < 12; ++trial) {
    int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    std::string shape = "[";
    for (int d = 0; d < rank; ++d)
      shape += (d ? "," : "") + std::to_string(std::uniform_int_distribution<int>(1, 19)(rng));
    shape += "]";
    std::string body;
    std::string prev = "x";
    for (int k = 0; k < 4; ++k) {
      const char* op = ops[std::uniform_int_distribution<int>(0, 3)(rng)];
      body += fmt::format("  v{0} = f32{1} {2}({3}, y)\n", k, shape, op, prev);
      prev = fmt::format("v{}", k);
    }
    std::string hlo = fmt::format("HloModule m\nENTRY e {{\n  x = f32{0} parameter(0)\n  y = f32{0} parameter(1)\n{1}"
                                  "  ROOT r = f32{0} tanh({2})\n}}",
                                  shape, body, prev);
    check(Case{hlo, trial % 3 == 0 ? "v5e" : "tiny", 1e-6, 1e-7, trial % 2 == 0, -1, 1, false,
               static_cast<uint64_t>(trial)});
  }
}

}  // namespace
}  // namespace podsim::tpu::testing
