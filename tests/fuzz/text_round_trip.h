// The property shared by the fuzz targets of podsim's text inputs (chip TOML files,
// profiles, assembler text): any input is either accepted or rejected with a
// podsim::Error; what is accepted is written back by its writer, and the written text
// reads back equal to it and writes the same text again (the written form is a fixed
// point). Anything else thrown, a crash, or a broken round trip aborts, which is how
// libFuzzer and the standalone driver report a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/error.h"

namespace podsim::fuzz {

[[noreturn]] inline void report(const char* what, const std::string& text) {
  std::fprintf(stderr, "fuzz finding: %s\n--- text:\n%s\n---\n", what, text.c_str());
  std::abort();
}

// read: std::string_view -> T (throws podsim::Error on bad input); write: const T& ->
// std::string; T has operator==.
template <class Read, class Write>
void check_text_round_trip(const uint8_t* data, size_t size, Read read, Write write) {
  using Value = std::decay_t<std::invoke_result_t<Read, std::string_view>>;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::optional<Value> value;
  try {
    value.emplace(read(input));
  } catch (const podsim::Error&) {
    return;
  }
  std::string written;
  try {
    written = write(*value);
  } catch (const podsim::Error& e) {
    report(("an accepted input cannot be written back: " + std::string(e.what())).c_str(),
           std::string(input));
  }
  std::optional<Value> again;
  try {
    again.emplace(read(written));
  } catch (const podsim::Error& e) {
    report(("the written form of an accepted input does not read back: " + std::string(e.what()))
               .c_str(),
           written);
  }
  if (!(*again == *value)) report("the written form reads back different", written);
  if (write(*again) != written) report("the written form writes back different text", written);
}

}  // namespace podsim::fuzz
