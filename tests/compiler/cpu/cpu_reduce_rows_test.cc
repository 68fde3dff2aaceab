// Row reductions on the CPU target (many short rows per evaluation: softmax and
// layer-norm statistics) follow the order reduce_kernel.h documents, bit for bit:
// element k of a row goes to lane k mod 16 of 16 accumulators starting at the op's
// identity, the lanes combine pairwise (i with i+8, +4, +2, +1), then init op result.
// The expected values are computed here from that description.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

float documented_row(const float* row, int64_t r, float init, bool max) {
  float lanes[16];
  std::fill(lanes, lanes + 16, max ? -INFINITY : -0.0f);
  auto apply = [max](float a, float b) {
    if (!max) return a + b;
    if (std::isnan(a) || std::isnan(b)) return NAN;
    return a > b ? a : b;
  };
  for (int64_t k = 0; k < r; ++k) lanes[k % 16] = apply(lanes[k % 16], row[k]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] = apply(lanes[l], lanes[l + w]);
  return apply(init, lanes[0]);
}

void check_rows(int64_t rows, int64_t r, bool max) {
  SCOPED_TRACE(::testing::Message() << rows << " rows of " << r << (max ? " max" : " add"));
  const std::string op = max ? "maximum" : "add";
  const std::string text =
      "HloModule m\n"
      "r { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT c = f32[] " +
      op +
      "(a, b) }\n"
      "ENTRY e {\n x = f32[" +
      std::to_string(rows) + "," + std::to_string(r) +
      "] parameter(0)\n"
      " i = f32[] constant(0.25)\n"
      " ROOT s = f32[" +
      std::to_string(rows) + "] reduce(x, i), dimensions={1}, to_apply=r\n}\n";
  std::unique_ptr<ir::Module> module = ir::parse_module(text, "<test>");
  std::mt19937_64 rng(static_cast<uint64_t>(rows * 131 + r));
  std::vector<ir::Literal> args{
      testing::random_literal(ir::Shape(ir::PrimitiveType::kF32, {rows, r}), rng, -3, 3)};
  const std::vector<ir::Literal> got = compile(*module)->run(testing::pointers(args));
  ASSERT_EQ(got.size(), 1u);
  const auto* x = reinterpret_cast<const float*>(args[0].bytes().data());
  const auto* y = reinterpret_cast<const float*>(got[0].bytes().data());
  for (int64_t j = 0; j < rows; ++j) {
    const float want = documented_row(x + j * r, r, 0.25f, max);
    ASSERT_EQ(std::bit_cast<uint32_t>(y[j]), std::bit_cast<uint32_t>(want)) << "row " << j;
  }
}

TEST(CpuReduceRows, SumsFollowTheDocumentedLaneOrder) {
  check_rows(300, 32, false);
  check_rows(70, 37, false);  // a partial last round of lanes
  check_rows(9, 5, false);    // fewer elements than lanes
}

TEST(CpuReduceRows, MaximaFollowTheDocumentedLaneOrder) {
  check_rows(300, 32, true);
  check_rows(70, 37, true);
}

}  // namespace
}  // namespace podsim::cpu
