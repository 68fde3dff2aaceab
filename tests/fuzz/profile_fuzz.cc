// Fuzz target for the profile reader (`podsim profile` reads what `--profile` wrote):
// Chrome trace JSON with podsim's otherData. See text_round_trip.h for the property.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/text_round_trip.h"
#include "traces/chrome_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  podsim::fuzz::check_text_round_trip(
      data, size,
      [](std::string_view text) {
        return podsim::traces::parse_chrome_trace(std::string(text), "fuzz.json");
      },
      podsim::traces::chrome_trace_json);
  return 0;
}
