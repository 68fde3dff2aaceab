// The validator's findings in a structured form, so that validate() and the assembler
// (which maps each part of the executable back to its source line) report the same
// problems in the same words. Internal to isa/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "isa/isa.h"

namespace podsim::isa::detail {

enum class Part {
  kExecutable,
  kChip,
  kPod,
  kRegion,
  kDescriptor,
  kProgram,
  kInstruction,
  kConstant,
  kParameter,
  kOutput
};

struct Issue {
  Part part = Part::kExecutable;
  size_t index = 0;        // of the region, descriptor, program, ...
  size_t instruction = 0;  // Part::kInstruction: the instruction within program `index`
  std::string message;     // what is wrong, without the location
};

// The first problem in the order validate() checks (chip first: later checks rely on
// its figures), or none.
std::optional<Issue> find_issue(const Executable& executable);

// "program 0 (core 1), instruction 5 (vadd): <message>", "region 3 ('x'): <message>", ...
std::string describe(const Executable& executable, const Issue& issue);

// Region names are identifiers so that the text form can refer to them:
// [A-Za-z_][A-Za-z0-9_.-]*
bool is_identifier(std::string_view name);

// Instructions whose Instruction::dtype means something (the assembler requires the
// `.dtype` suffix on these and the disassembler always prints it).
inline bool is_typed(Opcode op) { return unit(op) == Unit::kVector || unit(op) == Unit::kMxu; }

}  // namespace podsim::isa::detail
