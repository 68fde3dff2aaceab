// What the backends whose device data lives in host memory share (CPU, and SIM, whose
// simulated HBM is filled from host data for each run): a device with an execution
// queue and memory accounting, a buffer holding a literal, and the checked, asynchronous
// execution of a run function over such buffers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/pjrt/work_queue.h"
#include "runtime/pjrt/device.h"

namespace podsim::pjrt {

class HostDevice final : public Device {
 public:
  HostDevice(Client& client, DeviceKind kind, int ordinal, int64_t bytes_limit = 0)
      : client_(client), kind_(kind), ordinal_(ordinal), bytes_limit_(bytes_limit) {}

  DeviceKind kind() const override { return kind_; }
  int ordinal() const override { return ordinal_; }
  Client& client() const override { return client_; }
  MemoryStats memory_stats() const override;

  void add_bytes(int64_t bytes);
  void remove_bytes(int64_t bytes) { bytes_in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  WorkQueue& queue() { return queue_; }

 private:
  Client& client_;
  DeviceKind kind_;
  int ordinal_;
  int64_t bytes_limit_;
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
  WorkQueue queue_;  // last: drained (its jobs touch the counters) before the rest goes
};

class HostBuffer final : public Buffer {
 public:
  HostBuffer(ir::Shape shape, HostDevice& device, std::shared_ptr<Event> event);
  ~HostBuffer() override { device_.remove_bytes(bytes_); }

  const ir::Shape& shape() const override { return shape_; }
  Device& device() const override { return device_; }
  const std::shared_ptr<Event>& ready_event() const override { return event_; }
  ir::Literal to_literal() const override;

  // Set once, before the event completes; read only after it did.
  void set_literal(std::shared_ptr<const ir::Literal> literal) { literal_ = std::move(literal); }
  const ir::Literal& literal() const { return *literal_; }
  int64_t bytes() const { return bytes_; }

 private:
  ir::Shape shape_;
  HostDevice& device_;
  std::shared_ptr<Event> event_;
  int64_t bytes_;
  std::shared_ptr<const ir::Literal> literal_;
};

// device as a HostDevice of that kind; `what` names the call in the error otherwise.
HostDevice& as_host_device(Device& device, DeviceKind kind, std::string_view what);

// A ready buffer holding literal (a host-to-device transfer), with the transfer metrics.
std::shared_ptr<Buffer> host_transfer(ir::Literal literal, Device& device, DeviceKind kind);

// Computes a module's outputs from its arguments' literals (on the device's worker).
using HostRunFn = std::function<std::vector<ir::Literal>(std::span<const ir::Literal* const>)>;

// The arguments of a run on device checked at once (count, device, shapes against
// parameter_shapes), as host buffers; `name` names the module in errors.
std::vector<std::shared_ptr<const HostBuffer>> check_host_arguments(
    const std::string& name, std::span<const ir::Shape> parameter_shapes,
    std::span<const std::shared_ptr<Buffer>> arguments, Device& device, DeviceKind kind);

// Executable::execute for host devices: checks the arguments at once (count, device,
// shapes against parameter_shapes), makes the output buffers, and queues run on the
// device; a failure (of an argument's computation or of the run) becomes the error of
// every output. `name` names the module in errors.
std::vector<std::shared_ptr<Buffer>> execute_on_host(
    const std::string& name, std::span<const ir::Shape> parameter_shapes,
    std::span<const ir::Shape> output_shapes, std::span<const std::shared_ptr<Buffer>> arguments,
    Device& device, DeviceKind kind, HostRunFn run);

// The entry computation's parameter shapes and its outputs (a tuple root's elements).
std::vector<ir::Shape> entry_parameter_shapes(const ir::Module& module);
std::vector<ir::Shape> entry_output_shapes(const ir::Module& module);

}  // namespace podsim::pjrt
