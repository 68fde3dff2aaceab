#include "runtime/pjrt/host_device.h"

#include <utility>

#include "common/error.h"
#include "runtime/debug/metrics.h"

namespace podsim::pjrt {
namespace {

// Bytes a value of shape occupies on the host (tuples: their elements).
int64_t host_bytes(const ir::Shape& shape) {
  if (!shape.is_tuple()) return shape.byte_size();
  int64_t total = 0;
  for (const ir::Shape& element : shape.elements()) total += host_bytes(element);
  return total;
}

}  // namespace

MemoryStats HostDevice::memory_stats() const {
  MemoryStats stats;
  stats.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
  stats.peak_bytes_in_use = peak_bytes_.load(std::memory_order_relaxed);
  stats.bytes_limit = bytes_limit_;
  return stats;
}

void HostDevice::add_bytes(int64_t bytes) {
  int64_t now = bytes_in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

HostBuffer::HostBuffer(ir::Shape shape, HostDevice& device, std::shared_ptr<Event> event)
    : shape_(std::move(shape)),
      device_(device),
      event_(std::move(event)),
      bytes_(host_bytes(shape_)) {
  device_.add_bytes(bytes_);
}

ir::Literal HostBuffer::to_literal() const {
  event_->wait();
  // Timed after the wait: the metric is the copy, not the computation before it.
  debug::ScopedTimer timer("TransferFromDeviceTime");
  debug::metric_record("OutboundData", static_cast<double>(bytes_), debug::MetricUnit::kBytes);
  return *literal_;
}

HostDevice& as_host_device(Device& device, DeviceKind kind, std::string_view what) {
  auto* host = dynamic_cast<HostDevice*>(&device);
  if (host == nullptr || host->kind() != kind)
    fail("{}: device {} is not a {} device", what, device.name(), device_kind_name(kind));
  return *host;
}

std::shared_ptr<Buffer> host_transfer(ir::Literal literal, Device& device, DeviceKind kind) {
  HostDevice& host = as_host_device(device, kind, "transfer_to_device");
  debug::ScopedTimer timer("TransferToDeviceTime");
  ir::Shape shape = literal.shape();
  auto buffer = std::make_shared<HostBuffer>(std::move(shape), host, Event::make_ready());
  debug::metric_record("InboundData", static_cast<double>(buffer->bytes()), debug::MetricUnit::kBytes);
  buffer->set_literal(std::make_shared<const ir::Literal>(std::move(literal)));
  return buffer;
}

std::vector<std::shared_ptr<const HostBuffer>> check_host_arguments(
    const std::string& name, std::span<const ir::Shape> parameter_shapes,
    std::span<const std::shared_ptr<Buffer>> arguments, Device& device, DeviceKind kind) {
  if (arguments.size() != parameter_shapes.size())
    fail("execute {}: expected {} argument(s), got {}", name, parameter_shapes.size(),
         arguments.size());
  std::vector<std::shared_ptr<const HostBuffer>> args;
  args.reserve(arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    auto buffer = std::dynamic_pointer_cast<const HostBuffer>(arguments[i]);
    if (buffer == nullptr)
      fail("execute {}: argument {} is {}", name, i,
           arguments[i] ? fmt::format("not a {} buffer", device_kind_name(kind)) : "null");
    if (&buffer->device() != &device)
      fail("execute {}: argument {} is on {} but the run is on {}; transfer it first", name, i,
           buffer->device().name(), device.name());
    if (!buffer->shape().compatible(parameter_shapes[i]))
      fail("execute {}: argument {} has shape {} but parameter {} is {}", name, i,
           buffer->shape().to_string(false), i, parameter_shapes[i].to_string(false));
    args.push_back(std::move(buffer));
  }
  return args;
}

std::vector<std::shared_ptr<Buffer>> execute_on_host(
    const std::string& name, std::span<const ir::Shape> parameter_shapes,
    std::span<const ir::Shape> output_shapes, std::span<const std::shared_ptr<Buffer>> arguments,
    Device& device, DeviceKind kind, HostRunFn run) {
  HostDevice& host = as_host_device(device, kind, "execute");
  // Mistakes visible before running (count, placement, shapes) are thrown at once.
  std::vector<std::shared_ptr<const HostBuffer>> args =
      check_host_arguments(name, parameter_shapes, arguments, device, kind);

  std::vector<std::shared_ptr<HostBuffer>> outputs;
  outputs.reserve(output_shapes.size());
  for (const ir::Shape& shape : output_shapes)
    outputs.push_back(std::make_shared<HostBuffer>(shape, host, Event::make()));

  host.queue().enqueue([name, args = std::move(args), outputs, run = std::move(run)]() noexcept {
    try {
      std::vector<const ir::Literal*> literals;
      literals.reserve(args.size());
      for (const auto& arg : args) {
        arg->ready_event()->wait();
        literals.push_back(&arg->literal());
      }
      std::vector<ir::Literal> results;
      {
        debug::ScopedTimer timer("ExecuteTime");
        results = run(literals);
      }
      if (results.size() != outputs.size())
        fail("execute {}: the run returned {} output(s), expected {}", name, results.size(),
             outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i)
        outputs[i]->set_literal(std::make_shared<const ir::Literal>(std::move(results[i])));
      for (const auto& output : outputs) output->ready_event()->set_ready();
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      for (const auto& output : outputs) output->ready_event()->set_error(error);
    }
  });
  return {outputs.begin(), outputs.end()};
}

std::vector<ir::Shape> entry_parameter_shapes(const ir::Module& module) {
  std::vector<ir::Shape> shapes;
  for (const ir::Instruction* parameter : module.entry()->parameters())
    shapes.push_back(parameter->shape());
  return shapes;
}

std::vector<ir::Shape> entry_output_shapes(const ir::Module& module) {
  const ir::Shape& root = module.entry()->root()->shape();
  if (root.is_tuple()) return root.elements();
  return {root};
}

}  // namespace podsim::pjrt
