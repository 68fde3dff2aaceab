// The host-CPU backend of the device interface: runs executables built by the CPU
// compiler (compiler/cpu). Every device is the host; a device is an execution queue of
// its own (one worker thread, first in first out), so steps submitted to a device run
// in submission order while the caller traces the next one. PODSIM_CPU_DEVICES=N gives
// N devices (default 1), e.g. to exercise multi-device code paths on one host.
#pragma once

#include <memory>

#include "runtime/pjrt/device.h"

namespace podsim::pjrt {

inline constexpr int kMaxCpuDevices = 256;

// The device count PODSIM_CPU_DEVICES asks for (1 when unset); anything but an integer
// in [1, kMaxCpuDevices] is a podsim::Error.
int cpu_device_count_from_env();

// A CPU client with device_count devices (0: cpu_device_count_from_env()).
std::unique_ptr<Client> make_cpu_client(int device_count = 0);

}  // namespace podsim::pjrt
