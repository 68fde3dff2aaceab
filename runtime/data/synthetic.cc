// Synthetic datasets: Gaussian blobs and a noisy linear regression.
#include "common/error.h"
#include "runtime/data/datasets.h"
#include "runtime/data/random.h"

namespace podsim::data {

TensorDataset make_blobs(const BlobsOptions& o) {
  if (o.samples < 1 || o.features < 1 || o.classes < 1)
    fail("make_blobs: samples ({}), features ({}) and classes ({}) must be positive", o.samples,
         o.features, o.classes);
  if (!(o.cluster_std >= 0)) fail("make_blobs: cluster_std {} must be >= 0", o.cluster_std);
  SplitMix64 rng(o.seed);
  std::vector<double> centers(static_cast<size_t>(o.classes * o.features));
  for (double& c : centers) c = (2 * rng.uniform() - 1) * o.center_box;
  std::vector<float> x(static_cast<size_t>(o.samples * o.features));
  std::vector<int64_t> y(static_cast<size_t>(o.samples));
  for (int64_t i = 0; i < o.samples; ++i) {
    int64_t label = i % o.classes;
    y[static_cast<size_t>(i)] = label;
    for (int64_t f = 0; f < o.features; ++f)
      x[static_cast<size_t>(i * o.features + f)] = static_cast<float>(
          centers[static_cast<size_t>(label * o.features + f)] + o.cluster_std * rng.normal());
  }
  return TensorDataset(
      {Tensor::from_vector(x, {o.samples, o.features}), Tensor::from_vector(y, {o.samples})});
}

Regression make_regression(const RegressionOptions& o) {
  if (o.samples < 1 || o.features < 1)
    fail("make_regression: samples ({}) and features ({}) must be positive", o.samples, o.features);
  if (!(o.noise >= 0)) fail("make_regression: noise {} must be >= 0", o.noise);
  SplitMix64 rng(o.seed);
  std::vector<float> weight(static_cast<size_t>(o.features));
  for (float& w : weight) w = static_cast<float>(rng.normal());
  auto bias = static_cast<float>(rng.normal());
  std::vector<float> x(static_cast<size_t>(o.samples * o.features));
  std::vector<float> y(static_cast<size_t>(o.samples));
  for (int64_t i = 0; i < o.samples; ++i) {
    double sum = bias;
    for (int64_t f = 0; f < o.features; ++f) {
      auto v = static_cast<float>(rng.normal());
      x[static_cast<size_t>(i * o.features + f)] = v;
      sum += static_cast<double>(v) * weight[static_cast<size_t>(f)];
    }
    y[static_cast<size_t>(i)] = static_cast<float>(sum + o.noise * rng.normal());
  }
  return {TensorDataset({Tensor::from_vector(x, {o.samples, o.features}),
                         Tensor::from_vector(y, {o.samples, 1})}),
          std::move(weight), bias};
}

}  // namespace podsim::data
