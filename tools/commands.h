// Subcommands of the podsim CLI. Each registers itself on the CLI11 app and runs when
// selected; errors a user can cause surface as podsim::Error and exit code 1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace podsim::tools {

// Exit code of `profile diff` and `sweep --baseline` when a figure got worse past the
// threshold (1 is an error).
inline constexpr int kRegressionExitCode = 2;

// A subcommand registered on the app, and what runs it after parsing (returns the exit
// code).
struct Command {
  CLI::App* app;
  std::function<int()> run;
};
// --custom-calls FILE...: every computation of each HLO file that none of its others
// calls defines the custom-call target of its name (passes::define_custom_calls).
void add_custom_calls_option(CLI::App& command, std::vector<std::string>& files);
void define_custom_calls(const std::vector<std::string>& files);

Command add_check_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_topology_command(CLI::App& app);
Command add_asm_command(CLI::App& app);
Command add_disasm_command(CLI::App& app);
Command add_compile_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_devices_command(CLI::App& app);
Command add_models_command(CLI::App& app);
Command add_shard_search_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);

}  // namespace podsim::tools
