// podsim disasm FILE.pex [-o FILE.s]: an executable as assembler text (isa/assembler.cc
// documents the syntax; `podsim asm` reads it back).
#include <fmt/core.h>

#include <fstream>

#include "common/error.h"
#include "isa/isa.h"
#include "tools/commands.h"

namespace podsim::tools {

Command add_disasm_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("disasm", "Print a compiled executable (.pex) as assembler text");
  auto file = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  cmd->add_option("file", *file, "Executable file (.pex)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", *output, "Write the text to this file instead of standard output");
  return {cmd, [file, output]() {
            std::string text = isa::disassemble(isa::read_executable(*file));
            if (output->empty()) {
              fmt::print("{}", text);
              return 0;
            }
            std::ofstream out(*output, std::ios::trunc);
            out << text;
            out.close();
            if (!out) fail("cannot write '{}'", *output);
            return 0;
          }};
}

}  // namespace podsim::tools
