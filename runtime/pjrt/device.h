// The device interface: a small PJRT-like API that every backend implements.
//   Client      a backend: its devices, compile, transfers, executable (de)serialization
//   Device      one device of a client: kind, ordinal, memory statistics
//   Buffer      device data with a shape and a ready event
//   Executable  a compiled module; execute() enqueues work and returns at once
// Backends register by name; PODSIM_DEVICE (CPU | SIM | OPENCL) chooses the default.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"
#include "runtime/pjrt/event.h"

namespace podsim::topology {
struct PodConfig;
}

namespace podsim::pjrt {

class Client;
class Device;

// kSpmd: the one virtual device of SPMD mode (runtime/distributed/spmd.h), over every device of
// another backend.
enum class DeviceKind { kCpu, kSim, kOpenCl, kSpmd };
std::string_view device_kind_name(DeviceKind kind);  // "CPU", "SIM", "OPENCL", "SPMD"

struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_limit = 0;  // 0: no limit known
};

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const ir::Shape& shape() const = 0;
  virtual Device& device() const = 0;
  // Completes when the data is computed (or its computation failed).
  virtual const std::shared_ptr<Event>& ready_event() const = 0;
  // Waits for the data, then copies it to the host (rethrows a failed computation).
  virtual ir::Literal to_literal() const = 0;
  // How the data is split over devices (SPMD buffers); null: on one device.
  virtual const ir::Sharding* sharding() const { return nullptr; }
  int64_t size_bytes() const { return shape().byte_size(); }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual int ordinal() const = 0;  // index within its client
  std::string name() const;         // "CPU:0"
  virtual MemoryStats memory_stats() const = 0;
  virtual Client& client() const = 0;
};

struct ExecutableInfo {
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;
  int64_t intermediate_bytes = 0;
  int64_t program_bytes = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  virtual const ir::Module& module() const = 0;  // the optimized module
  virtual const ExecutableInfo& info() const = 0;
  // Enqueues a run on device once the arguments are ready and returns the output
  // buffers at once (one per element of a tuple root). Their ready events complete
  // when the run does; a failed run sets the error on each of them.
  virtual std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                                       Device& device) = 0;
  // For the persistent compile cache; Client::deserialize() reverses it.
  virtual std::string serialize() const = 0;
};

class Client {
 public:
  virtual ~Client() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::span<Device* const> devices() const = 0;
  // Identifies what compile() produces: compiler version and target configuration.
  // Part of every compile-cache key.
  virtual std::string target() const = 0;
  virtual std::shared_ptr<Executable> compile(const ir::Module& module) = 0;
  virtual std::shared_ptr<Executable> deserialize(std::string_view serialized) = 0;
  // Copies host data to device; the buffer's event completes when the copy does.
  virtual std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) = 0;
  // The simulated pod whose chips the devices are (device d on chip d), if any: the
  // SPMD partitioner costs its choices on it.
  virtual const topology::PodConfig* pod() const { return nullptr; }

  // For the launcher (runtime/distributed/collectives.h): replicated launches start afresh (every
  // device's next launch meets the others' next), and a device whose replica stopped
  // (returned or failed, `why`) fails at once every replicated launch still waiting
  // for it, until the next start.
  virtual void replicas_starting() {}
  virtual void replica_stopped(Device& /*device*/, const std::string& /*why*/) {}
};

// Backend registry. Factories run on first use of the backend.
using ClientFactory = std::function<std::unique_ptr<Client>()>;
void register_backend(std::string name, ClientFactory factory);
// The client of a registered backend ("CPU", ...); unknown names are a podsim::Error
// listing the registered ones.
Client& client(std::string_view name);
// The backend named by PODSIM_DEVICE (default CPU); in SPMD mode, the SPMD backend over
// it (one virtual device over all of its devices).
Client& default_client();
// SPMD mode (runtime/distributed/spmd.h): on with PODSIM_SPMD=1 or use_spmd(), which must come
// before the default backend is first used.
void use_spmd();
bool spmd_enabled();

// The device of the launch this thread runs in (runtime/distributed/collectives.h sets it
// on each replica's thread; nullptr outside a launch).
Device* thread_device();
void set_thread_device(Device* device);

}  // namespace podsim::pjrt

namespace podsim {

// As torch_xla: the default device (PODSIM_DEVICE: inside a launch, the replica's own
// device; else the backend's first), device `index` of the backend, and all its devices.
pjrt::Device& device();
pjrt::Device& device(int index);
std::vector<pjrt::Device*> devices();
int device_count();

}  // namespace podsim
