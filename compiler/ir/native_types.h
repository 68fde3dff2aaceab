// Maps element types to the C++ types that hold them, and dispatches generic code over
// element types: visit_type(t, [&]<typename T>() { ... }).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "common/error.h"
#include "compiler/ir/float16.h"
#include "compiler/ir/types.h"

namespace podsim::ir {

template <PrimitiveType T> struct NativeType;
template <> struct NativeType<PrimitiveType::kPred> { using type = bool; };
template <> struct NativeType<PrimitiveType::kS8> { using type = int8_t; };
template <> struct NativeType<PrimitiveType::kS16> { using type = int16_t; };
template <> struct NativeType<PrimitiveType::kS32> { using type = int32_t; };
template <> struct NativeType<PrimitiveType::kS64> { using type = int64_t; };
template <> struct NativeType<PrimitiveType::kU8> { using type = uint8_t; };
template <> struct NativeType<PrimitiveType::kU16> { using type = uint16_t; };
template <> struct NativeType<PrimitiveType::kU32> { using type = uint32_t; };
template <> struct NativeType<PrimitiveType::kU64> { using type = uint64_t; };
template <> struct NativeType<PrimitiveType::kF16> { using type = Half; };
template <> struct NativeType<PrimitiveType::kBF16> { using type = BFloat16; };
template <> struct NativeType<PrimitiveType::kF32> { using type = float; };
template <> struct NativeType<PrimitiveType::kF64> { using type = double; };

template <PrimitiveType T>
using native_t = typename NativeType<T>::type;

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// Computation type for an element type: 16-bit floats compute in float.
template <typename T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <typename T>
inline compute_t<T> widen(T v) {
  if constexpr (is_half_v<T>) return static_cast<float>(v);
  else return v;
}
template <typename T>
inline T narrow(compute_t<T> v) {
  if constexpr (is_half_v<T>) return T(v);
  else return v;
}

// Calls f.template operator()<NativeT>() for the array type t. Tuple is an error.
template <typename F>
decltype(auto) visit_type(PrimitiveType t, F&& f) {
  switch (t) {
#define PODSIM_VISIT(e) \
  case PrimitiveType::e: return std::forward<F>(f).template operator()<native_t<PrimitiveType::e>>();
    PODSIM_VISIT(kPred)
    PODSIM_VISIT(kS8)
    PODSIM_VISIT(kS16)
    PODSIM_VISIT(kS32)
    PODSIM_VISIT(kS64)
    PODSIM_VISIT(kU8)
    PODSIM_VISIT(kU16)
    PODSIM_VISIT(kU32)
    PODSIM_VISIT(kU64)
    PODSIM_VISIT(kF16)
    PODSIM_VISIT(kBF16)
    PODSIM_VISIT(kF32)
    PODSIM_VISIT(kF64)
#undef PODSIM_VISIT
    case PrimitiveType::kTuple:
      break;
  }
  fail("internal: visit_type called on a tuple type");
}

}  // namespace podsim::ir
