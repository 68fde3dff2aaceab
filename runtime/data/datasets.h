// Ready-made datasets for examples and tests:
//  - scikit-learn's handwritten digits (8x8 images, values 0..16, labels 0..9), read from
//    the file the Debian package python3-sklearn installs;
//  - synthetic data: Gaussian blobs for classification, a noisy linear regression;
//  - a character-level text dataset for a small GPT (char_text.h).
// Synthetic data depends only on its seed (the same on every platform).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"

namespace podsim::data {

inline constexpr const char* kDigitsPath =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

// The 1797 digits as {images f32 [1797, 64] (row-major 8x8, values 0..16), labels s64
// [1797]}. A missing file is a podsim::Error naming the package to install.
TensorDataset load_digits(const std::string& path = kDigitsPath);

// sklearn.datasets.make_blobs-like: n_classes centers uniform in [-center_box,
// center_box]^n_features, each example a center plus normal noise of cluster_std; the
// classes take turns, so they are balanced. {x f32 [n, n_features], y s64 [n]}.
struct BlobsOptions {
  int64_t samples = 256;
  int64_t features = 2;
  int64_t classes = 3;
  double cluster_std = 1.0;
  double center_box = 10.0;
  uint64_t seed = 0;
};
TensorDataset make_blobs(const BlobsOptions& options);

// y = x . weight + bias + noise * N(0, 1), x ~ N(0, 1); weight ~ N(0, 1), bias ~ N(0, 1).
struct RegressionOptions {
  int64_t samples = 256;
  int64_t features = 4;
  double noise = 0.1;
  uint64_t seed = 0;
};
struct Regression {
  TensorDataset dataset;  // {x f32 [n, features], y f32 [n, 1]}
  std::vector<float> weight;
  float bias = 0;
};
Regression make_regression(const RegressionOptions& options);

}  // namespace podsim::data
