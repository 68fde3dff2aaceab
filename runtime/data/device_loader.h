// Device prefetch for training loops, like torch_xla's MpDeviceLoader: a background
// thread takes the host batches of a DataLoader, starts their transfer to the device and
// keeps up to `prefetch` of them queued, so that loading overlaps the device's work.
//
// As in PyTorch/XLA, taking a batch marks the step: every next() first calls
// mark_step() (cause "mark_step in the data loader"), which launches the graph of the
// previous training step. An epoch of B batches therefore counts B + 1 steps: one per
// batch taken and one for the next() that finds the epoch finished.
//
//   DeviceLoader loader(DataLoader(dataset, {.batch_size = 64}), podsim::device());
//   for (const Example& batch : loader) { ...forward, backward, optimizer.step()... }
//
// An error in the background thread (a dataset that throws, a failed transfer) is
// rethrown by the next() that would have returned the failing batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/data/data_loader.h"
#include "runtime/distributed/spmd.h"

namespace podsim::data {

struct DeviceLoaderOptions {
  int64_t prefetch = 4;   // device batches queued ahead of the consumer
  bool mark_step = true;  // mark_step() at every next()
  // SPMD (runtime/distributed/spmd.h): every batch tensor split along its first dimension over this
  // axis of `mesh` as it is placed, each device receiving only its piece (MpDeviceLoader's
  // input_sharding). The mesh must outlive the loader.
  const distributed::Mesh* mesh = nullptr;
  std::string batch_axis = "data";
};

class DeviceLoader {
 public:
  DeviceLoader(DataLoader loader, pjrt::Device& device, DeviceLoaderOptions options = {});
  ~DeviceLoader();  // stops the background thread
  DeviceLoader(const DeviceLoader&) = delete;
  DeviceLoader& operator=(const DeviceLoader&) = delete;

  pjrt::Device& device() const { return *device_; }
  int64_t num_batches() const { return loader_.num_batches(); }

  // Starts the next epoch of the wrapped loader (abandoning an unfinished one).
  void start_epoch();
  // The next device batch of the current epoch (starting one if none is running), or
  // nullopt when the epoch is over.
  std::optional<Example> next(Loc loc = Loc::current());

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = const Example*;
    using reference = const Example&;

    Iterator() = default;
    const Example& operator*() const { return *current_; }
    const Example* operator->() const { return &*current_; }
    Iterator& operator++() {
      current_ = loader_->next();
      return *this;
    }
    bool operator==(const Iterator& other) const {
      return current_.has_value() == other.current_.has_value();
    }

   private:
    friend class DeviceLoader;
    explicit Iterator(DeviceLoader* loader) : loader_(loader), current_(loader->next()) {}
    DeviceLoader* loader_ = nullptr;
    std::optional<Example> current_;
  };

  // Starts an epoch and takes its first batch.
  Iterator begin() {
    start_epoch();
    return Iterator(this);
  }
  Iterator end() const { return Iterator(); }

 private:
  // One epoch's background loading; the worker and the consumer share it.
  struct Epoch {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Example> queue;
    bool finished = false;  // the worker is done (all batches queued, or failed)
    bool stop = false;      // the consumer abandons the epoch
    std::exception_ptr error;
  };
  void stop_epoch();
  static void load_epoch(const DataLoader* loader, pjrt::Device* device, DeviceLoaderOptions options,
                         std::vector<int64_t> order, const std::shared_ptr<Epoch>& epoch);

  DataLoader loader_;
  pjrt::Device* device_;
  DeviceLoaderOptions options_;
  std::shared_ptr<Epoch> epoch_;
  std::thread worker_;
};

}  // namespace podsim::data
