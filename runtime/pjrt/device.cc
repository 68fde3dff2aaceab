#include "runtime/pjrt/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/error.h"
#include "runtime/pjrt/cpu/cpu_backend.h"
#include "runtime/pjrt/opencl/opencl_backend.h"
#include "runtime/pjrt/sim/sim_backend.h"
#include "runtime/pjrt/spmd/spmd_backend.h"
#include "runtime/pjrt/compile_cache.h"
#include "runtime/pjrt/internal.h"

namespace podsim::pjrt {
namespace {

struct Backend {
  ClientFactory factory;
  std::unique_ptr<Client> client;  // created on first use
};

// Every value PODSIM_DEVICE may take.
constexpr std::string_view kKnownBackends[] = {"CPU", "SIM", "OPENCL"};

using BackendMap = std::map<std::string, Backend, std::less<>>;

// The one list of backends built into podsim. Explicit calls rather than static
// registration objects: the linker drops unreferenced objects of a static library.
void add_builtin_backends(BackendMap& backends) {
  backends.emplace("CPU", Backend{[] { return make_cpu_client(); }, nullptr});
  backends.emplace("SIM", Backend{[] { return make_sim_client(); }, nullptr});
  backends.emplace("OPENCL", Backend{[] { return make_opencl_client(); }, nullptr});
}

struct Registry {
  Registry() { add_builtin_backends(backends); }
  std::mutex mutex;
  BackendMap backends;
  Client* default_client = nullptr;
  bool spmd = false;                  // use_spmd() was called
  std::unique_ptr<Client> spmd_client;  // over the PODSIM_DEVICE backend
};

bool spmd_from_env() {
  const char* value = std::getenv("PODSIM_SPMD");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

Registry& registry() {
  // Never destroyed: buffers kept in static objects may be released after main returns,
  // and they point at their device.
  static Registry* instance = new Registry;
  return *instance;
}

std::string available_names(const BackendMap& backends) {
  std::string names;
  for (const auto& [name, backend] : backends) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// The backend of that name; unknown names are an error (without a prefix:
// callers say where the name came from).
Backend& find_locked(Registry& r, std::string_view name) {
  auto it = r.backends.find(name);
  if (it != r.backends.end()) return it->second;
  std::string valid;
  for (std::string_view known : kKnownBackends) valid += (valid.empty() ? "" : ", ") + std::string(known);
  for (const auto& [registered, backend] : r.backends)
    if (std::find(std::begin(kKnownBackends), std::end(kKnownBackends), registered) == std::end(kKnownBackends))
      valid += ", " + registered;
  fail("not a known backend; valid values: {} (available: {})", valid, available_names(r.backends));
}

Client& client_locked(Backend& backend) {
  if (!backend.client) {
    backend.client = backend.factory();
    if (!backend.client) fail("a backend factory returned no client");
  }
  return *backend.client;
}

}  // namespace

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "CPU";
    case DeviceKind::kSim:
      return "SIM";
    case DeviceKind::kOpenCl:
      return "OPENCL";
    case DeviceKind::kSpmd:
      return "SPMD";
  }
  return "UNKNOWN";
}

std::string Device::name() const {
  return fmt::format("{}:{}", device_kind_name(kind()), ordinal());
}

void register_backend(std::string name, ClientFactory factory) {
  if (!factory) fail("register_backend {}: no factory", name);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Backend& backend = r.backends[name];
  if (backend.client)
    fail("register_backend {}: the backend is already in use; register it before first use", name);
  backend.factory = std::move(factory);
}

Client& client(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Backend* backend = nullptr;
  try {
    backend = &find_locked(r, name);
  } catch (const Error& e) {
    fail("backend {}: {}", name, e.what());
  }
  return client_locked(*backend);
}

Client& default_client() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.default_client != nullptr) return *r.default_client;
  const char* value = std::getenv("PODSIM_DEVICE");
  std::string name = value != nullptr && *value != '\0' ? value : "CPU";
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Backend* backend = nullptr;
  try {
    backend = &find_locked(r, name);
  } catch (const Error& e) {
    fail("PODSIM_DEVICE={}: {}", value, e.what());
  }
  r.default_client = &client_locked(*backend);
  if (r.spmd || spmd_from_env()) {
    r.spmd_client = make_spmd_client(*r.default_client);
    r.default_client = r.spmd_client.get();
  }
  return *r.default_client;
}

void use_spmd() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.default_client != nullptr && r.default_client->kind() != DeviceKind::kSpmd)
    fail("use_spmd() must come before the first use of a device (the default {} backend is in use)",
         device_kind_name(r.default_client->kind()));
  r.spmd = true;
}

bool spmd_enabled() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.default_client != nullptr ? r.default_client->kind() == DeviceKind::kSpmd : r.spmd || spmd_from_env();
}

namespace {
thread_local Device* launched_device = nullptr;
}  // namespace

Device* thread_device() { return launched_device; }
void set_thread_device(Device* device) { launched_device = device; }

namespace internal {

void reset_backends_for_testing() {
  // Cached executables belong to the clients (they launch through them).
  CompileCache::global().clear();
  std::vector<std::unique_ptr<Client>> clients;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.default_client = nullptr;
    r.spmd = false;
    if (r.spmd_client) clients.push_back(std::move(r.spmd_client));  // before the backend it wraps
    for (auto& [name, backend] : r.backends)
      if (backend.client) clients.push_back(std::move(backend.client));
  }
  clients.clear();  // outside the lock: destroying a client waits for its queued work
}

}  // namespace internal
}  // namespace podsim::pjrt

namespace podsim {

pjrt::Device& device() {
  if (pjrt::Device* own = pjrt::thread_device()) return *own;
  return device(0);
}

pjrt::Device& device(int index) {
  pjrt::Client& client = pjrt::default_client();
  std::span<pjrt::Device* const> all = client.devices();
  if (index < 0 || static_cast<size_t>(index) >= all.size())
    fail("device index {} is out of range: the {} backend has {} device(s)", index,
         pjrt::device_kind_name(client.kind()), all.size());
  return *all[static_cast<size_t>(index)];
}

std::vector<pjrt::Device*> devices() {
  std::span<pjrt::Device* const> all = pjrt::default_client().devices();
  return {all.begin(), all.end()};
}

int device_count() { return static_cast<int>(pjrt::default_client().devices().size()); }

}  // namespace podsim
