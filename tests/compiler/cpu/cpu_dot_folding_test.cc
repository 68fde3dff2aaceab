// The CPU target's own rewrites (dot_folding.h, concat_distribution.h), the block
// engine's direct strided reads and the parallel GEMM paths, against the reference
// evaluator: each module is checked for the rewrite it should get (the optimized module
// no longer holds the transpose, broadcast or relayout fusion; the fusion's root became
// a concatenate) and for its values.
//
// Tolerance for dots, as in cpu_dot_test.cc: SGEMM sums K products in float in some
// order, the evaluator in double, so |cpu - evaluator| <= (K + 1) 2^-24 S per element,
// S = sum |a b|, which the test gets by evaluating the same module on |a| and |b|
// (transposes and broadcasts only move values). Modules without a dot are exact.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.h"

namespace podsim::cpu {
namespace {

using testing::arrays_match;
using testing::pointers;
using testing::random_literal;

std::vector<ir::Literal> random_args(const ir::Module& module, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module.entry()->parameters())
    args.push_back(random_literal(p->shape(), rng));
  return args;
}

ir::Literal abs_of(const ir::Literal& l) {
  ir::Literal out = l;
  for (int64_t i = 0; i < out.num_elements(); ++i)
    out.set_from_double(i, std::abs(l.get_as_double(i)));
  return out;
}

int count_opcode(const ir::Computation& c, ir::Opcode opcode) {
  int n = 0;
  for (const auto& i : c.instructions()) n += i->opcode() == opcode;
  return n;
}

// Compiles and runs text; k > 0: the result is a dot summing k products per element.
std::unique_ptr<Executable> check(const std::string& text, int64_t k, uint64_t seed = 1) {
  SCOPED_TRACE(text);
  std::unique_ptr<ir::Module> module = ir::parse_module(text, "<test>");
  const std::vector<ir::Literal> args = random_args(*module, seed);
  const ir::Literal want = ir::evaluate(*module, args);
  testing::Bound bound;
  if (k > 0) {
    std::vector<ir::Literal> abs_args;
    for (const ir::Literal& a : args) abs_args.push_back(abs_of(a));
    auto s = std::make_shared<ir::Literal>(ir::evaluate(*module, abs_args));
    bound = [s, k](int64_t i) {
      return static_cast<double>(k + 1) * 0x1p-24 * s->get_as_double(i) + 1e-300;
    };
  }
  std::unique_ptr<Executable> executable = compile(*module);
  const std::vector<ir::Literal> got = executable->run(pointers(args));
  EXPECT_EQ(got.size(), 1u);
  if (!got.empty()) {
    EXPECT_TRUE(arrays_match(got[0], want, bound, k > 0));
  }
  return executable;
}

TEST(CpuDotFolding, TransposedRhsOfALinearLayer) {
  auto e = check(R"(HloModule m
ENTRY e {
  x = f32[8,5] parameter(0)
  w = f32[7,5] parameter(1)
  t = f32[5,7] transpose(w), dimensions={1,0}
  ROOT d = f32[8,7] dot(x, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                 5);
  EXPECT_EQ(count_opcode(*e->module().entry(), ir::Opcode::kTranspose), 0);
}

TEST(CpuDotFolding, TransposedLhsOfAWeightGradient) {
  auto e = check(R"(HloModule m
ENTRY e {
  x = f32[9,5] parameter(0)
  g = f32[9,7] parameter(1)
  t = f32[5,9] transpose(x), dimensions={1,0}
  ROOT d = f32[5,7] dot(t, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                 9);
  EXPECT_EQ(count_opcode(*e->module().entry(), ir::Opcode::kTranspose), 0);
}

TEST(CpuDotFolding, TransposedProductSwapsItsOperands) {
  auto e = check(R"(HloModule m
ENTRY e {
  a = f32[6,4] parameter(0)
  b = f32[6,3] parameter(1)
  d = f32[4,3] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = f32[3,4] transpose(d), dimensions={1,0}
})",
                 6);
  const ir::Computation& entry = *e->module().entry();
  EXPECT_EQ(count_opcode(entry, ir::Opcode::kTranspose), 0);
  EXPECT_EQ(entry.root()->opcode(), ir::Opcode::kDot);
}

TEST(CpuDotFolding, BatchedTransposedProductSwapsItsOperands) {
  auto e = check(R"(HloModule m
ENTRY e {
  a = f32[3,5,4] parameter(0)
  b = f32[3,5,2] parameter(1)
  d = f32[3,4,2] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT t = f32[3,2,4] transpose(d), dimensions={0,2,1}
})",
                 5);
  EXPECT_EQ(count_opcode(*e->module().entry(), ir::Opcode::kTranspose), 0);
}

TEST(CpuDotFolding, BroadcastWeightsOverTheBatchBecomeRows) {
  auto e = check(R"(HloModule m
ENTRY e {
  x = f32[4,6,5] parameter(0)
  w = f32[7,5] parameter(1)
  t = f32[5,7] transpose(w), dimensions={1,0}
  b = f32[4,5,7] broadcast(t), dimensions={1,2}
  ROOT d = f32[4,6,7] dot(x, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})",
                 5);
  const ir::Computation& entry = *e->module().entry();
  EXPECT_EQ(count_opcode(entry, ir::Opcode::kTranspose), 0);
  EXPECT_EQ(count_opcode(entry, ir::Opcode::kBroadcast), 0);
  EXPECT_TRUE(entry.root()->attrs().dot_dims.lhs_batch.empty());
}

TEST(CpuDotFolding, HeadTransposesFoldIntoBatchedDots) {
  auto e = check(R"(HloModule m
ENTRY e {
  q = f32[2,6,3,4] parameter(0)
  k = f32[2,6,3,4] parameter(1)
  tq = f32[2,3,6,4] transpose(q), dimensions={0,2,1,3}
  tk = f32[2,3,4,6] transpose(k), dimensions={0,2,3,1}
  ROOT s = f32[2,3,6,6] dot(tq, tk), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
})",
                 4);
  EXPECT_EQ(count_opcode(*e->module().entry(), ir::Opcode::kTranspose), 0);
}

TEST(CpuDotFolding, RelayoutFusionIsReadInPlace) {
  // The pipeline fuses transpose(reshape(x)); the CPU pass takes it apart again.
  auto e = check(R"(HloModule m
ENTRY e {
  x = f32[4,6,5] parameter(0)
  g = f32[24,7] parameter(1)
  r = f32[24,5] reshape(x)
  t = f32[5,24] transpose(r), dimensions={1,0}
  ROOT d = f32[5,7] dot(t, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                 24);
  const ir::Computation& entry = *e->module().entry();
  EXPECT_EQ(count_opcode(entry, ir::Opcode::kTranspose), 0);
  EXPECT_EQ(count_opcode(entry, ir::Opcode::kFusion), 0);
}

TEST(CpuDotFolding, TransposeReorderingFreeDimensionsStays) {
  // Folding would change the order of the result's dimensions.
  auto e = check(R"(HloModule m
ENTRY e {
  x = f32[2,3,5] parameter(0)
  w = f32[5,4] parameter(1)
  t = f32[3,2,5] transpose(x), dimensions={1,0,2}
  ROOT d = f32[3,2,4] dot(t, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
})",
                 5);
  EXPECT_EQ(count_opcode(*e->module().entry(), ir::Opcode::kTranspose), 1);
}

// Products large enough to be split into panels (rows, or columns when N > M) and
// batches run as parallel tasks: the same values as one GEMM.
TEST(CpuParallelGemm, PanelsOfRowsAndColumnsAndBatchTasks) {
  check(R"(HloModule m
ENTRY e {
  a = f32[200,96] parameter(0)
  b = f32[120,96] parameter(1)
  ROOT d = f32[200,120] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})",
        96);
  check(R"(HloModule m
ENTRY e {
  a = f32[96,40] parameter(0)
  b = f32[96,300] parameter(1)
  ROOT d = f32[40,300] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})",
        96);
  check(R"(HloModule m
ENTRY e {
  a = f32[8,64,48] parameter(0)
  b = f32[8,48,40] parameter(1)
  ROOT d = f32[8,64,40] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})",
        48);
}

const ir::Computation* fused_root_computation(const Executable& e) {
  const ir::Instruction* root = e.module().entry()->root();
  return root->opcode() == ir::Opcode::kFusion ? root->called(0) : nullptr;
}

TEST(CpuConcatDistribution, SumOfZeroPaddedPiecesIsOneConcatenate) {
  // The gradient of slicing x into three pieces: each piece's gradient padded with
  // zeros to x's shape, summed (split points differ, so pieces are cut and re-broadcast).
  auto e = check(R"(HloModule m
ENTRY e {
  a = f32[3,4,2] parameter(0)
  b = f32[3,4,2] parameter(1)
  c = f32[3,4,2] parameter(2)
  zero = f32[] constant(0)
  z4 = f32[3,4,4] broadcast(zero), dimensions={}
  z2 = f32[3,4,2] broadcast(zero), dimensions={}
  ca = f32[3,4,6] concatenate(z4, a), dimensions={2}
  cb = f32[3,4,6] concatenate(z2, b, z2), dimensions={2}
  cc = f32[3,4,6] concatenate(c, z4), dimensions={2}
  s = f32[3,4,6] add(ca, cb)
  ROOT r = f32[3,4,6] add(s, cc)
})",
                 0);
  const ir::Computation* fused = fused_root_computation(*e);
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->root()->opcode(), ir::Opcode::kConcatenate);
  EXPECT_EQ(count_opcode(*fused, ir::Opcode::kConcatenate), 1);
}

TEST(CpuConcatDistribution, PiecesCutByTheOtherOperandAreSliced) {
  auto e = check(R"(HloModule m
ENTRY e {
  a = f32[5,3] parameter(0)
  b = f32[2,3] parameter(1)
  c = f32[3,3] parameter(2)
  d = f32[4,3] parameter(3)
  x = f32[7,3] concatenate(a, b), dimensions={0}
  y = f32[7,3] concatenate(c, d), dimensions={0}
  ROOT m = f32[7,3] multiply(x, y)
})",
                 0);
  const ir::Computation* fused = fused_root_computation(*e);
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->root()->opcode(), ir::Opcode::kConcatenate);
  EXPECT_EQ(fused->root()->operand_count(), 3);
}

TEST(CpuBlockReads, BroadcastsAndTransposesReadInRuns) {
  // Bias rows, a value per row repeated, a transposed operand, a pred mask broadcast
  // and an f64 broadcast: each read walks its map without an index array.
  check(R"(HloModule m
ENTRY e {
  x = f32[5,64,48] parameter(0)
  bias = f32[48] parameter(1)
  rows = f32[5,64] parameter(2)
  y = f32[5,48,64] parameter(3)
  mask = pred[64,48] parameter(4)
  w = f64[48] parameter(5)
  bb = f32[5,64,48] broadcast(bias), dimensions={2}
  br = f32[5,64,48] broadcast(rows), dimensions={0,1}
  ty = f32[5,64,48] transpose(y), dimensions={0,2,1}
  s1 = f32[5,64,48] add(x, bb)
  s2 = f32[5,64,48] subtract(s1, br)
  s3 = f32[5,64,48] multiply(s2, ty)
  bm = pred[5,64,48] broadcast(mask), dimensions={1,2}
  sel = f32[5,64,48] select(bm, s3, x)
  bw = f64[5,64,48] broadcast(w), dimensions={2}
  cw = f32[5,64,48] convert(bw)
  ROOT r = f32[5,64,48] add(sel, cw)
})",
        0);
}

}  // namespace
}  // namespace podsim::cpu
