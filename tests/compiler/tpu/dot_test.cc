// dot on the MXUs: 2-D with every contracting layout, sizes that are not multiples of
// the MXU, batched and multi-dimensional dots, bf16 operands and results. With inputs
// exactly representable in bf16 the MXU's products are exact and only the f32
// summation order differs from the evaluator (|error| <= K * 2^-24 * sum|a b|); with
// arbitrary f32 inputs the bf16 rounding of the inputs adds 2^-7 * sum|a b| (see
// tpu_test_util.h), checked per element against dot(|a|, |b|).
#include <fmt/format.h>

#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

struct DotShape {
  std::string lhs, rhs, out, dims;
};

std::string dot_module(const DotShape& d, const std::string& lt, const std::string& rt, const std::string& ot,
                       bool absolute = false, const std::string& precision = "") {
  std::string a = absolute ? "  ax = " + lt + d.lhs + " abs(x)\n  ay = " + rt + d.rhs + " abs(y)\n" : "";
  return fmt::format(R"(HloModule m
ENTRY e {{
  x = {0}{1} parameter(0)
  y = {2}{3} parameter(1)
{4}  ROOT r = {5}{6} dot({7}), {8}{9}
}})",
                     lt, d.lhs, rt, d.rhs, a, ot, d.out, absolute ? "ax, ay" : "x, y", d.dims, precision);
}

DotShape plain(int64_t m, int64_t k, int64_t n) {
  return {fmt::format("[{},{}]", m, k), fmt::format("[{},{}]", k, n), fmt::format("[{},{}]", m, n),
          "lhs_contracting_dims={1}, rhs_contracting_dims={0}"};
}

const std::vector<DotShape> kShapes = {
    plain(1, 1, 1),
    plain(8, 8, 8),
    plain(13, 27, 9),
    plain(5, 130, 3),
    plain(17, 3, 33),
    // transposed operands
    {"[11,6]", "[11,7]", "[6,7]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
    {"[6,11]", "[7,11]", "[6,7]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"},
    // matrix-vector and vector-matrix
    {"[6,9]", "[9]", "[6]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
    {"[9]", "[9,10]", "[10]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
    // batched
    {"[2,5,7]", "[2,7,3]", "[2,5,3]",
     "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
    {"[3,2,4,6]", "[3,2,6,5]", "[3,2,4,5]",
     "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"},
    {"[5,2,9]", "[2,9,4]", "[2,5,4]",
     "lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
    // several M / K / N dims
    {"[2,3,5]", "[5,4]", "[2,3,4]", "lhs_contracting_dims={2}, rhs_contracting_dims={0}"},
    {"[4,3,5]", "[3,5,6]", "[4,6]", "lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}"},
    {"[3,4,5]", "[5,6,3]", "[4,6]", "lhs_contracting_dims={2,0}, rhs_contracting_dims={0,2}"},
    {"[9,4]", "[9,2,3]", "[4,2,3]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
};

// Sum of |a b| over the contraction, as an f32 literal per output element.
ir::Literal abs_products(const DotShape& d, const std::vector<ir::Literal>& args) {
  auto m = ir::parse_module(dot_module(d, "f32", "f32", "f32", /*absolute=*/true));
  return ir::evaluate(*m, args);
}

void check_dot(const DotShape& d, const std::string& chip, bool bf16_values, const std::string& lt = "f32",
               const std::string& rt = "f32", const std::string& ot = "f32", uint64_t seed = 1) {
  const std::string hlo = dot_module(d, lt, rt, ot);
  SCOPED_TRACE(hlo + " on " + chip);
  auto module = ir::parse_module(hlo);
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module->entry()->parameters()) {
    ir::Literal a = random_literal(p->shape(), rng);
    args.push_back(bf16_values && p->shape().type() == ir::PrimitiveType::kF32 ? bf16_exact(std::move(a)) : a);
  }
  ir::Literal expected = ir::evaluate(*module, args);
  std::vector<ir::Literal> f32_args;
  for (const ir::Literal& a : args) {
    ir::Literal f(ir::Shape(ir::PrimitiveType::kF32, a.shape().dims()));
    for (int64_t k = 0; k < a.num_elements(); ++k) f.set_from_double(k, a.get_as_double(k));
    f32_args.push_back(std::move(f));
  }
  ir::Literal bound_base = abs_products(d, f32_args);
  // K: elements of the lhs per output row of the lhs' free dims; bounded by lhs size.
  const double k_terms = static_cast<double>(args[0].num_elements());
  std::vector<double> bounds;
  for (int64_t k = 0; k < bound_base.num_elements(); ++k) {
    double s = bound_base.get_as_double(k);
    double b = (bf16_values ? 0 : std::ldexp(s, -7)) + k_terms * std::ldexp(s, -24) + 1e-30;
    if (ot == "bf16") b += std::ldexp(std::fabs(expected.get_as_double(k)) + b, -8);  // the result's rounding
    bounds.push_back(b);
  }
  isa::Executable exe = compile(*module, topology::preset(chip));
  std::vector<ir::Literal> actual = run_executable(exe, args, {module->entry()->root()->shape()});
  EXPECT_TRUE(near(actual[0], expected, 0, 0, &bounds));
}

TEST(TpuDot, Bf16ValuedF32InputsOnTiny) {
  for (const DotShape& d : kShapes) check_dot(d, "tiny", true);
}

TEST(TpuDot, ArbitraryF32InputsRoundToBf16WithinTheBound) {
  for (const DotShape& d : kShapes) check_dot(d, "tiny", false);
}

TEST(TpuDot, DefaultPrecisionReallyRoundsToBf16) {
  // 1 + 2^-10 is not a bf16 value: the MXU sees 1, so x . y = 1 exactly, not 1 + 2^-10.
  auto module = ir::parse_module(dot_module(plain(1, 1, 1), "f32", "f32", "f32"));
  ir::Literal x(ir::Shape(ir::PrimitiveType::kF32, {1, 1})), y(ir::Shape(ir::PrimitiveType::kF32, {1, 1}));
  x.set_from_double(0, 1 + std::ldexp(1.0, -10));
  y.set_from_double(0, 1);
  isa::Executable exe = compile(*module, topology::preset("tiny"));
  auto out = run_executable(exe, {x, y}, {module->entry()->root()->shape()});
  EXPECT_EQ(out[0].get_as_double(0), 1.0);
}

TEST(TpuDot, OnV5eAndV4WithSizesAcrossMxuTiles) {
  for (const char* chip : {"v5e", "v4"}) {
    check_dot(plain(130, 200, 129), chip, true);
    check_dot(kShapes[9], chip, true);
    check_dot(kShapes[13], chip, false);
  }
}

TEST(TpuDot, Bf16OperandsAndResults) {
  for (const DotShape& d : {kShapes[2], kShapes[5], kShapes[9]}) {
    check_dot(d, "tiny", false, "bf16", "bf16", "f32");
    check_dot(d, "tiny", false, "bf16", "bf16", "bf16");
  }
}

// HIGHEST: six bf16 passes (passes::make_dot_expander) come within f32 rounding of the
// evaluator's f32 dot, where one pass would be off by about 2^-9 relative.
TEST(TpuDot, HighestPrecisionTakesSixPasses) {
  Case c{dot_module(plain(16, 40, 24), "f32", "f32", "f32", false, ", operand_precision={highest,highest}"), "tiny",
         1e-5, 1e-6};
  check(c);
}

// Integer dots run on the vector unit (a broadcast multiply and a sum), exactly.
TEST(TpuDot, IntegerDotsAreExact) {
  Case c{dot_module(plain(5, 7, 3), "s32", "s32", "s32"), "tiny"};
  c.lo = -50, c.hi = 50;
  check(c);
}

TEST(TpuDot, OperandsThroughTransposeAndReshapeViews) {
  Case c{R"(HloModule m
ENTRY e {
  x = f32[6,2,5] parameter(0)
  y = f32[7,10] parameter(1)
  xr = f32[12,5] reshape(x)
  yt = f32[10,7] transpose(y), dimensions={1,0}
  ys = f32[5,7] slice(yt), slice={[2:7], [0:7]}
  ROOT d = f32[12,7] dot(xr, ys), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"};
  c.bf16_values = true;
  c.abs = 5 * 5.0 / (1 << 24);
  check(c);
}

TEST(TpuDot, MlpLayerForwardAndBackward) {
  // y = relu(x w + b); gradients of w and x for an upstream gradient g.
  Case c{R"(HloModule m
ENTRY e {
  x = f32[12,20] parameter(0)
  w = f32[20,9] parameter(1)
  b = f32[9] parameter(2)
  g = f32[12,9] parameter(3)
  xw = f32[12,9] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[12,9] broadcast(b), dimensions={1}
  h = f32[12,9] add(xw, bb)
  zero = f32[] constant(0)
  z = f32[12,9] broadcast(zero), dimensions={}
  y = f32[12,9] maximum(h, z)
  mask = pred[12,9] compare(h, z), direction=GT
  gh = f32[12,9] select(mask, g, z)
  gw = f32[20,9] dot(x, gh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  gx = f32[12,20] dot(gh, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT t = (f32[12,9], f32[20,9], f32[12,20]) tuple(y, gw, gx)
})"};
  // Every dot operand is a bf16 value (inputs, and the gradient selected from them), so
  // products are exact and sums of K <= 20 terms of size <= 1 reorder within
  // K * 2^-24 * 20.
  c.bf16_values = true;
  c.abs = std::ldexp(20.0 * 20.0, -24);
  check(c);
  c.fuse = true;
  check(c);
}

}  // namespace
}  // namespace podsim::tpu::testing
