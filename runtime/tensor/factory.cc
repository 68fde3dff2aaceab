// Creation ops: full, zeros, ones, arange. Fill values, starts and steps are graph
// parameters; only the shapes they imply are part of the graph.
#include <cmath>

#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;

Dims checked_shape(const OpSite& site, const std::vector<int64_t>& shape) {
  if (ir::checked_num_elements(shape) < 0)
    lazy::op_fail(site, "shape {} is invalid (a negative dimension, or too many elements)",
                  lazy::shape_string(DType::kF32, shape));
  return Dims(shape);
}

DType value_dtype(Scalar value) {
  switch (value.kind()) {
    case Scalar::Kind::kBool:
      return DType::kPred;
    case Scalar::Kind::kInt:
      return DType::kS64;
    case Scalar::Kind::kFloat:
      break;
  }
  return lazy::default_float();
}

// A broadcast node even for a 0-dim result, so that the result is never a bare leaf.
NodePtr fill(const NodePtr& scalar, const Dims& dims, const OpSite& site) {
  return lazy::unary_node(site, ir::Opcode::kBroadcast, scalar->type, dims, scalar);
}

}  // namespace

Tensor full(std::vector<int64_t> shape, Scalar value, TensorOptions options, Loc loc) {
  OpSite site{"full", loc};
  Dims dims = checked_shape(site, shape);
  DType type = options.dtype().value_or(value_dtype(value));
  lazy::ScalarValue v{value.kind() != Scalar::Kind::kFloat, value.to_int(), value.to_double()};
  return lazy::make_result(fill(lazy::make_scalar_leaf(site, type, v), dims, site),
                           options.device(), site);
}

Tensor zeros(std::vector<int64_t> shape, TensorOptions options, Loc loc) {
  OpSite site{"zeros", loc};
  Dims dims = checked_shape(site, shape);
  DType type = options.dtype().value_or(lazy::default_float());
  return lazy::make_result(fill(lazy::make_constant(site, type, 0), dims, site), options.device(),
                           site);
}

Tensor ones(std::vector<int64_t> shape, TensorOptions options, Loc loc) {
  OpSite site{"ones", loc};
  Dims dims = checked_shape(site, shape);
  DType type = options.dtype().value_or(lazy::default_float());
  return lazy::make_result(fill(lazy::make_constant(site, type, 1), dims, site), options.device(),
                           site);
}

Tensor arange(Scalar end, TensorOptions options, Loc loc) {
  return arange(0, end, 1, options, loc);
}

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options, Loc loc) {
  OpSite site{"arange", loc};
  bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  DType type = options.dtype().value_or(integral ? DType::kS64 : lazy::default_float());
  if (type == DType::kPred) lazy::op_fail(site, "bool is not a valid dtype for arange");
  int64_t length = 0;
  if (integral && !ir::is_float(type)) {
    if (step.to_int() == 0) lazy::op_fail(site, "the step must be nonzero");
    int64_t span = end.to_int() - start.to_int();
    int64_t s = step.to_int();
    if (span != 0 && (span > 0) != (s > 0))
      lazy::op_fail(site, "the bounds {} and {} are inconsistent with the step sign of {}",
                    start.to_string(), end.to_string(), step.to_string());
    length = span == 0 ? 0 : (span + s + (s > 0 ? -1 : 1)) / s;
  } else {
    if (step.to_double() == 0) lazy::op_fail(site, "the step must be nonzero");
    double n = std::ceil((end.to_double() - start.to_double()) / step.to_double());
    if (!std::isfinite(n) || n < 0)
      lazy::op_fail(site, "the bounds {} and {} are inconsistent with the step sign of {}",
                    start.to_string(), end.to_string(), step.to_string());
    if (n > static_cast<double>(ir::kMaxElements))
      lazy::op_fail(site, "{} elements are too many", n);
    length = static_cast<int64_t>(n);
  }
  // start + i * step, in f64 for floating types as torch does (then rounded once).
  DType compute = ir::is_float(type) ? DType::kF64 : DType::kS64;
  Dims dims{length};
  NodePtr iota = lazy::make_node(site, ir::Opcode::kIota, compute, dims, {}, {0});
  NodePtr scaled = lazy::elementwise(ir::Opcode::kMultiply, iota,
                                     lazy::scalar_operand(step, compute, site), site);
  NodePtr values =
      lazy::elementwise(ir::Opcode::kAdd, scaled, lazy::scalar_operand(start, compute, site), site);
  return lazy::make_result(lazy::convert(values, type, site), options.device(), site);
}

}  // namespace podsim
