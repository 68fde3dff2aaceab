// Replicated execution on host-memory devices (CPU, SIM): a module compiled for R
// replicas (replica_count R, collectives between them) runs on devices 0 .. R-1 of its
// client together, as one run: one pod simulation on SIM, one in-process run on CPU.
//
// Each device submits its own launch (Executable::execute, from its own thread or not).
// A device's k-th replicated launch meets the k-th of every other device: when all R have
// arrived, their arguments are ready and each device's earlier work is done, the run
// executes once on the rendezvous's worker and every device's outputs get their part of
// it. Launches that do not match (another graph, another replica count) fail every
// output of that round with an error naming the devices and graphs; a round that some
// device never joins fails after PODSIM_COLLECTIVE_TIMEOUT seconds (default 300) of
// waiting, naming the devices that did not come. Nothing hangs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/pjrt/host_device.h"

namespace podsim::pjrt {

// Computes every replica's outputs from every replica's arguments: arguments[d][k] is
// device d's k-th argument; the result [d] device d's outputs.
using ReplicatedRunFn = std::function<std::vector<std::vector<ir::Literal>>(
    const std::vector<std::vector<const ir::Literal*>>& arguments)>;

// The seconds a round waits for its last device (PODSIM_COLLECTIVE_TIMEOUT, read when a
// client is made; podsim::Error for a value that is not a positive number).
double collective_timeout_seconds();

class ReplicaRendezvous {
 public:
  // The client's devices, in ordinal order; replicas are devices 0 .. R-1.
  ReplicaRendezvous(std::span<Device* const> devices, DeviceKind kind);
  ~ReplicaRendezvous();  // fails the rounds still waiting, then runs out its worker
  ReplicaRendezvous(const ReplicaRendezvous&) = delete;
  ReplicaRendezvous& operator=(const ReplicaRendezvous&) = delete;

  // Executable::execute of a replicated executable on one of its devices: checks the
  // arguments at once, joins device's next round and returns its output buffers, which
  // complete when the round has run. `executable` identifies the executable (launches
  // of one round must name the same one); `name` names its module in errors.
  // Client::replicas_starting / replica_stopped.
  void start();
  void stopped(Device& device, const std::string& why);

  std::vector<std::shared_ptr<Buffer>> execute(
      const void* executable, const std::string& name, int64_t replicas,
      std::span<const ir::Shape> parameter_shapes, std::span<const ir::Shape> output_shapes,
      std::span<const std::shared_ptr<Buffer>> arguments, Device& device, ReplicatedRunFn run);

 private:
  struct Arrival {
    std::vector<std::shared_ptr<const HostBuffer>> arguments;
    std::vector<std::shared_ptr<HostBuffer>> outputs;
    std::shared_ptr<Event> earlier_work_done;  // the device's queue reached the launch
  };
  struct Round {
    const void* executable = nullptr;
    std::string name;
    int64_t replicas = 0;
    ReplicatedRunFn run;
    std::vector<std::unique_ptr<Arrival>> arrivals;  // by device; null until it arrives
    int64_t arrived = 0;
    std::exception_ptr error;  // a mismatch, found when a launch arrived
  };

  void run_round(int64_t sequence) noexcept;
  std::string device_list(const Round& round, bool arrived) const;

  std::vector<HostDevice*> devices_;
  DeviceKind kind_;
  double timeout_seconds_;  // PODSIM_COLLECTIVE_TIMEOUT when the client was made
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int64_t> next_;                 // per device: its next round's number
  std::vector<std::string> stopped_;          // per device: why its replica stopped
  std::map<int64_t, Round> rounds_;           // waiting for devices
  std::map<int64_t, std::exception_ptr> failed_;  // rounds that failed before all came
  bool closing_ = false;
  WorkQueue worker_;  // last: runs the rounds in order, drained before the rest goes
};

}  // namespace podsim::pjrt
