// podsim topology list | show NAME|FILE: the chip presets and configurations.
#include <fmt/core.h>

#include "topology/chip_config.h"
#include "tools/commands.h"

namespace podsim::tools {

Command add_topology_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "Chip configurations: list the presets, show one or a TOML file");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "List the chip presets");
  auto* show = cmd->add_subcommand("show", "Show every field of a preset or a TOML chip file");
  auto target = std::make_shared<std::string>();
  auto as_toml = std::make_shared<bool>(false);
  show->add_option("chip", *target, "Preset name (see `podsim topology list`) or TOML file")->required();
  show->add_flag("--toml", *as_toml, "Print as TOML (a starting point for a file of your own)");
  return {cmd, [list, target, as_toml]() {
            if (list->parsed()) {
              for (const std::string& name : topology::preset_names()) {
                topology::ChipConfig c = topology::preset(name);
                fmt::print("{:<6} {} TensorCore(s) x {} MXU(s) {}x{}, {:.4g} GHz, {:.4g} TFLOP/s bf16, {:.4g} GiB HBM at {:.4g} GB/s\n",
                           name, c.tensor_cores, c.mxus_per_core, c.mxu_rows, c.mxu_cols, c.clock_hz / 1e9,
                           c.peak_bf16_flops() / 1e12, static_cast<double>(c.hbm_bytes) / (1 << 30),
                           c.hbm_bandwidth_bytes_per_s / 1e9);
              }
              return 0;
            }
            topology::ChipConfig c = topology::chip_config(*target);
            fmt::print("{}", *as_toml ? topology::to_toml(c) : topology::describe(c));
            return 0;
          }};
}

}  // namespace podsim::tools
