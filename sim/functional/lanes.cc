#include "sim/functional/lanes.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/float16.h"

namespace podsim::sim::lanes {
namespace {

using isa::DType;

float round_to_f16(float f) { return Half::to_float(Half::from_float(f)); }

// An integer of up to 33 significant bits as float, rounded to odd: the following
// rounding to bf16/f16 then rounds the integer correctly, exactly once.
float round_to_odd_float(int64_t v) {
  bool negative = v < 0;
  uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
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

// Truncates toward zero, saturating at [lo, hi]; NaN gives 0.
int64_t saturate(float f, int64_t lo, int64_t hi) {
  if (std::isnan(f)) return 0;
  double d = f;
  if (d <= static_cast<double>(lo)) return lo;
  if (d >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(d);
}

// The value range of an integer lane type.
void int_range(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DType::kS8:
      lo = INT8_MIN, hi = INT8_MAX;
      return;
    case DType::kS16:
      lo = INT16_MIN, hi = INT16_MAX;
      return;
    case DType::kS32:
      lo = INT32_MIN, hi = INT32_MAX;
      return;
    case DType::kU8:
      lo = 0, hi = UINT8_MAX;
      return;
    case DType::kU16:
      lo = 0, hi = UINT16_MAX;
      return;
    default:
      lo = 0, hi = UINT32_MAX;
      return;
  }
}

// An integer (already in the range of `to` or to be wrapped into it) in lane form.
uint32_t int_lane(DType to, int64_t v) {
  switch (to) {
    case DType::kS8:
      return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(v)));
    case DType::kS16:
      return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(v)));
    case DType::kU8:
      return static_cast<uint8_t>(v);
    case DType::kU16:
      return static_cast<uint16_t>(v);
    case DType::kPred:
      return v != 0;
    default:
      return static_cast<uint32_t>(v);
  }
}

uint32_t convert_one(DType from, DType to, uint32_t lane) {
  Kind from_kind = kind(from);
  if (from_kind == Kind::kFloat) {
    float f = to_float(lane);
    switch (to) {
      case DType::kF32:
        return from_float(f);
      case DType::kBF16:
        return from_float(round_to_bf16(f));
      case DType::kF16:
        return from_float(round_to_f16(f));
      case DType::kPred:
        return f != 0.0f;
      default: {
        int64_t lo, hi;
        int_range(to, lo, hi);
        return int_lane(to, saturate(f, lo, hi));
      }
    }
  }
  int64_t v = from_kind == Kind::kSigned ? int64_t{static_cast<int32_t>(lane)} : int64_t{lane};
  switch (to) {
    case DType::kF32:
      return from_float(static_cast<float>(v));
    case DType::kBF16:
      return from_float(round_to_bf16(round_to_odd_float(v)));
    case DType::kF16:
      return from_float(round_to_f16(round_to_odd_float(v)));
    default:
      return int_lane(to, v);
  }
}

}  // namespace

float round_to_bf16(float f) {
  return std::bit_cast<float>(uint32_t{BFloat16::from_float(f)} << 16);
}

void load_row(DType t, const uint8_t* src, uint32_t* dst, int64_t n) {
  switch (t) {
    case DType::kF32:
    case DType::kS32:
    case DType::kU32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kBF16:
    case DType::kF16:
    case DType::kS16:
    case DType::kU16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        if (t == DType::kBF16)
          dst[i] = uint32_t{h} << 16;
        else if (t == DType::kF16)
          dst[i] = from_float(Half::to_float(h));
        else if (t == DType::kS16)
          dst[i] = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(h)));
        else
          dst[i] = h;
      }
      return;
    case DType::kS8:
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(src[i])));
      return;
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
      return;
    case DType::kPred:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
      return;
    default:
      return;  // 64-bit types are rejected when the executable is loaded
  }
}

void store_row(DType t, const uint32_t* src, uint8_t* dst, int64_t n) {
  switch (t) {
    case DType::kF32:
    case DType::kS32:
    case DType::kU32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kBF16:
    case DType::kF16:
    case DType::kS16:
    case DType::kU16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        if (t == DType::kBF16)
          h = BFloat16::from_float(to_float(src[i]));
        else if (t == DType::kF16)
          h = Half::from_float(to_float(src[i]));
        else
          h = static_cast<uint16_t>(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case DType::kS8:
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(src[i]);
      return;
    case DType::kPred:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
      return;
    default:
      return;
  }
}

void narrow_lanes(DType t, uint32_t* lanes, int64_t n) {
  switch (t) {
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) lanes[i] = from_float(round_to_bf16(to_float(lanes[i])));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) lanes[i] = from_float(round_to_f16(to_float(lanes[i])));
      return;
    case DType::kS8:
    case DType::kS16:
    case DType::kU8:
    case DType::kU16:
    case DType::kPred:
      for (int64_t i = 0; i < n; ++i) lanes[i] = int_lane(t, static_cast<int32_t>(lanes[i]));
      return;
    default:
      return;
  }
}

void convert_lanes(DType from, DType to, const uint32_t* src, uint32_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = convert_one(from, to, src[i]);
}

}  // namespace podsim::sim::lanes
