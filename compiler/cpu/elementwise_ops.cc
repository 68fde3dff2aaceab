#include "compiler/cpu/elementwise_ops.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/tanh.h"
#include "compiler/cpu/simd.h"
#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {
namespace {

using ir::ComparisonDirection;
using ir::Opcode;
using ir::PrimitiveType;

template <typename In, typename Out, typename F>
PODSIM_CPU_SIMD void unary_loop(const In* __restrict x, Out* __restrict o, int64_t n) {
  const F f{};
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

template <typename In, typename Out, typename F>
PODSIM_CPU_SIMD void binary_loop(const In* __restrict x, const In* __restrict y, Out* __restrict o,
                                 int64_t n) {
  const F f{};
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
}

template <typename T, typename F>
PODSIM_CPU_SIMD void clamp_loop(const T* __restrict lo, const T* __restrict x,
                                const T* __restrict hi, T* __restrict o, int64_t n) {
  const F f{};
  for (int64_t i = 0; i < n; ++i) o[i] = f(lo[i], x[i], hi[i]);
}

template <typename U>
PODSIM_CPU_SIMD void select_loop(const bool* __restrict p, const U* __restrict t,
                                 const U* __restrict f, U* __restrict o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = p[i] ? t[i] : f[i];
}

template <typename In, typename Out, typename F>
class Unary final : public ElementwiseOp {
 public:
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    unary_loop<In, Out, F>(static_cast<const In*>(operands[0]), static_cast<Out*>(out), n);
  }
};

template <typename In, typename Out, typename F>
class Binary final : public ElementwiseOp {
 public:
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    binary_loop<In, Out, F>(static_cast<const In*>(operands[0]),
                            static_cast<const In*>(operands[1]), static_cast<Out*>(out), n);
  }
};

template <typename T, typename F>
class Clamp final : public ElementwiseOp {
 public:
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    clamp_loop<T, F>(static_cast<const T*>(operands[0]), static_cast<const T*>(operands[1]),
                     static_cast<const T*>(operands[2]), static_cast<T*>(out), n);
  }
};

// select moves bytes: one instantiation per element width.
template <typename U>
class Select final : public ElementwiseOp {
 public:
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    select_loop<U>(static_cast<const bool*>(operands[0]), static_cast<const U*>(operands[1]),
                   static_cast<const U*>(operands[2]), static_cast<U*>(out), n);
  }
};

class CopyBytes final : public ElementwiseOp {
 public:
  explicit CopyBytes(size_t width) : width_(width) {}
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    if (n > 0) std::memcpy(out, operands[0], static_cast<size_t>(n) * width_);
  }

 private:
  size_t width_;
};

// Runs the block through the evaluator's implementation of the op: exact semantics
// for everything the typed loops below leave out.
class EvaluatorOp final : public ElementwiseOp {
 public:
  explicit EvaluatorOp(const ir::Instruction& instruction) : instruction_(instruction) {}
  void run(std::span<const void* const> operands, void* out, int64_t n) const override {
    if (n <= 0) return;
    std::unique_ptr<ir::Instruction> block = instruction_.clone(instruction_.name(), {});
    block->mutable_shape() = ir::Shape(instruction_.shape().type(), {n});
    std::vector<ir::Literal> args;
    args.reserve(operands.size());
    std::vector<const ir::Literal*> pointers;
    for (size_t k = 0; k < operands.size(); ++k) {
      args.emplace_back(
          ir::Shape(instruction_.operand(static_cast<int64_t>(k))->shape().type(), {n}));
      std::memcpy(args.back().bytes().data(), operands[k], args.back().bytes().size());
    }
    for (const ir::Literal& a : args) pointers.push_back(&a);
    ir::Literal result = ir::eval::eval_elementwise(*block, pointers);
    std::memcpy(out, result.bytes().data(), result.bytes().size());
  }

 private:
  const ir::Instruction& instruction_;
};

template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

using OpPtr = std::unique_ptr<ElementwiseOp>;

// G: a stateless functor on the compute type; wrapped to widen and round back.
template <typename T, typename G>
OpPtr float_unary(G) {
  struct F {
    T operator()(T x) const { return ir::narrow<T>(G{}(ir::widen(x))); }
  };
  return std::make_unique<Unary<T, T, F>>();
}

template <typename T, typename G>
OpPtr float_binary(G) {
  struct F {
    T operator()(T x, T y) const { return ir::narrow<T>(G{}(ir::widen(x), ir::widen(y))); }
  };
  return std::make_unique<Binary<T, T, F>>();
}

template <typename C>
C float_sign(C x) {
  if (std::isnan(x) || x == 0) return x;
  return std::copysign(C{1}, x);
}

template <typename T>
OpPtr float_op(Opcode opcode) {
  using C = ir::compute_t<T>;
  switch (opcode) {
    case Opcode::kAdd:
      return float_binary<T>([](C x, C y) { return x + y; });
    case Opcode::kSubtract:
      return float_binary<T>([](C x, C y) { return x - y; });
    case Opcode::kMultiply:
      return float_binary<T>([](C x, C y) { return x * y; });
    case Opcode::kDivide:
      return float_binary<T>([](C x, C y) { return x / y; });
    case Opcode::kRemainder:
      return float_binary<T>([](C x, C y) { return std::fmod(x, y); });
    case Opcode::kPower:
      return float_binary<T>([](C x, C y) { return std::pow(x, y); });
    case Opcode::kAtan2:
      return float_binary<T>([](C x, C y) { return std::atan2(x, y); });
    case Opcode::kMaximum:
      return float_binary<T>([](C x, C y) { return ir::eval::float_max(x, y); });
    case Opcode::kMinimum:
      return float_binary<T>([](C x, C y) { return ir::eval::float_min(x, y); });
    case Opcode::kNegate:
      return float_unary<T>([](C x) { return -x; });
    case Opcode::kAbs:
      return float_unary<T>([](C x) { return std::fabs(x); });
    case Opcode::kSign:
      return float_unary<T>([](C x) { return float_sign(x); });
    case Opcode::kExp:
      return float_unary<T>([](C x) { return std::exp(x); });
    case Opcode::kExpm1:
      return float_unary<T>([](C x) { return std::expm1(x); });
    case Opcode::kLog:
      return float_unary<T>([](C x) { return std::log(x); });
    case Opcode::kLog1p:
      return float_unary<T>([](C x) { return std::log1p(x); });
    case Opcode::kSqrt:
      return float_unary<T>([](C x) { return std::sqrt(x); });
    case Opcode::kRsqrt:
      return float_unary<T>([](C x) { return C{1} / std::sqrt(x); });
    case Opcode::kCbrt:
      return float_unary<T>([](C x) { return std::cbrt(x); });
    case Opcode::kTanh:
      return float_unary<T>([](C x) { return tanh_op(x); });
    case Opcode::kLogistic:
      return float_unary<T>([](C x) { return C{1} / (C{1} + std::exp(-x)); });
    case Opcode::kSin:
      return float_unary<T>([](C x) { return std::sin(x); });
    case Opcode::kCos:
      return float_unary<T>([](C x) { return std::cos(x); });
    case Opcode::kTan:
      return float_unary<T>([](C x) { return std::tan(x); });
    case Opcode::kErf:
      return float_unary<T>([](C x) { return std::erf(x); });
    case Opcode::kFloor:
      return float_unary<T>([](C x) { return std::floor(x); });
    case Opcode::kCeil:
      return float_unary<T>([](C x) { return std::ceil(x); });
    case Opcode::kRoundNearestAfz:
      return float_unary<T>([](C x) { return std::round(x); });
    case Opcode::kRoundNearestEven:
      return float_unary<T>([](C x) { return std::nearbyint(x); });
    case Opcode::kIsFinite: {
      struct F {
        bool operator()(T x) const { return std::isfinite(ir::widen(x)); }
      };
      return std::make_unique<Unary<T, bool, F>>();
    }
    default:
      return nullptr;
  }
}

template <typename T, typename G>
OpPtr int_binary(G) {
  struct F {
    T operator()(T x, T y) const { return G{}(x, y); }
  };
  return std::make_unique<Binary<T, T, F>>();
}

template <typename T, typename G>
OpPtr int_unary(G) {
  struct F {
    T operator()(T x) const { return G{}(x); }
  };
  return std::make_unique<Unary<T, T, F>>();
}

// Integer ops whose definitions are plain wrapping arithmetic; division, remainder,
// power and shifts (with XLA's rules for the cases C++ leaves undefined) stay with the
// evaluator.
template <typename T>
OpPtr int_op(Opcode opcode) {
  using U = wrap_t<T>;
  switch (opcode) {
    case Opcode::kAdd:
      return int_binary<T>(
          [](T x, T y) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); });
    case Opcode::kSubtract:
      return int_binary<T>(
          [](T x, T y) { return static_cast<T>(static_cast<U>(x) - static_cast<U>(y)); });
    case Opcode::kMultiply:
      return int_binary<T>(
          [](T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); });
    case Opcode::kMaximum:
      return int_binary<T>([](T x, T y) { return x > y ? x : y; });
    case Opcode::kMinimum:
      return int_binary<T>([](T x, T y) { return x < y ? x : y; });
    case Opcode::kAnd:
      return int_binary<T>([](T x, T y) { return static_cast<T>(x & y); });
    case Opcode::kOr:
      return int_binary<T>([](T x, T y) { return static_cast<T>(x | y); });
    case Opcode::kXor:
      return int_binary<T>([](T x, T y) { return static_cast<T>(x ^ y); });
    case Opcode::kNegate:
      return int_unary<T>([](T x) { return static_cast<T>(U{0} - static_cast<U>(x)); });
    case Opcode::kNot:
      return int_unary<T>([](T x) { return static_cast<T>(~x); });
    case Opcode::kPopcnt:
      return int_unary<T>([](T x) {
        return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(x)));
      });
    case Opcode::kClz:
      return int_unary<T>([](T x) {
        return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(x)));
      });
    case Opcode::kAbs:
      return int_unary<T>([](T x) {
        if constexpr (std::is_signed_v<T>)
          return x < 0 ? static_cast<T>(U{0} - static_cast<U>(x)) : x;
        else
          return x;
      });
    default:
      return nullptr;
  }
}

OpPtr pred_op(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAnd:
    case Opcode::kMinimum:
      return int_binary<bool>([](bool x, bool y) { return x && y; });
    case Opcode::kOr:
    case Opcode::kMaximum:
      return int_binary<bool>([](bool x, bool y) { return x || y; });
    case Opcode::kXor:
      return int_binary<bool>([](bool x, bool y) { return x != y; });
    case Opcode::kNot:
      return int_unary<bool>([](bool x) { return !x; });
    default:
      return nullptr;
  }
}

template <typename T, typename G>
OpPtr compare_with(G) {
  struct F {
    bool operator()(T x, T y) const {
      if constexpr (ir::is_float_v<T>)
        return G{}(ir::widen(x), ir::widen(y));
      else
        return G{}(x, y);
    }
  };
  return std::make_unique<Binary<T, bool, F>>();
}

template <typename T>
OpPtr compare_op(ComparisonDirection direction) {
  switch (direction) {
    case ComparisonDirection::kEq:
      return compare_with<T>([](auto x, auto y) { return x == y; });
    case ComparisonDirection::kNe:
      return compare_with<T>([](auto x, auto y) { return x != y; });
    case ComparisonDirection::kLt:
      return compare_with<T>([](auto x, auto y) { return x < y; });
    case ComparisonDirection::kLe:
      return compare_with<T>([](auto x, auto y) { return x <= y; });
    case ComparisonDirection::kGt:
      return compare_with<T>([](auto x, auto y) { return x > y; });
    case ComparisonDirection::kGe:
      return compare_with<T>([](auto x, auto y) { return x >= y; });
  }
  return nullptr;
}

template <typename T>
OpPtr clamp_op() {
  struct F {
    T operator()(T lo, T x, T hi) const {
      if constexpr (ir::is_float_v<T>) {
        return ir::narrow<T>(
            ir::eval::float_min(ir::eval::float_max(ir::widen(x), ir::widen(lo)), ir::widen(hi)));
      } else {
        T r = x < lo ? lo : x;
        return hi < r ? hi : r;
      }
    }
  };
  return std::make_unique<Clamp<T, F>>();
}

// The conversions whose definition is a single C++ conversion (or one float rounding
// for 16-bit targets); float -> integer saturation and double-rounding-free conversions
// into 16-bit floats stay with the evaluator.
template <typename From, typename To>
OpPtr convert_op() {
  constexpr bool from_float = ir::is_float_v<From>;
  constexpr bool from_narrow = ir::is_half_v<From> || std::is_same_v<From, float>;
  constexpr bool to_int = !ir::is_float_v<To> && !std::is_same_v<To, bool>;
  if constexpr (std::is_same_v<From, To>) {
    return std::make_unique<CopyBytes>(sizeof(From));
  } else if constexpr (std::is_same_v<To, bool>) {
    struct F {
      bool operator()(From v) const {
        if constexpr (from_float)
          return ir::widen(v) != 0;
        else
          return v != 0;
      }
    };
    return std::make_unique<Unary<From, To, F>>();
  } else if constexpr (ir::is_half_v<To>) {
    if constexpr (std::is_same_v<From, bool> || from_narrow) {
      struct F {
        To operator()(From v) const {
          if constexpr (std::is_same_v<From, bool>)
            return To(v ? 1.0f : 0.0f);
          else
            return To(static_cast<float>(v));
        }
      };
      return std::make_unique<Unary<From, To, F>>();
    } else {
      return nullptr;
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    struct F {
      To operator()(From v) const {
        if constexpr (ir::is_half_v<From>)
          return static_cast<To>(static_cast<float>(v));
        else
          return static_cast<To>(v);
      }
    };
    return std::make_unique<Unary<From, To, F>>();
  } else if constexpr (to_int && !from_float) {
    struct F {
      To operator()(From v) const { return static_cast<To>(v); }
    };
    return std::make_unique<Unary<From, To, F>>();
  } else {
    return nullptr;
  }
}

OpPtr select_op(int width) {
  switch (width) {
    case 1:
      return std::make_unique<Select<uint8_t>>();
    case 2:
      return std::make_unique<Select<uint16_t>>();
    case 4:
      return std::make_unique<Select<uint32_t>>();
    case 8:
      return std::make_unique<Select<uint64_t>>();
    default:
      return nullptr;
  }
}

OpPtr typed_op(const ir::Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  for (const ir::Instruction* operand : instruction.operands())
    if (operand == nullptr || !operand->shape().is_array()) return nullptr;
  if (!instruction.shape().is_array() || instruction.operand_count() == 0) return nullptr;
  const PrimitiveType out = instruction.shape().type();
  const PrimitiveType in = instruction.operand(0)->shape().type();
  for (const ir::Instruction* operand : instruction.operands())
    if (operand->shape().type() != in && opcode != Opcode::kSelect) return nullptr;
  switch (opcode) {
    case Opcode::kSelect: {
      if (instruction.operand_count() != 3 || in != PrimitiveType::kPred) return nullptr;
      const PrimitiveType t = instruction.operand(1)->shape().type();
      if (instruction.operand(2)->shape().type() != t || out != t) return nullptr;
      return select_op(ir::type_byte_size(t));
    }
    case Opcode::kCompare:
      if (out != PrimitiveType::kPred ||
          instruction.attrs().comparison_type == ir::ComparisonType::kTotalOrder)
        return nullptr;
      return ir::visit_type(
          in, [&]<typename T>() { return compare_op<T>(instruction.attrs().direction); });
    case Opcode::kConvert:
      return ir::visit_type(in, [&]<typename From>() {
        return ir::visit_type(out, [&]<typename To>() { return convert_op<From, To>(); });
      });
    case Opcode::kBitcastConvert:
      if (ir::type_byte_size(in) != ir::type_byte_size(out) ||
          (out == PrimitiveType::kPred && in != out))
        return nullptr;
      return std::make_unique<CopyBytes>(static_cast<size_t>(ir::type_byte_size(in)));
    case Opcode::kClamp:
      if (out != in) return nullptr;
      return ir::visit_type(in, [&]<typename T>() { return clamp_op<T>(); });
    default:
      break;
  }
  if (opcode == Opcode::kIsFinite) {
    if (out != PrimitiveType::kPred || !ir::is_float(in)) return nullptr;
  } else if (out != in) {
    return nullptr;
  }
  return ir::visit_type(in, [&]<typename T>() -> OpPtr {
    if constexpr (std::is_same_v<T, bool>)
      return pred_op(opcode);
    else if constexpr (ir::is_float_v<T>)
      return float_op<T>(opcode);
    else
      return int_op<T>(opcode);
  });
}

}  // namespace

std::unique_ptr<ElementwiseOp> make_elementwise_op(const ir::Instruction& instruction) {
  if (OpPtr op = typed_op(instruction)) return op;
  return std::make_unique<EvaluatorOp>(instruction);
}

}  // namespace podsim::cpu
