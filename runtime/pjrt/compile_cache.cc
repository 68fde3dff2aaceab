#include "runtime/pjrt/compile_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/error.h"
#include "compiler/passes/pass.h"
#include "runtime/debug/metrics.h"

namespace podsim::pjrt {
namespace fs = std::filesystem;
namespace {

constexpr size_t kDefaultCapacity = 2048;

// Entry file layout (integers little-endian):
//   "PODSIMCC" | u32 format version | u32 target length | target | u64 payload length
//   | u64 CRC-64 of the payload | payload
constexpr std::string_view kMagic = "PODSIMCC";
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 + 8;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= uint64_t{static_cast<unsigned char>(in[offset + static_cast<size_t>(i)])} << (8 * i);
  return value;
}

std::string encode_entry(std::string_view target, std::string_view payload) {
  std::string out;
  out.reserve(kFixedHeaderBytes + target.size() + payload.size());
  out += kMagic;
  put_le(out, kFormatVersion, 4);
  put_le(out, target.size(), 4);
  out += target;
  put_le(out, payload.size(), 8);
  put_le(out, crc64(payload), 8);
  out += payload;
  return out;
}

// The payload of a valid entry for target; otherwise false, with what is wrong.
bool decode_entry(std::string_view file, std::string_view target, std::string_view& payload,
                  std::string& problem) {
  if (!file.starts_with(kMagic) && !kMagic.starts_with(file)) {
    problem = "not a podsim cache entry";
    return false;
  }
  if (file.size() < kFixedHeaderBytes) {
    problem = "truncated header";
    return false;
  }
  size_t at = kMagic.size();
  uint64_t version = get_le(file, at, 4);
  if (version != kFormatVersion) {
    problem = fmt::format("format version {}, expected {}", version, kFormatVersion);
    return false;
  }
  uint64_t target_size = get_le(file, at + 4, 4);
  at += 8;
  if (target_size > file.size() - kFixedHeaderBytes) {
    problem = "truncated header";
    return false;
  }
  std::string_view file_target = file.substr(at, target_size);
  if (file_target != target) {
    problem = fmt::format("built for target '{}', expected '{}'", file_target, target);
    return false;
  }
  at += target_size;
  uint64_t payload_size = get_le(file, at, 8);
  uint64_t checksum = get_le(file, at + 8, 8);
  at += 16;
  if (payload_size != file.size() - at) {
    problem =
        fmt::format("truncated: payload of {} bytes, {} present", payload_size, file.size() - at);
    return false;
  }
  payload = file.substr(at);
  if (crc64(payload) != checksum) {
    problem = "checksum mismatch";
    return false;
  }
  return true;
}

enum class ReadResult { kOk, kMissing, kError };

ReadResult read_file(const fs::path& path, std::string& content, std::string& error) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT) return ReadResult::kMissing;
    error = std::strerror(errno);
    return ReadResult::kError;
  }
  content.clear();
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::strerror(errno);
      ::close(fd);
      return ReadResult::kError;
    }
    if (n == 0) break;
    content.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return ReadResult::kOk;
}

// A new, uniquely named temporary file in dir (pid, thread and a counter make the name
// unique across processes and threads). Returns the descriptor, or -1 with errno set.
int create_temp(const fs::path& dir, std::string_view stem, fs::path& temp) {
  static std::atomic<uint64_t> serial{0};
  temp = dir / fmt::format(".tmp-{}-{}-{:x}-{}", stem, ::getpid(),
                           std::hash<std::thread::id>{}(std::this_thread::get_id()),
                           serial.fetch_add(1));
  int fd;
  do {
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Writes content to dir/name atomically: readers see the old file or the whole new one.
bool write_atomically(const fs::path& dir, const std::string& name, std::string_view content,
                      std::string& error) {
  fs::path temp;
  int fd = create_temp(dir, name, temp);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (size_t done = 0; ok && done < content.size();) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      ok = false;
    else
      done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (!ok) error = std::strerror(errno);
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = std::strerror(errno);
  }
  if (ok && ::rename(temp.c_str(), (dir / name).c_str()) != 0) {
    ok = false;
    error = std::strerror(errno);
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return false;
  }
  // Makes the rename itself durable; a failure here loses no data already visible.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return true;
}

// Whether a file can be created in dir (permissions alone say little when running as
// root or on read-only mounts).
bool probe_writable(const fs::path& dir, std::string& error) {
  fs::path temp;
  int fd = create_temp(dir, "probe", temp);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  ::close(fd);
  ::unlink(temp.c_str());
  return true;
}

size_t capacity_from_env() {
  const char* value = std::getenv("PODSIM_CACHE_CAPACITY");
  if (value == nullptr || *value == '\0') return kDefaultCapacity;
  std::string_view text(value);
  size_t capacity = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), capacity);
  if (ec != std::errc() || end != text.data() + text.size())
    fail(
        "PODSIM_CACHE_CAPACITY={}: expected a number of compiled graphs to keep in memory (default "
        "{})",
        text, kDefaultCapacity);
  return capacity;
}

void warn(const std::string& message) {
  std::fprintf(stderr, "podsim: warning: %s\n", message.c_str());
}

}  // namespace

struct CompileCache::State {
  using Entry = std::pair<Hash128, std::shared_ptr<Executable>>;

  mutable std::mutex mutex;
  size_t capacity = kDefaultCapacity;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<Hash128, std::list<Entry>::iterator, Hash128Hasher> index;
  fs::path directory;  // empty: memory only
  bool readonly = false;
  std::set<std::string> reported_files;  // corrupted entries already warned about

  void evict_locked() {
    while (lru.size() > capacity) {
      index.erase(lru.back().first);
      lru.pop_back();
    }
  }

  // Returns the entry now cached under key (an earlier one wins a race between two
  // threads loading the same entry).
  std::shared_ptr<Executable> insert_locked(const Hash128& key,
                                            std::shared_ptr<Executable> executable, bool replace) {
    auto it = index.find(key);
    if (it != index.end()) {
      lru.splice(lru.begin(), lru, it->second);
      if (replace) it->second->second = std::move(executable);
      return it->second->second;
    }
    lru.emplace_front(key, executable);
    index.emplace(key, lru.begin());
    evict_locked();
    return executable;
  }

  void report_corrupted(const fs::path& path, const std::string& problem) {
    debug::counter_add("PersistentCacheCorrupted");
    std::lock_guard lock(mutex);
    if (reported_files.insert(path.string()).second)
      warn(fmt::format("compile cache entry {} is corrupted ({}); recompiling", path.string(),
                       problem));
  }

  void turn_off_disk(const std::string& message) {
    warn(message + "; the compile cache stays in memory only");
    std::lock_guard lock(mutex);
    directory.clear();
  }
};

namespace {

// The graph, the target, and the custom-call definitions a compile inlines (where any
// were made).
Hash128 cache_key(const Hash128& graph_hash, const Client& client) {
  Hasher h;
  h.add(graph_hash).add(client.target());
  if (const std::string definitions = passes::custom_call_definitions_key(); !definitions.empty())
    h.add(definitions);
  return h.finish();
}

}  // namespace

CompileCache::CompileCache() : state_(std::make_unique<State>()) {
  state_->capacity = capacity_from_env();
  if (const char* dir = std::getenv("PODSIM_CACHE_DIR"); dir != nullptr && *dir != '\0')
    set_persistent(dir, false);
}

CompileCache::~CompileCache() = default;

CompileCache& CompileCache::global() {
  // Never destroyed: executables may be released by other static objects at exit.
  static CompileCache* instance = new CompileCache();
  return *instance;
}

std::unique_ptr<CompileCache> CompileCache::create() {
  return std::unique_ptr<CompileCache>(new CompileCache());
}

std::shared_ptr<Executable> CompileCache::lookup(const Hash128& graph_hash, Client& client) {
  Hash128 key = cache_key(graph_hash, client);
  fs::path directory;
  {
    std::lock_guard lock(state_->mutex);
    auto it = state_->index.find(key);
    if (it != state_->index.end()) {
      state_->lru.splice(state_->lru.begin(), state_->lru, it->second);
      return it->second->second;
    }
    directory = state_->directory;
  }
  if (directory.empty()) return nullptr;

  // Disk reads and deserialization run without the lock.
  fs::path path = directory / key.hex();
  std::string content, error;
  switch (read_file(path, content, error)) {
    case ReadResult::kMissing:
      return nullptr;
    case ReadResult::kError:
      state_->report_corrupted(path, "cannot be read: " + error);
      return nullptr;
    case ReadResult::kOk:
      break;
  }
  std::string_view payload;
  std::string problem;
  if (!decode_entry(content, client.target(), payload, problem)) {
    state_->report_corrupted(path, problem);
    return nullptr;
  }
  std::shared_ptr<Executable> executable;
  try {
    executable = client.deserialize(payload);
  } catch (const std::exception& e) {
    state_->report_corrupted(path, std::string("cannot be loaded: ") + e.what());
    return nullptr;
  }
  if (executable == nullptr) {
    state_->report_corrupted(path, "cannot be loaded");
    return nullptr;
  }
  debug::counter_add("PersistentCacheHit");
  std::lock_guard lock(state_->mutex);
  return state_->insert_locked(key, std::move(executable), /*replace=*/false);
}

void CompileCache::insert(const Hash128& graph_hash, Client& client,
                          std::shared_ptr<Executable> executable) {
  if (executable == nullptr) fail("compile cache: cannot insert a null executable");
  std::string target = client.target();
  Hash128 key = cache_key(graph_hash, client);
  fs::path directory;
  {
    std::lock_guard lock(state_->mutex);
    state_->insert_locked(key, executable, /*replace=*/true);
    if (!state_->readonly) directory = state_->directory;
  }
  if (directory.empty()) return;

  std::string payload;
  try {
    payload = executable->serialize();
  } catch (const std::exception& e) {
    warn(fmt::format("cannot serialize an executable for the compile cache: {}", e.what()));
    return;
  }
  std::string error;
  if (!write_atomically(directory, key.hex(), encode_entry(target, payload), error))
    state_->turn_off_disk(
        fmt::format("cannot write to compile cache directory {}: {}", directory.string(), error));
}

void CompileCache::set_capacity(size_t entries) {
  std::lock_guard lock(state_->mutex);
  state_->capacity = entries;
  state_->evict_locked();
}

size_t CompileCache::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->lru.size();
}

void CompileCache::clear() {
  std::lock_guard lock(state_->mutex);
  state_->lru.clear();
  state_->index.clear();
}

void CompileCache::set_persistent(std::string directory, bool readonly) {
  fs::path dir(directory);
  if (!directory.empty()) {
    std::error_code ec;
    std::string error;
    if (readonly) {
      if (!fs::is_directory(dir, ec)) {
        state_->turn_off_disk(
            fmt::format("read-only compile cache directory {} does not exist", directory));
        return;
      }
    } else if (fs::create_directories(dir, ec); ec) {
      state_->turn_off_disk(
          fmt::format("cannot create compile cache directory {}: {}", directory, ec.message()));
      return;
    } else if (!probe_writable(dir, error)) {
      state_->turn_off_disk(
          fmt::format("cannot write to compile cache directory {}: {}", directory, error));
      return;
    }
  }
  std::lock_guard lock(state_->mutex);
  state_->directory = dir;
  state_->readonly = readonly;
  state_->reported_files.clear();
}

void initialize_cache(const std::string& path, bool readonly) {
  CompileCache::global().set_persistent(path, readonly);
}

}  // namespace podsim::pjrt
