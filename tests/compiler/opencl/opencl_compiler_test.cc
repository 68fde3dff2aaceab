// The OpenCL target's compile decisions, without a device: which instructions become
// generated kernels, GEMMs or host steps, how dot operands are oriented, which
// reductions take a work-group tree, and how temporaries share device memory. What the
// programs compute is checked on a device by opencl_numpy_integration_test.
#include "compiler/opencl/opencl_compiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/ir/parser.h"
#include "tests/compiler/numpy_cases.h"

namespace podsim::opencl {
namespace {

std::unique_ptr<Program> compile_text(const std::string& text, bool passes = true) {
  return compile(*ir::parse_module(text), {.run_passes = passes});
}

const Step& only_step(const Program& p, Step::Kind kind) {
  for (const Step& s : p.steps())
    if (s.kind == kind) return s;
  ADD_FAILURE() << "no step of that kind";
  return p.steps().front();
}

TEST(OpenClCompiler, AnMlpLayerIsAGemmAndOneFusedKernel) {
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[64,32] parameter(0)
  w = f32[32,16] parameter(1)
  b = f32[16] parameter(2)
  d = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,16] broadcast(b), dimensions={1}
  s = f32[64,16] add(d, bb)
  z = f32[] constant(0)
  zb = f32[64,16] broadcast(z), dimensions={}
  ROOT r = f32[64,16] maximum(s, zb)
})");
  EXPECT_EQ(p->stats().gemms, 1);
  EXPECT_EQ(p->stats().kernels, 1);
  EXPECT_EQ(p->stats().host_steps, 0);
  const Step& g = only_step(*p, Step::Kind::kGemm);
  EXPECT_EQ(g.gemm.m, 64);
  EXPECT_EQ(g.gemm.n, 16);
  EXPECT_EQ(g.gemm.k, 32);
  EXPECT_FALSE(g.gemm.trans_a);
  EXPECT_FALSE(g.gemm.trans_b);
}

TEST(OpenClCompiler, TransposedOperandsAreReadInPlace) {
  // x^T w^T: both operands contract over their leading/trailing dimension as stored.
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[32,64] parameter(0)
  w = f32[16,32] parameter(1)
  ROOT d = f32[64,16] dot(x, w), lhs_contracting_dims={0}, rhs_contracting_dims={1}
})");
  EXPECT_EQ(p->stats().kernels, 0);
  const Step& g = only_step(*p, Step::Kind::kGemm);
  EXPECT_TRUE(g.gemm.trans_a);
  EXPECT_TRUE(g.gemm.trans_b);
  EXPECT_EQ(g.gemm.m, 64);
  EXPECT_EQ(g.gemm.k, 32);
}

TEST(OpenClCompiler, ABatchDimensionInTheMiddleIsTransposedFirst) {
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[8,4,16] parameter(0)
  y = f32[4,16,8] parameter(1)
  ROOT d = f32[4,8,8] dot(x, y), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
  ASSERT_EQ(p->steps().size(), 2u);
  EXPECT_EQ(p->steps()[0].kind, Step::Kind::kKernel);  // x to [4, 8, 16]
  const Step& g = p->steps()[1];
  EXPECT_EQ(g.kind, Step::Kind::kGemm);
  EXPECT_EQ(g.gemm.batch, 4);
  EXPECT_FALSE(g.gemm.trans_a);
  EXPECT_EQ(g.inputs[0], p->steps()[0].outputs[0]);
}

TEST(OpenClCompiler, OpsWithoutALoweringRunOnTheHost) {
  // A line longer than the sort kernel takes (it is quadratic in the line length).
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[20000] parameter(0)
  ROOT s = f32[20000] sort(x), dimensions={0}, to_apply=lt
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
})");
  EXPECT_EQ(p->stats().host_steps, 1);
  EXPECT_EQ(only_step(*p, Step::Kind::kHost).instruction->opcode(), ir::Opcode::kSort);
}

TEST(OpenClCompiler, SortsScattersSelectAndScattersMapsAndRandomBitsAreKernels) {
  // Every such case of the NumPy oracle (run on a device by opencl_numpy_integration_test).
  int seen = 0;
  for (const std::string& name : podsim::testing::numpy_cases::all_cases()) {
    if (!name.starts_with("sort_") && !name.starts_with("scatter_") &&
        !name.starts_with("select_and_scatter_") && !name.starts_with("rng_bit_generator_") &&
        !name.starts_with("map_"))
      continue;
    std::ifstream in(podsim::testing::numpy_cases::case_dir() + "/" + name + ".hlo");
    std::stringstream text;
    text << in.rdbuf();
    auto p = compile_text(text.str());
    EXPECT_EQ(p->stats().host_steps, 0) << name;
    ++seen;
  }
  if (seen == 0) GTEST_SKIP() << "the NumPy-oracle cases were not generated";
}

TEST(OpenClCompiler, ConvolutionsGathersAndWindowsAreKernels) {
  auto p = compile_text(R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  w = f32[3,3,2,6] parameter(1)
  c = f32[2,8,8,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  t = f32[10,6] parameter(2)
  i = s32[5] parameter(3)
  g = f32[5,6] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
  inf = f32[] constant(-inf)
  pool = f32[2,4,4,6] reduce-window(c, inf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  ROOT r = (f32[2,4,4,6], f32[5,6]) tuple(pool, g)
})");
  EXPECT_EQ(p->stats().host_steps, 0);
  EXPECT_EQ(p->stats().kernels, 3);
  EXPECT_EQ(p->stats().gemms, 0);
}

TEST(OpenClCompiler, LoopsRunTheirBodiesAsPlansOfTheirOwn) {
  auto p = compile_text(R"(HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] multiply(x, x)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  s = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(s), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
})");
  EXPECT_EQ(p->stats().control_steps, 1);
  EXPECT_EQ(p->stats().host_steps, 0);
  ASSERT_EQ(p->plans().size(), 3u);
  const Step& loop = only_step(*p, Step::Kind::kWhile);
  ASSERT_EQ(loop.plans.size(), 2u);
  const Plan& condition = p->plans()[static_cast<size_t>(loop.plans[0])];
  const Plan& body = p->plans()[static_cast<size_t>(loop.plans[1])];
  EXPECT_EQ(condition.arguments.size(), 2u);  // the state's leaves
  EXPECT_EQ(condition.results.size(), 1u);
  EXPECT_EQ(body.results.size(), 2u);
  EXPECT_EQ(body.steps.size(), 2u);  // the counter's add and the square, as kernels
  for (const Step& s : body.steps) EXPECT_EQ(s.kind, Step::Kind::kKernel);
}

TEST(OpenClCompiler, LongReductionsTakeAWorkGroupTree) {
  const std::string text = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[ROWS,COLS] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[ROWS] reduce(x, z), dimensions={1}, to_apply=add
})";
  auto with = [&](int rows, int cols) {
    std::string t = text;
    for (auto [key, value] : {std::pair{"ROWS", rows}, std::pair{"COLS", cols}})
      for (size_t at; (at = t.find(key)) != std::string::npos;)
        t.replace(at, 4, std::to_string(value));
    return compile_text(t);
  };
  auto tree = with(4, 1000);
  EXPECT_NE(tree->source().find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
  EXPECT_EQ(only_step(*tree, Step::Kind::kKernel).launch.global, 4 * 256);
  auto loop = with(1000, 4);
  EXPECT_EQ(loop->source().find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos);
  EXPECT_EQ(loop->stats().host_steps, 0);
}

TEST(OpenClCompiler, SixteenBitFloatsRoundAfterEveryOp) {
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = bf16[8] parameter(0)
  y = bf16[8] parameter(1)
  ROOT a = bf16[8] multiply(x, y)
})");
  EXPECT_NE(p->source().find("podsim_round_bf16("), std::string::npos);
  EXPECT_NE(p->source().find("podsim_to_bf16("), std::string::npos);
}

TEST(OpenClCompiler, TemporariesShareSlotsAndResultsKeepTheirs) {
  // Three GEMMs in a chain: d1 dies at d2's step, so d3 (the result) may take its slot,
  // never d2's, which d3 reads.
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[16,16] parameter(0)
  d1 = f32[16,16] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[16,16] dot(d1, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d3 = f32[16,16] dot(d2, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                        false);
  ASSERT_EQ(p->steps().size(), 3u);
  const int32_t t1 = p->steps()[0].outputs[0].index, t2 = p->steps()[1].outputs[0].index,
                t3 = p->steps()[2].outputs[0].index;
  EXPECT_EQ(p->slot_bytes().size(), 2u);
  EXPECT_NE(p->temp_slot(t1), p->temp_slot(t2));
  EXPECT_NE(p->temp_slot(t3), p->temp_slot(t2));
  EXPECT_EQ(p->temp_slot(t3), p->temp_slot(t1));
  for (int64_t bytes : p->slot_bytes()) EXPECT_EQ(bytes, 16 * 16 * 4);
}

TEST(OpenClCompiler, SerializedProgramsRebuildTheSameSource) {
  auto p = compile_text(R"(HloModule m
ENTRY e {
  x = f32[10] parameter(0)
  ROOT y = f32[10] tanh(x)
})");
  auto q = compile_serialized(p->serialize());
  EXPECT_EQ(q->source(), p->source());
  EXPECT_EQ(q->steps().size(), p->steps().size());
}

}  // namespace
}  // namespace podsim::opencl
