#include "compiler/ir/opcode.h"

#include <array>
#include <unordered_map>

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

bool is_elementwise(Opcode op) { return op >= Opcode::kAdd && op <= Opcode::kSelect; }

bool is_collective(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kAllReduceStart:
    case Opcode::kAllGatherStart:
    case Opcode::kCollectivePermuteStart:
      return true;
    default:
      return false;
  }
}

Opcode collective_kind(Opcode op) {
  switch (op) {
    case Opcode::kAllReduceStart: return Opcode::kAllReduce;
    case Opcode::kAllGatherStart: return Opcode::kAllGather;
    case Opcode::kCollectivePermuteStart: return Opcode::kCollectivePermute;
    default: return op;
  }
}

bool is_async_done(Opcode op) {
  return op == Opcode::kAllReduceDone || op == Opcode::kAllGatherDone ||
         op == Opcode::kCollectivePermuteDone || op == Opcode::kAsyncDone;
}

}  // namespace podsim::ir
