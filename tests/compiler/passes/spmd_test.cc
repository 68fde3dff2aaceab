// The SPMD partitioner: data, FSDP and tensor parallel steps, resharding, control flow,
// reductions, lookups, manual regions and uneven splits (windowed instructions:
// spmd_windows_test.cc; tilings and propagation: spmd_tiling_test.cc). Every
// partitioned module is run on the pieces of random arguments and compared with the
// reference evaluation of the unpartitioned module (spmd_test_util.h).
#include <gtest/gtest.h>

#include "compiler/passes/spmd/tiling.h"
#include "tests/compiler/passes/spmd_test_util.h"
#include "topology/pod_config.h"

namespace podsim::passes {
namespace {

using spmd::Tiling;
using testing::check_partitioned;
using testing::collectives;
using ir::Literal;
using ir::Opcode;
using testing::count;
using testing::parse_sharding;

TEST(SpmdPartitioner, DataParallelStepAllReducesTheGradientOnly) {
  // One SGD step of a linear layer of F inputs and O outputs with a squared loss; the batch
  // split over devices. The gradient's dot contracts over the split batch: each device sums
  // its partial product and one all-reduce (with the loss's) adds them up, even where
  // gathering both operands would move fewer bytes (F=32, O=64 on 8 devices: 6 KiB against
  // the gradient's 8 KiB twice), for two gathers cost two collectives' latency and the whole
  // dot on every device.
  const std::string text = R"(HloModule dp, num_partitions={N}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY step {
  x = f32[16,{F}] parameter(0), sharding={devices=[{N},1]<=[{N}]}
  y = f32[16,{O}] parameter(1), sharding={devices=[{N},1]<=[{N}]}
  w = f32[{F},{O}] parameter(2), sharding={replicated}
  p = f32[16,{O}] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[16,{O}] subtract(p, y)
  g = f32[{F},{O}] dot(x, e), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  c2 = f32[] constant(0.01)
  lr = f32[{F},{O}] broadcast(c2), dimensions={}
  s = f32[{F},{O}] multiply(g, lr)
  w2 = f32[{F},{O}] subtract(w, s), sharding={replicated}
  sq = f32[16,{O}] multiply(e, e)
  c3 = f32[] constant(0)
  loss = f32[] reduce(sq, c3), dimensions={0,1}, to_apply=add
  ROOT out = (f32[{F},{O}], f32[]) tuple(w2, loss)
})";
  for (auto [n, f, o] : {std::tuple{2, 8, 4}, {4, 8, 4}, {8, 8, 4}, {8, 32, 64}}) {
    SCOPED_TRACE(fmt::format("{} devices, {} x {}", n, f, o));
    std::string t = text;
    for (auto [key, value] : {std::pair{"{N}", n}, {"{F}", f}, {"{O}", o}})
      for (size_t at; (at = t.find(key)) != std::string::npos;) t.replace(at, 3, std::to_string(value));
    auto m = check_partitioned(t, n);
    ASSERT_TRUE(m);
    EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
    // The gradient and the loss, combined into one.
    ASSERT_EQ(count(*m, Opcode::kAllReduce), 1);
    for (const auto& i : m->entry()->instructions()) {
      if (i->opcode() != Opcode::kAllReduce) continue;
      EXPECT_EQ(i->operand_count(), 2);
    }
    EXPECT_EQ(m->entry()->parameter(0)->shape().to_string(false), fmt::format("f32[{},{}]", 16 / n, f));
  }
}

TEST(SpmdPartitioner, MegatronMlpSumsPartialProductsOnce) {
  // Column-parallel then row-parallel: one all-reduce, no gathers.
  auto m = check_partitioned(R"(HloModule mlp, num_partitions=4
ENTRY mlp {
  x = f32[8,16] parameter(0), sharding={replicated}
  w1 = f32[16,32] parameter(1), sharding={devices=[1,4]<=[4]}
  w2 = f32[32,16] parameter(2), sharding={devices=[4,1]<=[4]}
  h = f32[8,32] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c4 = f32[] constant(0)
  zero = f32[8,32] broadcast(c4), dimensions={}
  r = f32[8,32] maximum(h, zero)
  ROOT o = f32[8,16] dot(r, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
})",
                             4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0);
}

TEST(SpmdPartitioner, DataAndModelAxesOfAMeshSplitTheMlpBothWays) {
  auto m = check_partitioned(testing::read_file(PODSIM_SOURCE_DIR "/examples/hlo/spmd_mlp.hlo"), 4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  ASSERT_EQ(count(*m, Opcode::kAllReduce), 1);
  for (const auto& i : m->entry()->instructions()) {
    if (i->opcode() != Opcode::kAllReduce) continue;
    EXPECT_EQ(i->attrs().replica_groups->groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  }
  EXPECT_EQ(m->entry()->parameter(0)->shape().to_string(false), "f32[4,16]");
  EXPECT_EQ(m->entry()->parameter(1)->shape().to_string(false), "f32[16,16]");
}

TEST(SpmdPartitioner, FsdpGathersTheWeightsForTheBatchSplitActivations) {
  auto m = check_partitioned(R"(HloModule fsdp, num_partitions=4
ENTRY f {
  x = f32[32,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,64] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT h = f32[32,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
})",
                             4);
  ASSERT_TRUE(m);
  // Gathering w (16x64) moves less than the partial products (32x64 each).
  EXPECT_EQ(count(*m, Opcode::kAllGather), 1) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 0);
}

// A training step of podsim's character-level GPT (examples/train/gpt_char.cc: two
// blocks, AdamW), as the runtime lowers it (PODSIM_SAVE_TENSORS_FMT=hlo, metadata
// dropped), with shardings for three kinds of parallelism over 4 devices.
std::string gpt_step(int64_t devices, const std::function<std::string(const ir::Instruction&)>& sharding) {
  std::string text = testing::read_file(PODSIM_SOURCE_DIR "/tests/compiler/passes/testdata/gpt_train_step.hlo");
  // In f64, so that sums in another order (partial sums over devices) differ by far less
  // than a misplaced piece would.
  for (size_t at; (at = text.find("f32")) != std::string::npos;) text.replace(at, 3, "f64");
  auto m = ir::parse_module(text);
  m->num_partitions = devices;
  for (ir::Instruction* p : m->entry()->parameters()) {
    const std::string s = sharding(*p);
    if (!s.empty()) p->sharding() = parse_sharding(s, p->shape().to_string(false));
  }
  return ir::print_module(*m);
}

bool is_tokens(const ir::Instruction& p) { return p.shape().to_string(false) == "s64[16,32]"; }

TEST(SpmdPartitioner, GptTrainingStepDataParallel) {
  // The batch of tokens and targets split: the gradients are summed over devices.
  auto m = check_partitioned(gpt_step(4, [](const ir::Instruction& p) { return is_tokens(p) ? "{devices=[4,1]<=[4]}" : ""; }),
                             4, 1, 1e-9, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_GT(count(*m, Opcode::kAllReduce), 0);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
}

TEST(SpmdPartitioner, GptTrainingStepFsdp) {
  // Tokens split by batch, every weight and optimizer state split along its first
  // dimension: weights are gathered where they are used.
  auto m = check_partitioned(gpt_step(4,
                                      [](const ir::Instruction& p) -> std::string {
                                        if (is_tokens(p)) return "{devices=[4,1]<=[4]}";
                                        if (p.shape().rank() == 2 && p.shape().dim(0) % 4 == 0) return "{devices=[4,1]<=[4]}";
                                        if (p.shape().rank() == 1 && p.shape().dim(0) % 4 == 0) return "{devices=[4]<=[4]}";
                                        return "";
                                      }),
                             4, 1, 1e-9, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_GT(count(*m, Opcode::kAllGather), 0);
  EXPECT_GT(count(*m, Opcode::kAllReduce), 0);
}

TEST(SpmdPartitioner, GptTrainingStepTensorParallel) {
  // Megatron-style: the attention's QKV and the MLP's first layer split by output
  // features, the attention's projection and the MLP's second layer by input features
  // (weights are stored [out, in]); everything else replicated.
  auto m = check_partitioned(gpt_step(4,
                                      [](const ir::Instruction& p) -> std::string {
                                        const std::string s = p.shape().to_string(false);
                                        if (s == "f64[192,64]" || s == "f64[256,64]") return "{devices=[4,1]<=[4]}";
                                        if (s == "f64[192]" || s == "f64[256]") return "{devices=[4]<=[4]}";
                                        if (s == "f64[64,256]" || s == "f64[64,64]") return "{devices=[1,4]<=[4]}";
                                        return "";
                                      }),
                             4, 1, 1e-9, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_GT(count(*m, Opcode::kAllReduce), 0);
}

TEST(SpmdPartitioner, FsdpGradientsAreReduceScattered) {
  // The weight gradient of a batch-split layer, wanted split like an FSDP weight.
  auto m = check_partitioned(R"(HloModule g, num_partitions=4
ENTRY g {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}
  dy = f32[16,12] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT dw = f32[8,12] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
})",
                             4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kReduceScatter), 1) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 0);
}

TEST(SpmdPartitioner, ReshardsBetweenAnyTwoShardings) {
  const std::vector<std::string> shardings = {
      "{replicated}",
      "{devices=[4,1]<=[4]}",
      "{devices=[1,4]<=[4]}",
      "{devices=[2,2]<=[4]}",
      "{devices=[2,2]<=[2,2]T(1,0)}",
      "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
      "{devices=[1,2,2]3,1,2,0 last_tile_dim_replicate}",
      "{maximal device=2}",
  };
  // Costed without a pod and on one (the plans chosen differ).
  const topology::PodConfig v5e4 = topology::pod_config("v5e-4");
  for (const topology::PodConfig* pod : {static_cast<const topology::PodConfig*>(nullptr), &v5e4})
    for (const std::string& from : shardings)
      for (const std::string& to : shardings) {
        SCOPED_TRACE(from + " -> " + to + (pod ? " on v5e-4" : ""));
        check_partitioned(fmt::format(R"(HloModule r, num_partitions=4
ENTRY r {{
  p = s32[8,12] parameter(0), sharding={}
  ROOT n = s32[8,12] negate(p), sharding={}
}})",
                                      from, to),
                          4, 1, 0, testing::random_arguments, pod);
      }
}

TEST(SpmdPartitioner, MovesASplitToAnotherDimensionWithOneAllToAll) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"{devices=[4,1]<=[4]}", "{devices=[1,4]<=[4]}"},
           {"{devices=[1,2,2]<=[4]}", "{devices=[2,1,2]<=[4]}"},
           {"{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}", "{devices=[1,1,2,2]<=[4] last_tile_dim_replicate}"}}) {
    SCOPED_TRACE(from + " -> " + to);
    const int rank = std::count(from.begin(), from.begin() + from.find(']'), ',') + 1 -
                     (from.find("last_tile_dim_replicate") != std::string::npos);
    const std::string shape = rank == 2 ? "s32[8,12]" : "s32[4,6,8]";
    auto m = check_partitioned(fmt::format(R"(HloModule r, num_partitions=4
ENTRY r {{
  p = {} parameter(0), sharding={}
  ROOT n = {} negate(p), sharding={}
}})",
                                           shape, from, shape, to),
                               4);
    ASSERT_TRUE(m);
    EXPECT_EQ(count(*m, Opcode::kAllToAll), 1) << ir::print_module(*m);
    EXPECT_EQ(count(*m, Opcode::kAllGather), 0);
  }
}

// A loop over batch-split activations (a scan over layers, a few training steps): the
// state goes round in pieces and the body runs on them; nothing is gathered.
constexpr const char* kLoop = R"(HloModule loop, num_partitions=4
cond {
  s = (s32[], f32[8,16], f32[16,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,16], f32[16,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8,16] get-tuple-element(s), index=1
  w = f32[16,16] get-tuple-element(s), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  d = f32[8,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[8,16] tanh(d)
  ROOT t = (s32[], f32[8,16], f32[16,16]) tuple(next, y, w)
}
ENTRY e {
  x = f32[8,16] parameter(0)X_SHARDING
  w = f32[16,16] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[16,16]) tuple(zero, x, w)
  loop = (s32[], f32[8,16], f32[16,16]) while(init), condition=cond, body=body
  ROOT r = f32[8,16] get-tuple-element(loop), index=1
})";


TEST(SpmdPartitioner, PiecesThatOnlyChangeDevicesMoveByOneCollectivePermute) {
  // The same pieces on other devices (a mesh in another device order): each piece goes
  // once, nothing is gathered. (Pieces held twice, where a gather between neighbours
  // beats sending them two hops, are ReshardsBetweenAnyTwoShardings' business.)
  const topology::PodConfig pod = topology::pod_config("v5e-4");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"{devices=[4,1]<=[4]}", "{devices=[4,1]3,2,1,0}"},
           {"{devices=[2,2]<=[4]}", "{devices=[2,2]<=[2,2]T(1,0)}"}}) {
    SCOPED_TRACE(from + " -> " + to);
    auto m = check_partitioned(fmt::format(R"(HloModule r, num_partitions=4
ENTRY r {{
  p = s32[8,12] parameter(0), sharding={}
  ROOT n = s32[8,12] negate(p), sharding={}
}})",
                                           from, to),
                               4, 1, 0, testing::random_arguments, &pod);
    ASSERT_TRUE(m);
    EXPECT_EQ(count(*m, Opcode::kCollectivePermute), 1) << ir::print_module(*m);
    EXPECT_EQ(collectives(*m), 1) << ir::print_module(*m);
  }
}

const ir::Instruction* find_opcode(const ir::Module& m, Opcode opcode) {
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->opcode() == opcode) return i.get();
  return nullptr;
}

std::string with_x_sharding(const std::string& sharding) {
  std::string text = kLoop;
  text.replace(text.find("X_SHARDING"), 10, sharding);
  return text;
}

TEST(SpmdPartitioner, WhileLoopsCarryTheirStateInPieces) {
  auto m = check_partitioned(with_x_sharding(", sharding={devices=[4,1]<=[4]}"), 4, 1, 1e-5);
  ASSERT_TRUE(m);
  EXPECT_EQ(collectives(*m), 0) << ir::print_module(*m);
  const ir::Instruction* loop = find_opcode(*m, Opcode::kWhile);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->shape().to_string(false), "(s32[], f32[2,16], f32[16,16])");
  EXPECT_EQ(loop->called(1)->parameter(0)->shape().to_string(false), "(s32[], f32[2,16], f32[16,16])");
  EXPECT_EQ(m->entry()->root()->sharding()->to_string(), "{devices=[4,1]0,1,2,3}");
  // Nothing of the unpartitioned loop is left behind.
  EXPECT_EQ(m->computations().size(), 3u) << ir::print_module(*m);
}

TEST(SpmdPartitioner, TheLayersLoopExampleNeedsOneAllReduceATurn) {
  // A Megatron MLP layer as a loop's body: the second dot's partial products are summed
  // in the body; the clamp of the result (scalar bounds) runs on pieces.
  auto m = check_partitioned(testing::read_file(PODSIM_SOURCE_DIR "/examples/hlo/spmd_layers_loop.hlo"), 4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1) << ir::print_module(*m);
  EXPECT_EQ(collectives(*m), 1) << ir::print_module(*m);
}

TEST(SpmdPartitioner, ShardingsWrittenInsideALoopBodyReachItsState) {
  // Only the body's dot is annotated: the state takes its split, and the whole input
  // is cut into pieces once, before the loop.
  std::string text = with_x_sharding("");
  text.replace(text.find("rhs_contracting_dims={0}\n"), 25,
               "rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n");
  auto m = check_partitioned(text, 4, 2, 1e-5);
  ASSERT_TRUE(m);
  EXPECT_EQ(collectives(*m), 0) << ir::print_module(*m);
  EXPECT_EQ(find_opcode(*m, Opcode::kWhile)->shape().to_string(false), "(s32[], f32[4,16], f32[16,16])");
}

TEST(SpmdPartitioner, LoopBodiesSumPartialResultsInsideTheLoop) {
  // Columns split: each step's row sums are partial on every device; the body sums them
  // with an all-reduce, the accumulator stays whole.
  auto m = check_partitioned(R"(HloModule acc, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  s = (s32[], f32[8,16], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,16], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8,16] get-tuple-element(s), index=1
  acc = f32[8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  zero = f32[] constant(0)
  rows = f32[8] reduce(x, zero), dimensions={1}, to_apply=add
  sum = f32[8] add(acc, rows)
  y = f32[8,16] sine(x)
  ROOT t = (s32[], f32[8,16], f32[8]) tuple(next, y, sum)
}
ENTRY e {
  x = f32[8,16] parameter(0), sharding={devices=[1,2]<=[2]}
  acc = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[8]) tuple(zero, x, acc)
  loop = (s32[], f32[8,16], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(loop), index=2
})",
                             2, 3, 1e-5);
  ASSERT_TRUE(m);
  const ir::Instruction* loop = find_opcode(*m, Opcode::kWhile);
  ASSERT_NE(loop, nullptr);
  int64_t in_body = 0;
  for (const auto& i : loop->called(1)->instructions()) in_body += i->opcode() == Opcode::kAllReduce;
  EXPECT_EQ(in_body, 1) << ir::print_module(*m);
  EXPECT_EQ(collectives(*m), 1) << ir::print_module(*m);
}

TEST(SpmdPartitioner, CallsAndConditionalsRunOnPieces) {
  auto m = check_partitioned(R"(HloModule c, num_partitions=2
f {
  a = f32[8,4] parameter(0)
  b = f32[8,4] parameter(1)
  ROOT m = f32[8,4] multiply(a, b)
}
g {
  p = (f32[8,4]) parameter(0)
  x = f32[8,4] get-tuple-element(p), index=0
  ROOT n = f32[8,4] negate(x)
}
h {
  p = (f32[8,4]) parameter(0)
  x = f32[8,4] get-tuple-element(p), index=0
  ROOT e = f32[8,4] exponential(x)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  y = f32[8,4] parameter(1), sharding={devices=[2,1]<=[2]}
  p = pred[] parameter(2)
  c = f32[8,4] call(x, y), to_apply=f
  t = (f32[8,4]) tuple(c)
  ROOT k = f32[8,4] conditional(p, t, t), true_computation=g, false_computation=h
})",
                             2, 4, 1e-5);
  ASSERT_TRUE(m);
  EXPECT_EQ(collectives(*m), 0) << ir::print_module(*m);
  EXPECT_EQ(m->entry()->root()->shape().to_string(false), "f32[4,4]");
  EXPECT_EQ(find_opcode(*m, Opcode::kCall)->called(0)->root()->shape().to_string(false), "f32[4,4]");
}

TEST(SpmdPartitioner, ReducesOverSplitDimensionsWithTheReducer) {
  auto m = check_partitioned(R"(HloModule m, num_partitions=4
max {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT m = s32[] maximum(a, b)
}
ENTRY e {
  p = s32[8,12] parameter(0), sharding={devices=[2,2]<=[4]}
  c5 = s32[] constant(-2147483648)
  ROOT r = s32[12] reduce(p, c5), dimensions={0}, to_apply=max
})",
                             4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1) << ir::print_module(*m);
  // An init value that is not the identity is counted once: the pieces are gathered.
  m = check_partitioned(R"(HloModule m, num_partitions=4
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  p = s32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  c6 = s32[] constant(5)
  ROOT r = s32[12] reduce(p, c6), dimensions={0}, to_apply=add
})",
                        4);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 0);
}

TEST(SpmdPartitioner, RunsReshapesSlicesAndConcatenatesOnPieces) {
  auto m = check_partitioned(R"(HloModule m, num_partitions=2
ENTRY e {
  p = f32[4,6,8] parameter(0), sharding={devices=[2,1,1]<=[2]}
  r = f32[24,8] reshape(p)
  s = f32[24,4] slice(r), slice={[0:24], [2:6]}
  c = f32[24,12] concatenate(s, r), dimensions={1}
  b = f32[24,12,3] broadcast(c), dimensions={0,1}
  ROOT t = f32[3,24,12] transpose(b), dimensions={2,0,1}
})",
                             2);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  EXPECT_EQ(m->entry()->root()->sharding()->to_string(), "{devices=[1,2,1]0,1}");
}

TEST(SpmdPartitioner, PartialSumsOverUnevenSplitsLeaveThePaddingOut) {
  // A vocabulary of 50 split 4 ways (pieces of 13, the last 11 and 2 of padding): the
  // softmax denominator sums each device's exponentials and all-reduces them; the
  // padding (whatever exp made of it) is set to the reducer's identity first. The same
  // for a dot over a contracting dimension of 10 split 4 ways, whose padding is 1/0.
  auto m = check_partitioned(R"(HloModule vocab, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  h = f32[6,16] parameter(0)
  w = f32[16,50] parameter(1), sharding={devices=[1,4]<=[4]}
  logits = f32[6,50] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[6,50] exponential(logits)
  zero = f32[] constant(0)
  ROOT sum = f32[6] reduce(e, zero), dimensions={1}, to_apply=add
})",
                             4, 7, 1e-5, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1) << ir::print_module(*m);
  m = check_partitioned(R"(HloModule contract, num_partitions=4
ENTRY e {
  x = f32[6,10] parameter(0), sharding={devices=[1,4]<=[4]}
  w = f32[10,5] parameter(1), sharding={devices=[4,1]<=[4]}
  one = f32[] constant(1)
  ones = f32[6,10] broadcast(one), dimensions={}
  inverse = f32[6,10] divide(ones, x)
  ROOT d = f32[6,5] dot(inverse, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                        4, 8, 1e-5, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1) << ir::print_module(*m);
}

// A pod of v5e chips whose links are so slow that a collective costs the bytes it moves
// and nothing else: the partitioner moves as few as it can.
TEST(SpmdPartitioner, RunsOtherOpsOnWholeValuesAndCutsTheirPieces) {
  check_partitioned(R"(HloModule m, num_partitions=4
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  p = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[2] parameter(1)
  c7 = s32[] constant(2)
  c8 = s32[] constant(0)
  d = f32[4,8] dynamic-slice(p, c7, c8), dynamic_slice_sizes={4,8}
  s = f32[4,8] sort(d), dimensions={1}, to_apply=lt
  io = f32[4,8] iota(), iota_dimension=0, sharding={devices=[2,2]<=[4]}
  ROOT r = f32[4,8] add(s, io)
})",
                    4);
}

TEST(SpmdPartitioner, LookupsInATableSplitByRowsSumTheDevicesRows) {
  // A vocabulary-parallel embedding: 64 rows over 4 devices, 6 lookups (indices out of
  // the table too: gather clamps them).
  auto m = check_partitioned(R"(HloModule embed, num_partitions=4
ENTRY e {
  table = f32[64,8] parameter(0), sharding={devices=[4,1]<=[4]}
  raw = s32[6] parameter(1)
  scale = s32[] constant(11)
  scales = s32[6] broadcast(scale), dimensions={}
  ids = s32[6] multiply(raw, scales)
  ROOT rows = f32[6,8] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}
})",
                             4, 3, 1e-6, testing::tame_arguments);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllReduce), 1);
}

TEST(SpmdPartitioner, EmbeddingGradientsScatterIntoTheirPieces) {
  // The gradient of an embedding table: scatter-add of the looked-up rows' gradients,
  // with duplicate and out-of-range indices (skipped, as scatter skips them). Split by
  // columns (FSDP or tensor parallel), each device scatters its columns; split by rows
  // (vocabulary parallel), each device scatters into its rows with indices made local.
  // Nothing moves between devices either way.
  const std::string scatter = R"(HloModule grad, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  g = f32[6,16] parameter(0)UPDATES
  zero = f32[] constant(0)
  table = f32[32,16] broadcast(zero), dimensions={}TABLE
  idx = s32[6] constant({3, 31, 3, -1, 40, 17})
  ROOT grad = f32[32,16] scatter(table, idx, g), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=addTABLE
})";
  for (const auto& [updates, table] : std::vector<std::pair<std::string, std::string>>{
           {", sharding={devices=[1,4]<=[4]}", ""}, {"", ", sharding={devices=[4,1]<=[4]}"}}) {
    std::string text = scatter;
    text.replace(text.find("UPDATES"), 7, updates);
    text.replace(text.find("TABLE"), 5, table);
    text.replace(text.find("TABLE"), 5, table);  // the result split as the table
    auto m = check_partitioned(text, 4);
    ASSERT_TRUE(m);
    EXPECT_EQ(collectives(*m), 0) << ir::print_module(*m);
    EXPECT_EQ(find_opcode(*m, Opcode::kScatter)->shape().to_string(false), updates.empty() ? "f32[8,16]" : "f32[32,4]");
  }
}

TEST(SpmdPartitioner, ManualRegionsRunAsWritten) {
  // JAX's shard_map: each device negates its rows and sums them with every other
  // device's (an all-reduce written by hand), then the pieces make a whole again.
  auto m = ir::parse_module(R"(HloModule manual, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[8,4] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  piece = f32[2,4] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[2,4] negate(piece)
  sum = f32[2,4] all-reduce(n), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add
  whole = f32[8,4] custom-call(sum), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
  ROOT r = f32[8,4] add(whole, x)
})");
  spmd_partition(*m);
  ir::verify_module(*m);
  EXPECT_EQ(count(*m, Opcode::kCustomCall), 0) << ir::print_module(*m);
  // The same computed without a manual region: the sum of every device's negated rows,
  // repeated for each device's rows, plus x.
  auto reference = ir::parse_module(R"(HloModule reference
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0)
  n = f32[8,4] negate(x)
  blocks = f32[4,2,4] reshape(n)
  z = f32[] constant(0)
  sum = f32[2,4] reduce(blocks, z), dimensions={0}, to_apply=add
  tiled = f32[4,2,4] broadcast(sum), dimensions={1,2}
  whole = f32[8,4] reshape(tiled)
  ROOT r = f32[8,4] add(whole, x)
})");
  std::mt19937_64 rng(5);
  const std::vector<Literal> args = testing::tame_arguments(*reference->entry(), rng);
  const Literal want = ir::evaluate(*reference, args);
  std::vector<std::vector<Literal>> pieces(4);
  for (int64_t d = 0; d < 4; ++d)
    pieces[static_cast<size_t>(d)].push_back(ir::shard_literal(args[0], m->entry()->parameter(0)->sharding().value(), d));
  const std::vector<Literal> results = ir::evaluate_spmd(*m, pieces, {1, 4});
  EXPECT_EQ(testing::near(want, ir::unshard_literal(results, m->entry()->root()->sharding().value(), want.shape()), 1e-6),
            "");
  // A value of the region used outside it is an error naming the user.
  auto bad = ir::parse_module(R"(HloModule bad, num_partitions=2
ENTRY e {
  x = f32[4] parameter(0), sharding={devices=[2]<=[2]}
  s = f32[4] custom-call(x), custom_call_target="Sharding", sharding={devices=[2]<=[2]}
  piece = f32[2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT n = f32[2] negate(piece), sharding={replicated}
})");
  try {
    spmd_partition(*bad);
    FAIL() << "used a manual value outside its region";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a value of a manual region is used outside it"), std::string::npos) << e.what();
  }
}

TEST(SpmdPartitioner, UnevenSplitsPadTheLastPieces) {
  // 7 rows over 2 or 4 devices, 10 columns over 4: the last pieces are padded.
  const std::vector<std::string> shardings = {
      "{replicated}", "{devices=[4,1]<=[4]}", "{devices=[1,4]<=[4]}", "{devices=[2,2]<=[4]}",
      "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[2,2]T(1,0)}"};
  for (const std::string& from : shardings)
    for (const std::string& to : shardings) {
      SCOPED_TRACE(from + " -> " + to);
      check_partitioned(fmt::format(R"(HloModule r, num_partitions=4
ENTRY r {{
  p = s32[7,10] parameter(0), sharding={}
  ROOT n = s32[7,10] negate(p), sharding={}
}})",
                                    from, to),
                        4);
    }
  // Through ops that must not see the padding (e = x + 1 is 1 there, not 0): a reduce
  // over the split rows, a dot contracting them, a reshape.
  auto m = check_partitioned(R"(HloModule u, num_partitions=4
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY u {
  x = s32[7,10] parameter(0), sharding={devices=[4,1]<=[4]}
  y = s32[7,3] parameter(1), sharding={devices=[4,1]<=[4]}
  one = s32[] constant(1)
  ones = s32[7,10] broadcast(one), dimensions={}
  e = s32[7,10] add(x, ones)
  z = s32[] constant(0)
  r = s32[10] reduce(e, z), dimensions={0}, to_apply=add
  d = s32[10,3] dot(e, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  f = s32[70] reshape(x)
  ROOT t = (s32[10], s32[10,3], s32[70], s32[7,10]) tuple(r, d, f, e)
})",
                             4);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->parameter(0)->shape().to_string(false), "s32[2,10]");
}


}  // namespace
}  // namespace podsim::passes
