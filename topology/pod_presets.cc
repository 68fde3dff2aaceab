// Pod names: Cloud TPU's slice names and each generation's shape rules. Published
// figures are from Google Cloud's TPU system-architecture pages, the TPU v4 paper and
// the book "How to Scale Your Model" (see ../shared/reference/tpu-pods.md of the
// project's workspace); each preset's description names the figures that are assumed.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <regex>

#include "common/error.h"
#include "topology/pod_config.h"

namespace podsim::topology {
namespace {

using Dims = std::array<int, 3>;

// What a generation offers: how its slices are named and shaped, and its links.
struct Generation {
  std::string_view name;  // as in explicit shapes: "v4:4x4x8"
  std::string_view chip;  // chip preset
  bool three_d;
  int max_chips;            // a full pod
  Dims max_dims;            // sorted, largest slice axes
  int cores_per_name_unit;  // v4-N, v5p-N count TensorCores: 2; others chips: 1
  Dims host_block;
  double link_bytes_per_s;  // per link, per direction
  double link_latency_ns;   // per hop
  double dcn_host_bytes_per_s;
  std::string_view figures;  // provenance of the link figures
};

constexpr double kGB = 1e9;

const Generation kGenerations[] = {
    {"v4",
     "v4",
     true,
     4096,
     {16, 16, 16},
     2,
     {2, 2, 1},
     45 * kGB,
     1000,
     25 * kGB,
     "Published: 4096-chip pod, 3-D torus of 4x4x4 cubes, 4 chips per host, 24 TB/s bisection and "
     "1.1 PB/s "
     "all-reduce per pod. Per link 45 GB/s per direction (the scaling book's figure; it reproduces "
     "both pod "
     "figures, where 2400 Gbps / 6 links = 50 GB/s gives 1.23 PB/s). Assumed: DCN 2 x 100 Gbps per "
     "host, "
     "1 us per ICI hop (the scaling book: 'around 1 us'), packets and buffers, 10 us DCN latency."},
    {"v5p",
     "v5p",
     true,
     8960,
     {16, 20, 28},
     2,
     {2, 2, 1},
     100 * kGB,
     1000,
     25 * kGB,
     "Published: 8960-chip pod (16x20x28), 3-D torus, 4 chips per host, 4800 Gbps ICI per chip "
     "(100 GB/s per "
     "link per direction), DCN 50 Gbps per chip. Assumed: 1 us per ICI hop, packets and buffers, "
     "10 us DCN "
     "latency."},
    {"v5e",
     "v5e",
     false,
     256,
     {1, 16, 16},
     1,
     {2, 4, 1},
     50 * kGB,
     1000,
     25 * kGB,
     "Published: 256-chip pod (16x16), 2-D torus, 8 chips per host, 1600 Gbps ICI per chip (50 "
     "GB/s per link "
     "per direction), 1.6 TB/s bisection, 51.2 TB/s all-reduce, DCN 2 x 100 Gbps NICs per host. "
     "Assumed: 1 us "
     "per ICI hop, packets and buffers, 10 us DCN latency."},
    {"v6e",
     "v6e",
     false,
     256,
     {1, 16, 16},
     1,
     {2, 4, 1},
     100 * kGB,
     1000,
     100 * kGB,
     "Published: 256-chip pod (16x16), 2-D torus, 8 chips per host, 3200 Gbps ICI per chip (100 "
     "GB/s per link "
     "per direction; one page says 3584), 3.2 TB/s bisection, 102.4 TB/s all-reduce, DCN 4 x 200 "
     "Gbps NICs per "
     "host. Assumed: 1 us per ICI hop, packets and buffers, 10 us DCN latency."},
    {"tiny",
     "tiny",
     true,
     64,
     {4, 4, 4},
     1,
     {1, 1, 1},
     10 * kGB,
     500,
     10 * kGB,
     "A small made-up pod of tiny chips for tests: one chip per host, an axis wraps when it spans "
     "3 or more "
     "chips (`:mesh` keeps it open), 10 GB/s links, 500 ns per hop."},
};

const Generation& generation(std::string_view name) {
  for (const Generation& g : kGenerations)
    if (g.name == name) return g;
  std::string known;
  for (const Generation& g : kGenerations)
    known += (known.empty() ? "" : ", ") + std::string(g.name);
  fail("unknown TPU generation '{}' in a pod name (known: {})", name, known);
}

std::string dims_string(const Dims& d, bool three_d) {
  return three_d ? fmt::format("{}x{}x{}", d[0], d[1], d[2]) : fmt::format("{}x{}", d[0], d[1]);
}

// Whether a slice shape exists in the generation; the reason when not.
std::optional<std::string> shape_problem(const Generation& g, const Dims& d) {
  const double chips = double{1} * d[0] * d[1] * d[2];  // any parsed dims: no overflow
  Dims sorted = d;
  std::sort(sorted.begin(), sorted.end());
  if (g.name == "tiny") {
    if (chips > g.max_chips) return fmt::format("tiny pods have at most {} chips", g.max_chips);
    return std::nullopt;
  }
  if (chips > g.max_chips)
    return fmt::format("a {} pod has {} chips; {} has {}", g.name, g.max_chips,
                       dims_string(d, g.three_d), chips);
  if (!g.three_d) {
    for (int a = 0; a < 2; ++a)
      if (d[a] != 1 && d[a] != 2 && d[a] != 4 && d[a] != 8 && d[a] != 16)
        return fmt::format("{} slices have 1, 2, 4, 8 or 16 chips along an axis", g.name);
    return std::nullopt;
  }
  static constexpr Dims kSmall[] = {{1, 2, 2}, {2, 2, 2}, {2, 2, 4}, {2, 4, 4}};
  for (const Dims& s : kSmall)
    if (sorted == s) return std::nullopt;
  for (int a = 0; a < 3; ++a)
    if (sorted[a] % 4 != 0 || sorted[a] > g.max_dims[a])
      return fmt::format(
          "{} slices are 2x2x1, 2x2x2, 2x2x4, 2x4x4, or whole 4x4x4 cubes (every axis a multiple "
          "of 4, sorted axes at "
          "most {}x{}x{})",
          g.name, g.max_dims[0], g.max_dims[1], g.max_dims[2]);
  return std::nullopt;
}

// The generation's wraparound rule.
std::array<int, 3> wraps_for(const Generation& g, const Dims& d, bool mesh) {
  std::array<int, 3> w{};
  for (int a = 0; a < 3; ++a) {
    if (g.name == "tiny")
      w[a] = !mesh && d[a] >= 3;
    else if (g.three_d)
      w[a] = d[0] % 4 == 0 && d[1] % 4 == 0 && d[2] % 4 == 0;  // whole cubes
    else
      w[a] = d[a] == 16;
  }
  return w;
}

PodConfig make_pod(const Generation& g, std::string name, const Dims& d, bool twisted, bool mesh,
                   int slices) {
  if (std::optional<std::string> problem = shape_problem(g, d))
    fail("pod '{}': {}", name, *problem);
  if (twisted && (g.name == "v5e" || g.name == "v6e"))
    fail("pod '{}': {} offers no twisted torus (v4 and v5p do, on AxBxC with 2A=B=C or 2A=2B=C)",
         name, g.name);
  PodConfig p;
  p.name = std::move(name);
  p.chip = preset(g.chip);
  p.description = std::string(g.figures);
  p.dim_x = d[0];
  p.dim_y = d[1];
  p.dim_z = d[2];
  const std::array<int, 3> w = wraps_for(g, d, mesh);
  p.wrap_x = w[0];
  p.wrap_y = w[1];
  p.wrap_z = w[2];
  p.twisted = twisted;
  p.host_x = std::min(g.host_block[0], d[0]);
  p.host_y = std::min(g.host_block[1], d[1]);
  p.host_z = std::min(g.host_block[2], d[2]);
  p.slices = slices;
  p.ici_link_bandwidth_bytes_per_s = g.link_bytes_per_s;
  p.ici_link_latency_ns = g.link_latency_ns;
  p.ici_packet_bytes = 256;
  p.ici_credit_latency_ns = p.ici_link_latency_ns;  // over the reverse link
  p.ici_virtual_channels = 2;
  // Credits for the credit loop (2 x latency x bandwidth: the bytes out, their credits
  // back) twice over, in a power of two of packets: one loop keeps the link busy, the
  // other holds the bursts the next router's arbitration keeps waiting (links shared by
  // several flows: with one loop, 32 MiB all-reduces on v5e:8x4 run 9% slower).
  const double round_trip_bytes = 4e-9 * p.ici_link_latency_ns * p.ici_link_bandwidth_bytes_per_s;
  p.ici_buffer_packets = 16;
  while (static_cast<double>(p.ici_buffer_packets * p.ici_packet_bytes) < round_trip_bytes)
    p.ici_buffer_packets *= 2;
  p.dcn_host_bandwidth_bytes_per_s = g.dcn_host_bytes_per_s;
  p.dcn_latency_ns = 10000;
  if (twisted && (p.wrap_x == 0 || p.wrap_y == 0 || p.wrap_z == 0))
    fail("pod '{}': a twisted torus needs whole 4x4x4 cubes", p.name);
  p.validate();
  return p;
}

// The most cubic shape of `chips` chips the generation allows (its default for a name).
std::optional<Dims> default_shape(const Generation& g, int chips) {
  if (chips > g.max_chips) return std::nullopt;  // (and the search below stays small)
  if (!g.three_d) {
    if (chips == 2) return std::nullopt;  // v5e and v6e slices have 1, 4, 8, ... 256 chips
    for (int x = 1; x <= 16; x *= 2)
      if (chips % x == 0 && chips / x >= x && chips / x <= 2 * x &&
          !shape_problem(g, {x, chips / x, 1}))
        return Dims{x, chips / x, 1};
    return std::nullopt;
  }
  std::optional<Dims> best;
  for (int x = 1; x <= chips; ++x)
    for (int y = x; x * y <= chips; ++y) {
      if (chips % (x * y) != 0) continue;
      const int z = chips / (x * y);
      if (z < y) continue;
      const Dims d{x, y, z};
      if (shape_problem(g, d)) continue;
      if (!best || z < (*best)[2] || (z == (*best)[2] && x > (*best)[0])) best = d;
    }
  if (best && (*best)[0] == 1)
    best = Dims{(*best)[1], (*best)[2], 1};  // 2x2x1, as Cloud TPU names it
  return best;
}

int to_int(std::string_view text, std::string_view what, std::string_view name) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0)
    fail("pod '{}': bad {} '{}'", name, what, text);
  return v;
}

}  // namespace

std::vector<std::string> pod_preset_names() {
  std::vector<std::string> names;
  for (const Generation& g : kGenerations) {
    if (g.name == "tiny") continue;
    const std::string prefix = g.name == "v5e" ? "v5litepod" : std::string(g.name);
    for (int chips = 1; chips <= g.max_chips; chips *= 2)
      if (default_shape(g, chips))
        names.push_back(fmt::format("{}-{}", prefix, chips * g.cores_per_name_unit));
  }
  return names;
}

PodConfig pod_config(std::string_view text) {
  const std::string name(text);
  static const std::regex kNamed(R"(^(v4|v5p|v5litepod|v5e|v6e)-([0-9]+)(?:x([0-9]+))?$)");
  static const std::regex kShaped(
      R"(^([a-z0-9]+):([0-9]+)x([0-9]+)(?:x([0-9]+))?((?::[a-z]+(?:=[0-9]+)?)*)$)");
  std::smatch m;
  if (std::regex_match(name, m, kNamed)) {
    const Generation& g = generation(m[1] == "v5litepod" ? "v5e" : m[1].str());
    const int count = to_int(m[2].str(), "slice size", name);
    const int slices = m[3].matched ? to_int(m[3].str(), "slice count", name) : 1;
    if (count % g.cores_per_name_unit != 0)
      fail("pod '{}': {}-N counts TensorCores, two per chip, so N is even", name, m[1].str());
    const int chips = count / g.cores_per_name_unit;
    std::optional<Dims> d = default_shape(g, chips);
    if (!d) {
      std::vector<std::string> sizes;
      for (int c = 1; c <= g.max_chips; c *= 2)
        if (default_shape(g, c)) sizes.push_back(fmt::format("{}", c * g.cores_per_name_unit));
      fail("pod '{}': no {} slice has {} {}; sizes: {} (or give a shape, e.g. {}:4x4x8)", name,
           m[1].str(), count, g.cores_per_name_unit == 2 ? "TensorCores" : "chips",
           fmt::join(sizes, ", "), g.name);
    }
    return make_pod(g, name, *d, false, false, slices);
  }
  if (std::regex_match(name, m, kShaped)) {
    const Generation& g = generation(m[1].str());
    Dims d{to_int(m[2].str(), "shape", name), to_int(m[3].str(), "shape", name),
           m[4].matched ? to_int(m[4].str(), "shape", name) : 1};
    if (g.three_d != m[4].matched && g.name != "tiny")
      fail("pod '{}': {} slices are {}-D (AxB{})", name, g.name, g.three_d ? 3 : 2,
           g.three_d ? "xC" : "");
    bool twisted = false, mesh = false;
    int slices = 1;
    const std::string options = m[5].str();
    static const std::regex kOption(R"(:([a-z]+)(?:=([0-9]+))?)");
    for (auto it = std::sregex_iterator(options.begin(), options.end(), kOption);
         it != std::sregex_iterator(); ++it) {
      const std::string key = (*it)[1].str();
      if (key == "twisted" && !(*it)[2].matched)
        twisted = true;
      else if (key == "mesh" && !(*it)[2].matched && g.name == "tiny")
        mesh = true;
      else if (key == "slices" && (*it)[2].matched)
        slices = to_int((*it)[2].str(), "slice count", name);
      else
        fail("pod '{}': unknown option ':{}' (options: :twisted, :slices=K, and :mesh for tiny)",
             name, (*it)[0].str().substr(1));
    }
    return make_pod(g, name, d, twisted, mesh, slices);
  }
  if (name.find('/') == std::string::npos && name.find(".toml") == std::string::npos)
    fail(
        "'{}' is no pod name: use a slice name (v4-8 ... v4-8192, v5p-8 ..., v5litepod-1 ... "
        "v5litepod-256 or "
        "v5e-N, v6e-1 ... v6e-256, optionally xK for K slices over DCN: v5e-16x4), an explicit "
        "shape "
        "(v5e:4x8, v4:4x4x8:twisted, tiny:2x2x1, options :twisted :slices=K), or a TOML file",
        name);
  return load_pod_config(name);
}

}  // namespace podsim::topology
