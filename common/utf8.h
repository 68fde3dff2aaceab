// UTF-8 validity: where text stops being well-formed UTF-8 (overlong forms, surrogates
// and code points past U+10FFFF are not).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace podsim {

// The offset of the first byte that does not start a well-formed sequence, or npos.
inline size_t first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Text is mostly ASCII: skip it eight bytes at a time.
    uint64_t word = 0;
    if (i + 8 <= n) std::memcpy(&word, s + i, 8);
    if (i + 8 <= n && (word & 0x8080808080808080ull) == 0) {
      i += 8;
      continue;
    }
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t min = 0, cp = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, min = 0x10000, cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (!ok || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace podsim
