// Verifier: structural checks of a module (one entry, operands defined before use, no
// cycles, called computations with the right signatures) and shape inference of every
// instruction against its declared shape.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace podsim::ir {

// Every problem found, each as "FILE:LINE:COLUMN: in computation C, instruction I: what".
std::vector<std::string> check_module(const Module& module, std::string_view filename = "<input>");

// Throws podsim::Error listing the problems check_module() finds.
void verify_module(const Module& module, std::string_view filename = "<input>");

}  // namespace podsim::ir
