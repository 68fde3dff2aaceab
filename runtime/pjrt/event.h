// Event: completion of asynchronous device work, carrying an error if the work failed.
// Waiting rethrows that error, so a failed step surfaces where its result is read.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

namespace podsim::pjrt {

class Event {
 public:
  static std::shared_ptr<Event> make() { return std::make_shared<Event>(); }
  static std::shared_ptr<Event> make_ready() {
    auto e = make();
    e->set_ready();
    return e;
  }

  void set_ready() { complete(nullptr); }
  void set_error(std::exception_ptr error) { complete(std::move(error)); }

  bool is_ready() const {
    std::lock_guard lock(mutex_);
    return done_;
  }
  // Blocks until complete; rethrows the work's error, if any.
  void wait() const {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void complete(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      if (done_) return;
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace podsim::pjrt
