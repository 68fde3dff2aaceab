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
}

}  // namespace
}  // namespace podsim::data
