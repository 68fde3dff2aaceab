// libFuzzer target for the HLO text parser. Any input may be rejected with a
// podsim::Error; anything else thrown, any crash, and any module whose printed form does
// not parse back (and print the same) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podsim::ir;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Module> module;
  try {
    module = parse_module(text, "fuzz");
  } catch (const podsim::Error&) {
    return 0;
  }
  const std::string printed = print_module(*module);
  try {
    std::unique_ptr<Module> again = parse_module(printed, "printed");
    if (print_module(*again) != printed) {
      std::fprintf(stderr, "printed module prints differently after re-parsing:\n%s\n",
                   printed.c_str());
      std::abort();
    }
  } catch (const podsim::Error& e) {
    std::fprintf(stderr, "printed module does not parse: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  return 0;
}
