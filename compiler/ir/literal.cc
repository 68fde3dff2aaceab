#include "compiler/ir/literal.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "compiler/ir/native_types.h"

namespace podsim::ir {

Literal::Literal(const Shape& shape) : shape_(shape) {
  shape_.clear_layout();
  if (shape_.is_tuple()) {
    for (const Shape& e : shape_.elements()) elements_.emplace_back(e);
    return;
  }
  int64_t n = checked_num_elements(shape_.dims());
  if (n < 0) fail("shape {} is too large to hold in host memory", shape_.to_string());
  data_.resize(static_cast<size_t>(n * type_byte_size(shape_.type())));
}

Literal Literal::tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal l(Shape::tuple(std::move(shapes)));
  l.elements_ = std::move(elements);
  return l;
}

void Literal::check_native_size(size_t size) const {
  if (shape_.is_tuple() || static_cast<int>(size) != type_byte_size(shape_.type()))
    fail("internal: typed access of size {} to a literal of shape {}", size, shape_.to_string());
}

double Literal::get_as_double(int64_t index) const {
  return visit_type(type(), [&]<typename T>() -> double {
    T v = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_half_v<T>) return static_cast<float>(v);
    else return static_cast<double>(v);
  });
}

int64_t Literal::get_as_int64(int64_t index) const {
  return visit_type(type(), [&]<typename T>() -> int64_t {
    T v = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_float_v<T>) return static_cast<int64_t>(static_cast<double>(widen(v)));
    else return static_cast<int64_t>(v);
  });
}

uint64_t Literal::get_as_uint64(int64_t index) const {
  return visit_type(type(), [&]<typename T>() -> uint64_t {
    T v = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_float_v<T>) return static_cast<uint64_t>(static_cast<double>(widen(v)));
    else return static_cast<uint64_t>(v);
  });
}

void Literal::set_from_double(int64_t index, double v) {
  visit_type(type(), [&]<typename T>() {
    T& slot = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_half_v<T>) slot = T(static_cast<float>(v));
    else if constexpr (std::is_same_v<T, bool>) slot = v != 0;
    else if constexpr (std::is_floating_point_v<T>) slot = static_cast<T>(v);
    else {
      // Out-of-range and NaN values saturate as XLA's convert does; NaN becomes 0.
      if (std::isnan(v)) slot = 0;
      else if (v <= static_cast<double>(std::numeric_limits<T>::min())) slot = std::numeric_limits<T>::min();
      else if (v >= static_cast<double>(std::numeric_limits<T>::max())) slot = std::numeric_limits<T>::max();
      else slot = static_cast<T>(v);
    }
  });
}

void Literal::set_from_int64(int64_t index, int64_t v) {
  visit_type(type(), [&]<typename T>() {
    T& slot = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_half_v<T>) slot = T(static_cast<float>(v));
    else if constexpr (std::is_same_v<T, bool>) slot = v != 0;
    else slot = static_cast<T>(v);
  });
}

void Literal::set_from_uint64(int64_t index, uint64_t v) {
  visit_type(type(), [&]<typename T>() {
    T& slot = data<T>()[static_cast<size_t>(index)];
    if constexpr (is_half_v<T>) slot = T(static_cast<float>(v));
    else if constexpr (std::is_same_v<T, bool>) slot = v != 0;
    else slot = static_cast<T>(v);
  });
}

bool Literal::operator==(const Literal& other) const {
  return shape_.compatible(other.shape_) && data_ == other.data_ && elements_ == other.elements_;
}

namespace {

std::string element_text(const Literal& l, int64_t i) {
  return visit_type(l.type(), [&]<typename T>() -> std::string {
    T v = l.data<T>()[static_cast<size_t>(i)];
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (is_float_v<T>) {
      auto x = widen(v);
      if (std::isnan(x)) return std::signbit(x) ? "-nan" : "nan";
      if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
      return fmt::format("{}", x);  // shortest text that reads back to the same value
    } else if constexpr (sizeof(T) == 1) return fmt::format("{}", static_cast<int>(v));
    else return fmt::format("{}", v);
  });
}

void array_text(const Literal& l, size_t dim, int64_t& next, std::string& out) {
  const auto& dims = l.shape().dims();
  if (dim == dims.size()) {
    out += element_text(l, next++);
    return;
  }
  out += '{';
  for (int64_t i = 0; i < dims[dim]; ++i) {
    if (i) out += ", ";
    array_text(l, dim + 1, next, out);
  }
  out += '}';
}

}  // namespace

std::string Literal::to_string() const {
  if (shape_.is_tuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].to_string();
    }
    return out + ")";
  }
  std::string out;
  int64_t next = 0;
  array_text(*this, 0, next, out);
  return out;
}

}  // namespace podsim::ir
