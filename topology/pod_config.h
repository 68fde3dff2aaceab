// Pods as data: a slice of chips joined by ICI links in a 2-D or 3-D torus (or mesh,
// where an axis does not wrap; twisted where the generation offers it), hosts that own
// blocks of chips, and several slices joined by the data-center network (DCN). Declared
// with the same field table as ChipConfig (validation, TOML, `podsim topology show`).
//
// Names follow Cloud TPU's slice names and counting rules: `v4-N` and `v5p-N` count
// TensorCores (two per chip), `v5litepod-N` (alias `v5e-N`) and `v6e-N` count chips.
// Explicit shapes: `GEN:AxB[xC][:twisted][:slices=K]` (e.g. `v5e:4x8`, `v4:4x4x8:twisted`,
// `tiny:1x2`); several slices of a named slice: `v5e-16x4` (four v5e-16 slices over DCN).
// A TOML file gives every field, or `base = "v5e-16"` plus overrides.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/chip_config.h"

namespace podsim::topology {

struct PodConfig {
  std::string name;
  std::string description;  // where the figures come from; assumptions named
  ChipConfig chip;

  // One slice: chips along x, y, z (z = 1 for a 2-D torus).
  int dim_x = 1, dim_y = 1, dim_z = 1;
  // Whether each axis closes into a ring (1) or stays a line (0).
  int wrap_x = 0, wrap_y = 0, wrap_z = 0;
  // Twisted torus: each wrapping axis half as long as the longest axis shifts the
  // coordinates of every longest axis by half their length as it wraps.
  int twisted = 0;
  // Chips of one host, as a block of the slice (the block tiles the slice).
  int host_x = 1, host_y = 1, host_z = 1;
  int slices = 1;  // joined by DCN
  // The most chips a pod may have, all slices together (validate() checks it): past the
  // largest multislice jobs, and far past what one simulation can hold.
  static constexpr int kMaxChips = 65536;

  double ici_link_bandwidth_bytes_per_s = 0;  // per link, per direction
  double ici_link_latency_ns = 0;             // per hop
  int64_t ici_packet_bytes = 0;               // flow-control unit of a link
  int64_t ici_buffer_packets = 0;             // receive buffer per link direction and VC
  // Credits' way back to the sender (0: at once); the presets take the link's latency.
  double ici_credit_latency_ns = 0;
  // 1, or 2 for dateline virtual channels: a packet moves to the second once it has
  // crossed a wrapping axis's wraparound link and back to the first when it turns to the
  // next axis, which breaks the cycle of buffers around a ring (with one, a ring of full
  // buffers deadlocks).
  int ici_virtual_channels = 1;

  double dcn_host_bandwidth_bytes_per_s = 0;  // per host, all its NICs, per direction
  double dcn_latency_ns = 0;                  // NIC to NIC through the switch

  // Stragglers: each chip's TensorCores run at a speed (a fraction of the chip's clock)
  // drawn uniformly from [1 - chip_speed_spread, 1] with chip_speed_seed; slow_chip (a
  // device id, -1 for none) runs at slow_chip_speed. Memories, DMA engines and links keep
  // their speed.
  double chip_speed_spread = 0;
  int chip_speed_seed = 0;
  int slow_chip = -1;
  double slow_chip_speed = 1;
  // Every chip's speed by device id (all 1 unless the fields above say otherwise).
  std::vector<double> chip_speeds() const;

  std::array<int, 3> dims() const { return {dim_x, dim_y, dim_z}; }
  std::array<bool, 3> wraps() const { return {wrap_x != 0, wrap_y != 0, wrap_z != 0}; }
  std::array<int, 3> host_block() const { return {host_x, host_y, host_z}; }
  int chips_per_slice() const { return dim_x * dim_y * dim_z; }
  int chips() const { return chips_per_slice() * slices; }
  int chips_per_host() const { return host_x * host_y * host_z; }
  int hosts() const { return chips() / chips_per_host(); }
  // "4x4x8"; "4x8" for a 2-D slice of a chip with 4 ICI ports.
  std::string shape_string() const;

  // podsim::Error naming every field out of range and every inconsistency (a host block
  // that does not tile the slice, a twist on a shape that cannot have one).
  void validate() const;

  bool operator==(const PodConfig&) const = default;
};

// A pod by name (see above), or else a TOML file path; podsim::Error saying what is
// allowed when a name or shape is not.
PodConfig pod_config(std::string_view name_or_path);
PodConfig parse_pod_config(std::string_view toml_text, std::string_view source_name);
PodConfig load_pod_config(const std::string& path);

// Whether a name or TOML file is a chip (a chip preset, or a file with neither a `chip`
// key nor a pod `base`) rather than a pod.
bool names_a_chip(std::string_view name_or_path);

// Named slices of each generation, smallest to largest (for `podsim topology list`).
std::vector<std::string> pod_preset_names();

// Every field, and the figures derived from the links (for `podsim topology show`).
std::string describe(const PodConfig& pod);

// One field of a pod's table or of its chip's, found by its name there (what the timing
// model's components read by name): its value, the value with its unit ("50 GB/s") and
// its meaning. nullopt when neither table has the name.
struct NamedField {
  double value = 0;
  std::string text;
  std::string_view meaning;
};
std::optional<NamedField> find_field(const PodConfig& pod, std::string_view name);
// The pod as TOML that parse_pod_config() reads back (its chip by name, or inline
// when it is no preset).
std::string to_toml(const PodConfig& pod);

}  // namespace podsim::topology
