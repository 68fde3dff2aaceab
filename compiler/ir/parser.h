// Parser for XLA's HLO text format (the op set in opcodes.def). Accepts what XLA dumps
// (operand shapes before operand names or not, optional '%', layouts, metadata,
// shardings, backend_config) and what print_module() writes. Errors are podsim::Error
// with "FILE:LINE:COLUMN: what is wrong".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "compiler/ir/module.h"

namespace podsim::ir {

std::unique_ptr<Module> parse_module(std::string_view text, std::string_view filename = "<input>");
std::unique_ptr<Module> parse_module_file(const std::string& path);

// Parses a shape in text form, e.g. "f32[2,3]{1,0}" or "(f32[], s32[4])".
Shape parse_shape(std::string_view text);

}  // namespace podsim::ir
