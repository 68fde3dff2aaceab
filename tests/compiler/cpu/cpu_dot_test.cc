// dot and convolution on the CPU target against the reference evaluator, over many
// shapes: batch dimensions, every placement of the free and contracting dimensions
// (so that some operands go to BLAS transposed, some in place, some packed), degenerate
// sizes, bf16/f16 operands and results, f64, integers (through the evaluator).
//
// Tolerance, derived: SGEMM sums K products in float in some order; the evaluator sums
// in double and rounds once. Each computed sum is within K u sum|a b| of the exact one
// (u = 2^-24), so |cpu - evaluator| <= (K + 1) u S with S = sum|a b|, which the test
// gets exactly by evaluating the same dot on |a| and |b|. A 16-bit result adds one
// rounding of either side, at most one unit in the last place: + 2^-7 |want| for bf16
// (8 significant bits), 2^-10 |want| for f16.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::leaves;
using testing::pointers;
using testing::random_literal;

ir::Literal abs_of(const ir::Literal& l) {
  ir::Literal out = l;
  for (int64_t i = 0; i < out.num_elements(); ++i)
    out.set_from_double(i, std::abs(l.get_as_double(i)));
  return out;
}

// Checks a module whose root is one dot or convolution of parameters 0 and 1.
void check_linear(const std::string& text, const std::vector<ir::Literal>& args) {
  SCOPED_TRACE(text);
  std::unique_ptr<ir::Module> module = ir::parse_module(text, "<test>");
  const ir::Literal want = ir::evaluate(*module, args);
  testing::Bound bound;
  const ir::PrimitiveType out = want.type();
  if (ir::is_float(out)) {
    // The same op on |a|, |b| in the evaluator's precision: S per output element.
    std::vector<ir::Literal> abs_args{abs_of(args[0]), abs_of(args[1])};
    auto s = std::make_shared<ir::Literal>(ir::evaluate(*module, abs_args));
    auto w = std::make_shared<ir::Literal>(want);
    int64_t k = 1;
    const ir::Instruction* root = module->entry()->root();
    if (root->opcode() == ir::Opcode::kDot) {
      for (int64_t d : root->attrs().dot_dims.lhs_contracting)
        k *= root->operand(0)->shape().dim(d);
    } else {
      k = root->operand(1)->shape().num_elements();
    }
    const double u = out == ir::PrimitiveType::kF64 ? 0x1p-53 : 0x1p-24;
    const double round16 = out == ir::PrimitiveType::kBF16  ? 0x1p-7
                           : out == ir::PrimitiveType::kF16 ? 0x1p-10
                                                            : 0.0;
    bound = [s, w, k, u, round16](int64_t i) {
      return static_cast<double>(k + 1) * u * s->get_as_double(i) * (1 + round16) +
             round16 * std::abs(w->get_as_double(i)) + 1e-300;
    };
  }
  for (bool passes : {false, true}) {
    CompileOptions options;
    options.run_passes = passes;
    const std::vector<ir::Literal> got = compile(*module, options)->run(pointers(args));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(arrays_match(got[0], want, bound, true))
        << (passes ? "with passes" : "without passes");
  }
}

struct DotCase {
  std::string lhs_type, rhs_type, out_type;
  std::vector<int64_t> batch;  // sizes of the batch dimensions
  int64_t m, k, n;
  uint64_t seed;  // picks the placement of each operand's dimensions
};

// lhs holds batch, M and K dimensions and rhs batch, K and N dimensions in a random
// order (M, K and N each split in up to two dimensions).
std::string dot_module(const DotCase& c, std::vector<ir::Shape>& params) {
  std::mt19937_64 rng(c.seed);
  auto split = [&](int64_t size) -> std::vector<int64_t> {
    if (size >= 4 && size % 2 == 0 && rng() % 2) return {2, size / 2};
    return {size};
  };
  const std::vector<int64_t> m = split(c.m), k = split(c.k), n = split(c.n);
  struct Dim {
    char role;
    int index;
    int64_t size;
  };
  auto layout = [&](const std::vector<int64_t>& free, char free_role) {
    std::vector<Dim> dims;
    for (size_t b = 0; b < c.batch.size(); ++b)
      dims.push_back({'b', static_cast<int>(b), c.batch[b]});
    for (size_t i = 0; i < free.size(); ++i)
      dims.push_back({free_role, static_cast<int>(i), free[i]});
    for (size_t i = 0; i < k.size(); ++i) dims.push_back({'k', static_cast<int>(i), k[i]});
    std::shuffle(dims.begin(), dims.end(), rng);
    return dims;
  };
  const std::vector<Dim> lhs = layout(m, 'm'), rhs = layout(n, 'n');
  auto find = [](const std::vector<Dim>& dims, char role, int index) {
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d].role == role && dims[d].index == index) return static_cast<int64_t>(d);
    return int64_t{-1};
  };
  std::vector<int64_t> lb, rb, lc, rc, out_dims;
  for (size_t b = 0; b < c.batch.size(); ++b) {
    lb.push_back(find(lhs, 'b', static_cast<int>(b)));
    rb.push_back(find(rhs, 'b', static_cast<int>(b)));
    out_dims.push_back(c.batch[b]);
  }
  for (size_t i = 0; i < k.size(); ++i) {
    lc.push_back(find(lhs, 'k', static_cast<int>(i)));
    rc.push_back(find(rhs, 'k', static_cast<int>(i)));
  }
  for (const Dim& d : lhs)
    if (d.role == 'm') out_dims.push_back(d.size);
  for (const Dim& d : rhs)
    if (d.role == 'n') out_dims.push_back(d.size);
  auto dims_of = [](const std::vector<Dim>& dims) {
    std::vector<int64_t> s;
    for (const Dim& d : dims) s.push_back(d.size);
    return s;
  };
  params = {ir::Shape(*ir::type_from_name(c.lhs_type), dims_of(lhs)),
            ir::Shape(*ir::type_from_name(c.rhs_type), dims_of(rhs))};
  return fmt::format(
      "HloModule dot\n\nENTRY main {{\n  a = {} parameter(0)\n  b = {} parameter(1)\n"
      "  ROOT d = {}[{}] dot(a, b), lhs_batch_dims={{{}}}, lhs_contracting_dims={{{}}}, "
      "rhs_batch_dims={{{}}}, "
      "rhs_contracting_dims={{{}}}\n}}\n",
      params[0].to_string(false), params[1].to_string(false), c.out_type, fmt::join(out_dims, ","),
      fmt::join(lb, ","), fmt::join(lc, ","), fmt::join(rb, ","), fmt::join(rc, ","));
}

void PrintTo(const DotCase& c, std::ostream* os) {
  *os << c.lhs_type << " x " << c.rhs_type << " -> " << c.out_type << ", " << c.batch.size()
      << " batch dims, M=" << c.m << " K=" << c.k << " N=" << c.n << ", layout seed " << c.seed;
}

class DotTest : public ::testing::TestWithParam<DotCase> {};

TEST_P(DotTest, MatchesEvaluator) {
  const DotCase c = GetParam();
  std::vector<ir::Shape> params;
  const std::string text = dot_module(c, params);
  std::mt19937_64 rng(c.seed + 17);
  const bool ints = !ir::is_float(params[0].type());
  std::vector<ir::Literal> args{random_literal(params[0], rng, ints ? -50 : -2, ints ? 50 : 2),
                                random_literal(params[1], rng, ints ? -50 : -2, ints ? 50 : 2)};
  check_linear(text, args);
}

std::vector<DotCase> dot_cases() {
  std::vector<DotCase> cases;
  uint64_t seed = 1;
  const std::vector<std::vector<int64_t>> batches = {{}, {3}, {2, 3}};
  const std::vector<std::array<int64_t, 3>> mkn = {
      {1, 1, 1}, {5, 7, 3}, {64, 96, 80}, {130, 257, 33}, {1, 300, 17}, {40, 1, 9}, {16, 64, 1}};
  for (const auto& batch : batches)
    for (const auto& [m, k, n] : mkn)
      for (int layout = 0; layout < 2; ++layout)
        cases.push_back({"f32", "f32", "f32", batch, m, k, n, seed++});
  for (int layout = 0; layout < 3; ++layout) {
    cases.push_back({"bf16", "bf16", "f32", {2}, 33, 70, 21, seed++});
    cases.push_back({"bf16", "bf16", "bf16", {}, 48, 64, 40, seed++});
    cases.push_back({"f16", "f16", "f32", {}, 20, 30, 10, seed++});
    cases.push_back({"f16", "f16", "f16", {3}, 9, 16, 12, seed++});
    cases.push_back({"f64", "f64", "f64", {2}, 31, 45, 29, seed++});
    cases.push_back({"s32", "s32", "s32", {2}, 7, 9, 5, seed++});
    cases.push_back({"s8", "s8", "s32", {}, 6, 11, 4, seed++});
  }
  cases.push_back({"f32", "f32", "f32", {}, 0, 5, 3, seed++});
  cases.push_back({"f32", "f32", "f32", {}, 4, 0, 3, seed++});
  cases.push_back({"f32", "f32", "f32", {0}, 4, 5, 3, seed++});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, DotTest, ::testing::ValuesIn(dot_cases()),
                         [](const ::testing::TestParamInfo<DotCase>& info) {
                           const DotCase& c = info.param;
                           return fmt::format("{}_{}_{}_b{}_{}x{}x{}_s{}", c.lhs_type, c.rhs_type,
                                              c.out_type, c.batch.size(), c.m, c.k, c.n, c.seed);
                         });

struct ConvCase {
  std::string name;
  std::string input, kernel, output, attributes;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class ConvolutionTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvolutionTest, MatchesEvaluator) {
  const ConvCase c = GetParam();
  const std::string text = fmt::format(
      "HloModule conv\n\nENTRY main {{\n  x = {} parameter(0)\n  w = {} parameter(1)\n"
      "  ROOT c = {} convolution(x, w), {}\n}}\n",
      c.input, c.kernel, c.output, c.attributes);
  std::mt19937_64 rng(c.name.size());
  std::vector<ir::Literal> args{random_literal(ir::parse_shape(c.input), rng),
                                random_literal(ir::parse_shape(c.kernel), rng)};
  check_linear(text, args);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvolutionTest,
    ::testing::Values(
        ConvCase{"nhwc_same", "f32[2,9,8,3]", "f32[3,3,3,5]", "f32[2,9,8,5]",
                 "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"},
        ConvCase{"nhwc_strided", "f32[2,9,8,3]", "f32[3,3,3,5]", "f32[2,4,4,5]",
                 "window={size=3x3 stride=2x2 pad=0_1x1_1}, dim_labels=b01f_01io->b01f"},
        ConvCase{"nchw", "f32[2,4,10,7]", "f32[6,4,3,2]", "f32[2,6,8,6]",
                 "window={size=3x2}, dim_labels=bf01_oi01->bf01"},
        ConvCase{"dilated_reversed", "f32[1,12,12,2]", "f32[3,3,2,4]", "f32[1,8,12,4]",
                 "window={size=3x3 pad=0_0x2_2 rhs_dilate=2x2 rhs_reversal=1x0}, "
                 "dim_labels=b01f_01io->b01f"},
        ConvCase{"lhs_dilated", "f32[2,5,3]", "f32[3,3,4]", "f32[2,4,11]",
                 "window={size=3 pad=2_2 lhs_dilate=2}, dim_labels=b0f_0io->bf0"},
        ConvCase{"bf16_in_f32_out", "bf16[2,6,6,3]", "bf16[2,2,3,4]", "f32[2,5,5,4]",
                 "window={size=2x2}, dim_labels=b01f_01io->b01f"},
        ConvCase{"grouped_evaluator", "f32[2,4,6,6]", "f32[6,2,3,3]", "f32[2,6,4,4]",
                 "window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2"},
        ConvCase{"three_d", "f32[1,5,6,7,2]", "f32[2,2,2,2,3]", "f32[1,4,5,6,3]",
                 "window={size=2x2x2}, dim_labels=b012f_012io->b012f"}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

}  // namespace
}  // namespace podsim::cpu
