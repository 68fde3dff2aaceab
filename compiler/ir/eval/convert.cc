// compare, convert, bitcast-convert and reduce-precision for the reference evaluator.
//
// Conversions round exactly once: a value headed for bf16/f16 from a wider source
// (f64, or an integer with more than 24 significant bits) is first rounded to float
// with round-to-odd, which makes the following float -> 16-bit round-to-nearest-even
// give the correctly rounded result (float keeps more than two extra bits).
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "compiler/ir/eval/elementwise.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {
namespace {

// d rounded to float by truncation with the lowest bit set when inexact (round to odd).
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <typename I>
float int_round_to_odd_float(I v) {
  bool negative = false;
  uint64_t magnitude;
  if constexpr (std::is_signed_v<I>) {
    negative = v < 0;
    magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  } else {
    magnitude = v;
  }
  int shift = std::bit_width(magnitude) - 24;
  float f;
  if (shift <= 0) {
    f = static_cast<float>(magnitude);
  } else {
    uint64_t kept = magnitude >> shift;
    if (magnitude & ((uint64_t{1} << shift) - 1)) kept |= 1;
    f = std::ldexp(static_cast<float>(kept), shift);
  }
  return negative ? -f : f;
}

// Truncates toward zero and saturates at the integer range; NaN becomes 0.
template <typename To>
To float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  if (v <= static_cast<double>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  return static_cast<To>(v);
}

template <typename To, typename From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_float_v<From>) return widen(v) != 0;
    else return v != 0;
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, bool>) return To(v ? 1.0f : 0.0f);
    else if constexpr (is_half_v<From> || std::is_same_v<From, float>) return To(static_cast<float>(v));
    else if constexpr (std::is_same_v<From, double>) return To(round_to_odd_float(v));
    else return To(int_round_to_odd_float(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    if constexpr (is_half_v<From>) return static_cast<To>(static_cast<float>(v));
    else return static_cast<To>(v);
  } else {
    if constexpr (is_float_v<From>) return float_to_int<To>(static_cast<double>(widen(v)));
    else return static_cast<To>(v);  // integers wrap; pred is 0 / 1
  }
}

// Float bits reordered so that signed-integer order is IEEE totalOrder:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
template <typename T>
auto total_order_key(T v) {
  using Bits = std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>;
  Bits b;
  if constexpr (is_half_v<T>) b = std::bit_cast<Bits>(v.bits);
  else b = std::bit_cast<Bits>(v);
  if (b < 0) b = static_cast<Bits>(b ^ std::numeric_limits<Bits>::max());
  return b;
}

template <typename K>
bool compare_keys(ComparisonDirection direction, K x, K y) {
  switch (direction) {
    case ComparisonDirection::kEq: return x == y;
    case ComparisonDirection::kNe: return x != y;
    case ComparisonDirection::kLt: return x < y;
    case ComparisonDirection::kLe: return x <= y;
    case ComparisonDirection::kGt: return x > y;
    case ComparisonDirection::kGe: return x >= y;
  }
  return false;
}

void check_pred_result(const Instruction& instruction) {
  if (instruction.shape().type() != PrimitiveType::kPred)
    fail("{} of {}: the result must be pred, not {}", opcode_name(instruction.opcode()), describe(instruction),
         type_name(instruction.shape().type()));
}

}  // namespace

Literal eval_compare(const Instruction& instruction, const Literal& a, const Literal& b) {
  check_elementwise_operand(instruction, a, 0, false);
  check_elementwise_operand(instruction, b, 1, false);
  if (a.type() != b.type())
    fail("compare of {}: operand types {} and {} differ", describe(instruction), type_name(a.type()),
         type_name(b.type()));
  check_pred_result(instruction);
  ComparisonDirection direction = instruction.attrs().direction;
  bool total_order = instruction.attrs().comparison_type == ComparisonType::kTotalOrder;
  Literal out(instruction.shape());
  auto o = out.data<bool>();
  visit_type(a.type(), [&]<typename T>() {
    auto x = a.data<T>();
    auto y = b.data<T>();
    auto run = [&](auto key) {
      for (size_t i = 0; i < o.size(); ++i) o[i] = compare_keys(direction, key(x[i]), key(y[i]));
    };
    if constexpr (is_float_v<T>) {
      if (total_order) run([](T v) { return total_order_key(v); });
      else run([](T v) { return widen(v); });
    } else {
      run([](T v) { return v; });
    }
  });
  return out;
}

Literal eval_convert(const Instruction& instruction, const Literal& a) {
  check_elementwise_operand(instruction, a, 0, false);
  Literal out(instruction.shape());
  visit_type(a.type(), [&]<typename From>() {
    visit_type(out.type(), [&]<typename To>() {
      auto x = a.data<From>();
      auto o = out.data<To>();
      for (size_t i = 0; i < o.size(); ++i) o[i] = convert_value<To>(x[i]);
    });
  });
  return out;
}

// Reinterprets the bytes. Between widths, the narrower side has an extra minor
// dimension of size ratio whose element 0 is the least significant part: exactly the
// little-endian byte order in which literals are stored, so the bytes copy unchanged.
Literal eval_bitcast_convert(const Instruction& instruction, const Literal& a) {
  const Shape& in = a.shape();
  const Shape& out_shape = instruction.shape();
  if (in.is_tuple() || out_shape.is_tuple())
    fail("bitcast-convert of {}: tuples cannot be bitcast", describe(instruction));
  if (out_shape.type() == PrimitiveType::kPred && in.type() != PrimitiveType::kPred)
    fail("bitcast-convert of {}: cannot reinterpret {} bits as pred", describe(instruction), type_name(in.type()));
  int in_bytes = type_byte_size(in.type());
  int out_bytes = type_byte_size(out_shape.type());
  std::vector<int64_t> expected = in.dims();
  if (in_bytes > out_bytes) {
    expected.push_back(in_bytes / out_bytes);
  } else if (in_bytes < out_bytes) {
    if (expected.empty() || expected.back() != out_bytes / in_bytes)
      fail("bitcast-convert of {}: {} to {} needs a minor dimension of size {} on the operand, which has shape {}",
           describe(instruction), type_name(in.type()), type_name(out_shape.type()), out_bytes / in_bytes,
           in.to_string(false));
    expected.pop_back();
  }
  if (out_shape.dims() != expected)
    fail("bitcast-convert of {}: operand shape {} cannot become {} (expected dimensions [{}])", describe(instruction),
         in.to_string(false), out_shape.to_string(false), fmt::join(expected, ","));
  Literal out(out_shape);
  if (!out.bytes().empty()) std::memcpy(out.bytes().data(), a.bytes().data(), out.bytes().size());
  return out;
}

namespace {

// XLA's reduce-precision on the bits of a float of src_e exponent and src_m mantissa
// bits: the mantissa rounded to m bits (to nearest, ties to even), then an exponent
// beyond the e-bit range becomes a signed infinity, one at or below it a signed zero.
template <typename U>
U reduce_precision_bits(U bits, int src_e, int src_m, int64_t e, int64_t m) {
  if (m < src_m) {
    const int drop = src_m - static_cast<int>(m);
    const U last = U{1} << drop;  // the lowest mantissa bit kept
    const U bias = static_cast<U>((last >> 1) - 1 + ((bits & last) >> drop));
    bits = static_cast<U>((bits + bias) & ~static_cast<U>(last - 1));
  }
  if (e < src_e) {
    const U sign = U{1} << (sizeof(U) * 8 - 1);
    const U exponent_mask = static_cast<U>(((U{1} << src_e) - 1) << src_m);
    const U bias = (U{1} << (src_e - 1)) - 1, reduced_bias = (U{1} << (e - 1)) - 1;
    const U exponent = bits & exponent_mask;
    if (exponent > static_cast<U>((bias + reduced_bias) << src_m))
      bits = static_cast<U>((bits & sign) | exponent_mask);
    else if (exponent <= static_cast<U>((bias - reduced_bias) << src_m))
      bits = bits & sign;
  }
  return bits;
}

template <typename U>
void reduce_precision_into(const Literal& x, Literal& out, int src_e, int src_m, int64_t e,
                           int64_t m) {
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    U bits;
    std::memcpy(&bits, x.bytes().data() + static_cast<size_t>(i) * sizeof(U), sizeof(U));
    // A NaN stays itself where a mantissa bit is kept (rounding could carry it into the
    // exponent, or truncation clear its payload).
    if (!(m > 0 && std::isnan(x.get_as_double(i))))
      bits = reduce_precision_bits<U>(bits, src_e, src_m, e, m);
    std::memcpy(out.bytes().data() + static_cast<size_t>(i) * sizeof(U), &bits, sizeof(U));
  }
}

}  // namespace

Literal eval_reduce_precision(const Instruction& instruction, const Literal& x) {
  const int64_t e = instruction.attrs().exponent_bits, m = instruction.attrs().mantissa_bits;
  Literal out(x.shape());
  switch (x.type()) {
    case PrimitiveType::kF16:
      reduce_precision_into<uint16_t>(x, out, 5, 10, e, m);
      break;
    case PrimitiveType::kBF16:
      reduce_precision_into<uint16_t>(x, out, 8, 7, e, m);
      break;
    case PrimitiveType::kF32:
      reduce_precision_into<uint32_t>(x, out, 8, 23, e, m);
      break;
    case PrimitiveType::kF64:
      reduce_precision_into<uint64_t>(x, out, 11, 52, e, m);
      break;
    default:
      op_fail(instruction, "operand {} is not a float", x.shape().to_string(false));
  }
  return out;
}

}  // namespace podsim::ir::eval
