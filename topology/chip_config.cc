#include "topology/chip_config.h"

#include <fmt/format.h>

#include "common/error.h"
#include "topology/chip_fields.h"

namespace podsim::topology {

namespace {

constexpr double kTiB = 1099511627776.0;

const ChipField kFields[] = {
    {"clock_hz", FieldUnit::kHertz, &ChipConfig::clock_hz, 1e6, 1e11, "core clock"},
    {"tensor_cores", FieldUnit::kCount, &ChipConfig::tensor_cores, 1, 64, "TensorCores per chip"},
    {"mxus_per_core", FieldUnit::kCount, &ChipConfig::mxus_per_core, 1, 64,
     "matrix units per TensorCore"},
    {"mxu_rows", FieldUnit::kCount, &ChipConfig::mxu_rows, 1, 4096, "systolic array rows (MACs)"},
    {"mxu_cols", FieldUnit::kCount, &ChipConfig::mxu_cols, 1, 4096,
     "systolic array columns (MACs)"},
    {"vpu_sublanes", FieldUnit::kCount, &ChipConfig::vpu_sublanes, 1, 1024,
     "vector register sublanes"},
    {"vpu_lanes", FieldUnit::kCount, &ChipConfig::vpu_lanes, 1, 4096, "vector register lanes"},
    {"vector_registers", FieldUnit::kCount, &ChipConfig::vector_registers, 1, 1024,
     "vector registers per core"},
    {"vmem_bytes", FieldUnit::kBytes, &ChipConfig::vmem_bytes, 4096, kTiB,
     "vector memory per TensorCore"},
    {"hbm_bytes", FieldUnit::kBytes, &ChipConfig::hbm_bytes, 1 << 20, 64 * kTiB,
     "HBM capacity per chip"},
    {"hbm_channels", FieldUnit::kCount, &ChipConfig::hbm_channels, 1, 1024,
     "independent HBM channels"},
    {"hbm_bandwidth_bytes_per_s", FieldUnit::kBytesPerSecond,
     &ChipConfig::hbm_bandwidth_bytes_per_s, 1e6, 1e15, "HBM bandwidth per chip, all channels"},
    {"hbm_latency_ns", FieldUnit::kNanoseconds, &ChipConfig::hbm_latency_ns, 0, 1e6,
     "HBM access latency"},
    {"dma_engines", FieldUnit::kCount, &ChipConfig::dma_engines, 1, 256,
     "DMA engines per TensorCore"},
    {"ici_ports", FieldUnit::kCount, &ChipConfig::ici_ports, 0, 64,
     "inter-chip interconnect links (their figures are the pod's)"},
    {"host_link_bandwidth_bytes_per_s", FieldUnit::kBytesPerSecond,
     &ChipConfig::host_link_bandwidth_bytes_per_s, 1e6, 1e15, "host <-> chip bandwidth"},
    // Timing-model assumptions (no TPU publishes them); optional.
    {"scalar_latency_cycles", FieldUnit::kCount, &ChipConfig::scalar_latency_cycles, 1, 1e6,
     "scalar ALU / branch latency (assumed)", true},
    {"vmem_latency_cycles", FieldUnit::kCount, &ChipConfig::vmem_latency_cycles, 1, 1e6,
     "VMEM load-to-use latency (assumed)", true},
    {"vector_latency_cycles", FieldUnit::kCount, &ChipConfig::vector_latency_cycles, 1, 1e6,
     "VPU arithmetic latency (assumed)", true},
    {"transcendental_latency_cycles", FieldUnit::kCount, &ChipConfig::transcendental_latency_cycles,
     1, 1e6, "VPU transcendental latency (assumed)", true},
    {"transcendental_issue_cycles", FieldUnit::kCount, &ChipConfig::transcendental_issue_cycles, 1,
     1e6, "VPU cycles a transcendental op occupies (assumed)", true},
    {"cross_lane_latency_cycles", FieldUnit::kCount, &ChipConfig::cross_lane_latency_cycles, 1, 1e6,
     "cross-lane reduce / transpose latency (assumed)", true},
    {"mxu_fill_drain_cycles", FieldUnit::kCount, &ChipConfig::mxu_fill_drain_cycles, 0, 1e6,
     "MXU fill and drain; 0: mxu_rows + mxu_cols (assumed)", true},
    {"mxu_accumulators", FieldUnit::kCount, &ChipConfig::mxu_accumulators, 1, 64,
     "accumulator buffers per MXU, one draining while the next tile computes (2: published "
     "for TPUv1, ISCA 2017; assumed for later TPUs)",
     true},
    {"mxu_pass_overhead_cycles", FieldUnit::kCount, &ChipConfig::mxu_pass_overhead_cycles, 0, 1e6,
     "MXU cycles a pass (mmul) takes beyond its rows: operand pushes, weight switch and result "
     "handling through the vector unit (assumed; v6e's from its measured GEMM efficiency, "
     "sim/timing/README.md)",
     true},
    {"dma_setup_cycles", FieldUnit::kCount, &ChipConfig::dma_setup_cycles, 0, 1e6,
     "DMA descriptor processing before the first burst (assumed)", true},
    {"dma_burst_bytes", FieldUnit::kBytes, &ChipConfig::dma_burst_bytes, 1, 1 << 30,
     "DMA burst and HBM channel interleave (assumed)", true},
    {"hbm_turnaround_cycles", FieldUnit::kCount, &ChipConfig::hbm_turnaround_cycles, 0, 1e6,
     "HBM channel read/write turnaround (assumed)", true},
    {"hbm_refresh_interval_ns", FieldUnit::kNanoseconds, &ChipConfig::hbm_refresh_interval_ns, 0,
     1e9, "HBM refresh interval per channel, tREFI; 0: no refresh (3.9 us: JEDEC DRAM at "
     "normal temperature)", true},
    {"hbm_refresh_ns", FieldUnit::kNanoseconds, &ChipConfig::hbm_refresh_ns, 0, 1e6,
     "HBM channel busy per refresh, tRFC (assumed: JEDEC's all-bank figure for 4 Gb dies)", true},
    {"vmem_dma_bytes_per_cycle", FieldUnit::kBytes, &ChipConfig::vmem_dma_bytes_per_cycle, 0,
     1 << 30, "DMA path into VMEM per cycle; 0: one vector register (assumed)", true},
    {"vmem_ports", FieldUnit::kCount, &ChipConfig::vmem_ports, 1, 255,
     "VMEM accesses per cycle, vector unit and DMA together (assumed)", true},
    {"vmem_banks", FieldUnit::kCount, &ChipConfig::vmem_banks, 0, 4096,
     "VMEM banks; 0: vpu_sublanes (assumed)", true},
    {"vmem_bank_bytes", FieldUnit::kBytes, &ChipConfig::vmem_bank_bytes, 0, 1 << 20,
     "VMEM bank word; 0: vpu_lanes x 4 bytes (assumed)", true},
    {"barrier_cycles", FieldUnit::kCount, &ChipConfig::barrier_cycles, 0, 1e6,
     "barrier release after the last arrival (assumed)", true},
    {"host_link_latency_ns", FieldUnit::kNanoseconds, &ChipConfig::host_link_latency_ns, 0, 1e9,
     "host transfer start to first byte (assumed)", true},
};

}  // namespace

std::span<const ChipField> chip_fields() { return kFields; }

double ChipConfig::peak_bf16_flops() const {
  return 2.0 * clock_hz * tensor_cores * mxus_per_core * static_cast<double>(mxu_rows) * mxu_cols;
}

void ChipConfig::validate() const {
  const std::string problems = field_problems<ChipConfig>(*this, kFields);
  if (!problems.empty())
    fail("chip '{}' is invalid:{}", name.empty() ? "<unnamed>" : name, problems);
}

std::string describe(const ChipConfig& c) {
  std::string out = fmt::format("chip {}\n  {}\n", c.name, c.description);
  out += describe_fields<ChipConfig>(c, kFields);
  out += fmt::format("  {:<34} {:>14}   derived: 2 x clock x cores x MXUs x rows x cols\n",
                     "peak_bf16", fmt::format("{:.4g} TFLOP/s", c.peak_bf16_flops() / 1e12));
  return out;
}

std::string to_toml(const ChipConfig& c) {
  std::string out =
      fmt::format("name = {}\ndescription = {}\n", toml_string(c.name), toml_string(c.description));
  return out + fields_to_toml<ChipConfig>(c, kFields);
}

ChipConfig chip_config(std::string_view name_or_path) {
  for (const std::string& n : preset_names())
    if (n == name_or_path) return preset(n);
  if (name_or_path.find('/') == std::string_view::npos &&
      name_or_path.find('.') == std::string_view::npos)
    return preset(name_or_path);  // not a file name: report the presets
  return load_chip_config(std::string(name_or_path));
}

}  // namespace podsim::topology
