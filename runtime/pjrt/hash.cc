#include "runtime/pjrt/hash.h"

#include <array>

namespace podsim::pjrt {
namespace {

constexpr uint64_t kCrc64Polynomial = 0xc96c5795d7870f42ull;  // ECMA-182, bit-reversed

constexpr std::array<uint64_t, 256> make_crc64_table() {
  std::array<uint64_t, 256> table{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kCrc64Polynomial : 0);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint64_t, 256> kCrc64Table = make_crc64_table();

}  // namespace

std::string Hash128::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<size_t>(15 - i)] = kDigits[(hi >> (4 * i)) & 0xf];
    out[static_cast<size_t>(31 - i)] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

uint64_t crc64(std::string_view data) {
  uint64_t crc = ~uint64_t{0};
  for (char c : data) crc = kCrc64Table[(crc ^ static_cast<unsigned char>(c)) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace podsim::pjrt
