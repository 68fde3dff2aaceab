// Elementwise ops of the reference evaluator: arithmetic, logic, shifts, math functions,
// select and clamp. compare, convert and bitcast-convert live in evaluator_convert.cc.
// Integer arithmetic is two's-complement wraparound with XLA's rules for the cases C++
// leaves undefined (division by zero, INT_MIN / -1, over-wide shifts); 16-bit floats
// compute in float and round back to nearest even.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "common/tanh.h"
#include "compiler/ir/eval/elementwise.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {

std::string describe(const Instruction& instruction) {
  if (instruction.pos().line > 0) return fmt::format("{} (line {})", instruction.name(), instruction.pos().line);
  return instruction.name();
}

void check_elementwise_operand(const Instruction& instruction, const Literal& operand, int64_t index,
                               bool scalar_ok) {
  const Shape& out = instruction.shape();
  if (operand.shape().is_tuple() || out.is_tuple())
    fail("{} of {}: operand {} has shape {}; elementwise ops take arrays", opcode_name(instruction.opcode()),
         describe(instruction), index, operand.shape().to_string(false));
  if (operand.shape().dims() == out.dims()) return;
  if (scalar_ok && operand.shape().is_scalar()) return;
  fail("{} of {}: operand {} has shape {} but the result has dimensions [{}]", opcode_name(instruction.opcode()),
       describe(instruction), index, operand.shape().to_string(false), fmt::join(out.dims(), ","));
}

namespace {

// Unsigned type wide enough that arithmetic on it never promotes to a signed int.
template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

[[noreturn]] void not_defined(const Instruction& instruction, PrimitiveType type) {
  fail("{} is not defined on {} ({})", opcode_name(instruction.opcode()), type_name(type), describe(instruction));
}

void check_result_type(const Instruction& instruction, PrimitiveType type) {
  if (instruction.shape().type() != type)
    fail("{} of {}: result type {} differs from the operand type {}", opcode_name(instruction.opcode()),
         describe(instruction), type_name(instruction.shape().type()), type_name(type));
}

template <typename T, typename F>
Literal map_unary(const Instruction& instruction, const Literal& a, F f) {
  Literal out(instruction.shape());
  auto x = a.data<T>();
  auto o = out.data<T>();
  for (size_t i = 0; i < o.size(); ++i) o[i] = f(x[i]);
  return out;
}

template <typename T, typename F>
Literal map_binary(const Instruction& instruction, const Literal& a, const Literal& b, F f) {
  Literal out(instruction.shape());
  auto x = a.data<T>();
  auto y = b.data<T>();
  auto o = out.data<T>();
  for (size_t i = 0; i < o.size(); ++i) o[i] = f(x[i], y[i]);
  return out;
}

template <typename T>
T int_divide(T a, T b) {
  if (b == 0) return static_cast<T>(-1);  // all bits set: -1 signed, the maximum unsigned
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return static_cast<T>(a / b);
}

template <typename T>
T int_remainder(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  return static_cast<T>(a % b);
}

template <typename T>
T int_power(T base, T exponent) {
  // XLA's rule for negative exponents: 1 for base 1, otherwise 0 (even for base -1).
  if constexpr (std::is_signed_v<T>)
    if (exponent < 0) return base == 1 ? 1 : 0;
  using U = wrap_t<T>;
  U result = 1;
  U b = static_cast<U>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exponent);
  while (e != 0) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<T>(result);
}

template <typename T>
T shift_left(T a, T amount) {
  using UT = std::make_unsigned_t<T>;
  if (static_cast<UT>(amount) >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<wrap_t<T>>(static_cast<UT>(a)) << static_cast<UT>(amount));
}

template <typename T>
T shift_right_logical(T a, T amount) {
  using UT = std::make_unsigned_t<T>;
  if (static_cast<UT>(amount) >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<UT>(a) >> static_cast<UT>(amount));
}

template <typename T>
T shift_right_arithmetic(T a, T amount) {
  using UT = std::make_unsigned_t<T>;
  using ST = std::make_signed_t<T>;
  auto signed_a = static_cast<ST>(a);
  if (static_cast<UT>(amount) >= sizeof(T) * 8) return static_cast<T>(signed_a < 0 ? -1 : 0);
  return static_cast<T>(signed_a >> static_cast<UT>(amount));
}

template <typename T>
Literal binary_float(const Instruction& instruction, const Literal& a, const Literal& b) {
  using C = compute_t<T>;
  auto apply = [&](auto f) {
    return map_binary<T>(instruction, a, b, [&](T x, T y) { return narrow<T>(f(widen(x), widen(y))); });
  };
  switch (instruction.opcode()) {
    case Opcode::kAdd: return apply([](C x, C y) { return x + y; });
    case Opcode::kSubtract: return apply([](C x, C y) { return x - y; });
    case Opcode::kMultiply: return apply([](C x, C y) { return x * y; });
    case Opcode::kDivide: return apply([](C x, C y) { return x / y; });
    case Opcode::kRemainder: return apply([](C x, C y) { return std::fmod(x, y); });
    case Opcode::kPower: return apply([](C x, C y) { return std::pow(x, y); });
    case Opcode::kAtan2: return apply([](C x, C y) { return std::atan2(x, y); });
    case Opcode::kMaximum: return apply([](C x, C y) { return float_max(x, y); });
    case Opcode::kMinimum: return apply([](C x, C y) { return float_min(x, y); });
    default: not_defined(instruction, a.type());
  }
}

template <typename T>
Literal binary_int(const Instruction& instruction, const Literal& a, const Literal& b) {
  using U = wrap_t<T>;
  auto apply = [&](auto f) { return map_binary<T>(instruction, a, b, f); };
  switch (instruction.opcode()) {
    case Opcode::kAdd:
      return apply([](T x, T y) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); });
    case Opcode::kSubtract:
      return apply([](T x, T y) { return static_cast<T>(static_cast<U>(x) - static_cast<U>(y)); });
    case Opcode::kMultiply:
      return apply([](T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); });
    case Opcode::kDivide: return apply(int_divide<T>);
    case Opcode::kRemainder: return apply(int_remainder<T>);
    case Opcode::kPower: return apply(int_power<T>);
    case Opcode::kMaximum: return apply([](T x, T y) { return x > y ? x : y; });
    case Opcode::kMinimum: return apply([](T x, T y) { return x < y ? x : y; });
    case Opcode::kAnd: return apply([](T x, T y) { return static_cast<T>(x & y); });
    case Opcode::kOr: return apply([](T x, T y) { return static_cast<T>(x | y); });
    case Opcode::kXor: return apply([](T x, T y) { return static_cast<T>(x ^ y); });
    case Opcode::kShiftLeft: return apply(shift_left<T>);
    case Opcode::kShiftRightLogical: return apply(shift_right_logical<T>);
    case Opcode::kShiftRightArithmetic: return apply(shift_right_arithmetic<T>);
    default: not_defined(instruction, a.type());
  }
}

// pred is a 1-bit boolean: only the logical ops (and max = or, min = and) apply.
Literal binary_pred(const Instruction& instruction, const Literal& a, const Literal& b) {
  auto apply = [&](auto f) { return map_binary<bool>(instruction, a, b, f); };
  switch (instruction.opcode()) {
    case Opcode::kAnd:
    case Opcode::kMinimum: return apply([](bool x, bool y) { return x && y; });
    case Opcode::kOr:
    case Opcode::kMaximum: return apply([](bool x, bool y) { return x || y; });
    case Opcode::kXor: return apply([](bool x, bool y) { return x != y; });
    default: not_defined(instruction, PrimitiveType::kPred);
  }
}

Literal binary(const Instruction& instruction, const Literal& a, const Literal& b) {
  check_elementwise_operand(instruction, a, 0, false);
  check_elementwise_operand(instruction, b, 1, false);
  if (a.type() != b.type())
    fail("{} of {}: operand types {} and {} differ", opcode_name(instruction.opcode()), describe(instruction),
         type_name(a.type()), type_name(b.type()));
  check_result_type(instruction, a.type());
  return visit_type(a.type(), [&]<typename T>() -> Literal {
    if constexpr (std::is_same_v<T, bool>) return binary_pred(instruction, a, b);
    else if constexpr (is_float_v<T>) return binary_float<T>(instruction, a, b);
    else return binary_int<T>(instruction, a, b);
  });
}

template <typename C>
C float_sign(C x) {
  if (std::isnan(x) || x == 0) return x;
  return std::copysign(C{1}, x);
}

template <typename T>
Literal unary_float(const Instruction& instruction, const Literal& a) {
  using C = compute_t<T>;
  auto apply = [&](auto f) { return map_unary<T>(instruction, a, [&](T x) { return narrow<T>(f(widen(x))); }); };
  switch (instruction.opcode()) {
    case Opcode::kNegate: return apply([](C x) { return -x; });
    case Opcode::kAbs: return apply([](C x) { return std::fabs(x); });
    case Opcode::kSign: return apply([](C x) { return float_sign(x); });
    case Opcode::kExp: return apply([](C x) { return std::exp(x); });
    case Opcode::kExpm1: return apply([](C x) { return std::expm1(x); });
    case Opcode::kLog: return apply([](C x) { return std::log(x); });
    case Opcode::kLog1p: return apply([](C x) { return std::log1p(x); });
    case Opcode::kSqrt: return apply([](C x) { return std::sqrt(x); });
    case Opcode::kRsqrt: return apply([](C x) { return C{1} / std::sqrt(x); });
    case Opcode::kCbrt: return apply([](C x) { return std::cbrt(x); });
    case Opcode::kTanh: return apply([](C x) { return tanh_op(x); });
    case Opcode::kLogistic: return apply([](C x) { return C{1} / (C{1} + std::exp(-x)); });
    case Opcode::kSin: return apply([](C x) { return std::sin(x); });
    case Opcode::kCos: return apply([](C x) { return std::cos(x); });
    case Opcode::kTan: return apply([](C x) { return std::tan(x); });
    case Opcode::kErf: return apply([](C x) { return std::erf(x); });
    case Opcode::kFloor: return apply([](C x) { return std::floor(x); });
    case Opcode::kCeil: return apply([](C x) { return std::ceil(x); });
    case Opcode::kRoundNearestAfz: return apply([](C x) { return std::round(x); });
    // The evaluator never changes the rounding mode, so nearbyint rounds half to even.
    case Opcode::kRoundNearestEven: return apply([](C x) { return std::nearbyint(x); });
    default: not_defined(instruction, a.type());
  }
}

template <typename T>
Literal unary_int(const Instruction& instruction, const Literal& a) {
  using U = wrap_t<T>;
  auto apply = [&](auto f) { return map_unary<T>(instruction, a, f); };
  switch (instruction.opcode()) {
    case Opcode::kNegate: return apply([](T x) { return static_cast<T>(U{0} - static_cast<U>(x)); });
    case Opcode::kAbs:
      return apply([](T x) {
        if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(U{0} - static_cast<U>(x)) : x;
        else return x;
      });
    case Opcode::kSign:
      return apply([](T x) {
        if constexpr (std::is_signed_v<T>) return static_cast<T>((x > 0) - (x < 0));
        else return static_cast<T>(x != 0);
      });
    case Opcode::kNot: return apply([](T x) { return static_cast<T>(~x); });
    // Bits of the two's complement representation, in the type's width.
    case Opcode::kPopcnt: return apply([](T x) { return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(x))); });
    case Opcode::kClz: return apply([](T x) { return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(x))); });
    default: not_defined(instruction, a.type());
  }
}

Literal unary(const Instruction& instruction, const Literal& a) {
  check_elementwise_operand(instruction, a, 0, false);
  if (instruction.opcode() == Opcode::kIsFinite) {
    if (!is_float(a.type())) not_defined(instruction, a.type());
    if (instruction.shape().type() != PrimitiveType::kPred)
      fail("is-finite of {}: the result must be pred, not {}", describe(instruction),
           type_name(instruction.shape().type()));
    Literal out(instruction.shape());
    auto o = out.data<bool>();
    visit_type(a.type(), [&]<typename T>() {
      if constexpr (is_float_v<T>) {
        auto x = a.data<T>();
        for (size_t i = 0; i < o.size(); ++i) o[i] = std::isfinite(widen(x[i]));
      }
    });
    return out;
  }
  check_result_type(instruction, a.type());
  return visit_type(a.type(), [&]<typename T>() -> Literal {
    if constexpr (std::is_same_v<T, bool>) {
      if (instruction.opcode() != Opcode::kNot) not_defined(instruction, a.type());
      return map_unary<bool>(instruction, a, [](bool x) { return !x; });
    } else if constexpr (is_float_v<T>) {
      return unary_float<T>(instruction, a);
    } else {
      return unary_int<T>(instruction, a);
    }
  });
}

// Index of element i in an operand that is either full-size or a broadcast scalar.
inline size_t at(const Literal& operand, size_t i) { return operand.shape().is_scalar() ? 0 : i; }

Literal select(const Instruction& instruction, const Literal& pred, const Literal& on_true,
               const Literal& on_false) {
  check_elementwise_operand(instruction, pred, 0, true);
  check_elementwise_operand(instruction, on_true, 1, false);
  check_elementwise_operand(instruction, on_false, 2, false);
  if (pred.type() != PrimitiveType::kPred)
    fail("select of {}: the selector must be pred, not {}", describe(instruction), type_name(pred.type()));
  if (on_true.type() != on_false.type())
    fail("select of {}: branch types {} and {} differ", describe(instruction), type_name(on_true.type()),
         type_name(on_false.type()));
  check_result_type(instruction, on_true.type());
  Literal out(instruction.shape());
  auto p = pred.data<bool>();
  size_t width = static_cast<size_t>(type_byte_size(on_true.type()));
  const std::byte* t = on_true.bytes().data();
  const std::byte* f = on_false.bytes().data();
  std::byte* o = out.bytes().data();
  size_t n = static_cast<size_t>(out.num_elements());
  for (size_t i = 0; i < n; ++i) std::memcpy(o + i * width, (p[at(pred, i)] ? t : f) + i * width, width);
  return out;
}

Literal clamp(const Instruction& instruction, const Literal& lo, const Literal& x, const Literal& hi) {
  check_elementwise_operand(instruction, lo, 0, true);
  check_elementwise_operand(instruction, x, 1, false);
  check_elementwise_operand(instruction, hi, 2, true);
  if (lo.type() != x.type() || hi.type() != x.type())
    fail("clamp of {}: operand types {}, {}, {} differ", describe(instruction), type_name(lo.type()),
         type_name(x.type()), type_name(hi.type()));
  check_result_type(instruction, x.type());
  Literal out(instruction.shape());
  visit_type(x.type(), [&]<typename T>() {
    auto l = lo.data<T>();
    auto v = x.data<T>();
    auto h = hi.data<T>();
    auto o = out.data<T>();
    for (size_t i = 0; i < o.size(); ++i) {
      if constexpr (is_float_v<T>) {
        o[i] = narrow<T>(float_min(float_max(widen(v[i]), widen(l[at(lo, i)])), widen(h[at(hi, i)])));
      } else {
        T low = l[at(lo, i)];
        T high = h[at(hi, i)];
        T r = v[i] < low ? low : v[i];
        o[i] = high < r ? high : r;
      }
    }
  });
  return out;
}

}  // namespace

Literal eval_elementwise(const Instruction& instruction, Operands operands) {
  int arity = opcode_arity(instruction.opcode());
  if (static_cast<int64_t>(operands.size()) != arity)
    fail("{} of {} takes {} operands, got {}", opcode_name(instruction.opcode()), describe(instruction), arity,
         operands.size());
  switch (instruction.opcode()) {
    case Opcode::kCompare: return eval_compare(instruction, *operands[0], *operands[1]);
    case Opcode::kConvert: return eval_convert(instruction, *operands[0]);
    case Opcode::kBitcastConvert: return eval_bitcast_convert(instruction, *operands[0]);
    case Opcode::kSelect: return select(instruction, *operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp: return clamp(instruction, *operands[0], *operands[1], *operands[2]);
    default: break;
  }
  if (!is_elementwise(instruction.opcode()))
    fail("internal: {} is not an elementwise op", opcode_name(instruction.opcode()));
  if (arity == 1) return unary(instruction, *operands[0]);
  return binary(instruction, *operands[0], *operands[1]);
}

}  // namespace podsim::ir::eval
