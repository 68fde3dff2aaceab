#include "compiler/ir/shape.h"

#include <fmt/format.h>

namespace podsim::ir {

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape s;
  s.type_ = PrimitiveType::kTuple;
  s.elements_ = std::move(elements);
  return s;
}

void Shape::clear_layout() {
  has_layout_ = false;
  layout_ = Layout{};
  for (Shape& e : elements_) e.clear_layout();
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

int64_t Shape::byte_size() const {
  return is_tuple() ? 0 : num_elements() * type_byte_size(type_);
}

bool Shape::compatible(const Shape& other) const {
  if (type_ != other.type_) return false;
  if (is_tuple()) {
    if (elements_.size() != other.elements_.size()) return false;
    for (size_t i = 0; i < elements_.size(); ++i)
      if (!elements_[i].compatible(other.elements_[i])) return false;
    return true;
  }
  return dims_ == other.dims_;
}

bool Shape::operator==(const Shape& other) const {
  if (!compatible(other)) return false;
  if (is_tuple()) {
    for (size_t i = 0; i < elements_.size(); ++i)
      if (!(elements_[i] == other.elements_[i])) return false;
    return true;
  }
  if (has_layout_ && other.has_layout_) return layout_ == other.layout_;
  return true;
}

std::string Shape::to_string(bool print_layout) const {
  if (is_tuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].to_string(print_layout);
    }
    return out + ")";
  }
  std::string out = fmt::format("{}[{}]", type_name(type_), fmt::join(dims_, ","));
  if (print_layout && has_layout_) {
    out += fmt::format("{{{}", fmt::join(layout_.minor_to_major, ","));
    if (!layout_.extra.empty()) out += ":" + layout_.extra;
    out += "}";
  }
  return out;
}

int64_t checked_num_elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxElements) return -1;
    if (d == 0) n = 0;
    else if (n > kMaxElements / d) return -1;
    else n *= d;
  }
  return n;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

}  // namespace podsim::ir
