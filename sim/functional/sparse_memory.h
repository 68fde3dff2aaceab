// A simulated memory (HBM, VMEM) whose host footprint grows with the bytes a program
// touches, not with its size: a 32 GiB HBM costs a few hundred bytes until written.
// Pages are allocated on first write; reading untouched bytes gives zeros and allocates
// nothing. The page directory has two levels so that it too stays small.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace podsim::sim {

class SparseMemory {
 public:
  static constexpr int64_t kPageBytes = int64_t{1} << 16;
  static constexpr int64_t kPagesPerChunk = 1024;

  SparseMemory() = default;
  explicit SparseMemory(int64_t size_bytes);

  int64_t size() const { return size_; }

  // [address, address + bytes) must lie inside the memory (podsim::Error otherwise;
  // the model checks accesses against their regions first, with a better message).
  void read(int64_t address, void* out, int64_t bytes) const;
  void write(int64_t address, const void* in, int64_t bytes);

  // Statistics: pages holding data, and the host bytes this memory uses (pages plus the
  // page directory).
  int64_t allocated_pages() const { return allocated_pages_; }
  int64_t host_bytes() const;

 private:
  using Page = std::unique_ptr<uint8_t[]>;
  struct Chunk {
    Page pages[kPagesPerChunk];
  };

  const uint8_t* find_page(int64_t page) const;
  uint8_t* page_for_write(int64_t page);
  void check(int64_t address, int64_t bytes, const char* what) const;

  int64_t size_ = 0;
  int64_t allocated_pages_ = 0;
  int64_t allocated_chunks_ = 0;
  std::vector<std::unique_ptr<Chunk>> chunks_;
};

}  // namespace podsim::sim
