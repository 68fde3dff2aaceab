// Shapes: an element type with static dimensions (and an optional layout), or a tuple
// of shapes. Layouts are accepted and kept so that printed modules keep them, but all
// computation in the IR is on the logical (row-major) index space.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/types.h"

namespace podsim::ir {

struct Layout {
  std::vector<int64_t> minor_to_major;
  // Anything after ':' inside the braces (tiling, memory space), kept verbatim.
  std::string extra;

  bool operator==(const Layout&) const = default;
};

class Shape {
 public:
  Shape() = default;
  Shape(PrimitiveType type, std::vector<int64_t> dims) : type_(type), dims_(std::move(dims)) {}
  static Shape tuple(std::vector<Shape> elements);
  static Shape scalar(PrimitiveType type) { return Shape(type, {}); }

  PrimitiveType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int64_t i) const { return dims_.at(static_cast<size_t>(i)); }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  bool is_tuple() const { return type_ == PrimitiveType::kTuple; }
  bool is_array() const { return !is_tuple(); }
  bool is_scalar() const { return is_array() && dims_.empty(); }

  const std::vector<Shape>& elements() const { return elements_; }
  const Shape& element(int64_t i) const { return elements_.at(static_cast<size_t>(i)); }
  int64_t tuple_size() const { return static_cast<int64_t>(elements_.size()); }

  bool has_layout() const { return has_layout_; }
  const Layout& layout() const { return layout_; }
  void set_layout(Layout layout) {
    layout_ = std::move(layout);
    has_layout_ = true;
  }
  void clear_layout();  // recursively

  void set_type(PrimitiveType t) { type_ = t; }
  std::vector<int64_t>& mutable_dims() { return dims_; }
  std::vector<Shape>& mutable_elements() { return elements_; }

  // Number of elements of an array shape (1 for a scalar). Callers that build shapes
  // from untrusted input check sizes with checked_num_elements first.
  int64_t num_elements() const;
  int64_t byte_size() const;  // array: elements * element size; tuple: 0

  // Same type, dims and tuple structure; layouts ignored.
  bool compatible(const Shape& other) const;
  // compatible() and equal layouts where both sides have one.
  bool operator==(const Shape& other) const;

  // XLA text form: f32[2,3]{1,0}, (f32[], s32[4]), pred[].
  std::string to_string(bool print_layout = true) const;

 private:
  PrimitiveType type_ = PrimitiveType::kF32;
  std::vector<int64_t> dims_;
  std::vector<Shape> elements_;
  Layout layout_;
  bool has_layout_ = false;
};

// Largest element count any single array may have (2^40): beyond this a shape is
// rejected as absurd rather than risking overflow in size arithmetic.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// Element count of dims, or -1 when a dimension is negative or the product exceeds
// kMaxElements.
int64_t checked_num_elements(const std::vector<int64_t>& dims);

// Row-major strides (in elements) of dims.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);

}  // namespace podsim::ir
