// A device's execution queue: jobs run one at a time, in submission order, on a worker
// thread of their own that starts with the first job (idle devices cost no thread).
// The destructor runs what is still queued, so that no event is left pending forever.
// Shared by the backends whose devices execute on the host (CPU, SIM).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace podsim::pjrt {

class WorkQueue {
 public:
  WorkQueue() = default;
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  ~WorkQueue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  // Jobs must not throw: they report failures through their outputs' events.
  void enqueue(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
      if (!worker_.joinable()) {
        try {
          worker_ = std::thread([this] { worker_loop(); });
        } catch (...) {
          queue_.pop_back();  // nobody would ever run it
          throw;
        }
      }
    }
    cv_.notify_one();
  }

 private:
  void worker_loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      std::function<void()> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // release the job's buffers before sleeping
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;  // last: started after the rest exists, joined first
};

}  // namespace podsim::pjrt
