// Fuzz target for a TOML configuration file of topology/, built once per kind of config
// (tests/fuzz/CMakeLists.txt, podsim_add_config_toml_fuzz_target): the build names the
// kind's header and parser (topology/chip_config.h, parse_chip_config); the writer is the
// kind's to_toml() overload. See text_round_trip.h for the property.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/text_round_trip.h"

#if !defined(PODSIM_FUZZ_CONFIG_HEADER) || !defined(PODSIM_FUZZ_PARSE_CONFIG)
#error "built by podsim_add_config_toml_fuzz_target() only"
#endif
#include PODSIM_FUZZ_CONFIG_HEADER

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  podsim::fuzz::check_text_round_trip(
      data, size,
      [](std::string_view text) {
        return podsim::topology::PODSIM_FUZZ_PARSE_CONFIG(text, "fuzz.toml");
      },
      [](const auto& config) { return podsim::topology::to_toml(config); });
  return 0;
}
