#include "runtime/pjrt/compile_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "runtime/pjrt/hash.h"
#include "runtime/debug/metrics.h"
#include "tests/runtime/scoped_env.h"

namespace podsim::pjrt {
namespace {

namespace fs = std::filesystem;

// An executable that is just its serialized program text.
class FakeExecutable final : public Executable {
 public:
  explicit FakeExecutable(std::string program) : program_(std::move(program)) {}
  const ir::Module& module() const override {
    static const ir::Module module("fake");
    return module;
  }
  const ExecutableInfo& info() const override { return info_; }
  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>>,
                                               Device&) override {
    return {};
  }
  std::string serialize() const override { return program_; }

 private:
  std::string program_;
  ExecutableInfo info_;
};

class FakeClient final : public Client {
 public:
  explicit FakeClient(std::string target) : target_(std::move(target)) {}
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::span<Device* const> devices() const override { return {}; }
  std::string target() const override { return target_; }
  std::shared_ptr<Executable> compile(const ir::Module&) override { return nullptr; }
  std::shared_ptr<Executable> deserialize(std::string_view serialized) override {
    ++deserialized;
    if (serialized.starts_with("unloadable")) fail("fake client cannot load this program");
    return std::make_shared<FakeExecutable>(std::string(serialized));
  }
  std::shared_ptr<Buffer> transfer_to_device(ir::Literal, Device&) override { return nullptr; }

  std::atomic<int> deserialized{0};

 private:
  std::string target_;
};

using ::podsim::test_env::ScopedEnv;

Hash128 graph(uint64_t n) { return {n * 0x9e3779b97f4a7c15ull, n}; }

std::shared_ptr<Executable> program(std::string text) {
  return std::make_shared<FakeExecutable>(std::move(text));
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("podsim-cache-test-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    debug::clear_metrics();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fresh cache, as a new process would have, with this test's directory.
  std::unique_ptr<CompileCache> fresh(bool persistent = true, bool readonly = false) {
    auto cache = CompileCache::create();
    if (persistent) cache->set_persistent(dir_.string(), readonly);
    return cache;
  }

  // The entry file name: the key combines the graph hash with the client's target (and
  // the custom-call definitions, where any were made: none here).
  fs::path entry_path(const Hash128& g, const Client& client) const {
    return dir_ / Hasher().add(g).add(client.target()).finish().hex();
  }

  // Damages the entry of graph(1) with damage(file) and checks that a fresh cache
  // reports it once, counts it, recompiles and overwrites it on the next insert.
  void expect_detected(const std::function<void(std::string&)>& damage,
                       const std::string& problem) {
    const fs::path path = entry_path(graph(1), client_);
    fresh()->insert(graph(1), client_, program("good program"));
    std::string file = read_all(path);
    damage(file);
    write_all(path, file);

    auto cache = fresh();
    int64_t corrupted_before = debug::counter_value("PersistentCacheCorrupted");
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache->lookup(graph(1), client_), nullptr);
    cache->clear();
    EXPECT_EQ(cache->lookup(graph(1), client_), nullptr);  // detected again, reported once
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "podsim: warning: compile cache entry " + path.string() + " is corrupted (" +
                       problem + "); recompiling\n");
    EXPECT_EQ(debug::counter_value("PersistentCacheCorrupted") - corrupted_before, 2);

    cache->insert(graph(1), client_, program("recompiled"));
    auto again = fresh()->lookup(graph(1), client_);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->serialize(), "recompiled");
  }

  ScopedEnv no_dir_{"PODSIM_CACHE_DIR", std::nullopt};
  ScopedEnv no_capacity_{"PODSIM_CACHE_CAPACITY", std::nullopt};
  fs::path dir_;
  FakeClient client_{"fake/v1"};
};

TEST(Crc64Test, MatchesTheStandardCheckValue) {
  // CRC-64/XZ of "123456789" is the catalogued check value 0x995dc9bbdf1939fa.
  EXPECT_EQ(crc64("123456789"), 0x995dc9bbdf1939faull);
  EXPECT_EQ(crc64(""), 0u);
  EXPECT_NE(crc64("a"), crc64("b"));
}

TEST(Hash128Test, HexIsHiThenLoZeroPadded) {
  Hash128 h{0x0123456789abcdefull, 0x1ull};
  EXPECT_EQ(h.hex(), "0123456789abcdef0000000000000001");
  EXPECT_EQ(Hash128{}.hex(), std::string(32, '0'));
}

TEST_F(CompileCacheTest, MissThenHitInMemory) {
  auto cache = fresh(false);
  EXPECT_EQ(cache->lookup(graph(1), client_), nullptr);
  auto exe = program("p1");
  cache->insert(graph(1), client_, exe);
  EXPECT_EQ(cache->lookup(graph(1), client_), exe);
  EXPECT_EQ(cache->size(), 1u);
  // A memory hit counts nothing here: the lazy layer counts cached compiles.
  EXPECT_EQ(debug::counter_value("PersistentCacheHit"), 0);
}

TEST_F(CompileCacheTest, KeyIncludesTheClientTarget) {
  auto cache = fresh(false);
  FakeClient other("fake/v2");
  cache->insert(graph(1), client_, program("p1"));
  EXPECT_EQ(cache->lookup(graph(1), other), nullptr);
  cache->insert(graph(1), other, program("p2"));
  EXPECT_EQ(cache->lookup(graph(1), client_)->serialize(), "p1");
  EXPECT_EQ(cache->lookup(graph(1), other)->serialize(), "p2");
}

TEST_F(CompileCacheTest, EvictsLeastRecentlyUsed) {
  auto cache = fresh(false);
  cache->set_capacity(3);
  for (uint64_t i = 1; i <= 3; ++i)
    cache->insert(graph(i), client_, program("p" + std::to_string(i)));
  ASSERT_NE(cache->lookup(graph(1), client_), nullptr);  // 1 is now the most recent
  cache->insert(graph(4), client_, program("p4"));       // evicts 2
  EXPECT_EQ(cache->size(), 3u);
  EXPECT_EQ(cache->lookup(graph(2), client_), nullptr);
  EXPECT_NE(cache->lookup(graph(1), client_), nullptr);
  EXPECT_NE(cache->lookup(graph(3), client_), nullptr);
  EXPECT_NE(cache->lookup(graph(4), client_), nullptr);
  // Order now (most recent first): 4 3 1. Shrinking keeps the most recent.
  cache->set_capacity(1);
  EXPECT_EQ(cache->size(), 1u);
  EXPECT_NE(cache->lookup(graph(4), client_), nullptr);
  EXPECT_EQ(cache->lookup(graph(1), client_), nullptr);
  cache->clear();
  EXPECT_EQ(cache->size(), 0u);
}

TEST_F(CompileCacheTest, ReinsertReplacesTheExecutable) {
  auto cache = fresh(false);
  cache->insert(graph(1), client_, program("old"));
  cache->insert(graph(1), client_, program("new"));
  EXPECT_EQ(cache->size(), 1u);
  EXPECT_EQ(cache->lookup(graph(1), client_)->serialize(), "new");
}

TEST_F(CompileCacheTest, CapacityFromEnvironment) {
  {
    ScopedEnv capacity("PODSIM_CACHE_CAPACITY", "2");
    auto cache = fresh(false);
    for (uint64_t i = 1; i <= 5; ++i) cache->insert(graph(i), client_, program("p"));
    EXPECT_EQ(cache->size(), 2u);
  }
  for (const char* bad : {"abc", "-1", "12x"}) {
    ScopedEnv capacity("PODSIM_CACHE_CAPACITY", bad);
    try {
      CompileCache::create();
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("PODSIM_CACHE_CAPACITY"), std::string::npos) << e.what();
    }
  }
}

TEST_F(CompileCacheTest, NullInsertIsAnError) {
  auto cache = fresh(false);
  EXPECT_THROW(cache->insert(graph(1), client_, nullptr), Error);
}

TEST_F(CompileCacheTest, PersistentHitAcrossInstances) {
  fresh()->insert(graph(7), client_, program("program seven"));
  ASSERT_TRUE(fs::exists(entry_path(graph(7), client_)));

  auto cache = fresh();
  auto exe = cache->lookup(graph(7), client_);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->serialize(), "program seven");
  EXPECT_EQ(debug::counter_value("PersistentCacheHit"), 1);
  EXPECT_EQ(cache->size(), 1u);
  // Now in memory: no second load from disk.
  EXPECT_EQ(cache->lookup(graph(7), client_), exe);
  EXPECT_EQ(debug::counter_value("PersistentCacheHit"), 1);
  EXPECT_EQ(client_.deserialized, 1);
  // Another target never sees it.
  FakeClient other("fake/v2");
  EXPECT_EQ(cache->lookup(graph(7), other), nullptr);
}

TEST_F(CompileCacheTest, PersistentCacheFromEnvironment) {
  {
    ScopedEnv dir("PODSIM_CACHE_DIR", dir_.string());
    CompileCache::create()->insert(graph(3), client_, program("from env"));
  }
  EXPECT_TRUE(fs::exists(entry_path(graph(3), client_)));
  ScopedEnv dir("PODSIM_CACHE_DIR", dir_.string());
  auto exe = CompileCache::create()->lookup(graph(3), client_);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->serialize(), "from env");
}

TEST_F(CompileCacheTest, EntryFileLayout) {
  fresh()->insert(graph(1), client_, program("abc"));
  std::string file = read_all(entry_path(graph(1), client_));
  std::string target = client_.target();
  ASSERT_EQ(file.size(), 8 + 4 + 4 + target.size() + 8 + 8 + 3);
  EXPECT_EQ(file.substr(0, 8), "PODSIMCC");
  EXPECT_EQ(static_cast<unsigned char>(file[12]), target.size());  // little-endian length
  EXPECT_EQ(file.substr(16, target.size()), target);
  EXPECT_EQ(static_cast<unsigned char>(file[16 + target.size()]), 3u);  // payload length
  uint64_t checksum = 0;
  for (int i = 0; i < 8; ++i)
    checksum |=
        uint64_t{static_cast<unsigned char>(file[16 + target.size() + 8 + static_cast<size_t>(i)])}
        << (8 * i);
  EXPECT_EQ(checksum, crc64("abc"));
  EXPECT_EQ(file.substr(file.size() - 3), "abc");
}

TEST_F(CompileCacheTest, DetectsChecksumMismatch) {
  expect_detected([](std::string& f) { f.back() ^= 0x20; }, "checksum mismatch");
}

TEST_F(CompileCacheTest, DetectsTruncatedPayload) {
  // "good program" is 12 bytes.
  expect_detected([](std::string& f) { f.resize(f.size() - 5); },
                  "truncated: payload of 12 bytes, 7 present");
}

TEST_F(CompileCacheTest, DetectsTruncatedHeader) {
  expect_detected([](std::string& f) { f.resize(20); }, "truncated header");
}

TEST_F(CompileCacheTest, DetectsBadMagicAndEmptyFile) {
  expect_detected([](std::string& f) { f[0] = 'X'; }, "not a podsim cache entry");
  fs::remove_all(dir_);
  expect_detected([](std::string& f) { f.clear(); }, "truncated header");
}

TEST_F(CompileCacheTest, DetectsFormatVersion) {
  expect_detected([](std::string& f) { f[8] = 9; }, "format version 9, expected 1");
}

TEST_F(CompileCacheTest, DetectsForeignTarget) {
  // A file written for another target, found under this target's name.
  FakeClient other("fake/v2");
  expect_detected(
      [&](std::string& f) {
        fresh()->insert(graph(1), other, program("good program"));
        f = read_all(entry_path(graph(1), other));
      },
      "built for target 'fake/v2', expected 'fake/v1'");
}

TEST_F(CompileCacheTest, UnloadablePayloadIsReported) {
  fresh()->insert(graph(1), client_, program("unloadable program"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(fresh()->lookup(graph(1), client_), nullptr);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot be loaded: fake client cannot load this program"), std::string::npos)
      << err;
  EXPECT_EQ(debug::counter_value("PersistentCacheCorrupted"), 1);
}

TEST_F(CompileCacheTest, ReadonlyNeverWrites) {
  fs::create_directories(dir_);
  auto readonly = fresh(true, true);
  readonly->insert(graph(1), client_, program("p1"));
  EXPECT_TRUE(file_names(dir_).empty());
  EXPECT_NE(readonly->lookup(graph(1), client_), nullptr);  // memory still works

  // Reads what a writer left, and leaves a corrupted entry alone.
  fresh()->insert(graph(2), client_, program("p2"));
  std::string file = read_all(entry_path(graph(2), client_));
  file.back() ^= 1;
  write_all(entry_path(graph(2), client_), file);
  fresh()->insert(graph(3), client_, program("p3"));
  auto reader = fresh(true, true);
  EXPECT_EQ(reader->lookup(graph(3), client_)->serialize(), "p3");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(reader->lookup(graph(2), client_), nullptr);
  ::testing::internal::GetCapturedStderr();
  reader->insert(graph(2), client_, program("p2 again"));
  EXPECT_EQ(read_all(entry_path(graph(2), client_)), file);
  EXPECT_EQ(file_names(dir_).size(), 2u);
}

TEST_F(CompileCacheTest, ReadonlyMissingDirectoryWarnsAndStaysInMemory) {
  ::testing::internal::CaptureStderr();
  auto cache = fresh(true, true);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_));
  cache->insert(graph(1), client_, program("p"));
  EXPECT_NE(cache->lookup(graph(1), client_), nullptr);
}

TEST_F(CompileCacheTest, UnusableDirectoryWarnsOnceAndStaysInMemory) {
  // A directory below a regular file can never be created (whoever runs the test).
  fs::create_directories(dir_);
  write_all(dir_ / "file", "x");
  auto cache = CompileCache::create();
  ::testing::internal::CaptureStderr();
  cache->set_persistent((dir_ / "file" / "cache").string(), false);
  cache->insert(graph(1), client_, program("p"));
  cache->insert(graph(2), client_, program("q"));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("podsim: warning: cannot create compile cache directory"), std::string::npos)
      << err;
  EXPECT_NE(err.find("stays in memory only"), std::string::npos) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos)
      << "more than one warning: " << err;
  EXPECT_EQ(cache->lookup(graph(1), client_)->serialize(), "p");
  EXPECT_EQ(cache->size(), 2u);
}

TEST_F(CompileCacheTest, InitializeCacheTurnsOnTheGlobalCache) {
  FakeClient client("fake/global-test");
  initialize_cache(dir_.string());
  CompileCache::global().insert(graph(11), client, program("global"));
  initialize_cache("");  // off again, so other tests see a memory-only global cache
  CompileCache::global().clear();
  EXPECT_TRUE(fs::exists(entry_path(graph(11), client)));
  EXPECT_EQ(fresh()->lookup(graph(11), client)->serialize(), "global");
}

// Whether path holds a complete, valid entry with one of the given programs.
bool valid_entry(const fs::path& dir, const Hash128& g, Client& client,
                 const std::vector<std::string>& programs) {
  auto cache = CompileCache::create();
  cache->set_persistent(dir.string(), true);
  auto exe = cache->lookup(g, client);
  if (exe == nullptr) return false;
  return std::find(programs.begin(), programs.end(), exe->serialize()) != programs.end();
}

std::vector<std::string> big_programs(int count) {
  std::vector<std::string> programs;
  for (int i = 0; i < count; ++i)
    programs.push_back(std::string(256 * 1024 + i * 997, static_cast<char>('a' + i)));
  return programs;
}

TEST_F(CompileCacheTest, ConcurrentWritersLeaveOnlyCompleteEntries) {
  const std::vector<std::string> programs = big_programs(6);
  fs::create_directories(dir_);
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  // A reader checks, while the writers run, that every file it sees is whole (a
  // damaged one would also count PersistentCacheCorrupted).
  std::thread reader([&] {
    while (!done)
      if (fs::exists(entry_path(graph(1), client_)) &&
          !valid_entry(dir_, graph(1), client_, programs))
        ++bad_reads;
  });
  std::vector<std::thread> writers;
  for (size_t w = 0; w < programs.size(); ++w)
    writers.emplace_back([&, w] {
      auto cache = fresh();
      for (int i = 0; i < 10; ++i) cache->insert(graph(1), client_, program(programs[w]));
    });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad_reads, 0);
  EXPECT_EQ(debug::counter_value("PersistentCacheCorrupted"), 0);
  EXPECT_TRUE(valid_entry(dir_, graph(1), client_, programs));
  EXPECT_EQ(file_names(dir_),
            std::vector<std::string>{entry_path(graph(1), client_).filename().string()});
}

TEST_F(CompileCacheTest, ConcurrentProcessesLeaveOnlyCompleteEntries) {
  const std::vector<std::string> programs = big_programs(3);
  fs::create_directories(dir_);
  std::vector<pid_t> children;
  for (size_t p = 0; p < programs.size(); ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child only writes, then leaves without running the parent's exit handlers.
      int rc = 0;
      try {
        auto cache = fresh();
        for (int i = 0; i < 20; ++i) cache->insert(graph(1), client_, program(programs[p]));
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  int checks = 0;
  bool all_valid = true;
  for (pid_t child : children) {
    int status = 0;
    while (::waitpid(child, &status, WNOHANG) == 0) {
      if (fs::exists(entry_path(graph(1), client_))) {
        all_valid = all_valid && valid_entry(dir_, graph(1), client_, programs);
        ++checks;
      }
      std::this_thread::yield();
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_TRUE(all_valid) << "after " << checks << " checks";
  EXPECT_TRUE(valid_entry(dir_, graph(1), client_, programs));
  EXPECT_EQ(file_names(dir_),
            std::vector<std::string>{entry_path(graph(1), client_).filename().string()});
}

}  // namespace
}  // namespace podsim::pjrt
