// podsim asm FILE.s -o FILE.pex: assemble a hand-written (or disassembled) kernel into an
// executable; errors name the line and column.
#include <fmt/core.h>

#include <fstream>
#include <sstream>

#include "common/error.h"
#include "isa/isa.h"
#include "tools/commands.h"

namespace podsim::tools {

Command add_asm_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "asm", "Assemble text (syntax: isa/assembler.cc, or `podsim disasm`) into a .pex");
  auto file = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  cmd->add_option("file", *file, "Assembler text file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", *output, "Executable file to write (.pex)")->required();
  return {cmd, [file, output]() {
            std::ifstream in(*file);
            if (!in) fail("cannot open '{}'", *file);
            std::stringstream text;
            text << in.rdbuf();
            isa::Executable executable = isa::assemble(text.str(), *file);
            isa::write_executable(*output, executable);
            size_t instructions = 0;
            for (const isa::Program& p : executable.programs) instructions += p.instructions.size();
            fmt::print("{}: {} program(s), {} instruction(s) for chip '{}'\n", *output,
                       executable.programs.size(), instructions, executable.chip.name);
            return 0;
          }};
}

}  // namespace podsim::tools
