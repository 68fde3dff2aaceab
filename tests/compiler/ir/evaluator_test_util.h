// Helpers shared by the evaluator tests: literals from vectors, running HLO text, and
// catching podsim::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"

namespace podsim::ir::testing_util {

template <typename T>
Literal make(PrimitiveType type, std::vector<int64_t> dims, const std::vector<T>& values) {
  Literal l(Shape(type, std::move(dims)));
  auto data = l.data<T>();
  EXPECT_EQ(data.size(), values.size());
  std::copy(values.begin(), values.end(), data.begin());
  return l;
}
template <typename T>
Literal vec(PrimitiveType type, const std::vector<T>& values) {
  return make(type, {static_cast<int64_t>(values.size())}, values);
}
template <typename T>
std::vector<T> values_of(const Literal& l) {
  auto data = l.data<T>();
  return {data.begin(), data.end()};
}
// Bits of a 16-bit float literal.
inline std::vector<uint16_t> bits16(const Literal& l) { return values_of<uint16_t>(l); }

inline Literal run(const std::string& text, const std::vector<Literal>& args = {}) {
  auto module = parse_module(text);
  return evaluate(*module, args);
}

inline std::vector<Literal> run_spmd(const std::string& text, const std::vector<std::vector<Literal>>& args) {
  auto module = parse_module(text);
  return evaluate_spmd(*module, args);
}

// The message of the podsim::Error that f throws ("" and a test failure when none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a podsim::Error";
  return "";
}

inline void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

}  // namespace podsim::ir::testing_util
