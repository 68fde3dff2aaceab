// Batches of a dataset on the host, like torch.utils.data.DataLoader (single process):
// a batch size, shuffling with a seed, and dropping a short last batch.
//
//   DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (const Example& batch : loader) ...   // each range-for is one epoch
//
// A shuffled epoch's order depends only on (seed, epoch number), so runs repeat exactly.
//
// Data-parallel replicas each take their own shard of every batch: with replicas = R and
// rank = r, the loader walks the same epoch order as every other replica in global
// batches of R x batch_size and gives rank r the r-th slice of each (all shards equal,
// so drop_last is required). The replicas together see exactly the batches one loader of
// batch R x batch_size would give.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <vector>

#include "runtime/data/dataset.h"

namespace podsim::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  int64_t replicas = 1;  // data-parallel replicas sharing the epoch order
  int64_t rank = 0;      // which replica's shard this loader gives (0 .. replicas-1)
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});

  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  // Batches per epoch (len(loader)).
  int64_t num_batches() const;

  // The example order of an epoch (0, 1, ...): the identity, or a permutation drawn
  // from (seed, epoch) when shuffling.
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  // Batch number i (0-based) of an epoch with that order (this rank's shard of it).
  Example batch(std::span<const int64_t> order, int64_t index) const;
  // Epochs started so far by begin(); the next begin() runs epoch number epoch().
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t epoch) { epoch_ = epoch; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = const Example*;
    using reference = const Example&;

    Iterator() = default;
    const Example& operator*() const { return current_; }
    const Example* operator->() const { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return index_ == other.index_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::shared_ptr<const std::vector<int64_t>> order,
             int64_t index);
    void load();

    const DataLoader* loader_ = nullptr;
    std::shared_ptr<const std::vector<int64_t>> order_;
    int64_t index_ = -1;  // -1: the end
    Example current_;
  };

  // Starts the next epoch.
  Iterator begin();
  Iterator end() const { return Iterator(); }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace podsim::data
