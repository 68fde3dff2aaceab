// 128-bit structural hashes, for graph hashing and compile-cache keys. Fast enough to
// run on every traced op; not cryptographic.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace podsim::pjrt {

struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const Hash128&) const = default;
  std::string hex() const;  // 32 lowercase hex digits, hi first
};

struct Hash128Hasher {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ull)); }
};

// Incremental hasher: the result depends on every value added and their order.
class Hasher {
 public:
  Hasher& add(uint64_t v) {
    // Two lanes, each a bijection of its previous state for a given v.
    a_ = fmix(a_ + v * 0xa0761d6478bd642full);
    b_ = fmix(((b_ << 31) | (b_ >> 33)) ^ (v * 0xe7037ed1a0b428dbull));
    ++count_;
    return *this;
  }
  Hasher& add(const Hash128& h) { return add(h.hi).add(h.lo); }
  Hasher& add(std::string_view s) {
    add(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      add(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return add(tail);
  }
  Hasher& add(std::span<const int64_t> values) {
    add(values.size());
    for (int64_t v : values) add(static_cast<uint64_t>(v));
    return *this;
  }
  Hash128 finish() const { return {fmix(a_ ^ count_), fmix(b_ + a_ + count_)}; }

 private:
  // MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
  static uint64_t fmix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
  }
  uint64_t a_ = 0x243f6a8885a308d3ull;
  uint64_t b_ = 0x13198a2e03707344ull;
  uint64_t count_ = 0;
};

// CRC-64/XZ (ECMA-182 polynomial, reflected, as xz and Go's crc64.ECMA): the checksum
// of files the runtime writes, such as persistent compile-cache entries.
uint64_t crc64(std::string_view data);

}  // namespace podsim::pjrt
