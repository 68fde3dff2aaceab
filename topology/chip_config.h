// Chip configurations: every parameter of a simulated TPU-like chip, as data. The
// simulator and the compiler read these and never hard-code a chip. Named presets
// follow Google's published TPU figures (each preset says which of its figures are
// published and which are assumptions); files in TOML override any field of a preset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::topology {

struct ChipConfig {
  std::string name;
  std::string description;  // where the figures come from; assumptions named

  double clock_hz = 0;
  int tensor_cores = 0;  // per chip

  // Matrix units, per TensorCore.
  int mxus_per_core = 0;
  int mxu_rows = 0;  // systolic array: rows x cols multiply-accumulate cells
  int mxu_cols = 0;

  // Vector unit, per TensorCore: registers of sublanes x lanes 32-bit elements.
  int vpu_sublanes = 0;
  int vpu_lanes = 0;
  int vector_registers = 0;

  int64_t vmem_bytes = 0;  // per TensorCore

  int64_t hbm_bytes = 0;  // per chip
  int hbm_channels = 0;
  double hbm_bandwidth_bytes_per_s = 0;  // per chip, all channels
  double hbm_latency_ns = 0;

  int dma_engines = 0;  // per TensorCore

  // ICI links the chip has; their figures (bandwidth, latency, flow control) are the
  // pod's (topology/pod_config.h), which wires them.
  int ici_ports = 0;

  double host_link_bandwidth_bytes_per_s = 0;  // host <-> chip (PCIe)

  // Microarchitectural figures of the timing model (sim/timing) that no TPU publishes:
  // assumptions, the same in every preset (but mxu_pass_overhead_cycles, set for v6e
  // from its measurements), optional in TOML files (these defaults) and
  // in executables written before they existed. Cycles of the clock unless named; 0
  // where "derived" is written means: derive as said.
  int64_t scalar_latency_cycles = 1;          // scalar ALU, branch, sem.signal
  int64_t vmem_latency_cycles = 2;            // vld/vst/sld/sst load-to-use
  int64_t vector_latency_cycles = 2;          // VPU arithmetic result
  int64_t transcendental_latency_cycles = 8;  // exp, log, sqrt, rsqrt, tanh, logistic, pow, div
  int64_t transcendental_issue_cycles = 4;    // VPU issue cycles those occupy
  int64_t cross_lane_latency_cycles = 4;      // vredl, vreds, vxpose
  int64_t mxu_fill_drain_cycles = 0;          // derived: mxu_rows + mxu_cols
  int64_t mxu_accumulators = 2;               // accumulator buffers per MXU (see chip_config.cc)
  int64_t mxu_pass_overhead_cycles = 0;       // a pass's cycles beyond its rows (see chip_config.cc)
  int64_t dma_setup_cycles = 16;              // descriptor processing before the first burst
  int64_t dma_burst_bytes = 2048;             // DMA traffic unit; HBM channel interleave
  int64_t hbm_turnaround_cycles = 8;          // a channel switching between read and write
  double hbm_refresh_interval_ns = 3900;      // a channel's refreshes start this far apart
  double hbm_refresh_ns = 260;                // a refresh takes the channel this long
  int64_t vmem_dma_bytes_per_cycle = 0;       // derived: one vector register a cycle
  int64_t vmem_ports = 2;                     // VMEM accesses a cycle (vld/vst/sld/sst, DMA)
  int64_t vmem_banks = 0;                     // derived: vpu_sublanes
  int64_t vmem_bank_bytes = 0;                // derived: vpu_lanes * 4
  int64_t barrier_cycles = 8;                 // the last core's arrival to release
  double host_link_latency_ns = 1000;         // a host transfer's start to its first byte

  // Derived figures.
  // Peak dense bf16 multiply-accumulate throughput in FLOP/s (2 FLOPs per MAC).
  double peak_bf16_flops() const;
  double cycle_ns() const { return 1e9 / clock_hz; }

  // Throws podsim::Error naming every field that is out of its valid range.
  void validate() const;

  bool operator==(const ChipConfig&) const = default;
};

// The named presets: v4, v5e, v5p, v6e, tiny.
std::vector<std::string> preset_names();
// A preset by name; podsim::Error listing the names when unknown.
ChipConfig preset(std::string_view name);

// A TOML file: either a complete chip, or `base = "v4"` plus the fields to override.
// Field names are those of ChipConfig; sizes may be written as integers in bytes or as
// strings with a unit ("32 GiB", "16 MB"), bandwidths as bytes/s or with a unit
// ("1200 GB/s"), the clock in Hz or as "1.05 GHz". Unknown keys, wrong types and
// out-of-range values are errors naming the file, the line and the key.
ChipConfig load_chip_config(const std::string& path);
ChipConfig parse_chip_config(std::string_view toml_text, std::string_view source_name);

// A preset name, or else a TOML file path.
ChipConfig chip_config(std::string_view name_or_path);

// Human-readable description of every field (for `podsim topology show`).
std::string describe(const ChipConfig& config);
// The config as TOML that parse_chip_config() reads back.
std::string to_toml(const ChipConfig& config);

}  // namespace podsim::topology
