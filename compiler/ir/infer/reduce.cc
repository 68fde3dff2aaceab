// Shape inference of reductions, windowed ops, sort, topk, map and batch norm: reduce,
// reduce-window, select-and-scatter, sort, topk, map, batch-norm-training/-inference/-grad.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {
namespace {

struct ReduceOperands {
  int64_t count = 0;  // N: inputs, each with one init value
  std::vector<PrimitiveType> input_types;
  std::vector<PrimitiveType> init_types;
};

// N array inputs of equal dimensions followed by N scalar init values.
ReduceOperands split_reduce_operands(const Instruction& inst) {
  int64_t n = inst.operand_count();
  if (n == 0 || n % 2 != 0) fail("expects N inputs followed by N init values, got {} operands", n);
  ReduceOperands r;
  r.count = n / 2;
  const Shape& first = operand_shape(inst, 0);
  for (int64_t i = 0; i < r.count; ++i) {
    const Shape& in = operand_shape(inst, i);
    expect_array(in, fmt::format("input {}", i));
    if (in.dims() != first.dims())
      fail("input {} {} must have the dimensions of input 0 {}", i, str(in), str(first));
    const Shape& init = operand_shape(inst, r.count + i);
    expect_scalar(init, fmt::format("init value {}", i));
    r.input_types.push_back(in.type());
    r.init_types.push_back(init.type());
  }
  return r;
}

Shape tuple_if_many(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::tuple(std::move(shapes));
}

void reject_reversal(const Window& window) {
  for (size_t i = 0; i < window.dims.size(); ++i)
    if (window.dims[i].reversal)
      fail("window dimension {} is reversed (only convolution allows that)", i);
}

const Window& window_of(const Instruction& inst) {
  if (!inst.attrs().window) fail("has no window");
  return *inst.attrs().window;
}

}  // namespace

Shape infer_reduce(const Instruction& inst) {
  ReduceOperands r = split_reduce_operands(inst);
  const Shape& input = operand_shape(inst, 0);
  const auto& reduced = inst.attrs().dimensions;
  check_dims(reduced, input.rank(), "dimensions");
  expect_called_count(inst, 1);
  check_reducer(called_computation(inst, 0), r.init_types, r.input_types, "to_apply");
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < input.rank(); ++d)
    if (!contains(reduced, d)) kept.push_back(input.dim(d));
  std::vector<Shape> results;
  for (PrimitiveType t : r.init_types) results.emplace_back(t, kept);
  return tuple_if_many(std::move(results));
}

Shape infer_reduce_window(const Instruction& inst) {
  ReduceOperands r = split_reduce_operands(inst);
  const Window& window = window_of(inst);
  reject_reversal(window);
  std::vector<int64_t> dims = window_output_dims(operand_shape(inst, 0), window);
  expect_called_count(inst, 1);
  check_reducer(called_computation(inst, 0), r.init_types, r.input_types, "to_apply");
  std::vector<Shape> results;
  for (PrimitiveType t : r.init_types) results.emplace_back(t, dims);
  return tuple_if_many(std::move(results));
}

Shape infer_select_and_scatter(const Instruction& inst) {
  const Shape& operand = operand_shape(inst, 0);
  const Shape& source = operand_shape(inst, 1);
  const Shape& init = operand_shape(inst, 2);
  expect_array(operand, "operand");
  expect_array(source, "source");
  expect_scalar(init, "init value");
  PrimitiveType t = operand.type();
  if (init.type() != t)
    fail("init value {} must have the operand's type {}", str(init), type_name(t));
  const Window& window = window_of(inst);
  reject_reversal(window);
  Shape windowed(t, window_output_dims(operand, window));
  if (!source.compatible(windowed))
    fail("source {} must have the windowed operand's shape {}", str(source), str(windowed));
  expect_called_count(inst, 2);
  Shape pred = Shape::scalar(PrimitiveType::kPred);
  Shape scalar = Shape::scalar(t);
  check_signature(called_computation(inst, 0), {scalar, scalar}, &pred, "select");
  check_signature(called_computation(inst, 1), {scalar, scalar}, &scalar, "scatter");
  return Shape(t, operand.dims());
}

Shape infer_sort(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  const Shape& first = operand_shape(inst, 0);
  std::vector<Shape> params;
  std::vector<Shape> results;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const Shape& s = operand_shape(inst, i);
    expect_array(s, fmt::format("operand {}", i));
    if (s.dims() != first.dims())
      fail("operand {} {} must have the dimensions of operand 0 {}", i, str(s), str(first));
    params.push_back(Shape::scalar(s.type()));
    params.push_back(Shape::scalar(s.type()));
    results.emplace_back(s.type(), s.dims());
  }
  const auto& dims = inst.attrs().dimensions;
  if (dims.size() != 1) fail("dimensions {} must name exactly one dimension", str(dims));
  check_dims(dims, first.rank(), "dimensions");
  expect_called_count(inst, 1);
  Shape pred = Shape::scalar(PrimitiveType::kPred);
  check_signature(called_computation(inst, 0), params, &pred, "comparator");
  return tuple_if_many(std::move(results));
}

// map: the computation applied to the operands' elements at each index (XLA's
// dimensions list every dimension, in order).
Shape infer_map(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  const Shape& first = operand_shape(inst, 0);
  std::vector<Shape> params;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const Shape& s = operand_shape(inst, i);
    expect_array(s, fmt::format("operand {}", i));
    if (s.dims() != first.dims())
      fail("operand {} {} must have the dimensions of operand 0 {}", i, str(s), str(first));
    params.push_back(Shape::scalar(s.type()));
  }
  const auto& dims = inst.attrs().dimensions;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != static_cast<int64_t>(d) || dims.size() != static_cast<size_t>(first.rank()))
      fail("dimensions {} must list every dimension of the operands in order", str(dims));
  expect_called_count(inst, 1);
  check_signature(called_computation(inst, 0), params, nullptr, "mapped");
  const Shape& root = root_shape(called_computation(inst, 0));
  if (!root.is_scalar()) fail("the mapped computation must return a scalar, not {}", str(root));
  return Shape(root.type(), first.dims());
}

// XLA's batch norm: operand, then per-feature arrays of its type. Training takes
// (operand, scale, offset) and gives (normalized, mean, variance); inference takes
// (operand, scale, offset, mean, variance) and gives the normalized operand; grad takes
// (operand, scale, mean, variance, grad_output) and gives (grad_operand, grad_scale,
// grad_offset).
Shape infer_batch_norm(const Instruction& inst) {
  const Opcode op = inst.opcode();
  expect_operand_count(inst, op == Opcode::kBatchNormTraining ? 3 : 5);
  const Shape& operand = operand_shape(inst, 0);
  expect_array(operand, "operand");
  if (!is_float(operand.type())) fail("operand {} must have a floating-point type", str(operand));
  const int64_t f = inst.attrs().feature_index;
  if (f < 0 || f >= operand.rank())
    fail("feature_index {} is not a dimension of operand {}", f, str(operand));
  if (!(inst.attrs().epsilon >= 0)) fail("epsilon {} must be at least 0", inst.attrs().epsilon);
  const Shape feature(operand.type(), {operand.dim(f)});
  static constexpr const char* kNames[3][5] = {
      {"operand", "scale", "offset"},
      {"operand", "scale", "offset", "mean", "variance"},
      {"operand", "scale", "mean", "variance", "grad_output"}};
  const int which = op == Opcode::kBatchNormTraining    ? 0
                    : op == Opcode::kBatchNormInference ? 1
                                                        : 2;
  for (int64_t k = 1; k < inst.operand_count(); ++k) {
    const bool whole = which == 2 && k == 4;  // grad_output: the operand's shape
    const Shape& s = operand_shape(inst, k);
    if (!s.compatible(whole ? operand : feature))
      fail("{} {} must be {}", kNames[which][k], str(s), str(whole ? operand : feature));
  }
  const Shape normalized = without_layout(operand);
  return which == 1 ? normalized : Shape::tuple({normalized, feature, feature});
}

// XLA's topk: the k largest (largest=false: smallest) elements along the last dimension
// and their positions.
Shape infer_topk(const Instruction& inst) {
  expect_operand_count(inst, 1);
  const Shape& operand = operand_shape(inst, 0);
  expect_array(operand, "operand");
  if (operand.rank() < 1)
    fail("operand {} must have a dimension to take the top k along", str(operand));
  const int64_t k = inst.attrs().k;
  if (k < 0 || k > operand.dims().back())
    fail("k={} must be between 0 and the last dimension of operand {}", k, str(operand));
  std::vector<int64_t> dims = operand.dims();
  dims.back() = k;
  return Shape::tuple({Shape(operand.type(), dims), Shape(PrimitiveType::kS32, dims)});
}

}  // namespace podsim::ir::infer
