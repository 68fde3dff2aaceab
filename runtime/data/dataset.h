// Datasets for training loops, after torch.utils.data: a Dataset gives examples (a few
// host tensors: input, target, ...) by index; TensorDataset slices host tensors along
// their first dimension. Batches are host tensors with a leading batch dimension, made
// by copying bytes, so building one runs no graph. DataLoader (data_loader.h) batches
// and shuffles; DeviceLoader (device_loader.h) moves batches to a device.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::data {

// One example or one batch: its fields in a fixed order, e.g. {input, target}.
using Example = std::vector<Tensor>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Out-of-range indices are a podsim::Error.
  virtual Example get(int64_t index) const = 0;
  // The examples at indices, each field stacked along a new first dimension. The
  // default stacks get(i); datasets holding contiguous data override it.
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

// Stacks examples field by field into host tensors [n, ...]. Every example must have
// the same number of fields, and a field the same dtype and shape in every example.
Example collate(std::span<const Example> examples);

class TensorDataset : public Dataset {
 public:
  // Tensors with the same first dimension (the number of examples); device tensors are
  // copied to the host.
  explicit TensorDataset(std::vector<Tensor> tensors);

  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  Example get_batch(std::span<const int64_t> indices) const override;
  // The whole tensors, on the host.
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
  std::vector<std::shared_ptr<const ir::Literal>> fields_;
  int64_t size_ = 0;
};

// A deterministic random permutation of [0, n) for a seed, the same on every platform
// and standard library (Fisher-Yates over SplitMix64).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed);

// Splits a dataset's examples at random (by seed) into a train and a test part;
// test_fraction of the examples (rounded down, at least one) go to the test part.
std::pair<TensorDataset, TensorDataset> train_test_split(const TensorDataset& dataset,
                                                         double test_fraction, uint64_t seed);

}  // namespace podsim::data
