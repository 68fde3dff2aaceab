#include "sim/functional/sparse_memory.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace podsim::sim {
namespace {

bool all_zero(const uint8_t* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

SparseMemory::SparseMemory(int64_t size_bytes) : size_(size_bytes) {
  if (size_bytes < 0) fail("memory size {} is negative", size_bytes);
  int64_t chunk_bytes = kPageBytes * kPagesPerChunk;
  chunks_.resize(static_cast<size_t>((size_bytes + chunk_bytes - 1) / chunk_bytes));
}

void SparseMemory::check(int64_t address, int64_t bytes, const char* what) const {
  if (address < 0 || bytes < 0 || address > size_ || bytes > size_ - address)
    fail("memory {} of {} bytes at {} is outside the memory of {} bytes", what, bytes, address,
         size_);
}

const uint8_t* SparseMemory::find_page(int64_t page) const {
  const std::unique_ptr<Chunk>& chunk = chunks_[static_cast<size_t>(page / kPagesPerChunk)];
  if (!chunk) return nullptr;
  return chunk->pages[page % kPagesPerChunk].get();
}

uint8_t* SparseMemory::page_for_write(int64_t page) {
  std::unique_ptr<Chunk>& chunk = chunks_[static_cast<size_t>(page / kPagesPerChunk)];
  if (!chunk) {
    chunk = std::make_unique<Chunk>();
    ++allocated_chunks_;
  }
  Page& p = chunk->pages[page % kPagesPerChunk];
  if (!p) {
    p = std::make_unique<uint8_t[]>(kPageBytes);  // value-initialised: zeros
    ++allocated_pages_;
  }
  return p.get();
}

void SparseMemory::read(int64_t address, void* out, int64_t bytes) const {
  check(address, bytes, "read");
  auto* dst = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    int64_t page = address / kPageBytes;
    int64_t in_page = address % kPageBytes;
    int64_t n = std::min(bytes, kPageBytes - in_page);
    const uint8_t* p = find_page(page);
    if (p)
      std::memcpy(dst, p + in_page, static_cast<size_t>(n));
    else
      std::memset(dst, 0, static_cast<size_t>(n));
    dst += n;
    address += n;
    bytes -= n;
  }
}

void SparseMemory::write(int64_t address, const void* in, int64_t bytes) {
  check(address, bytes, "write");
  const auto* src = static_cast<const uint8_t*>(in);
  while (bytes > 0) {
    int64_t page = address / kPageBytes;
    int64_t in_page = address % kPageBytes;
    int64_t n = std::min(bytes, kPageBytes - in_page);
    // Zeros written to an untouched page change nothing: keep the page unallocated, so
    // that copying untouched memory around does not grow the host footprint.
    if (find_page(page) || !all_zero(src, n))
      std::memcpy(page_for_write(page) + in_page, src, static_cast<size_t>(n));
    src += n;
    address += n;
    bytes -= n;
  }
}

int64_t SparseMemory::host_bytes() const {
  return allocated_pages_ * kPageBytes + allocated_chunks_ * static_cast<int64_t>(sizeof(Chunk)) +
         static_cast<int64_t>(chunks_.size() * sizeof(chunks_[0]));
}

}  // namespace podsim::sim
