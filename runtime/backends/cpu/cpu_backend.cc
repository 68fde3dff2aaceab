#include "runtime/backends/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "common/error.h"
#include "compiler/cpu/cpu_compiler.h"
#include "runtime/metrics.h"

namespace podsim::runtime {
namespace {

// Bytes a value of shape occupies on the host (tuples: their elements).
int64_t host_bytes(const ir::Shape& shape) {
  if (!shape.is_tuple()) return shape.byte_size();
  int64_t total = 0;
  for (const ir::Shape& element : shape.elements()) total += host_bytes(element);
  return total;
}

std::string_view host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown-arch";
#endif
}

class CpuDevice final : public Device {
 public:
  CpuDevice(Client& client, int ordinal) : client_(client), ordinal_(ordinal) {}

  // Runs what is still queued (so no event is left pending forever), then stops.
  ~CpuDevice() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  int ordinal() const override { return ordinal_; }
  Client& client() const override { return client_; }

  MemoryStats memory_stats() const override {
    MemoryStats stats;
    stats.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
    stats.peak_bytes_in_use = peak_bytes_.load(std::memory_order_relaxed);
    return stats;
  }

  void add_bytes(int64_t bytes) {
    int64_t now = bytes_in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void remove_bytes(int64_t bytes) { bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Jobs never throw (they report failures through events).
  void enqueue(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
      // The worker starts with the first job: idle devices cost no thread.
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

  Client& client_;
  int ordinal_;
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(ir::Shape shape, CpuDevice& device, std::shared_ptr<Event> event)
      : shape_(std::move(shape)),
        device_(device),
        event_(std::move(event)),
        bytes_(host_bytes(shape_)) {
    device_.add_bytes(bytes_);
  }
  ~CpuBuffer() override { device_.remove_bytes(bytes_); }

  const ir::Shape& shape() const override { return shape_; }
  Device& device() const override { return device_; }
  const std::shared_ptr<Event>& ready_event() const override { return event_; }

  ir::Literal to_literal() const override {
    event_->wait();
    // Timed after the wait: the metric is the copy, not the computation before it.
    ScopedTimer timer("TransferFromDeviceTime");
    metric_record("OutboundData", static_cast<double>(bytes_), MetricUnit::kBytes);
    return *literal_;
  }

  // Set once, before the event completes; read only after it did.
  void set_literal(std::shared_ptr<const ir::Literal> literal) { literal_ = std::move(literal); }
  const ir::Literal& literal() const { return *literal_; }
  int64_t bytes() const { return bytes_; }

 private:
  ir::Shape shape_;
  CpuDevice& device_;
  std::shared_ptr<Event> event_;
  int64_t bytes_;
  std::shared_ptr<const ir::Literal> literal_;
};

CpuDevice& as_cpu_device(Device& device, std::string_view what) {
  auto* cpu = dynamic_cast<CpuDevice*>(&device);
  if (cpu == nullptr) fail("{}: device {} is not a CPU device", what, device.name());
  return *cpu;
}

class CpuExecutable final : public Executable {
 public:
  explicit CpuExecutable(std::shared_ptr<const cpu::Executable> plan) : plan_(std::move(plan)) {
    const cpu::ExecutableStats& stats = plan_->stats();
    info_.argument_bytes = stats.argument_bytes;
    info_.output_bytes = stats.output_bytes;
    info_.alias_bytes = stats.alias_bytes;
    info_.intermediate_bytes = stats.intermediate_bytes;
    info_.program_bytes = stats.program_bytes;
    const ir::Computation& entry = *plan_->module().entry();
    for (const ir::Instruction* parameter : entry.parameters())
      parameter_shapes_.push_back(parameter->shape());
    const ir::Shape& root = entry.root()->shape();
    if (root.is_tuple())
      output_shapes_ = root.elements();
    else
      output_shapes_ = {root};
  }

  const ir::Module& module() const override { return plan_->module(); }
  const ExecutableInfo& info() const override { return info_; }
  std::string serialize() const override { return plan_->serialize(); }

  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override {
    CpuDevice& cpu_device = as_cpu_device(device, "execute");
    std::vector<std::shared_ptr<const CpuBuffer>> args = check_arguments(arguments, cpu_device);

    std::vector<std::shared_ptr<CpuBuffer>> outputs;
    outputs.reserve(output_shapes_.size());
    for (const ir::Shape& shape : output_shapes_)
      outputs.push_back(std::make_shared<CpuBuffer>(shape, cpu_device, Event::make()));

    cpu_device.enqueue(
        [plan = plan_, args = std::move(args), outputs]() noexcept { run(*plan, args, outputs); });
    return {outputs.begin(), outputs.end()};
  }

 private:
  // Mistakes visible before running (count, placement, shapes) are thrown at once.
  std::vector<std::shared_ptr<const CpuBuffer>> check_arguments(
      std::span<const std::shared_ptr<Buffer>> arguments, CpuDevice& device) const {
    const std::string& name = plan_->module().name();
    if (arguments.size() != parameter_shapes_.size())
      fail("execute {}: expected {} argument(s), got {}", name, parameter_shapes_.size(),
           arguments.size());
    std::vector<std::shared_ptr<const CpuBuffer>> args;
    args.reserve(arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) {
      auto buffer = std::dynamic_pointer_cast<const CpuBuffer>(arguments[i]);
      if (buffer == nullptr)
        fail("execute {}: argument {} is {}", name, i, arguments[i] ? "not a CPU buffer" : "null");
      if (&buffer->device() != &device)
        fail("execute {}: argument {} is on {} but the run is on {}; transfer it first", name, i,
             buffer->device().name(), device.name());
      if (!buffer->shape().compatible(parameter_shapes_[i]))
        fail("execute {}: argument {} has shape {} but parameter {} is {}", name, i,
             buffer->shape().to_string(false), i, parameter_shapes_[i].to_string(false));
      args.push_back(std::move(buffer));
    }
    return args;
  }

  // On the device's worker: any failure (of an argument's computation or of this run)
  // becomes the error of every output.
  static void run(const cpu::Executable& plan,
                  const std::vector<std::shared_ptr<const CpuBuffer>>& args,
                  const std::vector<std::shared_ptr<CpuBuffer>>& outputs) noexcept {
    try {
      std::vector<const ir::Literal*> literals;
      literals.reserve(args.size());
      for (const auto& arg : args) {
        arg->ready_event()->wait();
        literals.push_back(&arg->literal());
      }
      std::vector<ir::Literal> results;
      {
        ScopedTimer timer("ExecuteTime");
        results = plan.run(literals);
      }
      if (results.size() != outputs.size())
        fail("execute {}: the plan returned {} output(s), expected {}", plan.module().name(),
             results.size(), outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i)
        outputs[i]->set_literal(std::make_shared<const ir::Literal>(std::move(results[i])));
      for (const auto& output : outputs) output->ready_event()->set_ready();
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      for (const auto& output : outputs) output->ready_event()->set_error(error);
    }
  }

  std::shared_ptr<const cpu::Executable> plan_;
  ExecutableInfo info_;
  std::vector<ir::Shape> parameter_shapes_;
  std::vector<ir::Shape> output_shapes_;
};

class CpuClient final : public Client {
 public:
  explicit CpuClient(int device_count) {
    for (int i = 0; i < device_count; ++i) {
      owned_.push_back(std::make_unique<CpuDevice>(*this, i));
      devices_.push_back(owned_.back().get());
    }
  }

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::span<Device* const> devices() const override { return devices_; }

  // Thread counts and ISA extensions do not change what a plan computes, so they are
  // left out: a cache directory stays valid across hosts of the same architecture.
  std::string target() const override {
    return fmt::format("cpu/{}/{}", cpu::kCompilerVersion, host_arch());
  }

  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    ScopedTimer timer("CompileTime");
    return std::make_shared<CpuExecutable>(cpu::compile(module));
  }

  std::shared_ptr<Executable> deserialize(std::string_view serialized) override {
    return std::make_shared<CpuExecutable>(cpu::compile_serialized(serialized));
  }

  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) override {
    CpuDevice& cpu_device = as_cpu_device(device, "transfer_to_device");
    ScopedTimer timer("TransferToDeviceTime");
    ir::Shape shape = literal.shape();
    auto buffer = std::make_shared<CpuBuffer>(std::move(shape), cpu_device, Event::make_ready());
    metric_record("InboundData", static_cast<double>(buffer->bytes()), MetricUnit::kBytes);
    buffer->set_literal(std::make_shared<const ir::Literal>(std::move(literal)));
    return buffer;
  }

 private:
  // Each device's destructor drains its queue before the client is gone.
  std::vector<std::unique_ptr<CpuDevice>> owned_;
  std::vector<Device*> devices_;
};

}  // namespace

int cpu_device_count_from_env() {
  const char* value = std::getenv("PODSIM_CPU_DEVICES");
  if (value == nullptr || *value == '\0') return 1;
  std::string_view text(value);
  int count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (ec != std::errc() || end != text.data() + text.size() || count < 1 || count > kMaxCpuDevices)
    fail("PODSIM_CPU_DEVICES={}: expected a device count from 1 to {}", text, kMaxCpuDevices);
  return count;
}

std::unique_ptr<Client> make_cpu_client(int device_count) {
  if (device_count == 0) device_count = cpu_device_count_from_env();
  if (device_count < 1 || device_count > kMaxCpuDevices)
    fail("CPU client: device count {} is not from 1 to {}", device_count, kMaxCpuDevices);
  return std::make_unique<CpuClient>(device_count);
}

}  // namespace podsim::runtime
