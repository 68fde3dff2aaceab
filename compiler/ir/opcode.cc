#include "compiler/ir/opcode.h"

#include <array>

namespace podsim::ir {
namespace {

struct OpcodeInfo {
  std::string_view name;
  int arity;
};

constexpr std::array<OpcodeInfo, kOpcodeCount> kOpcodes = {{
#define PODSIM_OPCODE(e, s, a) {s, a},
#include "compiler/ir/opcodes.def"
#undef PODSIM_OPCODE
}};

}  // namespace

std::string_view opcode_name(Opcode op) { return kOpcodes[static_cast<size_t>(op)].name; }

std::optional<Opcode> opcode_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpcodes.size(); ++i)
    if (kOpcodes[i].name == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

int opcode_arity(Opcode op) { return kOpcodes[static_cast<size_t>(op)].arity; }

bool is_elementwise(Opcode op) {
  return op >= Opcode::kAdd && op <= Opcode::kSelect;
}

bool is_collective(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
      return true;
    default:
      return false;
  }
}

}  // namespace podsim::ir
