#include "compiler/ir/opcode.h"

#include <array>
#include <unordered_map>

namespace podsim::ir {
namespace {

struct OpcodeInfo {
  std::string_view name;
  int arity;
  uint8_t traits;
};

constexpr std::array<OpcodeInfo, kOpcodeCount> kOpcodes = {{
#define PODSIM_OPCODE(e, s, a, t) {s, a, static_cast<uint8_t>(t)},
#include "compiler/ir/opcodes.def"
#undef PODSIM_OPCODE
}};

bool has_trait(Opcode op, OpcodeTraits trait) { return (kOpcodes[static_cast<size_t>(op)].traits & trait) != 0; }

}  // namespace

std::string_view opcode_name(Opcode op) { return kOpcodes[static_cast<size_t>(op)].name; }

std::optional<Opcode> opcode_from_name(std::string_view name) {
  // Looked up once per instruction by the parser, so a hash map rather than a scan.
  static const std::unordered_map<std::string_view, Opcode> by_name = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (size_t i = 0; i < kOpcodes.size(); ++i)
      m.emplace(kOpcodes[i].name, static_cast<Opcode>(i));
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

int opcode_arity(Opcode op) { return kOpcodes[static_cast<size_t>(op)].arity; }

bool is_elementwise(Opcode op) { return has_trait(op, kOpElementwise); }
bool is_collective(Opcode op) { return has_trait(op, kOpCollective); }
bool has_side_effect(Opcode op) { return has_trait(op, kOpSideEffect); }
bool is_async_done(Opcode op) { return has_trait(op, kOpAsyncDone); }

Opcode collective_kind(Opcode op) {
  switch (op) {
    case Opcode::kAllReduceStart: return Opcode::kAllReduce;
    case Opcode::kAllGatherStart: return Opcode::kAllGather;
    case Opcode::kCollectivePermuteStart: return Opcode::kCollectivePermute;
    default: return op;
  }
}

}  // namespace podsim::ir
