#include "runtime/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "runtime/data/random.h"

namespace podsim::data {
namespace {

std::string shape_text(const ir::Shape& shape) { return shape.to_string(false); }

// The bytes of one row (all elements after the first dimension) of a literal.
size_t row_bytes(const ir::Literal& literal) {
  int64_t rows = literal.shape().dims()[0];
  return rows == 0 ? 0 : literal.bytes().size() / static_cast<size_t>(rows);
}

// Rows of a [n, ...] literal gathered into a [indices.size(), ...] host tensor.
Tensor gather_rows(const ir::Literal& literal, std::span<const int64_t> indices) {
  std::vector<int64_t> dims(literal.shape().dims().begin(), literal.shape().dims().end());
  dims[0] = static_cast<int64_t>(indices.size());
  ir::Literal out(ir::Shape(literal.type(), dims));
  size_t width = row_bytes(literal);
  for (size_t i = 0; i < indices.size(); ++i)
    std::memcpy(out.bytes().data() + i * width,
                literal.bytes().data() + static_cast<size_t>(indices[i]) * width, width);
  return Tensor::from_literal(std::move(out));
}

// A row without its first dimension.
Tensor row(const ir::Literal& literal, int64_t index) {
  std::vector<int64_t> dims(literal.shape().dims().begin() + 1, literal.shape().dims().end());
  ir::Literal out(ir::Shape(literal.type(), dims));
  size_t width = row_bytes(literal);
  std::memcpy(out.bytes().data(), literal.bytes().data() + static_cast<size_t>(index) * width,
              width);
  return Tensor::from_literal(std::move(out));
}

}  // namespace

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  return collate(examples);
}

Example collate(std::span<const Example> examples) {
  if (examples.empty()) fail("collate: no examples to stack into a batch");
  size_t fields = examples[0].size();
  std::vector<ir::Literal> literals(fields);
  Example batch;
  for (size_t f = 0; f < fields; ++f) {
    std::vector<ir::Literal> parts;
    parts.reserve(examples.size());
    for (size_t e = 0; e < examples.size(); ++e) {
      if (examples[e].size() != fields)
        fail("collate: example {} has {} fields but example 0 has {}", e, examples[e].size(),
             fields);
      if (!examples[e][f].defined()) fail("collate: field {} of example {} is undefined", f, e);
      parts.push_back(examples[e][f].to_literal());
      if (!(parts.back().shape() == parts[0].shape()))
        fail(
            "collate: field {} is {} in example {} but {} in example 0; every example of a "
            "batch must have the same shapes",
            f, shape_text(parts.back().shape()), e, shape_text(parts[0].shape()));
    }
    std::vector<int64_t> dims{static_cast<int64_t>(parts.size())};
    for (int64_t d : parts[0].shape().dims()) dims.push_back(d);
    ir::Literal out(ir::Shape(parts[0].type(), dims));
    size_t width = parts[0].bytes().size();
    for (size_t e = 0; e < parts.size(); ++e)
      std::memcpy(out.bytes().data() + e * width, parts[e].bytes().data(), width);
    batch.push_back(Tensor::from_literal(std::move(out)));
  }
  return batch;
}

TensorDataset::TensorDataset(std::vector<Tensor> tensors) {
  if (tensors.empty()) fail("TensorDataset: needs at least one tensor");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) fail("TensorDataset: tensor {} is undefined", i);
    if (tensors[i].dim() == 0)
      fail(
          "TensorDataset: tensor {} is a scalar; every tensor needs a first dimension that "
          "indexes the examples",
          i);
    if (tensors[i].size(0) != tensors[0].size(0))
      fail("TensorDataset: tensor {} has {} examples (first dimension) but tensor 0 has {}", i,
           tensors[i].size(0), tensors[0].size(0));
  }
  size_ = tensors[0].size(0);
  for (Tensor& t : tensors) {
    Tensor host = t.cpu();
    fields_.push_back(std::make_shared<const ir::Literal>(host.to_literal()));
    tensors_.push_back(std::move(host));
  }
}

Example TensorDataset::get(int64_t index) const {
  if (index < 0 || index >= size_)
    fail("TensorDataset::get: index {} is out of range for a dataset of {} examples", index, size_);
  Example out;
  for (const auto& field : fields_) out.push_back(row(*field, index));
  return out;
}

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  for (int64_t index : indices)
    if (index < 0 || index >= size_)
      fail("TensorDataset::get_batch: index {} is out of range for a dataset of {} examples", index,
           size_);
  Example out;
  for (const auto& field : fields_) out.push_back(gather_rows(*field, indices));
  return out;
}

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  if (n < 0) fail("random_permutation: negative length {}", n);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  SplitMix64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(out[static_cast<size_t>(i)], out[static_cast<size_t>(j)]);
  }
  return out;
}

std::pair<TensorDataset, TensorDataset> train_test_split(const TensorDataset& dataset,
                                                         double test_fraction, uint64_t seed) {
  int64_t n = dataset.size();
  if (!(test_fraction > 0 && test_fraction < 1))
    fail("train_test_split: test_fraction {} must be in (0, 1)", test_fraction);
  if (n < 2) fail("train_test_split: a dataset of {} examples cannot be split", n);
  auto test_count = static_cast<int64_t>(std::floor(static_cast<double>(n) * test_fraction));
  test_count = std::clamp<int64_t>(test_count, 1, n - 1);
  std::vector<int64_t> order = random_permutation(n, seed);
  std::span<const int64_t> all(order);
  Example test = dataset.get_batch(all.first(static_cast<size_t>(test_count)));
  Example train = dataset.get_batch(all.subspan(static_cast<size_t>(test_count)));
  return {TensorDataset(std::move(train)), TensorDataset(std::move(test))};
}

}  // namespace podsim::data
