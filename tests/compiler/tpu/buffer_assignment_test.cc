// Buffer placement by liveness and the index-space helpers of the TPU target.
#include <gtest/gtest.h>

#include <random>

#include "compiler/tpu/buffer_assignment.h"
#include "compiler/tpu/tiling.h"
#include "topology/chip_config.h"

namespace podsim::tpu {
namespace {

bool live_together(const BufferRequest& a, const BufferRequest& b) {
  return !(a.last_step < b.first_step || b.last_step < a.first_step);
}

TEST(PlaceBuffers, DisjointLifetimesShareBytes) {
  Placement p = place_buffers({{100, 0, 1}, {100, 2, 3}, {100, 4, 5}}, 64);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(p.total_bytes, 100);
}

TEST(PlaceBuffers, OverlappingLifetimesGetAlignedDisjointBytes) {
  // Largest first: the 300-byte buffer at 0, then 200 at 320 (after 300, aligned to
  // 64), then 100 after it at 576; the last lives alone and reuses 0.
  Placement p = place_buffers({{100, 0, 2}, {300, 1, 2}, {200, 0, 1}, {50, 3, 3}}, 64);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{576, 0, 320, 0}));
  EXPECT_EQ(p.total_bytes, 676);
}

TEST(PlaceBuffers, FillsAGapBetweenLiveBuffers) {
  // a [0,128) and c [256,384) live throughout; b dies after step 0, and d fits the gap
  // b leaves when placed after it.
  Placement p = place_buffers({{128, 0, 9}, {128, 0, 0}, {128, 0, 9}, {100, 5, 6}}, 128);
  EXPECT_EQ(p.offsets[0], 0);
  EXPECT_EQ(p.offsets[1], 128);
  EXPECT_EQ(p.offsets[2], 256);
  EXPECT_EQ(p.offsets[3], 128);
}

TEST(PlaceBuffers, RandomRequestsNeverOverlapWhileLive) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> r;
    int n = std::uniform_int_distribution<int>(1, 40)(rng);
    int64_t sum = 0;
    for (int k = 0; k < n; ++k) {
      int64_t first = std::uniform_int_distribution<int64_t>(0, 20)(rng);
      int64_t last = first + std::uniform_int_distribution<int64_t>(0, 6)(rng);
      int64_t bytes = std::uniform_int_distribution<int64_t>(0, 5000)(rng);
      r.push_back({bytes, first, last});
      sum += bytes + 511;
    }
    Placement p = place_buffers(r, 512);
    EXPECT_LE(p.total_bytes, sum);
    for (int a = 0; a < n; ++a) {
      EXPECT_EQ(p.offsets[a] % 512, 0);
      EXPECT_LE(p.offsets[a] + r[a].bytes, p.total_bytes);
      for (int b = a + 1; b < n; ++b) {
        if (!live_together(r[a], r[b]) || r[a].bytes == 0 || r[b].bytes == 0) continue;
        bool apart = p.offsets[a] + r[a].bytes <= p.offsets[b] || p.offsets[b] + r[b].bytes <= p.offsets[a];
        EXPECT_TRUE(apart) << "trial " << trial << ": buffers " << a << " and " << b;
      }
    }
  }
}

TEST(Collapse, MergesWhatEveryAccessWalksContiguously) {
  // [2,3,4] row-major and a broadcast over dim 0: dims 1 and 2 merge, dim 0 stays.
  Collapsed c = collapse({2, 3, 4}, {0, 0, 0}, {{12, 4, 1}, {0, 4, 1}});
  EXPECT_EQ(c.dims, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(c.strides[0], (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(c.strides[1], (std::vector<int64_t>{0, 1}));
  // A transpose keeps every dim apart; size-1 dims vanish.
  Collapsed t = collapse({3, 1, 5}, {0, 0, 0}, {{5, 5, 1}, {1, 0, 3}});
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t.strides[1], (std::vector<int64_t>{1, 3}));
  // Labels keep reduced and kept dims apart even when contiguous.
  Collapsed l = collapse({4, 5}, {0, 1}, {{5, 1}});
  EXPECT_EQ(l.dims, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(l.labels, (std::vector<int>{0, 1}));
}

TEST(IssueCopy, SplitsBeyondFourDimensionsAndMergesContiguousOnes) {
  ProgramBuilder pb(topology::preset("tiny"), 0);
  int32_t a = pb.add_region("a", isa::MemorySpace::kHbm, 0, 1 << 20);
  int32_t b = pb.add_region("b", isa::MemorySpace::kHbm, 1 << 20, 1 << 20);
  // A contiguous 3-D copy is one 1-D descriptor.
  EXPECT_EQ(issue_copy(pb, a, 0, b, 0, 4, {2, 3, 4}, {12, 4, 1}, {12, 4, 1}, 0), 1);
  EXPECT_EQ(pb.executable().descriptors.back().sizes, (std::vector<int64_t>{24}));
  // A 6-D transpose: 4 dims in the descriptor, one DMA per index of the 2 outer dims.
  std::vector<int64_t> sizes = {2, 3, 2, 3, 2, 3}, src = {108, 36, 18, 6, 3, 1}, dst = {1, 2, 6, 12, 36, 72};
  EXPECT_EQ(issue_copy(pb, a, 0, b, 0, 4, sizes, src, dst, 0), 6);
  EXPECT_EQ(pb.executable().descriptors.back().sizes.size(), 4u);
  // Empty copies issue nothing.
  EXPECT_EQ(issue_copy(pb, a, 0, b, 0, 4, {3, 0}, {1, 1}, {1, 1}, 0), 0);
}

}  // namespace
}  // namespace podsim::tpu
