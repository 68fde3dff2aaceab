#include "topology/pod_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "common/error.h"
#include "topology/chip_fields.h"
#include "topology/pod_fields.h"
#include "topology/torus.h"

namespace podsim::topology {
namespace {

const PodField kFields[] = {
    {"dim_x", FieldUnit::kCount, &PodConfig::dim_x, 1, 64, "chips along x"},
    {"dim_y", FieldUnit::kCount, &PodConfig::dim_y, 1, 64, "chips along y"},
    {"dim_z", FieldUnit::kCount, &PodConfig::dim_z, 1, 64, "chips along z (1: a 2-D torus)"},
    {"wrap_x", FieldUnit::kFlag, &PodConfig::wrap_x, 0, 1, "x closes into a ring"},
    {"wrap_y", FieldUnit::kFlag, &PodConfig::wrap_y, 0, 1, "y closes into a ring"},
    {"wrap_z", FieldUnit::kFlag, &PodConfig::wrap_z, 0, 1, "z closes into a ring"},
    {"twisted", FieldUnit::kFlag, &PodConfig::twisted, 0, 1,
     "twisted torus (short axes wrap onto the far half)", true},
    {"host_x", FieldUnit::kCount, &PodConfig::host_x, 1, 64, "a host's block of chips along x"},
    {"host_y", FieldUnit::kCount, &PodConfig::host_y, 1, 64, "a host's block of chips along y"},
    {"host_z", FieldUnit::kCount, &PodConfig::host_z, 1, 64, "a host's block of chips along z"},
    {"slices", FieldUnit::kCount, &PodConfig::slices, 1, 1024, "slices joined by DCN", true},
    {"ici_link_bandwidth_bytes_per_s", FieldUnit::kBytesPerSecond,
     &PodConfig::ici_link_bandwidth_bytes_per_s, 1e6, 1e15,
     "ICI bandwidth per link, per direction"},
    {"ici_link_latency_ns", FieldUnit::kNanoseconds, &PodConfig::ici_link_latency_ns, 0, 1e7,
     "ICI latency per hop (assumed in every preset)"},
    {"ici_packet_bytes", FieldUnit::kBytes, &PodConfig::ici_packet_bytes, 16, 1 << 20,
     "ICI flow-control unit (assumed)"},
    {"ici_buffer_packets", FieldUnit::kCount, &PodConfig::ici_buffer_packets, 1, 1 << 20,
     "receive buffer per link direction and virtual channel, in packets: the credits "
     "(assumed: twice the credit loop at full bandwidth)"},
    {"ici_credit_latency_ns", FieldUnit::kNanoseconds, &PodConfig::ici_credit_latency_ns, 0, 1e7,
     "credits' way back to the sender, 0: at once (assumed: the link's latency)", true},
    {"ici_virtual_channels", FieldUnit::kCount, &PodConfig::ici_virtual_channels, 1, 2,
     "virtual channels per link; 2: dateline channels that keep a wrapping axis free of "
     "deadlock (assumed)",
     true},
    {"dcn_host_bandwidth_bytes_per_s", FieldUnit::kBytesPerSecond,
     &PodConfig::dcn_host_bandwidth_bytes_per_s, 1e6, 1e15,
     "DCN bandwidth per host, all its NICs, per direction"},
    {"dcn_latency_ns", FieldUnit::kNanoseconds, &PodConfig::dcn_latency_ns, 0, 1e9,
     "DCN latency NIC to NIC (assumed)"},
    {"chip_speed_spread", FieldUnit::kFraction, &PodConfig::chip_speed_spread, 0, 0.9,
     "stragglers: chip speeds drawn from [1 - spread, 1]", true},
    {"chip_speed_seed", FieldUnit::kCount, &PodConfig::chip_speed_seed, 0, 2147483647,
     "stragglers: the seed of the chip speeds", true},
    {"slow_chip", FieldUnit::kCount, &PodConfig::slow_chip, -1, 1 << 20,
     "stragglers: a chip (device id) at slow_chip_speed, -1 for none", true},
    {"slow_chip_speed", FieldUnit::kFraction, &PodConfig::slow_chip_speed, 0.01, 1,
     "stragglers: slow_chip's speed (fraction of the clock)", true},
};

}  // namespace

std::span<const PodField> pod_fields() { return kFields; }

std::optional<NamedField> find_field(const PodConfig& pod, std::string_view name) {
  for (const PodField& f : pod_fields())
    if (f.name == name)
      return NamedField{f.get(pod), format_field_value(f.unit, f.get(pod)), f.doc};
  for (const ChipField& f : chip_fields())
    if (f.name == name)
      return NamedField{f.get(pod.chip), format_field_value(f.unit, f.get(pod.chip)), f.doc};
  return std::nullopt;
}

std::vector<double> PodConfig::chip_speeds() const {
  std::vector<double> speeds(static_cast<size_t>(chips()), 1.0);
  if (chip_speed_spread > 0) {
    std::mt19937_64 rng(static_cast<uint64_t>(chip_speed_seed));
    for (double& s : speeds)  // 53 random bits: the same speeds on every platform
      s = 1.0 - chip_speed_spread * (static_cast<double>(rng() >> 11) * 0x1.0p-53);
  }
  if (slow_chip >= 0 && slow_chip < chips()) speeds[static_cast<size_t>(slow_chip)] = slow_chip_speed;
  return speeds;
}

std::string PodConfig::shape_string() const {
  return dim_z == 1 && chip.ici_ports < 6 ? fmt::format("{}x{}", dim_x, dim_y)
                                          : fmt::format("{}x{}x{}", dim_x, dim_y, dim_z);
}

void PodConfig::validate() const {
  std::string problems = field_problems<PodConfig>(*this, kFields);
  // The checks below derive from fields in range (a chip count from any slice count
  // would overflow).
  auto fail_if_any = [&] {
    if (!problems.empty())
      fail("pod '{}' is invalid:{}", name.empty() ? "<unnamed>" : name, problems);
  };
  fail_if_any();
  const std::array<int, 3> d = dims(), h = host_block();
  const std::array<bool, 3> w = wraps();
  static constexpr char kAxis[] = {'x', 'y', 'z'};
  for (int a = 0; a < 3; ++a) {
    if (d[a] >= 1 && h[a] >= 1 && d[a] % h[a] != 0)
      problems += fmt::format("\n  host block {}x{}x{} does not tile the slice {} along {}", host_x,
                              host_y, host_z, shape_string(), kAxis[a]);
    if (w[a] && d[a] == 1) problems += fmt::format("\n  wrap_{} on an axis of one chip", kAxis[a]);
  }
  if (twisted) {
    int longest = std::max({dim_x, dim_y, dim_z});
    bool shape_ok = longest % 2 == 0 && w[0] && w[1] && w[2];
    for (int a = 0; a < 3; ++a) shape_ok = shape_ok && (d[a] == longest || 2 * d[a] == longest);
    shape_ok = shape_ok && (d[0] != longest || d[1] != longest || d[2] != longest);
    if (!shape_ok)
      problems += fmt::format(
          "\n  a twisted torus needs every axis to wrap and each axis as long as the longest or "
          "half as long "
          "(AxBxC with 2A=B=C or 2A=2B=C); {} is not",
          shape_string());
  }
  if (int64_t{chips_per_slice()} * slices > kMaxChips)
    problems += fmt::format("\n  {} slice(s) of {} chips: a pod has at most {} chips", slices,
                            chips_per_slice(), kMaxChips);
  if (slow_chip >= chips())
    problems += fmt::format("\n  slow_chip {} is not a chip of the pod (devices 0..{})", slow_chip,
                            chips() - 1);
  chip.validate();
  fail_if_any();
}

std::string describe(const PodConfig& p) {
  const Torus torus(p);
  std::string out = fmt::format("pod {}\n  {}\n", p.name, p.description);
  std::string wraps;
  for (int a = 0; a < 3; ++a)
    if (p.wraps()[a]) wraps += std::string(wraps.empty() ? "" : ", ") + "xyz"[a];
  out += fmt::format("  {} slice(s) of {} ({} chips each; {}{}), {} chips in all\n", p.slices,
                     p.shape_string(), p.chips_per_slice(),
                     wraps.empty() ? "no wraparound" : "wraps along " + wraps,
                     p.twisted ? ", twisted" : "", p.chips());
  out += fmt::format("  chip {} (`podsim topology show {}` for its fields)\n", p.chip.name,
                     p.chip.name);
  out += describe_fields<PodConfig>(p, kFields);
  auto rate = [](double v) { return format_field_value(FieldUnit::kBytesPerSecond, v); };
  out += "derived from the links:\n";
  out += fmt::format("  {:<34} {:>14}   {} host(s) of {} chip(s)\n", "hosts", p.hosts(), p.hosts(),
                     p.chips_per_host());
  out += fmt::format("  {:<34} {:>14}   one direction, whole pod\n", "ici_links", torus.links());
  out += fmt::format("  {:<34} {:>14}   ICI links x per-link bandwidth, one direction\n",
                     "ici_bandwidth_per_chip",
                     rate(torus.links() * p.ici_link_bandwidth_bytes_per_s / p.chips()));
  out += fmt::format("  {:<34} {:>14}   {} links cross the cheapest cut halving a slice\n",
                     "bisection_bandwidth", rate(torus.bisection_bandwidth_bytes_per_s()),
                     torus.bisection_links());
  out += fmt::format("  {:<34} {:>14}   every chip's outgoing links at once\n",
                     "all_reduce_bandwidth", rate(torus.all_reduce_bandwidth_bytes_per_s()));
  out += fmt::format("  {:<34} {:>14}   longest shortest route in a slice\n", "diameter_hops",
                     torus.diameter());
  if (p.slices > 1)
    out += fmt::format("  {:<34} {:>14}   hosts of a slice x DCN per host\n",
                       "dcn_bandwidth_per_slice",
                       rate(p.dcn_host_bandwidth_bytes_per_s * p.hosts() / p.slices));
  out += fmt::format("  {:<34} {:>14}   the chip's host_link_bandwidth_bytes_per_s\n",
                     "host_link_per_chip", rate(p.chip.host_link_bandwidth_bytes_per_s));
  if (std::string drawing = torus.drawing(); !drawing.empty())
    out += "slice 0 (device ids):\n" + drawing;
  return out;
}

std::string to_toml(const PodConfig& p) {
  std::string out =
      fmt::format("name = {}\ndescription = {}\n", toml_string(p.name), toml_string(p.description));
  bool chip_is_preset = false;
  for (const std::string& n : preset_names())
    chip_is_preset = chip_is_preset || (n == p.chip.name && preset(n) == p.chip);
  if (chip_is_preset) out += fmt::format("chip = {}\n", toml_string(p.chip.name));
  out += fields_to_toml<PodConfig>(p, kFields);
  if (!chip_is_preset) out += "\n[chip]\n" + to_toml(p.chip);
  return out;
}

}  // namespace podsim::topology
