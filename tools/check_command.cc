// podsim check FILE.hlo: parse and verify, print a one-line summary or every error.
#include <fmt/core.h>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "tools/commands.h"

namespace podsim::tools {

Command add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "Parse and verify an HLO text module");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "HLO text file (XLA's format)")->required()->check(CLI::ExistingFile);
  return {cmd, [file]() {
    auto module = ir::parse_module_file(*file);
    std::vector<std::string> problems = ir::check_module(*module, *file);
    if (!problems.empty()) {
      for (const auto& p : problems) fmt::print(stderr, "{}\n", p);
      fmt::print(stderr, "{}: {} error{}\n", *file, problems.size(), problems.size() == 1 ? "" : "s");
      return 1;
    }
    fmt::print("{}: ok: module '{}', {} computations, {} instructions, {} parameters\n", *file,
               module->name(), module->computations().size(), module->instruction_count(),
               module->entry()->parameter_count());
    return 0;
  }};
}

}  // namespace podsim::tools
