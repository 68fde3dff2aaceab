// Shape inference of dot, convolution, gather, scatter, batch norm and collectives, and a sweep
// over every opcode checking that malformed instructions raise podsim::Error rather
// than crash. Expected shapes are worked out by hand from XLA's operation semantics.
#include <gtest/gtest.h>

#include "compiler/ir/shape_inference.h"
#include "tests/compiler/ir/ir_builder_test_util.h"

namespace podsim::ir {
namespace {

using namespace podsim::ir::testing;

class ShapeInferenceOpsTest : public ::testing::Test {
 protected:
  Instruction* dot(Instruction* l, Instruction* r, Shape declared, DotDimNumbers dn) {
    Instruction* d = b.add(Opcode::kDot, std::move(declared), {l, r});
    d->attrs().dot_dims = std::move(dn);
    return d;
  }
  ModuleBuilder b;
};

TEST_F(ShapeInferenceOpsTest, Dot) {
  Instruction* a = b.param(sh(kF32, {2, 3}));
  Instruction* m = b.param(sh(kF32, {3, 4}));
  EXPECT_EQ(inferred(dot(a, m, sh(kF32, {2, 4}), {{}, {1}, {}, {0}})), "f32[2,4]");
  Instruction* ba = b.param(sh(kF32, {5, 2, 3}));
  Instruction* bm = b.param(sh(kF32, {5, 4, 3}));
  // Batch first, then lhs free dims, then rhs free dims.
  EXPECT_EQ(inferred(dot(ba, bm, sh(kF32, {5, 2, 4}), {{0}, {2}, {0}, {2}})), "f32[5,2,4]");
  Instruction* u = b.param(sh(kF32, {2}));
  Instruction* v = b.param(sh(kF32, {3}));
  EXPECT_EQ(inferred(dot(u, v, sh(kF32, {2, 3}), {})), "f32[2,3]");
  Instruction* w = b.param(sh(kF32, {4, 4}));
  EXPECT_PRED2(has, error_of(dot(a, w, sh(kF32, {2, 4}), {{}, {1}, {}, {0}})),
               "dot: contracting dimension 1 of lhs f32[2,3] and 0 of rhs f32[4,4] differ in size");
  EXPECT_PRED2(has, error_of(dot(a, m, sh(kF32, {2, 4}), {{}, {1}, {}, {}})), "differ in length");
  EXPECT_PRED2(has, error_of(dot(a, m, sh(kF32, {2, 4}), {{}, {1, 1}, {}, {0, 0}})),
               "repeats dimension 1");
  EXPECT_PRED2(has, error_of(dot(a, m, sh(kF32, {2, 4}), {{}, {2}, {}, {0}})),
               "out of range [0, 2)");
}

TEST_F(ShapeInferenceOpsTest, DotElementTypes) {
  Instruction* a = b.param(sh(kBF16, {2, 3}));
  Instruction* m = b.param(sh(kBF16, {3, 4}));
  // A wider declared result is XLA's preferred_element_type.
  EXPECT_EQ(inferred(dot(a, m, sh(kF32, {2, 4}), {{}, {1}, {}, {0}})), "f32[2,4]");
  Instruction* i = b.param(sh(kS32, {2, 3}));
  Instruction* j = b.param(sh(kS32, {3, 4}));
  EXPECT_PRED2(has, error_of(dot(i, j, sh(kS8, {2, 4}), {{}, {1}, {}, {0}})),
               "result type s8 is not a valid accumulation type for s32 operands");
  Instruction* f = b.param(sh(kF32, {3, 4}));
  EXPECT_PRED2(has, error_of(dot(a, f, sh(kF32, {2, 4}), {{}, {1}, {}, {0}})),
               "lhs bf16[2,3] and rhs f32[3,4] have different element types");
}

class ConvolutionTest : public ShapeInferenceOpsTest {
 protected:
  // dim_labels=b01f_01io->b01f
  static ConvDimNumbers nhwc() { return {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}}; }
  Instruction* conv(Shape lhs, Shape rhs, std::vector<WindowDim> window,
                    ConvDimNumbers cd = nhwc()) {
    Instruction* c = b.add(Opcode::kConvolution, sh(kF32), {b.param(lhs), b.param(rhs)});
    c->attrs().window = Window{std::move(window)};
    c->attrs().conv_dims = std::move(cd);
    return c;
  }
};

TEST_F(ConvolutionTest, OutputSizes) {
  EXPECT_EQ(
      inferred(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}), {{.size = 3}, {.size = 3}})),
      "f32[1,3,3,4]");
  // (5 - 3) / 2 + 1 = 2.
  EXPECT_EQ(inferred(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}),
                          {{.size = 3, .stride = 2}, {.size = 3, .stride = 2}})),
            "f32[1,2,2,4]");
  // Base dilation 2: (5 - 1) * 2 + 1 = 9, padded 2 + 9 + 2 = 13, 13 - 3 + 1 = 11.
  WindowDim transposed{.size = 3, .pad_low = 2, .pad_high = 2, .lhs_dilation = 2};
  EXPECT_EQ(
      inferred(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}), {transposed, transposed})),
      "f32[1,11,11,4]");
  // dim_labels=bf01_oi01->bf01
  ConvDimNumbers nchw{0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};
  EXPECT_EQ(inferred(conv(sh(kF32, {2, 3, 7, 7}), sh(kF32, {8, 3, 3, 3}),
                          {{.size = 3}, {.size = 3}}, nchw)),
            "f32[2,8,5,5]");
}

TEST_F(ConvolutionTest, Groups) {
  Instruction* fg =
      conv(sh(kF32, {1, 5, 5, 4}), sh(kF32, {3, 3, 2, 6}), {{.size = 3}, {.size = 3}});
  fg->attrs().feature_group_count = 2;
  EXPECT_EQ(inferred(fg), "f32[1,3,3,6]");
  Instruction* bad =
      conv(sh(kF32, {1, 5, 5, 4}), sh(kF32, {3, 3, 4, 6}), {{.size = 3}, {.size = 3}});
  bad->attrs().feature_group_count = 2;
  EXPECT_PRED2(has, error_of(bad),
               "input feature size 4 divided by feature_group_count 2 must equal the kernel input "
               "feature size 4");
  Instruction* bg =
      conv(sh(kF32, {4, 5, 5, 2}), sh(kF32, {3, 3, 2, 6}), {{.size = 3}, {.size = 3}});
  bg->attrs().batch_group_count = 2;
  EXPECT_EQ(inferred(bg), "f32[2,3,3,6]");
  bg->attrs().feature_group_count = 2;
  EXPECT_PRED2(has, error_of(bg), "cannot both exceed 1");
}

TEST_F(ConvolutionTest, BadAttributes) {
  EXPECT_PRED2(
      has,
      error_of(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}), {{.size = 2}, {.size = 3}})),
      "convolution: window dimension 0 has size 2 but the kernel's spatial dimension has size 3");
  ConvDimNumbers repeated = nhwc();
  repeated.input_spatial = {1, 1};
  EXPECT_PRED2(has,
               error_of(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}),
                             {{.size = 3}, {.size = 3}}, repeated)),
               "input dimension labels {0,3,1,1} repeats dimension 1");
  EXPECT_PRED2(has, error_of(conv(sh(kF32, {1, 5, 5, 2}), sh(kF32, {3, 3, 2, 4}), {{.size = 3}})),
               "spatial dimensions");
}

class GatherTest : public ShapeInferenceOpsTest {
 protected:
  Instruction* gather(Shape operand, Shape indices, GatherDimNumbers g,
                      std::vector<int64_t> sizes) {
    Instruction* i = b.add(Opcode::kGather, sh(kF32), {b.param(operand), b.param(indices)});
    i->attrs().gather_dims = std::move(g);
    i->attrs().gather_slice_sizes = std::move(sizes);
    return i;
  }
};

TEST_F(GatherTest, Embedding) {
  // offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
  // start_indices_batching_dims, index_vector_dim
  GatherDimNumbers rows{{1}, {0}, {0}, {}, {}, 1};
  EXPECT_EQ(inferred(gather(sh(kF32, {10, 8}), sh(kS32, {3}), rows, {1, 8})), "f32[3,8]");
  EXPECT_EQ(inferred(gather(sh(kF32, {10, 8}), sh(kS32, {3, 1}), rows, {1, 8})), "f32[3,8]");
  GatherDimNumbers offset_first{{0}, {0}, {0}, {}, {}, 1};
  EXPECT_EQ(inferred(gather(sh(kF32, {10, 8}), sh(kS32, {3}), offset_first, {1, 8})), "f32[8,3]");
  GatherDimNumbers two_d{{1}, {0, 1}, {0, 1}, {}, {}, 1};
  EXPECT_EQ(inferred(gather(sh(kF32, {4, 5, 6}), sh(kS32, {2, 2}), two_d, {1, 1, 6})), "f32[2,6]");
}

TEST_F(GatherTest, BatchingDims) {
  GatherDimNumbers g{{2}, {1}, {1}, {0}, {0}, 2};
  EXPECT_EQ(inferred(gather(sh(kF32, {2, 5, 4}), sh(kS32, {2, 3}), g, {1, 1, 4})), "f32[2,3,4]");
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {3, 5, 4}), sh(kS32, {2, 3}), g, {1, 1, 4})),
               "operand batching dimension 0 (size 3) and indices dimension 0 (size 2) differ");
  GatherDimNumbers overlap{{2}, {1}, {0}, {0}, {0}, 2};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {2, 5, 4}), sh(kS32, {2, 3}), overlap, {1, 1, 4})),
               "start_index_map + operand_batching_dims {0,0} repeats dimension 0");
  GatherDimNumbers on_vector{{2}, {1}, {1}, {0}, {1}, 1};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {2, 5, 4}), sh(kS32, {2, 1}), on_vector, {1, 1, 4})),
               "contains index_vector_dim 1");
}

TEST_F(GatherTest, Errors) {
  GatherDimNumbers rows{{1}, {0}, {0}, {}, {}, 1};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kS32, {3}), rows, {2, 8})),
               "gather: slice size 2 of collapsed or batching dimension 0 must be at most 1");
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kS32, {3}), rows, {1, 9})),
               "slice size 9 of dimension 1 is out of range [0, 8]");
  GatherDimNumbers long_map{{1}, {0}, {0, 1}, {}, {}, 1};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kS32, {3}), long_map, {1, 8})),
               "start_index_map {0,1} must have one entry per index vector element (1)");
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kF32, {3}), rows, {1, 8})),
               "must have an integer type");
  GatherDimNumbers far{{1}, {0}, {0}, {}, {}, 2};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kS32, {3}), far, {1, 8})),
               "index_vector_dim 2 is out of range [0, 1]");
  GatherDimNumbers unsorted{{1, 0}, {}, {0}, {}, {}, 1};
  EXPECT_PRED2(has, error_of(gather(sh(kF32, {10, 8}), sh(kS32, {3}), unsorted, {1, 8})),
               "must be sorted");
}

class ScatterTest : public ShapeInferenceOpsTest {
 protected:
  Instruction* scatter(std::vector<Shape> operands, Shape indices, std::vector<Shape> updates,
                       ScatterDimNumbers s, Computation* to_apply = nullptr) {
    std::vector<Instruction*> ops;
    for (Shape& o : operands) ops.push_back(b.param(o));
    ops.push_back(b.param(indices));
    for (Shape& u : updates) ops.push_back(b.param(u));
    Instruction* i = b.add(Opcode::kScatter, sh(kF32), ops);
    i->attrs().scatter_dims = std::move(s);
    i->add_called(to_apply ? to_apply : b.scalar_add(kF32));
    return i;
  }
};

TEST_F(ScatterTest, Rows) {
  // update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
  // input_batching_dims, scatter_indices_batching_dims, index_vector_dim
  ScatterDimNumbers rows{{1}, {0}, {0}, {}, {}, 1};
  EXPECT_EQ(inferred(scatter({sh(kF32, {10, 8})}, sh(kS32, {3}), {sh(kF32, {3, 8})}, rows)),
            "f32[10,8]");
  EXPECT_PRED2(has, error_of(scatter({sh(kF32, {10, 8})}, sh(kS32, {3}), {sh(kF32, {3, 9})}, rows)),
               "scatter: update window dimension 1 (size 9) exceeds operand dimension 1 (size 8)");
  EXPECT_PRED2(has, error_of(scatter({sh(kF32, {10, 8})}, sh(kS32, {3}), {sh(kF32, {4, 8})}, rows)),
               "update scatter dimension 0 (size 4) must equal indices batch dimension size 3");
  EXPECT_PRED2(has,
               error_of(scatter({sh(kF32, {10, 8})}, sh(kS32, {3}), {sh(kF32, {3, 8, 1})}, rows)),
               "must have rank 2");
  EXPECT_PRED2(has,
               error_of(scatter({sh(kF32, {10, 8})}, sh(kS32, {3}), {sh(kF32, {3, 8})}, rows,
                                b.scalar_add(kS32))),
               "to_apply computation");
}

TEST_F(ScatterTest, VariadicAndBatching) {
  ScatterDimNumbers points{{}, {0}, {0}, {}, {}, 1};
  Computation* pair =
      b.signature({sh(kF32), sh(kS32), sh(kF32), sh(kS32)}, tup({sh(kF32), sh(kS32)}));
  EXPECT_EQ(inferred(scatter({sh(kF32, {4}), sh(kS32, {4})}, sh(kS32, {2, 1}),
                             {sh(kF32, {2}), sh(kS32, {2})}, points, pair)),
            "(f32[4], s32[4])");
  ScatterDimNumbers batched{{}, {1}, {1}, {0}, {0}, 2};
  EXPECT_EQ(inferred(scatter({sh(kF32, {2, 5})}, sh(kS32, {2, 3}), {sh(kF32, {2, 3})}, batched)),
            "f32[2,5]");
  Instruction* even = b.add(Opcode::kScatter, sh(kF32), {b.param(sh(kF32)), b.param(sh(kF32))});
  EXPECT_PRED2(has, error_of(even),
               "expects N operands, the indices and N updates, got 2 operands");
}

class CollectiveTest : public ShapeInferenceOpsTest {
 protected:
  Instruction* collective(Opcode op, Shape operand, std::vector<int64_t> dims,
                          std::vector<std::vector<int64_t>> groups, Shape declared = sh(kF32)) {
    Instruction* i = b.add(op, std::move(declared), {b.param(operand)});
    i->attrs().dimensions = std::move(dims);
    if (!groups.empty()) i->attrs().replica_groups = ReplicaGroups{std::move(groups), {}};
    if (op == Opcode::kAllReduce || op == Opcode::kReduceScatter) i->add_called(b.scalar_add(kF32));
    return i;
  }
};

TEST_F(CollectiveTest, AllReduce) {
  EXPECT_EQ(inferred(collective(Opcode::kAllReduce, sh(kF32, {4}), {}, {})), "f32[4]");
  Instruction* two =
      b.add(Opcode::kAllReduce, sh(kF32), {b.param(sh(kF32, {4})), b.param(sh(kF32, {2}))});
  two->add_called(b.scalar_add(kF32));
  EXPECT_EQ(inferred(two), "(f32[4], f32[2])");
  Instruction* ints = b.add(Opcode::kAllReduce, sh(kS32, {4}), {b.param(sh(kS32, {4}))});
  ints->add_called(b.scalar_add(kF32));
  EXPECT_PRED2(has, error_of(ints), "all-reduce: to_apply computation");
}

TEST_F(CollectiveTest, AllGatherGroupSizes) {
  b.module().replica_count = 4;
  EXPECT_EQ(inferred(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {})), "f32[8,3]");
  EXPECT_EQ(inferred(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {1}, {{0, 1}, {2, 3}})),
            "f32[2,6]");
  EXPECT_PRED2(has,
               error_of(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {{0}, {1, 2, 3}})),
               "replica groups must all have the same size; group 0 has 1 ids, group 1 has 3");
  EXPECT_PRED2(has, error_of(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {2}, {})),
               "dimension 2 is out of range");
  // Replica ids across all partitions: 2 replicas x 2 partitions take part.
  b.module().replica_count = 2;
  b.module().num_partitions = 2;
  Instruction* rp = collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {{0, 1}});
  rp->attrs().channel_id = 1;
  EXPECT_EQ(inferred(rp), "f32[8,3]");
  // Flattened device ids: the group is the listed devices.
  b.module().num_partitions = 4;
  Instruction* flat = collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {{0, 1, 2}, {3, 4, 5}});
  flat->attrs().channel_id = 1;
  flat->attrs().use_global_device_ids = true;
  EXPECT_EQ(inferred(flat), "f32[6,3]");
  flat->attrs().replica_groups.reset();
  EXPECT_PRED2(has, error_of(flat), "use_global_device_ids needs explicit replica_groups");
  Instruction* no_channel = collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {{0, 1}});
  no_channel->attrs().use_global_device_ids = true;
  EXPECT_PRED2(has, error_of(no_channel), "use_global_device_ids requires a channel_id");
}

TEST_F(CollectiveTest, AllGatherUnknownGroupSize) {
  // replica_count is at its default of 1 and there are no groups: the declared shape
  // decides, as long as it is a multiple of the operand.
  EXPECT_EQ(inferred(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {}, sh(kF32, {6, 3}))),
            "f32[6,3]");
  EXPECT_PRED2(
      has, error_of(collective(Opcode::kAllGather, sh(kF32, {2, 3}), {0}, {}, sh(kF32, {5, 3}))),
      "group size is unknown; declared dimension 0 of size 5 is not a multiple of 2");
  EXPECT_EQ(
      inferred(collective(Opcode::kReduceScatter, sh(kF32, {6, 3}), {0}, {}, sh(kF32, {2, 3}))),
      "f32[2,3]");
}

TEST_F(CollectiveTest, ReduceScatterAndAllToAll) {
  b.module().replica_count = 4;
  EXPECT_EQ(inferred(collective(Opcode::kReduceScatter, sh(kF32, {8, 3}), {0}, {})), "f32[2,3]");
  EXPECT_PRED2(
      has, error_of(collective(Opcode::kReduceScatter, sh(kF32, {6, 3}), {0}, {})),
      "reduce-scatter: dimension 0 of operand 0 f32[6,3] is not divisible by the group size 4");
  EXPECT_EQ(inferred(collective(Opcode::kAllToAll, sh(kF32, {4, 2}), {0}, {{0, 1}, {2, 3}})),
            "f32[4,2]");
  EXPECT_PRED2(has,
               error_of(collective(Opcode::kAllToAll, sh(kF32, {3, 2}), {0}, {{0, 1}, {2, 3}})),
               "all-to-all: dimension 0 of f32[3,2] is not divisible by the group size 2");
  Instruction* tuple_form =
      b.add(Opcode::kAllToAll, sh(kF32), {b.param(sh(kF32, {2})), b.param(sh(kS32, {2}))});
  EXPECT_EQ(inferred(tuple_form), "(f32[2], s32[2])");
}

TEST_F(CollectiveTest, CollectivePermute) {
  Instruction* p = collective(Opcode::kCollectivePermute, sh(kF32, {3}), {}, {});
  p->attrs().source_target_pairs = {{0, 1}, {1, 0}};
  EXPECT_EQ(inferred(p), "f32[3]");
  p->attrs().source_target_pairs = {{0, 1}, {0, 2}};
  EXPECT_PRED2(has, error_of(p),
               "collective-permute: source 0 appears twice in source_target_pairs");
  p->attrs().source_target_pairs = {{0, 1}, {2, 1}};
  EXPECT_PRED2(has, error_of(p), "target 1 appears twice");
}

TEST_F(ShapeInferenceOpsTest, BatchNorm) {
  Instruction* x = b.param(sh(kF32, {2, 3, 4}));
  Instruction* f = b.param(sh(kF32, {3}));
  Instruction* g = b.param(sh(kF32, {2, 3, 4}));
  auto bn = [&](Opcode op, std::vector<Instruction*> operands, int64_t feature) {
    Instruction* i = b.add(op, sh(kF32), std::move(operands));
    i->attrs().feature_index = feature;
    return i;
  };
  EXPECT_EQ(inferred(bn(Opcode::kBatchNormTraining, {x, f, f}, 1)), "(f32[2,3,4], f32[3], f32[3])");
  EXPECT_EQ(inferred(bn(Opcode::kBatchNormInference, {x, f, f, f, f}, 1)), "f32[2,3,4]");
  EXPECT_EQ(inferred(bn(Opcode::kBatchNormGrad, {x, f, f, f, g}, 1)),
            "(f32[2,3,4], f32[3], f32[3])");
  EXPECT_PRED2(has, error_of(bn(Opcode::kBatchNormTraining, {x, f, f}, 2)),
               "scale f32[3] must be f32[4]");
  EXPECT_PRED2(has, error_of(bn(Opcode::kBatchNormTraining, {x, f, f}, 3)),
               "feature_index 3 is not a dimension of operand f32[2,3,4]");
  EXPECT_PRED2(has, error_of(bn(Opcode::kBatchNormGrad, {x, f, f, f, f}, 1)),
               "grad_output f32[3] must be f32[2,3,4]");
  Instruction* ints = b.param(sh(kS32, {2, 3}));
  Instruction* fi = b.param(sh(kS32, {3}));
  EXPECT_PRED2(has, error_of(bn(Opcode::kBatchNormTraining, {ints, fi, fi}, 1)),
               "must have a floating-point type");
}

TEST_F(ShapeInferenceOpsTest, InvalidOperandShapes) {
  Instruction* neg = b.param(sh(kF32, {-1}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kNegate, sh(kF32, {-1}), {neg})),
               "negate: operand 0 has an invalid shape f32[-1]");
  Instruction* huge = b.param(sh(kF32, {int64_t{1} << 21, int64_t{1} << 21}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kAbs, sh(kF32), {huge})), "invalid shape");
  Instruction* x = b.param(sh(kF32, {4}));
  Instruction* p = b.add(Opcode::kPad, sh(kF32), {x, b.param(sh(kF32))});
  p->attrs().padding = {{INT64_MAX, INT64_MAX, 0}};
  EXPECT_PRED2(has, error_of(p), "overflows");
}

// Every opcode, given operands, attributes and called computations that make no sense
// for it, reports podsim::Error (or infers something) and never throws anything else.
TEST_F(ShapeInferenceOpsTest, MalformedInstructionsOfEveryOpcodeFailCleanly) {
  Instruction* f = b.param(sh(kF32, {2}));
  Instruction* t = b.param(tup({sh(kF32), sh(kS32, {3})}));
  Computation* rootless = b.computation("rootless");
  Computation* gap = b.computation("gap");
  b.param(gap, sh(kF32));
  gap->instructions().back()->attrs().parameter_number = 3;
  std::vector<std::vector<Instruction*>> operand_sets = {
      {}, {f}, {t}, {f, f}, {f, t, f}, {t, t, t, t}, {nullptr}, {f, nullptr}};
  std::vector<std::vector<Computation*>> called_sets = {{}, {rootless}, {gap, gap}, {nullptr}};
  for (int o = 0; o < kOpcodeCount; ++o) {
    auto op = static_cast<Opcode>(o);
    for (const auto& operands : operand_sets)
      for (const auto& called : called_sets)
        for (const Shape& declared : {sh(kF32, {2}), tup({sh(kF32, {2})}), sh(kF32, {-3})}) {
          Instruction inst("x", op, declared);
          for (Instruction* i : operands) inst.add_operand(i);
          for (Computation* c : called) inst.add_called(c);
          inst.attrs().dimensions = {5};
          inst.attrs().window = Window{{WindowDim{.size = 0}}};
          try {
            infer_shape(inst);
          } catch (const Error& e) {
            EXPECT_PRED2(has, e.what(), std::string(opcode_name(op)) + ": ");
            EXPECT_FALSE(has(e.what(), "internal")) << e.what();
          } catch (const std::exception& e) {
            ADD_FAILURE() << opcode_name(op) << " threw a non-podsim error: " << e.what();
          }
        }
  }
}

}  // namespace
}  // namespace podsim::ir
