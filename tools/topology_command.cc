// podsim topology list | show NAME|FILE: chip and pod presets and configurations.
#include <fmt/core.h>

#include "tools/commands.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"

namespace podsim::tools {
Command add_topology_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("topology", "Chips and pods: list the presets, show one or a TOML file");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "List the chip presets and the named pod slices");
  auto* show = cmd->add_subcommand(
      "show",
      "Show every field of a chip or a pod (preset, slice name, explicit shape or TOML file)");
  auto target = std::make_shared<std::string>();
  auto as_toml = std::make_shared<bool>(false);
  show->add_option("name", *target,
                   "Chip preset (v4), pod slice (v5e-16, v4-128, v5e-16x4), shape (v5e:4x8, "
                   "v4:4x4x8:twisted) "
                   "or TOML file")
      ->required();
  show->add_flag("--toml", *as_toml, "Print as TOML (a starting point for a file of your own)");
  return {cmd, [list, target, as_toml]() {
            if (list->parsed()) {
              fmt::print("chips:\n");
              for (const std::string& name : topology::preset_names()) {
                topology::ChipConfig c = topology::preset(name);
                fmt::print(
                    "  {:<6} {} TensorCore(s) x {} MXU(s) {}x{}, {:.4g} GHz, {:.4g} TFLOP/s bf16, "
                    "{:.4g} GiB HBM at {:.4g} GB/s\n",
                    name, c.tensor_cores, c.mxus_per_core, c.mxu_rows, c.mxu_cols, c.clock_hz / 1e9,
                    c.peak_bf16_flops() / 1e12, static_cast<double>(c.hbm_bytes) / (1 << 30),
                    c.hbm_bandwidth_bytes_per_s / 1e9);
              }
              fmt::print(
                  "pods (slice names; `topology show NAME` for one; shapes: "
                  "GEN:AxB[xC][:twisted][:slices=K]):\n");
              for (const std::string& name : topology::pod_preset_names()) {
                topology::PodConfig p = topology::pod_config(name);
                fmt::print("  {:<15} {:>5} chips  {:<9} wraps {}{}{}  {} host(s)\n", name,
                           p.chips(), p.shape_string(), p.wrap_x ? "x" : "-", p.wrap_y ? "y" : "-",
                           p.chip.ici_ports >= 6 ? (p.wrap_z ? "z" : "-") : "", p.hosts());
              }
              return 0;
            }
            if (topology::names_a_chip(*target)) {
              topology::ChipConfig c = topology::chip_config(*target);
              fmt::print("{}", *as_toml ? topology::to_toml(c) : topology::describe(c));
            } else {
              topology::PodConfig p = topology::pod_config(*target);
              fmt::print("{}", *as_toml ? topology::to_toml(p) : topology::describe(p));
            }
            return 0;
          }};
}

}  // namespace podsim::tools
