// The SPMD partitioner's windowed instructions: slices, pads and concatenates that shift
// a split dimension, convolutions and reduce-windows split along space, and the pod
// cost model's choice between exchanging windows and gathering. Every partitioned module
// is run on the pieces of random arguments and compared with the reference evaluation
// of the unpartitioned module (spmd_test_util.h).
#include <gtest/gtest.h>

#include "compiler/passes/spmd/tiling.h"
#include "tests/compiler/passes/spmd_test_util.h"
#include "topology/pod_config.h"

namespace podsim::passes {
namespace {

using testing::check_partitioned;
using testing::collectives;
using ir::Literal;
using ir::Opcode;
using testing::count;

topology::PodConfig slow_links(const std::string& name) {
  topology::PodConfig pod = topology::pod_config(name);
  pod.ici_link_bandwidth_bytes_per_s = 1e6;
  return pod;
}

TEST(SpmdPartitioner, ShiftingSlicesAndPadsExchangeHalosWithNeighbours) {
  // Sequence parallelism: a sequence split 4 ways (unevenly: 15 positions after the
  // shift), next-position differences, and a causal pad with a value from a parameter.
  // Each device needs an element or two of its neighbour's piece: collective-permutes,
  // nothing gathered (on links where bytes decide: these values are small enough that
  // one-shot gathers would take as long on v5e).
  const topology::PodConfig slow = slow_links("v5e-4");
  auto m = check_partitioned(R"(HloModule shift, num_partitions=4
ENTRY e {
  x = f32[4,16] parameter(0), sharding={devices=[1,4]<=[4]}
  v = f32[] parameter(1)
  next = f32[4,15] slice(x), slice={[0:4], [1:16]}
  here = f32[4,15] slice(x), slice={[0:4], [0:15]}
  d = f32[4,15] subtract(next, here)
  p = f32[4,18] pad(d, v), padding=0_0x2_1
  ROOT r = f32[4,18] multiply(p, p)
})",
                             4, 5, 1e-5, testing::random_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather) + count(*m, Opcode::kAllToAll), 0) << ir::print_module(*m);
  EXPECT_GE(count(*m, Opcode::kCollectivePermute), 2) << ir::print_module(*m);
  EXPECT_EQ(m->entry()->root()->shape().to_string(false), "f32[4,5]");
  // Both dimensions split on a 2x2 mesh, a shift on each; and a negative pad (a slice).
  m = check_partitioned(R"(HloModule shift2, num_partitions=4
ENTRY e {
  x = s32[6,10] parameter(0), sharding={devices=[2,2]<=[4]}
  z = s32[] constant(-7)
  a = s32[6,10] pad(x, z), padding=1_-1x-2_2
  b = s32[5,9] slice(x), slice={[1:6], [0:9]}
  c = s32[5,9] slice(a), slice={[0:5], [1:10]}
  ROOT r = s32[5,9] add(b, c)
})",
                        4, 6, 0, testing::random_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather) + count(*m, Opcode::kAllToAll), 0) << ir::print_module(*m);
}

TEST(SpmdPartitioner, ConcatenatesAlongASplitDimensionTakeEachDevicesWindow) {
  // A cache of 30 positions split 4 ways with 2 new ones appended (a replicated value):
  // each device's 8 positions of the result come from its own piece of the cache, or,
  // on the last device, from the new positions; nothing moves. Then two values that
  // are not split: the result's pieces are cut from them where they lie.
  auto m = check_partitioned(R"(HloModule append, num_partitions=4
ENTRY e {
  cache = f32[4,30] parameter(0), sharding={devices=[1,4]<=[4]}
  new = f32[4,2] parameter(1)
  ROOT c = f32[4,32] concatenate(cache, new), dimensions={1}, sharding={devices=[1,4]<=[4]}
})",
                             4);
  ASSERT_TRUE(m);
  EXPECT_EQ(collectives(*m), 0) << ir::print_module(*m);
  m = check_partitioned(R"(HloModule halves, num_partitions=4
ENTRY e {
  a = s32[3,5] parameter(0), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  b = s32[3,2] parameter(1)
  c = s32[3,1] parameter(2)
  ROOT r = s32[3,8] concatenate(a, b, c), dimensions={1}, sharding={devices=[2,2]<=[4]}
})",
                        4, 9);
  ASSERT_TRUE(m);
}

TEST(SpmdPartitioner, SlicesFarFromTheirPiecesTakeThePartsTheyNeed) {
  const topology::PodConfig slow = slow_links("v5e-4");
  // A few rows of the second piece of a split value: each device's row lies within that
  // piece, which sends it (a collective-permute per distance between the pieces);
  // nothing is gathered.
  auto m = check_partitioned(R"(HloModule far, num_partitions=4
ENTRY e {
  x = f32[64,4] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[4,4] slice(x), slice={[16:20], [0:4]}, sharding={devices=[4,1]<=[4]}
})",
                             4, 1, 1e-5, testing::random_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kCollectivePermute), 3) << ir::print_module(*m);
  // Windows over two pieces, neither the device's own nor its neighbour's: the parts
  // each needs of each piece, put together by position.
  m = check_partitioned(R"(HloModule parts, num_partitions=4
ENTRY e {
  x = s32[30,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT s = s32[16,3] slice(x), slice={[13:29], [0:3]}, sharding={devices=[4,1]<=[4]}
})",
                        4, 2, 0, testing::random_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 0) << ir::print_module(*m);
  // A packed QKV projection split by features under tensor parallelism: q, k and v are
  // each a third of the features, split the same way; each device's features of them lie
  // on one or two other devices (uneven: 14 features a third, pieces of 11 and 4). The
  // gradient pads them back into the packed layout (pads far from their pieces, which a
  // one-shot gather of their small operands may beat).
  m = check_partitioned(R"(HloModule qkv, num_partitions=4
ENTRY e {
  x = f32[6,42] parameter(0), sharding={devices=[1,4]<=[4]}
  q = f32[6,14] slice(x), slice={[0:6], [0:14]}
  k = f32[6,14] slice(x), slice={[0:6], [14:28]}
  v = f32[6,14] slice(x), slice={[0:6], [28:42]}
  qk = f32[6,14] multiply(q, k)
  a = f32[6,14] add(qk, v)
  z = f32[] constant(0)
  pq = f32[6,42] pad(a, z), padding=0_0x0_28
  pv = f32[6,42] pad(qk, z), padding=0_0x28_0
  ROOT g = f32[6,42] add(pq, pv), sharding={devices=[1,4]<=[4]}
})",
                        4, 3, 1e-5, testing::random_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_GE(count(*m, Opcode::kCollectivePermute), 2) << ir::print_module(*m);
}

TEST(SpmdPartitioner, FarWindowsTakeLongerThanAGatherOnV5eForSmallValues) {
  // Each of 8 devices needs a row of the first piece of a small value: on v5e's links,
  // seven collective-permutes take longer than one all-gather.
  const topology::PodConfig v5e8 = topology::pod_config("v5e-8");
  auto m = check_partitioned(R"(HloModule first, num_partitions=8
ENTRY e {
  x = f32[64,2] parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT s = f32[8,2] slice(x), slice={[0:8], [0:2]}, sharding={devices=[8,1]<=[8]}
})",
                             8, 1, 1e-5, testing::random_arguments, &v5e8);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kCollectivePermute), 0) << ir::print_module(*m);
  EXPECT_EQ(count(*m, Opcode::kAllGather), 1) << ir::print_module(*m);
}

TEST(SpmdPartitioner, ConvolutionsRunOnBatchAndOutputFeaturePieces) {
  // Images split by batch (data parallel), the kernel by output features over the other
  // mesh axis: every device convolves its images with its filters, nothing moves.
  auto m = check_partitioned(R"(HloModule c, num_partitions=4
ENTRY c {
  image = f32[4,6,6,3] parameter(0), sharding={devices=[2,1,1,1,2]<=[4] last_tile_dim_replicate}
  kernel = f32[3,3,3,8] parameter(1), sharding={devices=[1,1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT conv = f32[4,6,6,8] convolution(image, kernel), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})",
                             4, 1, 1e-5);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather) + count(*m, Opcode::kAllToAll), 0) << ir::print_module(*m);
  EXPECT_EQ(m->entry()->root()->shape().to_string(false), "f32[2,6,6,4]");
}

TEST(SpmdPartitioner, SpatiallySplitConvolutionsAndPoolsExchangeHalos) {
  // Images split by rows over 4 devices (spatial partitioning): a 3x3 convolution with
  // padding, a strided and dilated one, and max and sum pools (their padding is the
  // init value), unevenly split. Each device takes the rows its window reads from its
  // neighbours; nothing is gathered (on links where bytes decide).
  const topology::PodConfig slow = slow_links("v5e-4");
  auto m = check_partitioned(R"(HloModule spatial, num_partitions=4
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY c {
  image = f32[2,14,6,3] parameter(0), sharding={devices=[1,4,1,1]<=[4]}
  kernel = f32[3,3,3,4] parameter(1)
  conv = f32[2,14,6,4] convolution(image, kernel), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  strided = f32[2,6,3,4] convolution(image, kernel), window={size=3x3 stride=2x2 pad=1_0x1_1 rhs_dilate=2x1}, dim_labels=b01f_01io->b01f
  ninf = f32[] constant(-inf)
  pool = f32[2,7,3,4] reduce-window(conv, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
  zero = f32[] constant(0)
  sum = f32[2,6,3,4] reduce-window(strided, zero), window={size=1x2x1x1 pad=0_0x1_0x0_0x0_0}, to_apply=add
  ROOT out = (f32[2,7,3,4], f32[2,6,3,4]) tuple(pool, sum), sharding={{devices=[1,4,1,1]<=[4]}, {devices=[1,4,1,1]<=[4]}}
})",
                             4, 1, 1e-4, testing::tame_arguments, &slow);
  ASSERT_TRUE(m);
  EXPECT_EQ(count(*m, Opcode::kAllGather) + count(*m, Opcode::kAllToAll), 0) << ir::print_module(*m);
  EXPECT_GE(count(*m, Opcode::kCollectivePermute), 4) << ir::print_module(*m);
}


}  // namespace
}  // namespace podsim::passes
