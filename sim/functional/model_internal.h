// Helpers shared by the functional model's source files. Internal to sim/functional.
#pragma once

#include <cstdint>
#include <string>

#include "isa/isa.h"

namespace podsim::sim::detail {

// isa::validate() and the model's own load-time checks (functional_model.h);
// podsim::Error on the first problem.
void check_executable(const isa::Executable& executable);

// "vld.bf16 v1, x[s3], s4": the assembler's syntax, for messages.
std::string format_instruction(const isa::Executable& executable, const isa::Instruction& in);

// The bytes of a (validated) binding: dims product x dtype size.
int64_t binding_bytes(const isa::Binding& binding);

std::string describe_region(const isa::Executable& executable, int32_t region);

}  // namespace podsim::sim::detail
