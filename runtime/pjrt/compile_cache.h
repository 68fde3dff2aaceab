// The compile cache: graph hash -> executable. An in-memory LRU (2048 entries by
// default) in front of an optional persistent directory (initialize_cache(path,
// readonly) or PODSIM_CACHE_DIR). Keys combine the graph hash with the client's
// target() (compiler version and target configuration). A corrupted, truncated or
// foreign file is detected by its header and checksum, reported as a warning, and
// recompiled; files are written to a temporary name, fsynced and renamed, so that
// concurrent writers never leave a half-written entry.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/pjrt/device.h"
#include "runtime/pjrt/hash.h"

namespace podsim::pjrt {

class CompileCache {
 public:
  // The process-wide cache the runtime uses, set up from the environment
  // (PODSIM_CACHE_CAPACITY, PODSIM_CACHE_DIR) on first use.
  static CompileCache& global();
  // A separate cache set up from the environment as global() is (tests and tools: a
  // fresh instance sees the persistent directory as a new process would).
  static std::unique_ptr<CompileCache> create();
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // Memory first, then disk (deserialized through client). Null on a miss.
  std::shared_ptr<Executable> lookup(const Hash128& graph_hash, Client& client);
  // Into memory, and onto disk unless the persistent cache is read-only or off.
  void insert(const Hash128& graph_hash, Client& client, std::shared_ptr<Executable> executable);

  void set_capacity(size_t entries);
  size_t size() const;  // entries in memory
  void clear();         // memory only
  void set_persistent(std::string directory, bool readonly);

 private:
  CompileCache();
  struct State;
  std::unique_ptr<State> state_;
};

// As torch_xla.runtime.initialize_cache: turn on the persistent cache.
void initialize_cache(const std::string& path, bool readonly = false);

}  // namespace podsim::pjrt
