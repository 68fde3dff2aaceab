// Element types of the IR (XLA's PrimitiveType subset) and their properties.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace podsim::ir {

// X(Enum, spelling, byte size). Order is part of no file format.
#define PODSIM_PRIMITIVE_TYPES(X) \
  X(kPred, "pred", 1)             \
  X(kS8, "s8", 1)                 \
  X(kS16, "s16", 2)               \
  X(kS32, "s32", 4)               \
  X(kS64, "s64", 8)               \
  X(kU8, "u8", 1)                 \
  X(kU16, "u16", 2)               \
  X(kU32, "u32", 4)               \
  X(kU64, "u64", 8)               \
  X(kF16, "f16", 2)               \
  X(kBF16, "bf16", 2)             \
  X(kF32, "f32", 4)               \
  X(kF64, "f64", 8)               \
  X(kTuple, "tuple", 0)

enum class PrimitiveType : uint8_t {
#define PODSIM_X(e, s, b) e,
  PODSIM_PRIMITIVE_TYPES(PODSIM_X)
#undef PODSIM_X
};

std::string_view type_name(PrimitiveType t);
std::optional<PrimitiveType> type_from_name(std::string_view name);
int type_byte_size(PrimitiveType t);  // 0 for tuple
int type_bit_width(PrimitiveType t);  // pred counts as 8 bits of storage

inline bool is_float(PrimitiveType t) {
  return t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF32 ||
         t == PrimitiveType::kF64;
}
inline bool is_signed_int(PrimitiveType t) {
  return t == PrimitiveType::kS8 || t == PrimitiveType::kS16 || t == PrimitiveType::kS32 ||
         t == PrimitiveType::kS64;
}
inline bool is_unsigned_int(PrimitiveType t) {
  return t == PrimitiveType::kU8 || t == PrimitiveType::kU16 || t == PrimitiveType::kU32 ||
         t == PrimitiveType::kU64;
}
inline bool is_integral(PrimitiveType t) { return is_signed_int(t) || is_unsigned_int(t); }
inline bool is_array_type(PrimitiveType t) { return t != PrimitiveType::kTuple; }

}  // namespace podsim::ir
