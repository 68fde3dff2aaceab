// The vector unit: loads and stores of tiles, element-wise arithmetic on the 32-bit
// lanes, compares and selects, conversions, cross-lane reductions and transposes.
// Each op is a plain loop over sublanes x lanes values with the type switch outside it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/error.h"
#include "common/tanh.h"
#include "sim/functional/functional_model.h"
#include "sim/functional/lanes.h"

namespace podsim::sim {
namespace {

using isa::DType;
using isa::Opcode;
using lanes::from_float;
using lanes::Kind;
using lanes::to_float;

// Element-wise loops run in blocks of a fixed kBlock lanes, a shape the compiler
// vectorises at -O2 once it knows that nothing aliases: the output register is another
// (registers never partly overlap), or the block goes through locals when it is not.
constexpr int64_t kBlock = 8;

// f on one lane of a and b seen as T (float, int32_t or uint32_t: the same 32 bits).
template <typename T, typename F>
void map_one(uint32_t* d, const uint32_t* a, const uint32_t* b, F f) {
  T x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  T r = f(x, y);
  std::memcpy(d, &r, sizeof r);
}

template <typename T, typename F>
void map_distinct(uint32_t* __restrict d, const uint32_t* __restrict a,
                  const uint32_t* __restrict b, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (int64_t k = 0; k < kBlock; ++k) map_one<T>(d + i + k, a + i + k, b + i + k, f);
  for (; i < n; ++i) map_one<T>(d + i, a + i, b + i, f);
}

template <typename T, typename F>
void map_lanes(uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n, F f) {
  if (d != a && d != b) return map_distinct<T>(d, a, b, n, f);
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T x[kBlock], y[kBlock], r[kBlock];
    std::memcpy(x, a + i, sizeof x);
    std::memcpy(y, b + i, sizeof y);
    for (int64_t k = 0; k < kBlock; ++k) r[k] = f(x[k], y[k]);
    std::memcpy(d + i, r, sizeof r);
  }
  for (; i < n; ++i) map_one<T>(d + i, a + i, b + i, f);
}

// Lanes as floats or as 32-bit integers (T: int32_t or uint32_t, same bits).
template <typename F>
void map_float(uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n, F f) {
  map_lanes<float>(d, a, b, n, f);
}

template <typename T, typename F>
void map_int(uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n, F f) {
  map_lanes<T>(d, a, b, n, [f](T x, T y) { return static_cast<T>(f(x, y)); });
}

template <typename F>
void map_float1(uint32_t* d, const uint32_t* a, int64_t n, F f) {
  map_lanes<float>(d, a, a, n, [f](float x, float) { return f(x); });
}

// XLA's semantics (NaN propagates).
float float_max(float x, float y) { return (x >= y || std::isnan(x)) ? x : y; }
float float_min(float x, float y) { return (x <= y || std::isnan(x)) ? x : y; }

template <typename T>
T int_divide(T a, T b) {
  if (b == 0) return static_cast<T>(-1);  // all bits set
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  return static_cast<T>(a / b);
}

template <typename T>
T int_power(T base, T exponent) {
  // XLA: a negative exponent gives 1 for base 1 and 0 otherwise.
  if constexpr (std::is_signed_v<T>)
    if (exponent < 0) return base == 1 ? 1 : 0;
  uint32_t result = 1, b = static_cast<uint32_t>(base), e = static_cast<uint32_t>(exponent);
  while (e != 0) {
    if (e & 1u) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
}

template <typename T>
void binary_int(Opcode op, uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n) {
  switch (op) {
    case Opcode::kVadd:
      map_int<uint32_t>(d, a, b, n, [](uint32_t x, uint32_t y) { return x + y; });
      return;
    case Opcode::kVsub:
      map_int<uint32_t>(d, a, b, n, [](uint32_t x, uint32_t y) { return x - y; });
      return;
    case Opcode::kVmul:
      map_int<uint32_t>(d, a, b, n, [](uint32_t x, uint32_t y) { return x * y; });
      return;
    case Opcode::kVdiv:
      map_int<T>(d, a, b, n, int_divide<T>);
      return;
    case Opcode::kVpow:
      map_int<T>(d, a, b, n, int_power<T>);
      return;
    case Opcode::kVmax:
      map_int<T>(d, a, b, n, [](T x, T y) { return x > y ? x : y; });
      return;
    case Opcode::kVmin:
      map_int<T>(d, a, b, n, [](T x, T y) { return x < y ? x : y; });
      return;
    default:
      return;
  }
}

void binary_float(Opcode op, uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n) {
  switch (op) {
    case Opcode::kVadd:
      map_float(d, a, b, n, [](float x, float y) { return x + y; });
      return;
    case Opcode::kVsub:
      map_float(d, a, b, n, [](float x, float y) { return x - y; });
      return;
    case Opcode::kVmul:
      map_float(d, a, b, n, [](float x, float y) { return x * y; });
      return;
    case Opcode::kVdiv:
      map_float(d, a, b, n, [](float x, float y) { return x / y; });
      return;
    case Opcode::kVpow:
      map_float(d, a, b, n, [](float x, float y) { return std::pow(x, y); });
      return;
    case Opcode::kVmax:
      map_float(d, a, b, n, [](float x, float y) { return float_max(x, y); });
      return;
    case Opcode::kVmin:
      map_float(d, a, b, n, [](float x, float y) { return float_min(x, y); });
      return;
    default:
      return;
  }
}

void unary_float(Opcode op, uint32_t* d, const uint32_t* a, int64_t n) {
  switch (op) {
    case Opcode::kVneg:
      map_float1(d, a, n, [](float x) { return -x; });
      return;
    case Opcode::kVabs:
      map_float1(d, a, n, [](float x) { return std::fabs(x); });
      return;
    case Opcode::kVexp:
      map_float1(d, a, n, [](float x) { return std::exp(x); });
      return;
    case Opcode::kVlog:
      map_float1(d, a, n, [](float x) { return std::log(x); });
      return;
    case Opcode::kVsqrt:
      map_float1(d, a, n, [](float x) { return std::sqrt(x); });
      return;
    case Opcode::kVrsqrt:
      map_float1(d, a, n, [](float x) { return 1.0f / std::sqrt(x); });
      return;
    case Opcode::kVtanh:
      map_float1(d, a, n, [](float x) { return tanh_op(x); });
      return;
    case Opcode::kVlogistic:
      map_float1(d, a, n, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
      return;
    case Opcode::kVfloor:
      map_float1(d, a, n, [](float x) { return std::floor(x); });
      return;
    case Opcode::kVceil:
      map_float1(d, a, n, [](float x) { return std::ceil(x); });
      return;
    default:
      return;
  }
}

template <typename T>
bool compare(int64_t how, T x, T y) {
  switch (how) {
    case 0:
      return x == y;
    case 1:
      return x != y;
    case 2:
      return x < y;
    case 3:
      return x <= y;
    case 4:
      return x > y;
    default:
      return x >= y;
  }
}

template <typename T, typename Get>
void compare_all(int64_t how, uint32_t* d, const uint32_t* a, const uint32_t* b, int64_t n,
                 Get get) {
  for (int64_t i = 0; i < n; ++i) d[i] = compare<T>(how, get(a[i]), get(b[i])) ? ~0u : 0u;
}

// Combines two lanes for a reduction: 0 add, 1 max, 2 min.
template <typename T>
T combine(int64_t how, T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (how == 0) return x + y;
    return how == 1 ? float_max(x, y) : float_min(x, y);
  } else {
    if (how == 0) return static_cast<T>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
    return how == 1 ? std::max(x, y) : std::min(x, y);
  }
}

template <typename T>
T lane_as(uint32_t v) {
  if constexpr (std::is_floating_point_v<T>)
    return to_float(v);
  else
    return static_cast<T>(v);
}

template <typename T>
uint32_t lane_of(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return from_float(v);
  else
    return static_cast<uint32_t>(v);
}

// Reduces `count` values spaced `step` apart, starting at each of `groups` starts spaced
// `group_step` apart, in index order, and writes the result back to every position.
template <typename T>
void reduce(int64_t how, uint32_t* d, const uint32_t* a, int64_t groups, int64_t group_step,
            int64_t count, int64_t step) {
  for (int64_t g = 0; g < groups; ++g) {
    const uint32_t* src = a + g * group_step;
    T acc = lane_as<T>(src[0]);
    for (int64_t i = 1; i < count; ++i) acc = combine<T>(how, acc, lane_as<T>(src[i * step]));
    uint32_t* dst = d + g * group_step;
    for (int64_t i = 0; i < count; ++i) dst[i * step] = lane_of<T>(acc);
  }
}

void reduce_by_kind(Kind kind, int64_t how, uint32_t* d, const uint32_t* a, int64_t groups,
                    int64_t group_step, int64_t count, int64_t step) {
  if (kind == Kind::kFloat)
    reduce<float>(how, d, a, groups, group_step, count, step);
  else if (kind == Kind::kSigned)
    reduce<int32_t>(how, d, a, groups, group_step, count, step);
  else
    reduce<uint32_t>(how, d, a, groups, group_step, count, step);
}

}  // namespace

void FunctionalModel::execute_vector(int core, const isa::Instruction& in, Effect& e) {
  const int64_t n = state_.lanes_per_register();
  const int64_t lanes = state_.chip().vpu_lanes;
  const int64_t sublanes = state_.chip().vpu_sublanes;
  const auto& o = in.operands;
  const int64_t* s = state_.core(core).scalar.data();
  auto v = [&](int i) { return state_.vreg(core, o[static_cast<size_t>(i)]); };
  Kind kind = lanes::kind(in.dtype);
  // Timing-only: loads and stores still resolve (and check) their ranges.
  if (!compute_data_ && in.opcode != Opcode::kVld && in.opcode != Opcode::kVst) return;

  switch (in.opcode) {
    case Opcode::kVld:
      vector_load(core, in, e);
      return;
    case Opcode::kVst:
      vector_store(core, in, e);
      return;
    case Opcode::kVbcast:
    case Opcode::kVbcasti: {
      auto value = static_cast<uint32_t>(in.opcode == Opcode::kVbcast ? s[o[1]] : o[1]);
      std::fill_n(v(0), n, value);
      return;
    }
    case Opcode::kViota: {
      uint32_t* d = v(0);
      for (int64_t r = 0; r < sublanes; ++r)
        for (int64_t c = 0; c < lanes; ++c)
          d[r * lanes + c] = static_cast<uint32_t>(o[1] == 0 ? r * lanes + c : o[1] == 1 ? c : r);
      return;
    }
    case Opcode::kVadd:
    case Opcode::kVsub:
    case Opcode::kVmul:
    case Opcode::kVdiv:
    case Opcode::kVmax:
    case Opcode::kVmin:
    case Opcode::kVpow:
      if (kind == Kind::kFloat)
        binary_float(in.opcode, v(0), v(1), v(2), n);
      else if (kind == Kind::kSigned)
        binary_int<int32_t>(in.opcode, v(0), v(1), v(2), n);
      else
        binary_int<uint32_t>(in.opcode, v(0), v(1), v(2), n);
      break;
    case Opcode::kVand:
      map_int<uint32_t>(v(0), v(1), v(2), n, [](uint32_t x, uint32_t y) { return x & y; });
      return;
    case Opcode::kVor:
      map_int<uint32_t>(v(0), v(1), v(2), n, [](uint32_t x, uint32_t y) { return x | y; });
      return;
    case Opcode::kVxor:
      map_int<uint32_t>(v(0), v(1), v(2), n, [](uint32_t x, uint32_t y) { return x ^ y; });
      return;
    case Opcode::kVshl:
      map_int<uint32_t>(v(0), v(1), v(2), n,
                        [](uint32_t x, uint32_t y) { return y >= 32 ? 0u : x << y; });
      return;
    case Opcode::kVshrl:
      map_int<uint32_t>(v(0), v(1), v(2), n,
                        [](uint32_t x, uint32_t y) { return y >= 32 ? 0u : x >> y; });
      return;
    case Opcode::kVshra:
      map_int<uint32_t>(v(0), v(1), v(2), n, [](uint32_t x, uint32_t y) {
        const auto signed_x = static_cast<int32_t>(x);
        return static_cast<uint32_t>(signed_x >> std::min<uint32_t>(y, 31));
      });
      return;
    case Opcode::kVnot: {
      uint32_t* d = v(0);
      const uint32_t* a = v(1);
      for (int64_t i = 0; i < n; ++i) d[i] = ~a[i];
      return;
    }
    case Opcode::kVneg:
    case Opcode::kVabs:
      if (kind == Kind::kFloat) {
        unary_float(in.opcode, v(0), v(1), n);
      } else {
        uint32_t* d = v(0);
        const uint32_t* a = v(1);
        bool neg = in.opcode == Opcode::kVneg, is_signed = kind == Kind::kSigned;
        for (int64_t i = 0; i < n; ++i)
          d[i] = neg || (is_signed && static_cast<int32_t>(a[i]) < 0) ? 0u - a[i] : a[i];
      }
      break;
    case Opcode::kVexp:
    case Opcode::kVlog:
    case Opcode::kVsqrt:
    case Opcode::kVrsqrt:
    case Opcode::kVtanh:
    case Opcode::kVlogistic:
    case Opcode::kVfloor:
    case Opcode::kVceil:
      unary_float(in.opcode, v(0), v(1), n);
      break;
    case Opcode::kVcmp:
      if (kind == Kind::kFloat)
        compare_all<float>(o[3], v(0), v(1), v(2), n, to_float);
      else if (kind == Kind::kSigned)
        compare_all<int32_t>(o[3], v(0), v(1), v(2), n,
                             [](uint32_t x) { return static_cast<int32_t>(x); });
      else
        compare_all<uint32_t>(o[3], v(0), v(1), v(2), n, [](uint32_t x) { return x; });
      return;
    case Opcode::kVsel: {
      uint32_t* d = v(0);
      const uint32_t *mask = v(1), *a = v(2), *b = v(3);
      for (int64_t i = 0; i < n; ++i) d[i] = mask[i] != 0 ? a[i] : b[i];
      return;
    }
    case Opcode::kVcvt:
      lanes::convert_lanes(static_cast<DType>(o[2]), in.dtype, v(1), v(0), n);
      return;
    case Opcode::kVredl:
      reduce_by_kind(kind, o[2], v(0), v(1), sublanes, lanes, lanes, 1);
      break;
    case Opcode::kVreds:
      reduce_by_kind(kind, o[2], v(0), v(1), lanes, 1, sublanes, lanes);
      break;
    case Opcode::kVxpose: {
      // The lanes x lanes block is contiguous: registers are stored one after another.
      const uint32_t* a = v(1);
      uint32_t* t = lane_buffer_.data();
      for (int64_t r = 0; r < lanes; ++r)
        for (int64_t c = 0; c < lanes; ++c) t[c * lanes + r] = a[r * lanes + c];
      std::memcpy(v(0), t, static_cast<size_t>(lanes * lanes) * sizeof(uint32_t));
      return;
    }
    default:
      fail_at(core, in, "is not a vector instruction");
  }
  // Arithmetic in a narrow type: round or wrap the 32-bit result to it.
  if (!lanes::is_full_width(in.dtype)) lanes::narrow_lanes(in.dtype, v(0), n);
}

void FunctionalModel::vector_load(int core, const isa::Instruction& in, Effect& e) {
  const auto& o = in.operands;
  const int64_t* s = state_.core(core).scalar.data();
  const int64_t lanes = state_.chip().vpu_lanes, sublanes = state_.chip().vpu_sublanes;
  const int64_t row_bytes = lanes * isa::dtype_bytes(in.dtype), stride = s[o[3]];
  std::array<int64_t, 1> sizes{sublanes}, strides{stride};
  e.read =
      resolve(core, in, static_cast<int32_t>(o[1]), s[o[2]], sizes, strides, row_bytes, "loads");
  e.has_read = true;
  if (!compute_data_) return;
  const SparseMemory& memory = state_.core(core).vmem;
  int64_t row0 = executable_->regions[static_cast<size_t>(o[1])].offset + s[o[2]];
  uint32_t* d = state_.vreg(core, o[0]);
  for (int64_t r = 0; r < sublanes; ++r) {
    if (lanes::is_full_width(in.dtype)) {
      memory.read(row0 + r * stride, d + r * lanes, row_bytes);
    } else {
      memory.read(row0 + r * stride, row_buffer_.data(), row_bytes);
      lanes::load_row(in.dtype, row_buffer_.data(), d + r * lanes, lanes);
    }
  }
}

void FunctionalModel::vector_store(int core, const isa::Instruction& in, Effect& e) {
  const auto& o = in.operands;
  const int64_t* s = state_.core(core).scalar.data();
  const int64_t lanes = state_.chip().vpu_lanes, sublanes = state_.chip().vpu_sublanes;
  const int64_t row_bytes = lanes * isa::dtype_bytes(in.dtype), stride = s[o[2]];
  std::array<int64_t, 1> sizes{sublanes}, strides{stride};
  e.write =
      resolve(core, in, static_cast<int32_t>(o[0]), s[o[1]], sizes, strides, row_bytes, "stores");
  e.has_write = true;
  if (!compute_data_) return;
  SparseMemory& memory = state_.core(core).vmem;
  int64_t row0 = executable_->regions[static_cast<size_t>(o[0])].offset + s[o[1]];
  const uint32_t* src = state_.vreg(core, o[3]);
  for (int64_t r = 0; r < sublanes; ++r) {
    if (lanes::is_full_width(in.dtype)) {
      memory.write(row0 + r * stride, src + r * lanes, row_bytes);
    } else {
      lanes::store_row(in.dtype, src + r * lanes, row_buffer_.data(), lanes);
      memory.write(row0 + r * stride, row_buffer_.data(), row_bytes);
    }
  }
}

}  // namespace podsim::sim
