#include "runtime/data/device_loader.h"

#include "common/error.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::data {

DeviceLoader::DeviceLoader(DataLoader loader, pjrt::Device& device, DeviceLoaderOptions options)
    : loader_(std::move(loader)), device_(&device), options_(options) {
  if (options_.prefetch < 1)
    fail("DeviceLoader: prefetch {} must be at least 1", options_.prefetch);
}

DeviceLoader::~DeviceLoader() { stop_epoch(); }

void DeviceLoader::stop_epoch() {
  if (epoch_) {
    {
      std::lock_guard guard(epoch_->mutex);
      epoch_->stop = true;
    }
    epoch_->changed.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  epoch_.reset();
}

void DeviceLoader::start_epoch() {
  stop_epoch();
  std::vector<int64_t> order = loader_.epoch_order(loader_.epoch());
  loader_.set_epoch(loader_.epoch() + 1);
  epoch_ = std::make_shared<Epoch>();
  worker_ = std::thread(load_epoch, &loader_, device_, options_, std::move(order), epoch_);
}

void DeviceLoader::load_epoch(const DataLoader* loader, pjrt::Device* device, DeviceLoaderOptions options,
                              std::vector<int64_t> order, const std::shared_ptr<Epoch>& epoch) {
  const int64_t prefetch = options.prefetch;
  const int64_t ways = options.mesh ? options.mesh->shape().at(static_cast<size_t>(
                                          options.mesh->axis(options.batch_axis)))
                                    : 1;
  try {
    for (int64_t i = 0; i < loader->num_batches(); ++i) {
      {
        std::unique_lock lock(epoch->mutex);
        epoch->changed.wait(lock, [&] {
          return epoch->stop || static_cast<int64_t>(epoch->queue.size()) < prefetch;
        });
        if (epoch->stop) break;
      }
      Example host = loader->batch(order, i);
      Example on_device;
      on_device.reserve(host.size());
      // to() starts an asynchronous transfer; a graph reading the tensor waits for it.
      for (const Tensor& t : host) {
        if (ways > 1 && t.dim() > 0 && t.size(0) % ways == 0) {
          distributed::PartitionSpec spec(static_cast<size_t>(t.dim()), std::nullopt);
          spec[0] = options.batch_axis;
          on_device.push_back(distributed::distribute(t, *options.mesh, spec));
        } else {
          on_device.push_back(t.to(*device));
        }
      }
      {
        std::lock_guard guard(epoch->mutex);
        epoch->queue.push_back(std::move(on_device));
      }
      epoch->changed.notify_all();
    }
  } catch (...) {
    std::lock_guard guard(epoch->mutex);
    epoch->error = std::current_exception();
  }
  {
    std::lock_guard guard(epoch->mutex);
    epoch->finished = true;
  }
  epoch->changed.notify_all();
}

std::optional<Example> DeviceLoader::next(Loc loc) {
  if (options_.mark_step) lazy::mark_step(lazy::SyncCause::kDataLoader, loc);
  if (!epoch_) start_epoch();
  std::exception_ptr error;
  {
    std::unique_lock lock(epoch_->mutex);
    epoch_->changed.wait(lock, [&] { return !epoch_->queue.empty() || epoch_->finished; });
    if (!epoch_->queue.empty()) {
      Example batch = std::move(epoch_->queue.front());
      epoch_->queue.pop_front();
      lock.unlock();
      epoch_->changed.notify_all();
      return batch;
    }
    error = epoch_->error;
  }
  // The epoch is over (or failed): the next call starts a new one.
  stop_epoch();
  if (error) std::rethrow_exception(error);
  return std::nullopt;
}

}  // namespace podsim::data
