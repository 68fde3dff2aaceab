#include "runtime/data/data_loader.h"

#include <algorithm>

#include "common/error.h"

namespace podsim::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (!dataset_) fail("DataLoader: the dataset is null");
  if (options_.batch_size < 1)
    fail("DataLoader: batch_size {} must be at least 1", options_.batch_size);
  if (options_.replicas < 1 || options_.rank < 0 || options_.rank >= options_.replicas)
    fail("DataLoader: rank {} is not one of {} replica(s)", options_.rank, options_.replicas);
  if (options_.replicas > 1 && !options_.drop_last)
    fail("DataLoader: {} replicas need drop_last (every replica takes an equal shard)",
         options_.replicas);
}

int64_t DataLoader::num_batches() const {
  int64_t n = dataset_->size();
  int64_t global = options_.batch_size * options_.replicas;
  return options_.drop_last ? n / global : (n + global - 1) / global;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  int64_t n = dataset_->size();
  if (!options_.shuffle) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    return order;
  }
  // Mixes the epoch into the seed so that epochs differ and (seed, epoch) pairs do not
  // collide for small values.
  return random_permutation(n,
                            options_.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch));
}

Example DataLoader::batch(std::span<const int64_t> order, int64_t index) const {
  if (index < 0 || index >= num_batches())
    fail("DataLoader::batch: batch {} is out of range (an epoch has {} batches)", index,
         num_batches());
  auto begin = static_cast<size_t>((index * options_.replicas + options_.rank) * options_.batch_size);
  size_t count = std::min(static_cast<size_t>(options_.batch_size), order.size() - begin);
  return dataset_->get_batch(order.subspan(begin, count));
}

DataLoader::Iterator DataLoader::begin() {
  auto order = std::make_shared<const std::vector<int64_t>>(epoch_order(epoch_));
  ++epoch_;
  return Iterator(this, std::move(order), num_batches() > 0 ? 0 : -1);
}

DataLoader::Iterator::Iterator(const DataLoader* loader,
                               std::shared_ptr<const std::vector<int64_t>> order, int64_t index)
    : loader_(loader), order_(std::move(order)), index_(index) {
  load();
}

void DataLoader::Iterator::load() {
  if (index_ >= 0) current_ = loader_->batch(*order_, index_);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++index_;
  if (index_ >= loader_->num_batches()) {
    index_ = -1;
    current_.clear();
  }
  load();
  return *this;
}

}  // namespace podsim::data
