// Internals of the backend registry, for tests: the default backend and each client
// are created once per process, so a test that changes PODSIM_DEVICE or
// PODSIM_CPU_DEVICES resets the registry to make them read again.
#pragma once

namespace podsim::pjrt::internal {

// Empties the in-memory compile cache (its executables belong to the clients), destroys
// every client created so far and forgets the default choice; the next
// default_client() reads the environment again. Only when no buffer, executable or
// device reference of those clients is still in use. Tests of tensors call
// lazy::reset_for_testing() (runtime/lazy/tensor_impl.h), which also forgets the lazy
// runtime's per-device state.
void reset_backends_for_testing();

}  // namespace podsim::pjrt::internal
