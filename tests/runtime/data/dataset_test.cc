// Datasets: TensorDataset slicing and batching, collate checks, the deterministic
// permutation and split, scikit-learn's digits against sklearn.datasets.load_digits()
// read by Python from the same file, the synthetic datasets' statistics, and the
// character-level text windows.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "runtime/data/char_text.h"
#include "runtime/data/datasets.h"
#include "tests/runtime/optim/oracle/torch_oracle.h"

namespace podsim::data {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TensorDataset, GetAndGetBatchSliceTheFirstDimension) {
  std::vector<float> x(5 * 2 * 3);
  std::iota(x.begin(), x.end(), 0.f);
  TensorDataset ds({Tensor::from_vector(x, {5, 2, 3}),
                    Tensor::from_vector(std::vector<int64_t>{10, 11, 12, 13, 14}, {5})});
  EXPECT_EQ(ds.size(), 5);
  Example e = ds.get(3);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(e[0].to_vector<float>(), (std::vector<float>{18, 19, 20, 21, 22, 23}));
  EXPECT_EQ(e[1].shape(), std::vector<int64_t>{});
  EXPECT_EQ(e[1].item().to_int(), 13);
  int64_t indices[] = {4, 0};
  Example b = ds.get_batch(indices);
  EXPECT_EQ(b[0].shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(b[0].to_vector<float>()[0], 24.f);
  EXPECT_EQ(b[0].to_vector<float>()[6], 0.f);
  EXPECT_EQ(b[1].to_vector<int64_t>(), (std::vector<int64_t>{14, 10}));
  // The default get_batch (collate of get) agrees with the override.
  Example collated = ds.Dataset::get_batch(indices);
  EXPECT_EQ(collated[0].to_vector<float>(), b[0].to_vector<float>());
  EXPECT_EQ(collated[1].to_vector<int64_t>(), b[1].to_vector<int64_t>());
  EXPECT_NE(error_of([&] { ds.get(5); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] {
              TensorDataset({zeros({3}), zeros({4})});
            }).find("examples"),
            std::string::npos);
}

TEST(Collate, RejectsMismatchedExamples) {
  std::vector<Example> ok = {{zeros({2}), zeros({})}, {ones({2}), ones({})}};
  Example batch = collate(ok);
  EXPECT_EQ(batch[0].to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));
  std::vector<Example> shapes = {{zeros({2})}, {zeros({3})}};
  EXPECT_NE(error_of([&] { collate(shapes); }).find("same shapes"), std::string::npos);
  std::vector<Example> fields = {{zeros({2})}, {zeros({2}), zeros({2})}};
  EXPECT_NE(error_of([&] { collate(fields); }).find("fields"), std::string::npos);
}

TEST(RandomPermutation, IsAPermutationAndDependsOnlyOnTheSeed) {
  std::vector<int64_t> a = random_permutation(1000, 42);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(a, random_permutation(1000, 42));
  EXPECT_NE(a, random_permutation(1000, 43));
  int64_t fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += a[static_cast<size_t>(i)] == i;
  EXPECT_LT(fixed, 10);  // a shuffle has about one fixed point
}

TEST(TrainTestSplit, PartitionsTheExamples) {
  std::vector<int64_t> ids(100);
  std::iota(ids.begin(), ids.end(), 0);
  TensorDataset ds({Tensor::from_vector(ids, {100})});
  auto [train, test] = train_test_split(ds, 0.25, 3);
  EXPECT_EQ(train.size(), 75);
  EXPECT_EQ(test.size(), 25);
  std::set<int64_t> all;
  for (int64_t v : train.tensors()[0].to_vector<int64_t>()) all.insert(v);
  for (int64_t v : test.tensors()[0].to_vector<int64_t>()) all.insert(v);
  EXPECT_EQ(all.size(), 100u);
  auto [train2, test2] = train_test_split(ds, 0.25, 3);
  EXPECT_EQ(test.tensors()[0].to_vector<int64_t>(), test2.tensors()[0].to_vector<int64_t>());
  EXPECT_THROW(train_test_split(ds, 1.0, 0), Error);
}

TEST(Digits, MatchesScikitLearnsReadingOfTheSameFile) {
  TensorDataset digits = load_digits();
  ASSERT_EQ(digits.size(), 1797);
  const Tensor& images = digits.tensors()[0];
  const Tensor& labels = digits.tensors()[1];
  EXPECT_EQ(images.shape(), (std::vector<int64_t>{1797, 64}));
  EXPECT_EQ(images.dtype(), kFloat32);
  EXPECT_EQ(labels.dtype(), kInt64);
  testing::OracleResult sklearn = testing::run_torch_oracle("digits");
  ASSERT_EQ(sklearn.error, "");
  const ir::Literal& want_images = sklearn.tensors.at("images");
  const ir::Literal& want_labels = sklearn.tensors.at("labels");
  std::vector<float> got_images = images.to_vector<float>();
  std::vector<int64_t> got_labels = labels.to_vector<int64_t>();
  ASSERT_EQ(want_images.num_elements(), 1797 * 64);
  for (int64_t i = 0; i < want_images.num_elements(); ++i)
    ASSERT_EQ(got_images[static_cast<size_t>(i)], want_images.get_as_double(i)) << "pixel " << i;
  for (int64_t i = 0; i < 1797; ++i)
    ASSERT_EQ(got_labels[static_cast<size_t>(i)], want_labels.get_as_int64(i)) << "label " << i;
  std::set<int64_t> classes(got_labels.begin(), got_labels.end());
  EXPECT_EQ(classes, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(*std::max_element(got_images.begin(), got_images.end()), 16.f);
}

TEST(Digits, MissingFileNamesTheDebianPackage) {
  std::string message = error_of([] { load_digits("/nonexistent/digits.csv.gz"); });
  EXPECT_NE(message.find("python3-sklearn"), std::string::npos) << message;
}

TEST(Blobs, ClassesAreBalancedAndClustered) {
  TensorDataset blobs =
      make_blobs({.samples = 300, .features = 2, .classes = 3, .cluster_std = 0.5, .seed = 1});
  std::vector<float> x = blobs.tensors()[0].to_vector<float>();
  std::vector<int64_t> y = blobs.tensors()[1].to_vector<int64_t>();
  double mean[3][2] = {}, var[3] = {};
  int count[3] = {};
  for (size_t i = 0; i < y.size(); ++i) {
    ++count[y[i]];
    for (int f = 0; f < 2; ++f) mean[y[i]][f] += x[2 * i + f];
  }
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(count[c], 100);
    for (double& m : mean[c]) m /= 100;
  }
  for (size_t i = 0; i < y.size(); ++i)
    for (int f = 0; f < 2; ++f) var[y[i]] += std::pow(x[2 * i + f] - mean[y[i]][f], 2) / 200;
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(std::sqrt(var[c]), 0.5, 0.08);  // ~ std / sqrt(2n)
  TensorDataset again =
      make_blobs({.samples = 300, .features = 2, .classes = 3, .cluster_std = 0.5, .seed = 1});
  EXPECT_EQ(again.tensors()[0].to_vector<float>(), x);
}

TEST(Regression, TargetsFollowTheTrueWeights) {
  Regression r = make_regression({.samples = 500, .features = 3, .noise = 0.1, .seed = 5});
  std::vector<float> x = r.dataset.tensors()[0].to_vector<float>();
  std::vector<float> y = r.dataset.tensors()[1].to_vector<float>();
  EXPECT_EQ(r.dataset.tensors()[1].shape(), (std::vector<int64_t>{500, 1}));
  double residual = 0;
  for (size_t i = 0; i < 500; ++i) {
    double pred = r.bias;
    for (size_t f = 0; f < 3; ++f) pred += x[3 * i + f] * r.weight[f];
    residual += std::pow(y[i] - pred, 2) / 500;
  }
  EXPECT_NEAR(std::sqrt(residual), 0.1, 0.015);
}

TEST(CharText, WindowsPredictTheNextCharacter) {
  CharTextDataset ds("hello world", 4);
  EXPECT_EQ(ds.vocabulary(), " dehlorw");
  EXPECT_EQ(ds.vocab_size(), 8);
  EXPECT_EQ(ds.size(), 7);
  Example e = ds.get(2);
  std::vector<int64_t> input = e[0].to_vector<int64_t>();
  std::vector<int64_t> target = e[1].to_vector<int64_t>();
  EXPECT_EQ(ds.decode(input), "llo ");
  EXPECT_EQ(ds.decode(target), "lo w");
  int64_t indices[] = {0, 6};
  Example b = ds.get_batch(indices);
  EXPECT_EQ(b[0].shape(), (std::vector<int64_t>{2, 4}));
  std::vector<int64_t> ids = b[1].to_vector<int64_t>();
  EXPECT_EQ(ds.decode(std::span(ids).subspan(4)), "orld");
  EXPECT_EQ(ds.encode("world"), (std::vector<int64_t>{7, 5, 6, 4, 1}));
  EXPECT_NE(error_of([&] { ds.encode("x"); }).find("not in the vocabulary"), std::string::npos);
  EXPECT_THROW(ds.get(7), Error);
  EXPECT_THROW(CharTextDataset("abc", 3), Error);
}

TEST(CharText, CorpusFromBaseFilesOrGenerated) {
  TextCorpus corpus = load_text_corpus();
  EXPECT_GT(corpus.text.size(), 10000u);
  if (corpus.source == kDefaultCorpusPath) {
    EXPECT_NE(corpus.text.find("GNU GENERAL PUBLIC LICENSE"), std::string::npos);
  }
  TextCorpus fallback = load_text_corpus("/nonexistent/corpus.txt", 5000);
  EXPECT_EQ(fallback.text.size(), 5000u);
  EXPECT_NE(fallback.source.find("generated"), std::string::npos);
  EXPECT_EQ(fallback.text, generated_text(5000, 0));
  CharTextDataset ds(fallback.text, 32);
  EXPECT_LT(ds.vocab_size(), 60);
}

}  // namespace
}  // namespace podsim::data
