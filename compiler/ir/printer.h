// Printer for XLA's HLO text format; what it prints, parse_module() reads back to an
// equivalent module.
#pragma once

#include <string>

#include "compiler/ir/module.h"

namespace podsim::ir {

std::string print_module(const Module& module);
std::string print_computation(const Computation& computation);
// One instruction line without indentation: "%name = f32[2]{0} add(%a, %b), ..."
std::string print_instruction(const Instruction& instruction);

}  // namespace podsim::ir
