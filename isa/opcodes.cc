#include <array>
#include <string_view>

#include "isa/isa.h"

namespace podsim::isa {
namespace {

struct OpInfo {
  std::string_view mnemonic;
  std::string_view signature;
  Unit unit;
};

constexpr std::array<OpInfo, kIsaOpcodeCount> kOps = {{
#define PODSIM_ISA_OP(e, m, sig, u) {m, sig, Unit::u},
#include "isa/opcodes.def"
#undef PODSIM_ISA_OP
}};

struct DTypeInfo {
  std::string_view name;
  int bytes;
};
constexpr DTypeInfo kDTypes[] = {{"f32", 4}, {"bf16", 2}, {"f16", 2}, {"s32", 4}, {"u32", 4}, {"s16", 2}, {"u16", 2},
                                 {"s8", 1},  {"u8", 1},   {"pred", 1}, {"s64", 8}, {"u64", 8}, {"f64", 8}};
static_assert(std::size(kDTypes) == kDTypeCount, "one entry per DType");

}  // namespace

std::string_view mnemonic(Opcode op) { return kOps[static_cast<size_t>(op)].mnemonic; }
std::string_view signature(Opcode op) { return kOps[static_cast<size_t>(op)].signature; }
Unit unit(Opcode op) { return kOps[static_cast<size_t>(op)].unit; }

std::optional<Opcode> opcode_from_mnemonic(std::string_view m) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOps[i].mnemonic == m) return static_cast<Opcode>(i);
  return std::nullopt;
}

std::string_view dtype_name(DType t) { return kDTypes[static_cast<size_t>(t)].name; }
int dtype_bytes(DType t) { return kDTypes[static_cast<size_t>(t)].bytes; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (kDTypes[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

}  // namespace podsim::isa
