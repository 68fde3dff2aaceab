// Internal to the OpenCL backend: the devices an OpenCL platform offers (GPUs first),
// each with its context, in-order command queue, worker thread, memory accounting, a
// pool that reuses device buffers by size and a bound on runs in flight; programs built
// per device, with their binaries cached on disk (PODSIM_CACHE_DIR/opencl) per device and
// driver version.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/pjrt/work_queue.h"
#include "runtime/pjrt/device.h"

namespace podsim::pjrt::opencl_backend {

// Throws a podsim::Error naming the call and the error code unless err is CL_SUCCESS.
void check(cl_int err, std::string_view what);
std::string_view error_name(cl_int err);

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name, vendor, platform_name, driver_version, version;
  bool gpu = false;
  bool fp64 = false;
  int64_t global_memory = 0;
  int64_t compute_units = 0;
  int64_t clock_mhz = 0;
  int64_t max_work_group = 0;
};

// Every OpenCL device of every platform, GPUs first; an empty list when there is no
// platform at all.
std::vector<DeviceInfo> find_devices();

// Device memory with its size; returns to its device's pool when released.
class DeviceMemory {
 public:
  DeviceMemory(class OpenClDevice& device, cl_mem mem, size_t bytes)
      : device_(device), mem_(mem), bytes_(bytes) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  cl_mem mem() const { return mem_; }
  size_t bytes() const { return bytes_; }

 private:
  OpenClDevice& device_;
  cl_mem mem_;
  size_t bytes_;
};

class OpenClDevice final : public Device {
 public:
  OpenClDevice(Client& client, int ordinal, DeviceInfo info);

  DeviceKind kind() const override { return DeviceKind::kOpenCl; }
  int ordinal() const override { return ordinal_; }
  Client& client() const override { return client_; }
  MemoryStats memory_stats() const override;

  const DeviceInfo& info() const { return info_; }
  cl_context context() const { return handles_.context; }
  cl_command_queue queue() const { return handles_.queue; }
  WorkQueue& worker() { return worker_; }
  // "OPENCL:0 (NVIDIA H100 80GB HBM3)" for messages.
  std::string describe() const;

  // Device memory of at least `bytes` (a pooled buffer of the same size when one is free).
  std::shared_ptr<DeviceMemory> allocate(size_t bytes);
  void release(cl_mem mem, size_t bytes);

  // Blocking copies between host memory and device memory. Transfers of at least
  // kStagedBytes go through a pinned staging buffer (CL_MEM_ALLOC_HOST_PTR: page-locked
  // where the driver offers it, so the device copies it by DMA), smaller ones directly.
  static constexpr size_t kStagedBytes = size_t{1} << 20;
  void write(const DeviceMemory& to, const void* from, size_t bytes);
  void read(const DeviceMemory& from, void* to, size_t bytes);

  // A program built from source for this device (from the binary cache when present).
  cl_program build(const std::string& source, std::string_view options, std::string_view what);

  // Runs of executables in flight. begin_run() waits while kMaxRunsInFlight are (PJRT
  // bounds in-flight executions the same way): a caller far ahead of the device would
  // otherwise hold the memory of every queued run. A run ends once (end_run), when its
  // completion is first seen: by its event callback, by the worker, which waits for a
  // run's last command (run_enqueued) once kRunsAheadOnQueue later runs are queued behind
  // it (drivers may call callbacks milliseconds late), or where it failed.
  static constexpr int kMaxRunsInFlight = 8;
  static constexpr size_t kRunsAheadOnQueue = 4;
  using RunToken = std::shared_ptr<std::atomic<bool>>;  // whether the run has ended
  RunToken begin_run();
  void end_run(const RunToken& run);
  // On the worker: run's last command is enqueued; takes a reference to the event.
  void run_enqueued(cl_event last_command, RunToken run);

 private:
  cl_mem staging_buffer(size_t bytes);  // under staging_mutex_

  // Released last (members go in reverse order): after the worker drained and the
  // pool let go of its buffers.
  struct Handles {
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;
    cl_mem staging = nullptr;  // grown to the largest staged transfer
    size_t staging_bytes = 0;
    ~Handles();
  };
  struct Pool {
    std::mutex mutex;
    std::multimap<size_t, cl_mem> free;
    int64_t bytes = 0;
    ~Pool();
  };

  Client& client_;
  int ordinal_;
  DeviceInfo info_;
  Handles handles_;
  Pool pool_;
  int64_t max_pooled_bytes_;  // buffers freed beyond this many pooled bytes are released
  std::mutex runs_mutex_;
  std::condition_variable run_ended_;
  int runs_in_flight_ = 0;
  struct Enqueued {  // the worker's runs, oldest first, with their last commands
    std::deque<std::pair<cl_event, RunToken>> runs;
    ~Enqueued();
  } enqueued_;
  std::mutex staging_mutex_;  // one staged transfer at a time
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
  WorkQueue worker_;  // last: drained before the queue and context go
};

}  // namespace podsim::pjrt::opencl_backend
