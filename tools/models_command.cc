// podsim models: the timing model's registered models (MXU, VPU, DMA, HBM, interconnect),
// each with what it declares: the configuration fields it reads, with their values for a
// pod or chip, and the statistics it counts (`podsim run --backend sim --stats`).
#include <fmt/core.h>

#include "sim/timing/timed_chip.h"
#include "tools/commands.h"
#include "topology/pod_config.h"

namespace podsim::tools {

Command add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "models", "List the timing model's models: their parameters (with a pod's or chip's "
                "values) and statistics");
  auto target = std::make_shared<std::string>("v5e-8");
  cmd->add_option("pod_or_chip", *target, "A pod or chip (name or TOML file) for the values")
      ->capture_default_str();
  return {cmd, [target] {
            topology::PodConfig pod;
            if (topology::names_a_chip(*target)) {
              pod.chip = topology::chip_config(*target);  // a pod of one: no link figures
              pod.name = pod.chip.name;
            } else {
              pod = topology::pod_config(*target);
            }
            fmt::print("Values for {} (`podsim topology show {}`):\n\n{}", pod.name, *target,
                       sim::timing::format_models(sim::timing::describe_models(pod)));
            return 0;
          }};
}

}  // namespace podsim::tools
