// Runs a libFuzzer target without libFuzzer (for compilers without -fsanitize=fuzzer):
// replays every corpus file, then feeds deterministic random mutations of them (byte
// flips, inserts, deletes, splices) for a bounded time. Used for the fuzz smoke runs in
// the default tests; real fuzzing builds with -DPODSIM_FUZZ=ON and clang.
//
//   driver [-max_total_time=SECONDS] [-runs=N] [-seed=N] CORPUS_FILE_OR_DIR...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

void add_file(const std::filesystem::path& p, std::vector<Bytes>& corpus) {
  std::ifstream in(p, std::ios::binary);
  corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes mutate(const std::vector<Bytes>& corpus, std::mt19937_64& rng) {
  Bytes b = corpus[rng() % corpus.size()];
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 5) {
      case 0:  // flip a byte
        if (!b.empty()) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!b.empty()) b[rng() % b.size()] = static_cast<uint8_t>(rng());
        break;
      case 2:  // insert
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(b.empty() ? 0 : rng() % b.size()), static_cast<uint8_t>(rng()));
        break;
      case 3:  // delete a range
        if (!b.empty()) {
          size_t at = rng() % b.size();
          size_t len = std::min<size_t>(b.size() - at, 1 + rng() % 16);
          b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + len));
        }
        break;
      default: {  // splice a range of another input
        const Bytes& o = corpus[rng() % corpus.size()];
        if (o.empty()) break;
        size_t from = rng() % o.size();
        size_t len = std::min<size_t>(o.size() - from, 1 + rng() % 64);
        size_t at = b.empty() ? 0 : rng() % b.size();
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), o.begin() + static_cast<std::ptrdiff_t>(from),
                 o.begin() + static_cast<std::ptrdiff_t>(from + len));
        break;
      }
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  double max_seconds = 5;
  long runs = -1;
  uint64_t seed = 1;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "-max_total_time=", 16) == 0) max_seconds = std::atof(argv[i] + 16);
    else if (std::strncmp(argv[i], "-runs=", 6) == 0) runs = std::atol(argv[i] + 6);
    else if (std::strncmp(argv[i], "-seed=", 6) == 0) seed = std::strtoull(argv[i] + 6, nullptr, 10);
    else if (std::filesystem::is_directory(argv[i])) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) add_file(e.path(), corpus);
    } else if (std::filesystem::is_regular_file(argv[i])) add_file(argv[i], corpus);
    else {
      std::fprintf(stderr, "fuzz driver: no such corpus file or directory: %s\n", argv[i]);
      return 2;
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  for (const Bytes& b : corpus) LLVMFuzzerTestOneInput(b.data(), b.size());

  std::mt19937_64 rng(seed);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  long executed = 0;
  while ((runs < 0 || executed < runs) && std::chrono::steady_clock::now() < deadline) {
    Bytes b = mutate(corpus, rng);
    LLVMFuzzerTestOneInput(b.data(), b.size());
    ++executed;
  }
  std::printf("fuzz driver: %zu corpus inputs and %ld mutations ran without a crash\n", corpus.size(), executed);
  return 0;
}
