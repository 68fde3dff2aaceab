// Opcodes of the IR, derived from opcodes.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace podsim::ir {

inline constexpr int kVariadic = -1;

// Properties of an opcode, the fourth column of opcodes.def (which says what each means).
enum OpcodeTraits : uint8_t {
  kOpPlain = 0,
  kOpElementwise = 1 << 0,
  kOpCollective = 1 << 1,
  kOpAsyncDone = 1 << 2,
  kOpSideEffect = 1 << 3,
};

enum class Opcode : uint8_t {
#define PODSIM_OPCODE(e, s, a, t) e,
#include "compiler/ir/opcodes.def"
#undef PODSIM_OPCODE
};

inline constexpr int kOpcodeCount = 0
#define PODSIM_OPCODE(e, s, a, t) +1
#include "compiler/ir/opcodes.def"
#undef PODSIM_OPCODE
    ;

std::string_view opcode_name(Opcode op);
std::optional<Opcode> opcode_from_name(std::string_view name);
int opcode_arity(Opcode op);  // operand count or kVariadic

bool is_elementwise(Opcode op);
// The collectives, their async starts included (not the dones: they only wait).
bool is_collective(Opcode op);
// Own side effects of the opcode (a custom call's come from its attribute).
bool has_side_effect(Opcode op);
// The collective an async start begins (all-reduce for all-reduce-start); any other
// opcode is its own kind. Attributes, called computations and groups follow the kind.
Opcode collective_kind(Opcode op);
bool is_async_done(Opcode op);

}  // namespace podsim::ir
