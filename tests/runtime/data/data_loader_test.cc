// DataLoader: batch sizes and drop_last, every example once per epoch, shuffling that
// depends only on (seed, epoch), and batches equal to the dataset's rows.
#include "runtime/data/data_loader.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

namespace podsim::data {
namespace {

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<float> x(ids.begin(), ids.end());
  for (float& v : x) v *= 10;
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {n, 1}), Tensor::from_vector(ids, {n})});
}

std::vector<std::vector<int64_t>> epoch_ids(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const Example& batch : loader) {
    std::vector<int64_t> ids = batch[1].to_vector<int64_t>();
    std::vector<float> x = batch[0].to_vector<float>();
    EXPECT_EQ(batch[0].shape(), (std::vector<int64_t>{static_cast<int64_t>(ids.size()), 1}));
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(x[i], 10.f * static_cast<float>(ids[i]));
    out.push_back(ids);
  }
  return out;
}

TEST(DataLoader, SequentialBatchesKeepTheShortLastOne) {
  DataLoader loader(numbered(10), {.batch_size = 4});
  EXPECT_EQ(loader.num_batches(), 3);
  auto batches = epoch_ids(loader);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<int64_t>{8, 9}));
}

TEST(DataLoader, DropLast) {
  DataLoader loader(numbered(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(loader.num_batches(), 2);
  auto batches = epoch_ids(loader);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1], (std::vector<int64_t>{4, 5, 6, 7}));
  DataLoader tiny(numbered(3), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(epoch_ids(tiny).size(), 0u);
}

TEST(DataLoader, ShuffleIsAPermutationPerEpochAndRepeatsWithTheSeed) {
  DataLoader a(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 9});
  DataLoader b(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 9});
  DataLoader c(numbered(50), {.batch_size = 8, .shuffle = true, .seed = 10});
  auto a0 = epoch_ids(a), a1 = epoch_ids(a);
  auto b0 = epoch_ids(b), b1 = epoch_ids(b);
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1);  // epochs differ
  EXPECT_NE(a0, epoch_ids(c));
  std::set<int64_t> seen;
  for (const auto& batch : a0) seen.insert(batch.begin(), batch.end());
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(a.epoch(), 2);
  a.set_epoch(1);
  EXPECT_EQ(epoch_ids(a), a1);
}

TEST(DataLoader, BadOptionsAreErrors) {
  EXPECT_THROW(DataLoader(numbered(3), {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(nullptr), Error);
  EXPECT_THROW(DataLoader(numbered(8), {.batch_size = 2, .drop_last = true, .replicas = 2, .rank = 2}),
               Error);
  // Replicas need equal shards.
  EXPECT_THROW(DataLoader(numbered(8), {.batch_size = 2, .replicas = 2, .rank = 0}), Error);
}

TEST(DataLoader, ReplicaShardsTogetherAreTheGlobalBatches) {
  constexpr int64_t replicas = 3, batch = 2;
  DataLoader global(numbered(23), {.batch_size = replicas * batch, .shuffle = true, .seed = 5,
                                   .drop_last = true});
  auto expected = epoch_ids(global);
  ASSERT_EQ(expected.size(), 3u);  // 23 examples: three global batches of 6
  std::vector<std::vector<std::vector<int64_t>>> shards;
  for (int64_t rank = 0; rank < replicas; ++rank) {
    DataLoader loader(numbered(23), {.batch_size = batch, .shuffle = true, .seed = 5,
                                     .drop_last = true, .replicas = replicas, .rank = rank});
    EXPECT_EQ(loader.num_batches(), 3);
    shards.push_back(epoch_ids(loader));
  }
  for (size_t b = 0; b < expected.size(); ++b) {
    std::vector<int64_t> joined;
    for (const auto& shard : shards) {
      ASSERT_EQ(shard[b].size(), static_cast<size_t>(batch));
      joined.insert(joined.end(), shard[b].begin(), shard[b].end());
    }
    EXPECT_EQ(joined, expected[b]) << "batch " << b;
  }
}

}  // namespace
}  // namespace podsim::data
