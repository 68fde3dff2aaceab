#include "runtime/pjrt/opencl/opencl_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "runtime/pjrt/hash.h"

namespace podsim::pjrt::opencl_backend {
namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(p, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size > 0)
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::filesystem::path binary_cache_dir() {
  const char* dir = std::getenv("PODSIM_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return {};
  return std::filesystem::path(dir) / "opencl";
}

}  // namespace

std::string_view error_name(cl_int err) {
  switch (err) {
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
      return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE:
      return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE:
      return "CL_INVALID_DEVICE";
    case CL_INVALID_BINARY:
      return "CL_INVALID_BINARY";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_NAME:
      return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
      return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
      return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_MEM_OBJECT:
      return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_COMMAND_QUEUE:
      return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_OPERATION:
      return "CL_INVALID_OPERATION";
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "an OpenCL error";
  }
}

void check(cl_int err, std::string_view what) {
  if (err == CL_SUCCESS) return;
  fail("OpenCL: {} failed: {} ({})", what, error_name(err), err);
}

std::vector<DeviceInfo> find_devices() {
  cl_uint platform_count = 0;
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0) return {};
  std::vector<cl_platform_id> platforms(platform_count);
  check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceInfo> out;
  for (cl_platform_id p : platforms) {
    cl_uint count = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS || count == 0)
      continue;
    std::vector<cl_device_id> ids(count);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : ids) {
      DeviceInfo info;
      info.platform = p;
      info.id = d;
      info.name = device_string(d, CL_DEVICE_NAME);
      info.vendor = device_string(d, CL_DEVICE_VENDOR);
      info.driver_version = device_string(d, CL_DRIVER_VERSION);
      info.version = device_string(d, CL_DEVICE_VERSION);
      info.platform_name = platform_string(p, CL_PLATFORM_NAME);
      info.gpu = (device_value<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
      info.fp64 = device_string(d, CL_DEVICE_EXTENSIONS).find("cl_khr_fp64") != std::string::npos;
      info.global_memory =
          static_cast<int64_t>(device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE));
      info.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
      info.clock_mhz = device_value<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
      info.max_work_group =
          static_cast<int64_t>(device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
      out.push_back(std::move(info));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceInfo& a, const DeviceInfo& b) { return a.gpu > b.gpu; });
  return out;
}

DeviceMemory::~DeviceMemory() { device_.release(mem_, bytes_); }

OpenClDevice::Handles::~Handles() {
  if (staging != nullptr) clReleaseMemObject(staging);
  if (queue != nullptr) {
    clFinish(queue);
    clReleaseCommandQueue(queue);
  }
  if (context != nullptr) clReleaseContext(context);
}

OpenClDevice::Pool::~Pool() {
  for (auto& [bytes, mem] : free) clReleaseMemObject(mem);
}

OpenClDevice::OpenClDevice(Client& client, int ordinal, DeviceInfo info)
    : client_(client),
      ordinal_(ordinal),
      info_(std::move(info)),
      // A quarter of the device's memory (at least 1 GiB) stays pooled: enough for the
      // buffers of the runs in flight, which are freed and allocated again every step.
      max_pooled_bytes_(std::max(int64_t{1} << 30, info_.global_memory / 4)) {
  cl_int err = CL_SUCCESS;
  handles_.context = clCreateContext(nullptr, 1, &info_.id, nullptr, nullptr, &err);
  check(err, fmt::format("creating a context on {}", info_.name));
  handles_.queue = clCreateCommandQueue(handles_.context, info_.id, 0, &err);
  check(err, fmt::format("creating a command queue on {}", info_.name));
}

std::string OpenClDevice::describe() const { return fmt::format("{} ({})", name(), info_.name); }

MemoryStats OpenClDevice::memory_stats() const {
  MemoryStats s;
  s.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
  s.peak_bytes_in_use = peak_bytes_.load(std::memory_order_relaxed);
  s.bytes_limit = info_.global_memory;
  return s;
}

std::shared_ptr<DeviceMemory> OpenClDevice::allocate(size_t bytes) {
  bytes = std::max<size_t>(bytes, 4);
  cl_mem mem = nullptr;
  {
    std::lock_guard lock(pool_.mutex);
    if (auto it = pool_.free.find(bytes); it != pool_.free.end()) {
      mem = it->second;
      pool_.free.erase(it);
      pool_.bytes -= static_cast<int64_t>(bytes);
    }
  }
  if (mem == nullptr) {
    cl_int err = CL_SUCCESS;
    mem = clCreateBuffer(handles_.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
        err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
      fail(
          "{} is out of memory: {} bytes requested with {} in use of {}; free tensors you no "
          "longer need, "
          "or use smaller batches",
          describe(), bytes, bytes_in_use_.load(), info_.global_memory);
    check(err, fmt::format("allocating {} bytes on {}", bytes, describe()));
  }
  const int64_t now =
      bytes_in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now)) {
  }
  return std::make_shared<DeviceMemory>(*this, mem, bytes);
}

void OpenClDevice::release(cl_mem mem, size_t bytes) {
  bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes));
  std::lock_guard lock(pool_.mutex);
  if (pool_.bytes + static_cast<int64_t>(bytes) > max_pooled_bytes_) {
    clReleaseMemObject(mem);
    return;
  }
  pool_.free.emplace(bytes, mem);
  pool_.bytes += static_cast<int64_t>(bytes);
}

OpenClDevice::RunToken OpenClDevice::begin_run() {
  std::unique_lock lock(runs_mutex_);
  run_ended_.wait(lock, [this] { return runs_in_flight_ < kMaxRunsInFlight; });
  ++runs_in_flight_;
  return std::make_shared<std::atomic<bool>>(false);
}

void OpenClDevice::end_run(const RunToken& run) {
  if (run->exchange(true)) return;
  {
    std::lock_guard lock(runs_mutex_);
    --runs_in_flight_;
  }
  run_ended_.notify_one();
}

void OpenClDevice::run_enqueued(cl_event last_command, RunToken run) {
  enqueued_.runs.emplace_back(last_command, std::move(run));
  while (enqueued_.runs.size() > kRunsAheadOnQueue) {
    auto [event, oldest] = std::move(enqueued_.runs.front());
    enqueued_.runs.pop_front();
    clWaitForEvents(1, &event);  // a failed run is reported by its callback
    clReleaseEvent(event);
    end_run(oldest);
  }
}

OpenClDevice::Enqueued::~Enqueued() {
  for (auto& [event, run] : runs) clReleaseEvent(event);
}

void OpenClDevice::write(const DeviceMemory& to, const void* from, size_t bytes) {
  if (bytes == 0) return;
  const std::string what = fmt::format("writing {} bytes to {}", bytes, describe());
  if (bytes < kStagedBytes) {
    check(clEnqueueWriteBuffer(handles_.queue, to.mem(), CL_TRUE, 0, bytes, from, 0, nullptr,
                               nullptr),
          what);
    return;
  }
  std::lock_guard lock(staging_mutex_);
  cl_mem staging = staging_buffer(bytes);
  cl_int err = CL_SUCCESS;
  void* host = clEnqueueMapBuffer(handles_.queue, staging, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                  0, bytes, 0, nullptr, nullptr, &err);
  check(err, what);
  std::memcpy(host, from, bytes);
  check(clEnqueueUnmapMemObject(handles_.queue, staging, host, 0, nullptr, nullptr), what);
  check(clEnqueueCopyBuffer(handles_.queue, staging, to.mem(), 0, 0, bytes, 0, nullptr, nullptr),
        what);
  check(clFinish(handles_.queue), what);  // the staging buffer is reused by the next transfer
}

void OpenClDevice::read(const DeviceMemory& from, void* to, size_t bytes) {
  if (bytes == 0) return;
  const std::string what = fmt::format("reading {} bytes from {}", bytes, describe());
  if (bytes < kStagedBytes) {
    check(
        clEnqueueReadBuffer(handles_.queue, from.mem(), CL_TRUE, 0, bytes, to, 0, nullptr, nullptr),
        what);
    return;
  }
  std::lock_guard lock(staging_mutex_);
  cl_mem staging = staging_buffer(bytes);
  check(clEnqueueCopyBuffer(handles_.queue, from.mem(), staging, 0, 0, bytes, 0, nullptr, nullptr),
        what);
  cl_int err = CL_SUCCESS;
  void* host = clEnqueueMapBuffer(handles_.queue, staging, CL_TRUE, CL_MAP_READ, 0, bytes, 0,
                                  nullptr, nullptr, &err);
  check(err, what);
  std::memcpy(to, host, bytes);
  check(clEnqueueUnmapMemObject(handles_.queue, staging, host, 0, nullptr, nullptr), what);
  check(clFinish(handles_.queue), what);
}

cl_mem OpenClDevice::staging_buffer(size_t bytes) {
  if (handles_.staging_bytes < bytes) {
    if (handles_.staging != nullptr) clReleaseMemObject(handles_.staging);
    handles_.staging = nullptr;
    handles_.staging_bytes = 0;
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(handles_.context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes,
                              nullptr, &err);
    check(err,
          fmt::format("allocating {} bytes of pinned staging memory for {}", bytes, describe()));
    handles_.staging = m;
    handles_.staging_bytes = bytes;
  }
  return handles_.staging;
}

cl_program OpenClDevice::build(const std::string& source, std::string_view options,
                               std::string_view what) {
  const std::string key_text = fmt::format("{}\n{}\n{}\n{}\n{}", info_.platform_name, info_.name,
                                           info_.driver_version, options, source);
  const std::filesystem::path dir = binary_cache_dir();
  const std::filesystem::path file =
      dir.empty() ? std::filesystem::path() : dir / fmt::format("{:016x}.bin", crc64(key_text));
  cl_int err = CL_SUCCESS;
  const std::string opts(options);
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::string binary((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const size_t size = binary.size();
      const auto* data = reinterpret_cast<const unsigned char*>(binary.data());
      cl_int status = CL_SUCCESS;
      cl_program p =
          clCreateProgramWithBinary(handles_.context, 1, &info_.id, &size, &data, &status, &err);
      if (err == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(p, 1, &info_.id, opts.c_str(), nullptr, nullptr) == CL_SUCCESS)
        return p;
      if (p != nullptr) clReleaseProgram(p);  // stale or foreign: rebuild from source
    }
  }
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_program program = clCreateProgramWithSource(handles_.context, 1, &text, &length, &err);
  check(err, fmt::format("creating the program of {} on {}", what, describe()));
  err = clBuildProgram(program, 1, &info_.id, opts.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    const std::string log = build_log(program, info_.id);
    clReleaseProgram(program);
    fail(
        "OpenCL: building the kernels of {} on {} failed ({}). Build log:\n{}\n"
        "This is a bug in podsim's OpenCL code generation or in the device's compiler; set "
        "PODSIM_DEVICE=CPU to run on the host meanwhile",
        what, describe(), error_name(err), log);
  }
  if (!file.empty()) {
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) ==
            CL_SUCCESS &&
        size > 0) {
      std::string binary(size, '\0');
      auto* data = reinterpret_cast<unsigned char*>(binary.data());
      if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) ==
          CL_SUCCESS) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        const std::filesystem::path tmp =
            file.string() + fmt::format(".tmp{}", static_cast<const void*>(this));
        std::ofstream(tmp, std::ios::binary)
            .write(binary.data(), static_cast<std::streamsize>(binary.size()));
        std::filesystem::rename(tmp, file, ec);
      }
    }
  }
  return program;
}

}  // namespace podsim::pjrt::opencl_backend
