// The SPMD backend (PyTorch/XLA's SPMD mode, runtime/distributed/spmd.h): one virtual device over
// every device of another backend (CPU or SIM). Its buffers are sharded: a piece on each
// device and the sharding that says which. compile() partitions the module by its
// shardings (passes::spmd_partition: the parameters' come from the buffers that feed
// them, others from mark_sharding) and compiles the per-device program with the other
// backend; a launch runs it on every device at once (one replicated round: one pod
// simulation on SIM) and returns sharded outputs.
#pragma once

#include <memory>
#include <vector>

#include "runtime/pjrt/device.h"

namespace podsim::pjrt {

std::unique_ptr<Client> make_spmd_client(Client& devices);

// The devices under an SPMD client; 0 for any other client.
int64_t spmd_device_count(const Client& client);

// Each device's piece of a buffer of the SPMD device (waits for them).
std::vector<ir::Literal> buffer_pieces(const Buffer& buffer);

// `whole` placed on the SPMD device `device` split as `sharding`: each device receives
// its piece.
std::shared_ptr<Buffer> place_buffer(const ir::Literal& whole, const ir::Sharding& sharding, Device& device);

// The same data with another sharding (pieces cut from the whole value on the host);
// `buffer` is a buffer of the SPMD device.
std::shared_ptr<Buffer> reshard_buffer(const Buffer& buffer, const ir::Sharding& sharding);

}  // namespace podsim::pjrt
