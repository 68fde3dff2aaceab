#include "topology/pod_config.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "topology/torus.h"

namespace podsim::topology {
namespace {

std::string error_of(std::string_view name) {
  try {
    pod_config(name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string toml_error_of(std::string_view toml) {
  try {
    parse_pod_config(toml, "pod.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PodConfig, SliceNamesCountAsCloudTpuCountsThem) {
  // v4-N and v5p-N count TensorCores (two per chip); v5litepod-N and v6e-N count chips.
  struct Case {
    const char* name;
    const char* shape;
    int chips;
    bool wraps;
  };
  const Case cases[] = {
      {"v4-8", "2x2x1", 4, false},     {"v4-16", "2x2x2", 8, false},
      {"v4-64", "2x4x4", 32, false},   {"v4-128", "4x4x4", 64, true},
      {"v4-256", "4x4x8", 128, true},  {"v4-8192", "16x16x16", 4096, true},
      {"v5p-8", "2x2x1", 4, false},    {"v5litepod-4", "2x2", 4, false},
      {"v5e-8", "2x4", 8, false},      {"v5litepod-16", "4x4", 16, false},
      {"v6e-256", "16x16", 256, true},
  };
  for (const Case& c : cases) {
    PodConfig p = pod_config(c.name);
    EXPECT_EQ(p.shape_string(), c.shape) << c.name;
    EXPECT_EQ(p.chips(), c.chips) << c.name;
    EXPECT_EQ(p.wrap_x != 0, c.wraps) << c.name;
  }
  EXPECT_EQ(pod_config("v5e-16"), [] {
    PodConfig p = pod_config("v5litepod-16");
    p.name = "v5e-16";
    return p;
  }());
}

TEST(PodConfig, WraparoundFollowsEachGenerationsRule) {
  // v5e/v6e: an axis wraps only when it spans 16 chips.
  PodConfig p = pod_config("v5e-128");
  EXPECT_EQ(p.shape_string(), "8x16");
  EXPECT_EQ(p.wrap_x, 0);
  EXPECT_EQ(p.wrap_y, 1);
  // v4/v5p: only slices of whole 4x4x4 cubes wrap, then on every axis.
  p = pod_config("v4:4x4x8");
  EXPECT_TRUE(p.wrap_x && p.wrap_y && p.wrap_z);
  p = pod_config("v4:2x4x4");
  EXPECT_FALSE(p.wrap_x || p.wrap_y || p.wrap_z);
}

TEST(PodConfig, BadNamesSayWhatIsAllowed) {
  EXPECT_NE(error_of("v4-12").find("sizes: 8, 16, 32"), std::string::npos) << error_of("v4-12");
  EXPECT_NE(error_of("v4-7").find("two per chip"), std::string::npos);
  EXPECT_NE(error_of("v5e-512").find("no v5e slice has 512 chips"), std::string::npos)
      << error_of("v5e-512");
  EXPECT_NE(error_of("v5e:3x4").find("1, 2, 4, 8 or 16"), std::string::npos) << error_of("v5e:3x4");
  EXPECT_NE(error_of("v5e:4x8:twisted").find("offers no twisted torus"), std::string::npos);
  EXPECT_NE(error_of("v4:4x4x4:twisted").find("2A=B=C or 2A=2B=C"), std::string::npos)
      << error_of("v4:4x4x4:twisted");
  EXPECT_NE(error_of("v4:2x2x4:twisted").find("whole 4x4x4 cubes"), std::string::npos)
      << error_of("v4:2x2x4:twisted");
  EXPECT_NE(error_of("v4:32x32x32").find("4096 chips"), std::string::npos)
      << error_of("v4:32x32x32");
  EXPECT_NE(error_of("v4:4x4").find("3-D"), std::string::npos);
  // Axes whose product overflows an int, and more chips than any pod may have.
  EXPECT_NE(error_of("tiny:277777x74244").find("at most 64 chips"), std::string::npos)
      << error_of("tiny:277777x74244");
  EXPECT_NE(error_of("v5e:16x16:slices=512").find("at most 65536 chips"), std::string::npos)
      << error_of("v5e:16x16:slices=512");
  EXPECT_NE(error_of("v5e:4x4:bogus").find("unknown option ':bogus'"), std::string::npos);
  EXPECT_NE(error_of("v9-8").find("no pod name"), std::string::npos);
  EXPECT_NE(error_of("v9:2x2").find("unknown TPU generation 'v9'"), std::string::npos);
}

TEST(PodConfig, MultisliceAndHosts) {
  PodConfig p = pod_config("v5e-16x4");
  EXPECT_EQ(p.slices, 4);
  EXPECT_EQ(p.chips(), 64);
  EXPECT_EQ(p.chips_per_host(), 8);
  EXPECT_EQ(p.hosts(), 8);
  p = pod_config("v5e:4x4:slices=2");
  EXPECT_EQ(p.chips(), 32);
  EXPECT_EQ(pod_config("v4-128").hosts(), 16);  // 4 chips per host
  EXPECT_EQ(pod_config("v4-8").hosts(), 1);
}

TEST(PodConfig, PodFiguresMatchGooglesPublishedOnes) {
  // Bisection and all-reduce bandwidth derive from the links alone; Google's pod tables
  // (reference sheet) give v4 24 TB/s and 1.1 PB/s, v5e 1.6 TB/s and 51.2 TB/s, v6e
  // 3.2 TB/s and 102.4 TB/s.
  struct Case {
    const char* name;
    double bisection;
    double all_reduce;
  };
  for (const Case& c : {Case{"v4-8192", 24e12, 1.1e15}, Case{"v5e-256", 1.6e12, 51.2e12},
                        Case{"v6e-256", 3.2e12, 102.4e12}}) {
    const Torus t(pod_config(c.name));
    EXPECT_NEAR(t.bisection_bandwidth_bytes_per_s(), c.bisection, 0.1 * c.bisection) << c.name;
    EXPECT_NEAR(t.all_reduce_bandwidth_bytes_per_s(), c.all_reduce, 0.1 * c.all_reduce) << c.name;
  }
}

TEST(PodConfig, TomlRoundTripsAndOverrides) {
  for (const char* name : {"v5e-16", "v4:4x4x8:twisted", "tiny:2x2x1", "v6e-16x2"}) {
    PodConfig p = pod_config(name);
    EXPECT_EQ(parse_pod_config(to_toml(p), "again.toml"), p) << name << "\n" << to_toml(p);
  }
  // A chip that is no preset is written inline and read back.
  PodConfig p = pod_config("tiny:1x2");
  p.chip.clock_hz = 2e9;
  EXPECT_NE(to_toml(p).find("[chip]"), std::string::npos);
  EXPECT_EQ(parse_pod_config(to_toml(p), "again.toml"), p);

  p = parse_pod_config("base = \"v5e-16\"\nici_link_latency_ns = \"2 us\"\nslices = 2\n",
                       "pod.toml");
  EXPECT_EQ(p.ici_link_latency_ns, 2000);
  EXPECT_EQ(p.chips(), 32);
  EXPECT_EQ(p.chip.name, "v5e");
}

TEST(PodConfig, TomlErrorsNameTheFileAndKey) {
  EXPECT_NE(toml_error_of("base = \"v5e-16\"\nwrap_x = 2\n")
                .find("pod.toml:2:10: 'wrap_x' must be true or false"),
            std::string::npos)
      << toml_error_of("base = \"v5e-16\"\nwrap_x = 2\n");
  EXPECT_NE(toml_error_of("base = \"v5e-16\"\nlinks = 3\n").find("unknown key 'links'"),
            std::string::npos);
  EXPECT_NE(toml_error_of("base = \"v5e-16\"\nhost_x = 3\n").find("does not tile"),
            std::string::npos);
  EXPECT_NE(toml_error_of("dim_x = 2\n").find("missing dim_y"), std::string::npos);
  EXPECT_NE(toml_error_of("base = \"v5e-16\"\nchip = \"v9\"\n").find("unknown chip preset 'v9'"),
            std::string::npos);
  EXPECT_NE(toml_error_of("base = \"pod.toml\"\n").find("must name a pod"), std::string::npos);
  EXPECT_TRUE(names_a_chip("v4"));
  EXPECT_FALSE(names_a_chip("v4-8"));
}

TEST(PodConfig, ChipSpeedsForStragglers) {
  PodConfig p = pod_config("v5e:4x4");
  EXPECT_EQ(p.chip_speeds(), std::vector<double>(16, 1.0));
  p.chip_speed_spread = 0.2;
  p.chip_speed_seed = 7;
  std::vector<double> s = p.chip_speeds();
  EXPECT_EQ(s, p.chip_speeds());  // deterministic
  for (double v : s) {
    EXPECT_GE(v, 0.8);
    EXPECT_LE(v, 1.0);
  }
  EXPECT_NE(s[0], s[1]);
  p.chip_speed_seed = 8;
  EXPECT_NE(p.chip_speeds(), s);
  p.slow_chip = 5;
  p.slow_chip_speed = 0.5;
  EXPECT_EQ(p.chip_speeds()[5], 0.5);
  EXPECT_EQ(parse_pod_config(to_toml(p), "again.toml"), p);
  // Older files (and executables) without these fields read the defaults.
  PodConfig plain = parse_pod_config("base = \"v5e:4x4\"\n", "plain.toml");
  EXPECT_EQ(plain.slow_chip, -1);
  EXPECT_EQ(plain.chip_speed_spread, 0);
  p.slow_chip = 16;
  try {
    p.validate();
    FAIL() << "slow_chip 16 on 16 chips";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slow_chip 16 is not a chip of the pod"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::topology
