// Helpers for the CPU target tests: random inputs, running a module on the evaluator
// and on the CPU target, and comparing results leaf by leaf (integers and pred bit for
// bit; floats bit for bit or within a per-element bound; NaN matches any NaN).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/cpu/cpu_compiler.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/native_types.h"
#include "compiler/ir/parser.h"

namespace podsim::cpu::testing {

inline void flatten(const ir::Literal& literal, std::vector<const ir::Literal*>& out) {
  if (literal.shape().is_tuple()) {
    for (const ir::Literal& e : literal.elements()) flatten(e, out);
  } else {
    out.push_back(&literal);
  }
}

// The evaluator's result leaves, and the CPU result's (one literal per tuple element).
inline std::vector<const ir::Literal*> leaves(const ir::Literal& literal) {
  std::vector<const ir::Literal*> out;
  flatten(literal, out);
  return out;
}
inline std::vector<const ir::Literal*> leaves(const std::vector<ir::Literal>& literals) {
  std::vector<const ir::Literal*> out;
  for (const ir::Literal& l : literals) flatten(l, out);
  return out;
}

inline uint64_t bits_at(const ir::Literal& l, int64_t i) {
  const auto w = static_cast<size_t>(ir::type_byte_size(l.type()));
  uint64_t bits = 0;
  std::memcpy(&bits, l.bytes().data() + static_cast<size_t>(i) * w, w);
  return bits;
}

// Bound on |got - want| for float element i; a null function means bit-exact.
using Bound = std::function<double(int64_t)>;

// Compares two array literals. Floats: identical bits, both NaN, both zero (when
// signed zeros may differ), or within bound(i).
inline ::testing::AssertionResult arrays_match(const ir::Literal& got, const ir::Literal& want,
                                               const Bound& bound, bool any_zero_sign = false) {
  if (got.type() != want.type() || got.shape().dims() != want.shape().dims())
    return ::testing::AssertionFailure() << "shape " << got.shape().to_string(false)
                                         << " vs expected " << want.shape().to_string(false);
  int64_t bad = 0;
  std::ostringstream msg;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    bool ok;
    if (ir::is_float(want.type())) {
      const double g = got.get_as_double(i), w = want.get_as_double(i);
      ok = bits_at(got, i) == bits_at(want, i) || (std::isnan(g) && std::isnan(w)) ||
           (any_zero_sign && g == 0 && w == 0) ||
           (bound && std::isfinite(g) && std::isfinite(w) && std::abs(g - w) <= bound(i));
      if (!ok && bad < 5) {
        msg.precision(9);
        msg << "\n  [" << i << "] got " << g << " want " << w;
        if (bound) msg << " (bound " << bound(i) << ")";
      }
    } else if (want.type() == ir::PrimitiveType::kPred) {
      ok = (bits_at(got, i) != 0) == (bits_at(want, i) != 0);
    } else {
      ok = bits_at(got, i) == bits_at(want, i);
      if (!ok && bad < 5)
        msg << "\n  [" << i << "] got " << got.get_as_int64(i) << " want " << want.get_as_int64(i);
    }
    if (!ok) ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << want.num_elements() << " elements differ" << msg.str();
}

// Random values: floats uniform in [lo, hi) rounded to the type, integers in their
// range (or [lo, hi] when that is narrower), pred fair coins.
inline ir::Literal random_literal(const ir::Shape& shape, std::mt19937_64& rng, double lo = -2,
                                  double hi = 2) {
  ir::Literal l(shape);
  std::uniform_real_distribution<double> real(lo, hi);
  ir::visit_type(shape.type(), [&]<typename T>() {
    for (int64_t i = 0; i < l.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        l.set_from_int64(i, static_cast<int64_t>(rng() & 1));
      } else if constexpr (ir::is_float_v<T>) {
        l.set_from_double(i, real(rng));
      } else {
        std::uniform_int_distribution<int64_t> dist(
            std::max<int64_t>(static_cast<int64_t>(std::numeric_limits<T>::lowest()),
                              static_cast<int64_t>(lo)),
            std::min<int64_t>(static_cast<int64_t>(std::numeric_limits<T>::max() / 2 + 1),
                              static_cast<int64_t>(hi)));
        l.set_from_int64(i, dist(rng));
      }
    }
  });
  return l;
}

inline std::vector<const ir::Literal*> pointers(const std::vector<ir::Literal>& args) {
  std::vector<const ir::Literal*> p;
  for (const ir::Literal& a : args) p.push_back(&a);
  return p;
}

}  // namespace podsim::cpu::testing
