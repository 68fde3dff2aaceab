// Named chip presets. Published figures are from Google Cloud's TPU system-architecture
// documentation and the TPU v4 paper (ISCA 2023); everything else is an assumption,
// named as such in each preset's description so that users know what to override.
#include <algorithm>

#include "common/error.h"
#include "topology/chip_config.h"

namespace podsim::topology {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr double kGB = 1e9;

// Assumptions shared by the TPU presets: the VPU register shape and count follow the
// (8 x 128) x 32-bit vregs that Pallas documents; DMA engines, latencies, and HBM
// channel counts are not published.
ChipConfig tpu_common() {
  ChipConfig c;
  c.vpu_sublanes = 8;
  c.vpu_lanes = 128;
  c.vector_registers = 32;
  c.dma_engines = 4;
  c.hbm_latency_ns = 500;
  return c;
}

ChipConfig v4() {
  ChipConfig c = tpu_common();
  c.name = "v4";
  c.description =
      "TPU v4. Published: 2 TensorCores x 4 MXUs of 128x128, 1050 MHz, 275 TFLOP/s bf16, "
      "32 GiB HBM2 at 1200 GB/s, 6 ICI links (3-D torus), 2400 Gbps ICI per chip "
      "(the links' figures are the pod's: `topology show v4-8`). Assumed: 16 MiB VMEM per core, 32 HBM "
      "channels, PCIe Gen3 x16 host link (16 GB/s), latencies, 4 DMA engines per core.";
  c.clock_hz = 1.05e9;
  c.tensor_cores = 2;
  c.mxus_per_core = 4;
  c.mxu_rows = c.mxu_cols = 128;
  c.vmem_bytes = 16 * kMiB;
  c.hbm_bytes = 32 * kGiB;
  c.hbm_channels = 32;
  c.hbm_bandwidth_bytes_per_s = 1200 * kGB;
  c.ici_ports = 6;
  c.host_link_bandwidth_bytes_per_s = 16 * kGB;
  return c;
}

ChipConfig v5e() {
  ChipConfig c = tpu_common();
  c.name = "v5e";
  c.description =
      "TPU v5e. Published: 1 TensorCore x 4 MXUs of 128x128, 197 TFLOP/s bf16, 16 GB HBM2 "
      "at 819 GB/s, 4 ICI links (2-D torus), 1600 Gbps ICI per chip (the links' "
      "figures are the pod's). Derived: 1.5 GHz from the peak. Assumed: 128 MiB VMEM, 16 HBM "
      "channels, PCIe Gen4 x16 host link (32 GB/s), latencies, 4 DMA engines.";
  c.clock_hz = 1.5e9;
  c.tensor_cores = 1;
  c.mxus_per_core = 4;
  c.mxu_rows = c.mxu_cols = 128;
  c.vmem_bytes = 128 * kMiB;
  c.hbm_bytes = 16'000'000'000;
  c.hbm_channels = 16;
  c.hbm_bandwidth_bytes_per_s = 819 * kGB;
  c.ici_ports = 4;
  c.host_link_bandwidth_bytes_per_s = 32 * kGB;
  return c;
}

ChipConfig v5p() {
  ChipConfig c = tpu_common();
  c.name = "v5p";
  c.description =
      "TPU v5p. Published: 2 TensorCores x 4 MXUs of 128x128, 459 TFLOP/s bf16, 95 GiB "
      "HBM at 2765 GB/s, 6 ICI links (3-D torus), 4800 Gbps ICI per chip. Derived: "
      "1.75 GHz from the peak (the links' figures are the pod's). Assumed: 64 MiB VMEM per "
      "core, 48 HBM channels, PCIe Gen4 x16 host link (32 GB/s), latencies, 4 DMA "
      "engines per core.";
  c.clock_hz = 1.75e9;
  c.tensor_cores = 2;
  c.mxus_per_core = 4;
  c.mxu_rows = c.mxu_cols = 128;
  c.vmem_bytes = 64 * kMiB;
  c.hbm_bytes = 95 * kGiB;
  c.hbm_channels = 48;
  c.hbm_bandwidth_bytes_per_s = 2765 * kGB;
  c.ici_ports = 6;
  c.host_link_bandwidth_bytes_per_s = 32 * kGB;
  return c;
}

ChipConfig v6e() {
  ChipConfig c = tpu_common();
  c.name = "v6e";
  c.description =
      "TPU v6e (Trillium). Published: 1 TensorCore, MXUs of 256x256, 918 TFLOP/s bf16, "
      "128 MiB VMEM (JAX's TPU info), 32 GB HBM at 1640 GB/s, 4 ICI links (2-D torus), "
      "3584 Gbps ICI per chip (the links' figures are the pod's). Assumed: 4 MXUs at 1.75 GHz (the published peak; Google "
      "and JAX count 2 MXUs, which at one MAC per cell per cycle would need 3.5 GHz), "
      "32 HBM channels, PCIe Gen4 x16 host link "
      "(32 GB/s), latencies, 4 DMA engines, 36 cycles per MXU pass beyond its rows (from "
      "the measured efficiency of large GEMMs: sim/timing/README.md).";
  c.clock_hz = 1.75e9;
  c.tensor_cores = 1;
  c.mxus_per_core = 4;
  c.mxu_rows = c.mxu_cols = 256;
  c.vmem_bytes = 128 * kMiB;
  c.hbm_bytes = 32'000'000'000;
  c.hbm_channels = 32;
  c.hbm_bandwidth_bytes_per_s = 1640 * kGB;
  c.ici_ports = 4;
  c.host_link_bandwidth_bytes_per_s = 32 * kGB;
  c.mxu_pass_overhead_cycles = 36;
  return c;
}

ChipConfig tiny() {
  ChipConfig c;
  c.name = "tiny";
  c.description =
      "A small made-up chip for fast tests: every unit exists, sizes are small, and tile "
      "sizes (8x8 MXU, 8x8 vector registers) differ from the real chips so that the "
      "compiler's tiling is exercised with sizes that are not multiples of 128.";
  c.clock_hz = 1e9;
  c.tensor_cores = 1;
  c.mxus_per_core = 1;
  c.mxu_rows = c.mxu_cols = 8;
  c.vpu_sublanes = 8;
  c.vpu_lanes = 8;
  c.vector_registers = 16;
  c.vmem_bytes = 1 * kMiB;
  c.hbm_bytes = 256 * kMiB;
  c.hbm_channels = 2;
  c.hbm_bandwidth_bytes_per_s = 64 * kGB;
  c.hbm_latency_ns = 100;
  c.dma_engines = 2;
  c.ici_ports = 4;
  c.host_link_bandwidth_bytes_per_s = 8 * kGB;
  return c;
}

struct Preset {
  std::string_view name;
  ChipConfig (*make)();
};
constexpr Preset kPresets[] = {{"v4", v4}, {"v5e", v5e}, {"v5p", v5p}, {"v6e", v6e}, {"tiny", tiny}};

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

ChipConfig preset(std::string_view name) {
  for (const Preset& p : kPresets)
    if (p.name == name) return p.make();
  std::string known;
  for (const Preset& p : kPresets) known += (known.empty() ? "" : ", ") + std::string(p.name);
  fail("unknown chip preset '{}'; presets: {} (or give a TOML file)", name, known);
}

}  // namespace podsim::topology
