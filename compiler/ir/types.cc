#include "compiler/ir/types.h"

#include <array>

namespace podsim::ir {
namespace {

struct TypeInfo {
  std::string_view name;
  int bytes;
};

constexpr std::array kTypes = {
#define PODSIM_X(e, s, b) TypeInfo{s, b},
    PODSIM_PRIMITIVE_TYPES(PODSIM_X)
#undef PODSIM_X
};

}  // namespace

std::string_view type_name(PrimitiveType t) { return kTypes[static_cast<size_t>(t)].name; }

std::optional<PrimitiveType> type_from_name(std::string_view name) {
  for (size_t i = 0; i < kTypes.size(); ++i) {
    if (kTypes[i].name == name && static_cast<PrimitiveType>(i) != PrimitiveType::kTuple)
      return static_cast<PrimitiveType>(i);
  }
  return std::nullopt;
}

int type_byte_size(PrimitiveType t) { return kTypes[static_cast<size_t>(t)].bytes; }
int type_bit_width(PrimitiveType t) { return 8 * type_byte_size(t); }

}  // namespace podsim::ir
