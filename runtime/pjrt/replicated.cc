#include "runtime/pjrt/replicated.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "runtime/debug/metrics.h"

namespace podsim::pjrt {

double collective_timeout_seconds() {
  const char* value = std::getenv("PODSIM_COLLECTIVE_TIMEOUT");
  if (value == nullptr || *value == '\0') return 300;
  char* end = nullptr;
  double seconds = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(seconds > 0) || seconds > 1e6)
    fail("PODSIM_COLLECTIVE_TIMEOUT={}: expected seconds, more than 0", value);
  return seconds;
}

ReplicaRendezvous::ReplicaRendezvous(std::span<Device* const> devices, DeviceKind kind)
    : kind_(kind),
      timeout_seconds_(collective_timeout_seconds()),
      next_(devices.size(), 0),
      stopped_(devices.size()) {
  for (Device* device : devices) devices_.push_back(&as_host_device(*device, kind, "rendezvous"));
}

ReplicaRendezvous::~ReplicaRendezvous() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
}

void ReplicaRendezvous::start() {
  std::lock_guard lock(mutex_);
  const int64_t next = *std::max_element(next_.begin(), next_.end());
  std::fill(next_.begin(), next_.end(), next);
  std::fill(stopped_.begin(), stopped_.end(), std::string());
}

void ReplicaRendezvous::stopped(Device& device, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    const auto d = static_cast<size_t>(device.ordinal());
    if (d < stopped_.size() && devices_[d] == &device) stopped_[d] = why.empty() ? "stopped" : why;
  }
  changed_.notify_all();
}

std::string ReplicaRendezvous::device_list(const Round& round, bool arrived) const {
  std::string list;
  for (size_t d = 0; d < round.arrivals.size(); ++d)
    if ((round.arrivals[d] != nullptr) == arrived)
      list += (list.empty() ? "" : ", ") + devices_[d]->name();
  return list.empty() ? "none" : list;
}

std::vector<std::shared_ptr<Buffer>> ReplicaRendezvous::execute(
    const void* executable, const std::string& name, int64_t replicas,
    std::span<const ir::Shape> parameter_shapes, std::span<const ir::Shape> output_shapes,
    std::span<const std::shared_ptr<Buffer>> arguments, Device& device, ReplicatedRunFn run) {
  HostDevice& host = as_host_device(device, kind_, "execute");
  const auto d = static_cast<size_t>(host.ordinal());
  if (d >= devices_.size() || devices_[d] != &host)
    fail("execute {}: {} is not a device of this client", name, device.name());
  if (replicas < 1 || static_cast<size_t>(replicas) > devices_.size())
    fail("execute {}: the module runs on {} replicas but the {} backend has {} device(s)", name,
         replicas, device_kind_name(kind_), devices_.size());
  if (d >= static_cast<size_t>(replicas))
    fail("execute {}: {} is not one of the module's {} replicas ({} to {})", name, device.name(),
         replicas, devices_.front()->name(), devices_[static_cast<size_t>(replicas) - 1]->name());
  auto arrival = std::make_unique<Arrival>();
  arrival->arguments = check_host_arguments(name, parameter_shapes, arguments, device, kind_);
  for (const ir::Shape& shape : output_shapes)
    arrival->outputs.push_back(std::make_shared<HostBuffer>(shape, host, Event::make()));
  arrival->earlier_work_done = Event::make();
  std::vector<std::shared_ptr<Buffer>> outputs(arrival->outputs.begin(), arrival->outputs.end());
  // Marks where this launch stands in the device's queue: the round runs after the
  // device's earlier launches, without holding up its later ones.
  host.queue().enqueue([done = arrival->earlier_work_done]() noexcept { done->set_ready(); });

  auto fail_now = [&](const std::exception_ptr& error) {
    for (const auto& output : arrival->outputs) output->ready_event()->set_error(error);
    return outputs;
  };
  {
    std::lock_guard lock(mutex_);
    const int64_t sequence = next_[d]++;
    if (auto failed = failed_.find(sequence); failed != failed_.end()) return fail_now(failed->second);
    auto [it, created] = rounds_.try_emplace(sequence);
    Round& round = it->second;
    if (created) {
      round.executable = executable;
      round.name = name;
      round.replicas = replicas;
      round.run = std::move(run);
      round.arrivals.resize(static_cast<size_t>(replicas));
      worker_.enqueue([this, sequence]() noexcept { run_round(sequence); });
    } else if (!round.error && (round.executable != executable || round.replicas != replicas)) {
      round.error = std::make_exception_ptr(Error(fmt::format(
          "replicated launch #{}: {} launched {} ({} replicas) where {} launched {} ({} "
          "replicas); every device must launch the same graphs in the same order",
          sequence, device.name(), name, replicas, device_list(round, true), round.name,
          round.replicas)));
    }
    if (round.error) {
      changed_.notify_all();
      return fail_now(round.error);
    }
    round.arrivals[d] = std::move(arrival);
    ++round.arrived;
  }
  changed_.notify_all();
  return outputs;
}

void ReplicaRendezvous::run_round(int64_t sequence) noexcept {
  Round round;
  {
    std::unique_lock lock(mutex_);
    Round& waiting = rounds_.at(sequence);
    // The wait starts now, after the rounds before it ran: a slow simulation of one
    // round does not count against the next.
    // A device that is missing and whose replica stopped will never come.
    std::string gone;
    auto missing_stopped = [&] {
      for (size_t d = 0; d < waiting.arrivals.size(); ++d)
        if (!waiting.arrivals[d] && !stopped_[d].empty()) {
          gone = fmt::format("{} ({})", devices_[d]->name(), stopped_[d]);
          return true;
        }
      return false;
    };
    changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds_), [&] {
      return waiting.arrived == waiting.replicas || waiting.error || closing_ || missing_stopped();
    });
    if (!waiting.error && !gone.empty())
      waiting.error = std::make_exception_ptr(Error(fmt::format(
          "replicated launch #{} of {}: the replica of {} stopped without launching it; {} "
          "launched it, every device of the {} replicas must launch the same graphs in the "
          "same order",
          sequence, waiting.name, gone, device_list(waiting, true), waiting.replicas)));
    if (!waiting.error && waiting.arrived < waiting.replicas)
      waiting.error = std::make_exception_ptr(Error(fmt::format(
          "replicated launch #{} of {}: {} did not launch it {} ({} did); every device of "
          "the {} replicas must launch the same graphs in the same order",
          sequence, waiting.name, device_list(waiting, false),
          closing_ ? "before the backend shut down"
                   : fmt::format("within {} s (PODSIM_COLLECTIVE_TIMEOUT)", timeout_seconds_),
          device_list(waiting, true), waiting.replicas)));
    round = std::move(waiting);
    rounds_.erase(sequence);
    if (round.error) failed_.emplace(sequence, round.error);
  }
  auto fail_all = [&](const std::exception_ptr& error) {
    for (const auto& arrival : round.arrivals)
      if (arrival)
        for (const auto& output : arrival->outputs) output->ready_event()->set_error(error);
  };
  if (round.error) return fail_all(round.error);
  try {
    std::vector<std::vector<const ir::Literal*>> arguments;
    for (const auto& arrival : round.arrivals) {
      arrival->earlier_work_done->wait();
      arguments.emplace_back();
      for (const auto& argument : arrival->arguments) {
        argument->ready_event()->wait();
        arguments.back().push_back(&argument->literal());
      }
    }
    std::vector<std::vector<ir::Literal>> results;
    {
      debug::ScopedTimer timer("ExecuteTime");
      results = round.run(arguments);
    }
    if (results.size() != round.arrivals.size())
      fail("replicated run of {}: {} replicas' results, expected {}", round.name, results.size(),
           round.arrivals.size());
    for (size_t d = 0; d < results.size(); ++d) {
      auto& outputs = round.arrivals[d]->outputs;
      if (results[d].size() != outputs.size())
        fail("replicated run of {}: replica {} has {} output(s), expected {}", round.name, d,
             results[d].size(), outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k)
        outputs[k]->set_literal(std::make_shared<const ir::Literal>(std::move(results[d][k])));
    }
    for (const auto& arrival : round.arrivals)
      for (const auto& output : arrival->outputs) output->ready_event()->set_ready();
  } catch (...) {
    fail_all(std::current_exception());
  }
}

}  // namespace podsim::pjrt
