// DeviceLoader: the device batches come in the loader's order, hold the same values,
// live on the device; each batch taken marks one step (MarkStep counter), which runs
// the previous step's pending graph; an error in the background thread surfaces in the
// caller after the batches before it; an abandoned epoch stops cleanly.
#include "runtime/data/device_loader.h"

#include <gtest/gtest.h>

#include <numeric>

#include "runtime/lazy/debug_report.h"
#include "runtime/debug/metrics.h"

namespace podsim::data {
namespace {

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<float> x(ids.begin(), ids.end());
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {n}), Tensor::from_vector(ids, {n})});
}

TEST(DeviceLoader, SameBatchesAsTheHostLoaderOnTheDevice) {
  DataLoaderOptions options{.batch_size = 6, .shuffle = true, .seed = 4};
  DataLoader host(numbered(40), options);
  DeviceLoader device_loader(DataLoader(numbered(40), options), podsim::device(), {.prefetch = 2});
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<Example> want;
    for (const Example& b : host) want.push_back(b);
    size_t i = 0;
    for (const Example& batch : device_loader) {
      ASSERT_LT(i, want.size());
      EXPECT_EQ(batch[0].device(), &podsim::device());
      EXPECT_EQ(batch[0].to_vector<float>(), want[i][0].to_vector<float>());
      EXPECT_EQ(batch[1].to_vector<int64_t>(), want[i][1].to_vector<int64_t>());
      ++i;
    }
    EXPECT_EQ(i, want.size());
  }
}

TEST(DeviceLoader, EachBatchTakenMarksAStep) {
  DeviceLoader loader(DataLoader(numbered(20), {.batch_size = 5}), podsim::device());
  Tensor total = zeros({}, podsim::device());
  int64_t before = debug::counter_value("MarkStep");
  int batches = 0;
  for (const Example& batch : loader) {
    // The previous step's update is pending here and was launched by this next().
    EXPECT_FALSE(total.is_pending());
    if (batches > 0) {
      auto run = lazy::last_graph_run();
      ASSERT_TRUE(run.has_value());
      EXPECT_EQ(run->cause, "mark_step in the data loader");
    }
    total += sum(batch[0]);
    EXPECT_TRUE(total.is_pending());
    ++batches;
  }
  EXPECT_EQ(batches, 4);
  // One per batch taken and one for the next() that ended the epoch (PyTorch/XLA's).
  EXPECT_EQ(debug::counter_value("MarkStep") - before, 5);
  EXPECT_FALSE(total.is_pending());
  EXPECT_EQ(total.item().to_double(), 190.0);  // 0 + 1 + ... + 19
}

TEST(DeviceLoader, MarkStepCanBeLeftToTheCaller) {
  DeviceLoader loader(DataLoader(numbered(20), {.batch_size = 5}), podsim::device(),
                      {.mark_step = false});
  int64_t before = debug::counter_value("MarkStep");
  int batches = 0;
  for (const Example& batch : loader) batches += batch[0].size(0) == 5;
  EXPECT_EQ(batches, 4);
  EXPECT_EQ(debug::counter_value("MarkStep"), before);
}

class FailingDataset : public Dataset {
 public:
  int64_t size() const override { return 10; }
  Example get(int64_t index) const override {
    if (index == 7) fail("FailingDataset: example {} is broken", index);
    return {Tensor::from_vector(std::vector<float>{static_cast<float>(index)}, {1})};
  }
};

TEST(DeviceLoader, BackgroundErrorsSurfaceInTheCaller) {
  DeviceLoader loader(DataLoader(std::make_shared<FailingDataset>(), {.batch_size = 2}),
                      podsim::device());
  std::vector<float> seen;
  std::string message;
  try {
    for (const Example& batch : loader)
      for (float v : batch[0].to_vector<float>()) seen.push_back(v);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("example 7 is broken"), std::string::npos) << message;
  // The batches before the failing one (examples 0..5) were delivered.
  EXPECT_EQ(seen, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // The loader is usable again: a new epoch fails at the same place.
  EXPECT_THROW(
      {
        for (const Example& batch : loader) (void)batch;
      },
      Error);
}

TEST(DeviceLoader, AbandonedEpochStopsTheBackgroundThread) {
  DeviceLoader loader(DataLoader(numbered(1000), {.batch_size = 1}), podsim::device(),
                      {.prefetch = 2});
  for (const Example& batch : loader) {
    EXPECT_EQ(batch[1].item().to_int(), 0);
    break;  // the destructor (or the next epoch) stops the worker blocked on the full queue
  }
  std::optional<Example> first = (loader.start_epoch(), loader.next());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[1].item().to_int(), 0);
}

TEST(DeviceLoader, BadPrefetchIsAnError) {
  EXPECT_THROW(DeviceLoader(DataLoader(numbered(3)), podsim::device(), {.prefetch = 0}), Error);
}

}  // namespace
}  // namespace podsim::data
