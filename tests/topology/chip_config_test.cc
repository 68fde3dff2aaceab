#include "topology/chip_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"

namespace podsim::topology {
namespace {

std::string error_of(std::string_view toml) {
  try {
    parse_chip_config(toml, "chip.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChipConfig, PresetsAreValidAndMatchPublishedPeaks) {
  // Published peak bf16 TFLOP/s per chip; the presets derive theirs from clock x MXUs.
  const std::pair<const char*, double> published[] = {{"v4", 275}, {"v5e", 197}, {"v5p", 459}, {"v6e", 918}};
  for (const auto& [name, tflops] : published) {
    ChipConfig c = preset(name);
    c.validate();
    EXPECT_NEAR(c.peak_bf16_flops() / 1e12, tflops, tflops * 0.01) << name;
  }
  preset("tiny").validate();
  EXPECT_EQ(preset_names().size(), 5u);
}

TEST(ChipConfig, PublishedMemoryFigures) {
  EXPECT_EQ(preset("v4").hbm_bytes, int64_t{32} << 30);
  EXPECT_EQ(preset("v4").hbm_bandwidth_bytes_per_s, 1200e9);
  EXPECT_EQ(preset("v5e").hbm_bandwidth_bytes_per_s, 819e9);
  EXPECT_EQ(preset("v5p").hbm_bytes, int64_t{95} << 30);
  EXPECT_EQ(preset("v6e").mxu_rows, 256);
  EXPECT_EQ(preset("v4").ici_ports, 6);
  EXPECT_EQ(preset("v5e").ici_ports, 4);
}

TEST(ChipConfig, UnknownPresetListsTheKnownOnes) {
  try {
    preset("v9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v5e"), std::string::npos);
  }
}

TEST(ChipConfig, TomlOverridesAPresetWithUnits) {
  ChipConfig c = parse_chip_config(R"(
base = "v4"
name = "v4-fat"
hbm_bytes = "64 GiB"
hbm_bandwidth_bytes_per_s = "2.4 TB/s"
clock_hz = "1.2 GHz"
host_link_bandwidth_bytes_per_s = "256 Gbps"
mxus_per_core = 8
)", "chip.toml");
  EXPECT_EQ(c.name, "v4-fat");
  EXPECT_EQ(c.hbm_bytes, int64_t{64} << 30);
  EXPECT_DOUBLE_EQ(c.hbm_bandwidth_bytes_per_s, 2.4e12);
  EXPECT_DOUBLE_EQ(c.clock_hz, 1.2e9);
  EXPECT_DOUBLE_EQ(c.host_link_bandwidth_bytes_per_s, 32e9);
  EXPECT_EQ(c.mxus_per_core, 8);
  EXPECT_EQ(c.tensor_cores, 2);  // from the base
}

TEST(ChipConfig, TomlRoundTrips) {
  for (const std::string& name : preset_names()) {
    ChipConfig c = preset(name);
    ChipConfig back = parse_chip_config(to_toml(c), "roundtrip.toml");
    EXPECT_EQ(to_toml(back), to_toml(c)) << name;
    EXPECT_EQ(back.description, c.description);
  }
}

TEST(ChipConfig, TomlEscapesNamesAndDescriptions) {
  ChipConfig c = preset("tiny");
  c.name = "odd \"chip\" \\ x";
  c.description = "line one\nline two\ttabbed";
  ChipConfig back = parse_chip_config(to_toml(c), "escaped.toml");
  EXPECT_EQ(back.name, c.name);
  EXPECT_EQ(back.description, c.description);
}

TEST(ChipConfig, BadFilesGiveClearErrors) {
  EXPECT_NE(error_of("base = \"v4\"\nmxu_rowz = 4\n").find("chip.toml:2:12: unknown key 'mxu_rowz'"), std::string::npos)
      << error_of("base = \"v4\"\nmxu_rowz = 4\n");
  EXPECT_NE(error_of("base = \"v4\"\nmxu_rows = 0\n").find("'mxu_rows' = 0 is outside"), std::string::npos);
  EXPECT_NE(error_of("base = \"v4\"\nmxu_rows = 1.5\n").find("must be an integer"), std::string::npos);
  EXPECT_NE(error_of("base = \"v4\"\nhbm_bytes = \"32 parsecs\"\n").find("not a number with a unit"), std::string::npos);
  EXPECT_NE(error_of("base = \"v4\"\nhbm_bytes = true\n").find("must be a number"), std::string::npos);
  EXPECT_NE(error_of("base = \"v9\"\n").find("unknown chip preset 'v9'"), std::string::npos);
  EXPECT_NE(error_of("clock_hz = 1e9\n").find("missing tensor_cores"), std::string::npos);
  EXPECT_NE(error_of("base = [\n").find("chip.toml:"), std::string::npos);
  // Link figures belong to the pod: a chip file that still sets them says where they go.
  EXPECT_NE(error_of("base = \"v4\"\nici_latency_ns = 500\n")
                .find("'ici_latency_ns' is a figure of the pod's links now: set ici_link_latency_ns"),
            std::string::npos);
}

TEST(ChipConfig, DescribeNamesEveryFieldWithUnits) {
  std::string text = describe(preset("v4"));
  EXPECT_NE(text.find("hbm_bytes"), std::string::npos);
  EXPECT_NE(text.find("32 GiB"), std::string::npos);
  EXPECT_NE(text.find("1.05 GHz"), std::string::npos);
  EXPECT_NE(text.find("1.2 TB/s"), std::string::npos);
  EXPECT_NE(text.find("275.3 TFLOP/s"), std::string::npos);
}

}  // namespace
}  // namespace podsim::topology
