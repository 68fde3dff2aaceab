// podsim: one subcommand per user task (see --help).
#include <fmt/core.h>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"podsim: simulated TPU-like pods, an HLO compiler, and a lazy-tensor runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "podsim 0.1.0");

  const podsim::tools::Command commands[] = {
      podsim::tools::add_check_command(app),
      podsim::tools::add_run_command(app),
      podsim::tools::add_topology_command(app),
      podsim::tools::add_asm_command(app),
      podsim::tools::add_disasm_command(app),
      podsim::tools::add_compile_command(app),
      podsim::tools::add_profile_command(app),
      podsim::tools::add_train_command(app),
      podsim::tools::add_devices_command(app),
      podsim::tools::add_models_command(app),
      podsim::tools::add_shard_search_command(app),
      podsim::tools::add_sweep_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const podsim::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
