// Fuzz target for the assembler's text (`podsim asm`, hand-written kernels): what
// assemble() accepts must disassemble to text that assembles to the same executable.
// See text_round_trip.h for the property.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "isa/isa.h"
#include "tests/fuzz/text_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  podsim::fuzz::check_text_round_trip(
      data, size, [](std::string_view text) { return podsim::isa::assemble(text, "fuzz.s"); },
      podsim::isa::disassemble);
  return 0;
}
