// Literal: a host-side value of a shape — dense row-major array data, or a tuple of
// literals. Used for constants, evaluator values, and file I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/shape.h"

namespace podsim::ir {

class Literal {
 public:
  Literal() : Literal(Shape::scalar(PrimitiveType::kF32)) {}
  // Zero-filled value of shape (recursively for tuples). Layouts are dropped: literals
  // are always row-major.
  explicit Literal(const Shape& shape);
  static Literal tuple(std::vector<Literal> elements);
  template <typename T>
  static Literal scalar(PrimitiveType type, T value) {
    Literal l(Shape::scalar(type));
    l.set_from_double(0, static_cast<double>(value));
    return l;
  }

  const Shape& shape() const { return shape_; }
  PrimitiveType type() const { return shape_.type(); }
  int64_t num_elements() const { return shape_.num_elements(); }

  // Raw array bytes (row-major, native endianness = little-endian).
  std::span<std::byte> bytes() { return data_; }
  std::span<const std::byte> bytes() const { return data_; }

  // Typed view; T must be the native type of the element type (see native_types.h).
  template <typename T>
  std::span<T> data() {
    check_native_size(sizeof(T));
    return {reinterpret_cast<T*>(data_.data()), data_.size() / sizeof(T)};
  }
  template <typename T>
  std::span<const T> data() const {
    check_native_size(sizeof(T));
    return {reinterpret_cast<const T*>(data_.data()), data_.size() / sizeof(T)};
  }

  // Tuple elements.
  std::vector<Literal>& elements() { return elements_; }
  const std::vector<Literal>& elements() const { return elements_; }

  // Element access through double / int64 (any array type); set_* converts as
  // `convert` would (16-bit floats round to nearest even, ints wrap).
  double get_as_double(int64_t index) const;
  int64_t get_as_int64(int64_t index) const;
  uint64_t get_as_uint64(int64_t index) const;
  void set_from_double(int64_t index, double v);
  void set_from_int64(int64_t index, int64_t v);
  void set_from_uint64(int64_t index, uint64_t v);

  // Bitwise equality of shape (without layout) and data.
  bool operator==(const Literal& other) const;

  // XLA literal text for the value only, e.g. {{1, 2}, {3, 4}} or (1, {2, 3}).
  std::string to_string() const;

 private:
  void check_native_size(size_t size) const;

  Shape shape_;
  std::vector<std::byte> data_;
  std::vector<Literal> elements_;
};

// Row-major multi-index iteration: calls f(index) for every index of dims, last
// dimension fastest. Returns without calling f when any dimension is 0.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  for (int64_t d : dims)
    if (d == 0) return;
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(index));
    int64_t i = static_cast<int64_t>(dims.size()) - 1;
    for (; i >= 0; --i) {
      if (++index[static_cast<size_t>(i)] < dims[static_cast<size_t>(i)]) break;
      index[static_cast<size_t>(i)] = 0;
    }
    if (i < 0) return;
  }
}

// Row-major linear offset of index within dims.
inline int64_t linear_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) offset = offset * dims[i] + index[i];
  return offset;
}

}  // namespace podsim::ir
