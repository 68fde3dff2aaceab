// Shape inference entry point, shared helpers, and the elementwise opcodes. The other
// opcode groups live in shape_inference_*.cc.
#include "compiler/ir/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir {
namespace infer {

// Real modules nest tuples a few levels deep; this bounds recursion on hostile input.
constexpr int kMaxTupleDepth = 64;

std::string str(const Shape& shape) { return shape.to_string(/*print_layout=*/false); }

std::string str(const std::vector<int64_t>& values) {
  return fmt::format("{{{}}}", fmt::join(values, ","));
}

namespace {

void validate_shape_at(const Shape& shape, std::string_view what, int depth) {
  if (depth > kMaxTupleDepth) fail("{} nests tuples deeper than {} levels", what, kMaxTupleDepth);
  if (shape.is_tuple()) {
    for (const Shape& e : shape.elements()) validate_shape_at(e, what, depth + 1);
    return;
  }
  if (checked_num_elements(shape.dims()) < 0)
    fail("{} has an invalid shape {} (negative dimension or more than 2^40 elements)", what,
         str(shape));
}

}  // namespace

void validate_shape(const Shape& shape, std::string_view what) {
  validate_shape_at(shape, what, 0);
}

int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("size arithmetic overflows ({} + {})", a, b);
  return r;
}

int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("size arithmetic overflows ({} * {})", a, b);
  return r;
}

Shape without_layout(const Shape& shape) {
  Shape s = shape;
  s.clear_layout();
  return s;
}

Shape make_shape(PrimitiveType type, std::vector<int64_t> dims) {
  Shape s(type, std::move(dims));
  if (checked_num_elements(s.dims()) < 0)
    fail("result shape {} is invalid (negative dimension or more than 2^40 elements)", str(s));
  return s;
}

const Shape& operand_shape(const Instruction& inst, int64_t i) {
  if (i < 0 || i >= inst.operand_count()) fail("operand {} is missing", i);
  const Instruction* op = inst.operand(i);
  if (!op) fail("operand {} is missing", i);
  return op->shape();
}

void expect_operand_count(const Instruction& inst, int64_t count) {
  if (inst.operand_count() != count)
    fail("expects {} operand{}, got {}", count, count == 1 ? "" : "s", inst.operand_count());
}

void expect_array(const Shape& shape, std::string_view what) {
  if (!shape.is_array()) fail("{} must be an array, got {}", what, str(shape));
}

void expect_scalar(const Shape& shape, std::string_view what) {
  if (!shape.is_scalar()) fail("{} must be a scalar, got {}", what, str(shape));
}

void check_dims(const std::vector<int64_t>& dims, int64_t rank, std::string_view what) {
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      fail("{} {} has dimension {} out of range [0, {})", what, str(dims), d, rank);
    if (!seen.insert(d).second) fail("{} {} repeats dimension {}", what, str(dims), d);
  }
}

void check_sorted(const std::vector<int64_t>& dims, std::string_view what) {
  if (!std::is_sorted(dims.begin(), dims.end())) fail("{} {} must be sorted", what, str(dims));
}

bool contains(const std::vector<int64_t>& values, int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

void expect_called_count(const Instruction& inst, int64_t count) {
  auto n = static_cast<int64_t>(inst.called().size());
  if (n != count) fail("expects {} called computation{}, got {}", count, count == 1 ? "" : "s", n);
}

const Computation& called_computation(const Instruction& inst, int64_t i) {
  if (i < 0 || i >= static_cast<int64_t>(inst.called().size()) || !inst.called(i))
    fail("called computation {} is missing", i);
  return *inst.called(i);
}

std::vector<Shape> parameter_shapes(const Computation& c) {
  std::map<int64_t, const Instruction*> by_number;
  for (const auto& i : c.instructions()) {
    if (i->opcode() != Opcode::kParameter) continue;
    int64_t n = i->attrs().parameter_number;
    if (n < 0) fail("computation {} has a negative parameter number {}", c.name(), n);
    if (!by_number.emplace(n, i.get()).second)
      fail("computation {} has parameter number {} twice", c.name(), n);
  }
  std::vector<Shape> shapes;
  for (const auto& [n, param] : by_number) {
    if (n != static_cast<int64_t>(shapes.size()))
      fail("computation {} has no parameter {}", c.name(), shapes.size());
    shapes.push_back(param->shape());
  }
  return shapes;
}

const Shape& root_shape(const Computation& c) {
  if (!c.root()) fail("computation {} has no root", c.name());
  return c.root()->shape();
}

namespace {

std::string signature(const std::vector<Shape>& params, const Shape* result) {
  std::vector<std::string> names;
  for (const Shape& p : params) names.push_back(str(p));
  std::string out = fmt::format("({})", fmt::join(names, ", "));
  if (result) out += " -> " + str(*result);
  return out;
}

}  // namespace

void check_signature(const Computation& c, const std::vector<Shape>& params, const Shape* result,
                     std::string_view role) {
  std::vector<Shape> actual = parameter_shapes(c);
  const Shape& root = root_shape(c);
  bool ok = actual.size() == params.size() && (!result || root.compatible(*result));
  for (size_t i = 0; ok && i < params.size(); ++i) ok = actual[i].compatible(params[i]);
  if (!ok)
    fail("{} computation {} has signature {}, expected {}", role, c.name(),
         signature(actual, result ? &root : nullptr), signature(params, result));
}

void check_reducer(const Computation& c, const std::vector<PrimitiveType>& accumulator_types,
                   const std::vector<PrimitiveType>& input_types, std::string_view role) {
  std::vector<Shape> params;
  std::vector<Shape> results;
  for (PrimitiveType t : accumulator_types) {
    params.push_back(Shape::scalar(t));
    results.push_back(Shape::scalar(t));
  }
  for (PrimitiveType t : input_types) params.push_back(Shape::scalar(t));
  Shape result = results.size() == 1 ? results[0] : Shape::tuple(results);
  check_signature(c, params, &result, role);
}

std::vector<int64_t> window_output_dims(const Shape& base, const Window& window) {
  if (static_cast<int64_t>(window.dims.size()) != base.rank())
    fail("window has {} dimensions but the operand {} has rank {}", window.dims.size(), str(base),
         base.rank());
  std::vector<int64_t> out;
  for (size_t i = 0; i < window.dims.size(); ++i) {
    const WindowDim& w = window.dims[i];
    if (w.size <= 0) fail("window dimension {} has non-positive size {}", i, w.size);
    if (w.stride <= 0) fail("window dimension {} has non-positive stride {}", i, w.stride);
    if (w.lhs_dilation < 1) fail("window dimension {} has base dilation {} < 1", i, w.lhs_dilation);
    if (w.rhs_dilation < 1)
      fail("window dimension {} has window dilation {} < 1", i, w.rhs_dilation);
    int64_t d = base.dim(static_cast<int64_t>(i));
    int64_t dilated_base = d == 0 ? 0 : add_checked(mul_checked(d - 1, w.lhs_dilation), 1);
    int64_t padded = add_checked(add_checked(dilated_base, w.pad_low), w.pad_high);
    if (padded < 0)
      fail("window dimension {}: padding {}_{} makes the padded size {} negative", i, w.pad_low,
           w.pad_high, padded);
    int64_t dilated_window = add_checked(mul_checked(w.size - 1, w.rhs_dilation), 1);
    out.push_back(dilated_window > padded ? 0 : (padded - dilated_window) / w.stride + 1);
  }
  return out;
}

namespace {

bool is_float_only_unary(Opcode op) {
  switch (op) {
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kCbrt:
    case Opcode::kTanh:
    case Opcode::kLogistic:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTan:
    case Opcode::kErf:
    case Opcode::kFloor:
    case Opcode::kCeil:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kIsFinite:
      return true;
    default:
      return false;
  }
}

Shape infer_bitcast_convert(const Shape& in, const Shape& declared) {
  expect_array(declared, "result");
  PrimitiveType to = declared.type();
  int in_bits = type_bit_width(in.type());
  int out_bits = type_bit_width(to);
  if (in_bits == out_bits) return Shape(to, in.dims());
  if (std::max(in_bits, out_bits) % std::min(in_bits, out_bits) != 0)
    fail("cannot bitcast {} to {}: bit widths {} and {} do not divide", type_name(in.type()),
         type_name(to), in_bits, out_bits);
  if (in_bits > out_bits) {
    // Each wide element becomes a new minor dimension of narrow ones.
    std::vector<int64_t> dims = in.dims();
    dims.push_back(in_bits / out_bits);
    return make_shape(to, std::move(dims));
  }
  int64_t ratio = out_bits / in_bits;
  if (in.rank() == 0 || in.dims().back() != ratio)
    fail("bitcast of {} to {} needs a last dimension of {} (the ratio of bit widths)", str(in),
         type_name(to), ratio);
  std::vector<int64_t> dims = in.dims();
  dims.pop_back();
  return Shape(to, std::move(dims));
}

void check_comparison_type(ComparisonType ct, PrimitiveType t) {
  bool ok = true;
  switch (ct) {
    case ComparisonType::kDefault:
      break;
    case ComparisonType::kFloat:
    case ComparisonType::kTotalOrder:
      ok = is_float(t);
      break;
    case ComparisonType::kSigned:
      ok = is_signed_int(t);
      break;
    case ComparisonType::kUnsigned:
      ok = is_unsigned_int(t) || t == PrimitiveType::kPred;
      break;
  }
  if (!ok)
    fail("comparison type {} does not apply to {} operands", comparison_type_name(ct),
         type_name(t));
}

Shape infer_unary(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand");
  PrimitiveType t = in.type();
  Opcode op = inst.opcode();
  if (op == Opcode::kConvert) {
    expect_array(inst.shape(), "result");
    return Shape(inst.shape().type(), in.dims());
  }
  if (op == Opcode::kBitcastConvert) return infer_bitcast_convert(in, inst.shape());
  if (is_float_only_unary(op)) {
    if (!is_float(t)) fail("operand type {} is not a floating-point type", type_name(t));
    return Shape(op == Opcode::kIsFinite ? PrimitiveType::kPred : t, in.dims());
  }
  switch (op) {
    case Opcode::kNot:
      if (t != PrimitiveType::kPred && !is_integral(t))
        fail("operand type {} is not pred or an integer type", type_name(t));
      break;
    case Opcode::kPopcnt:
    case Opcode::kClz:
      if (!is_integral(t)) fail("operand type {} is not an integer type", type_name(t));
      break;
    case Opcode::kNegate:
      if (!is_integral(t) && !is_float(t))
        fail("operand type {} is not an integer or floating-point type", type_name(t));
      break;
    case Opcode::kAbs:
    case Opcode::kSign:
      if (!is_signed_int(t) && !is_float(t))
        fail("operand type {} is not a signed integer or floating-point type", type_name(t));
      break;
    default:
      fail("internal: {} is not a unary opcode", opcode_name(op));
  }
  return Shape(t, in.dims());
}

Shape infer_binary(const Instruction& inst) {
  const Shape& lhs = operand_shape(inst, 0);
  const Shape& rhs = operand_shape(inst, 1);
  expect_array(lhs, "lhs");
  expect_array(rhs, "rhs");
  if (!lhs.compatible(rhs)) fail("operand shapes {} and {} differ", str(lhs), str(rhs));
  PrimitiveType t = lhs.type();
  switch (inst.opcode()) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      if (t != PrimitiveType::kPred && !is_integral(t))
        fail("operand type {} is not pred or an integer type", type_name(t));
      break;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      if (!is_integral(t)) fail("operand type {} is not an integer type", type_name(t));
      break;
    case Opcode::kAtan2:
      if (!is_float(t)) fail("operand type {} is not a floating-point type", type_name(t));
      break;
    case Opcode::kCompare:
      check_comparison_type(inst.attrs().comparison_type, t);
      return Shape(PrimitiveType::kPred, lhs.dims());
    default:
      break;
  }
  return Shape(t, lhs.dims());
}

Shape infer_clamp(const Instruction& inst) {
  const Shape& min = operand_shape(inst, 0);
  const Shape& x = operand_shape(inst, 1);
  const Shape& max = operand_shape(inst, 2);
  expect_array(x, "operand");
  for (const Shape* bound : {&min, &max}) {
    const char* which = bound == &min ? "min" : "max";
    expect_array(*bound, which);
    if (bound->type() != x.type() || (!bound->is_scalar() && bound->dims() != x.dims()))
      fail("{} {} must be a scalar or the operand's shape {}", which, str(*bound), str(x));
  }
  return Shape(x.type(), x.dims());
}

Shape infer_select(const Instruction& inst) {
  const Shape& pred = operand_shape(inst, 0);
  const Shape& on_true = operand_shape(inst, 1);
  const Shape& on_false = operand_shape(inst, 2);
  expect_array(on_true, "on_true");
  expect_array(on_false, "on_false");
  if (!on_true.compatible(on_false))
    fail("on_true {} and on_false {} differ", str(on_true), str(on_false));
  expect_array(pred, "predicate");
  if (pred.type() != PrimitiveType::kPred) fail("predicate {} must be of type pred", str(pred));
  if (!pred.is_scalar() && pred.dims() != on_true.dims())
    fail("predicate {} must be a scalar or have the dimensions of {}", str(pred), str(on_true));
  return Shape(on_true.type(), on_true.dims());
}

}  // namespace

Shape infer_elementwise(const Instruction& inst) {
  switch (opcode_arity(inst.opcode())) {
    case 1:
      return infer_unary(inst);
    case 2:
      return infer_binary(inst);
    default:
      return inst.opcode() == Opcode::kClamp ? infer_clamp(inst) : infer_select(inst);
  }
}

namespace {

Shape dispatch(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kIota:
      return infer_source(inst);
    case Opcode::kBroadcast:
      return infer_broadcast(inst);
    case Opcode::kReshape:
      return infer_reshape(inst);
    case Opcode::kTranspose:
      return infer_transpose(inst);
    case Opcode::kSlice:
      return infer_slice(inst);
    case Opcode::kDynamicSlice:
      return infer_dynamic_slice(inst);
    case Opcode::kDynamicUpdateSlice:
      return infer_dynamic_update_slice(inst);
    case Opcode::kConcatenate:
      return infer_concatenate(inst);
    case Opcode::kPad:
      return infer_pad(inst);
    case Opcode::kReverse:
      return infer_reverse(inst);
    case Opcode::kReducePrecision:
      return infer_reduce_precision(inst);
    case Opcode::kCopy:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
      return without_layout(operand_shape(inst, 0));
    case Opcode::kBitcast:
      return infer_bitcast(inst);
    case Opcode::kReduce:
      return infer_reduce(inst);
    case Opcode::kReduceWindow:
      return infer_reduce_window(inst);
    case Opcode::kSelectAndScatter:
      return infer_select_and_scatter(inst);
    case Opcode::kDot:
      return infer_dot(inst);
    case Opcode::kConvolution:
      return infer_convolution(inst);
    case Opcode::kGather:
      return infer_gather(inst);
    case Opcode::kScatter:
      return infer_scatter(inst);
    case Opcode::kSort:
      return infer_sort(inst);
    case Opcode::kMap:
      return infer_map(inst);
    case Opcode::kTopK:
      return infer_topk(inst);
    case Opcode::kCopyStart:
      return infer_copy_start(inst);
    case Opcode::kCopyDone:
      return infer_copy_done(inst);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return infer_batch_norm(inst);
    case Opcode::kTuple:
      return infer_tuple(inst);
    case Opcode::kGetTupleElement:
      return infer_get_tuple_element(inst);
    case Opcode::kCall:
    case Opcode::kFusion:
      return infer_call(inst);
    case Opcode::kWhile:
      return infer_while(inst);
    case Opcode::kConditional:
      return infer_conditional(inst);
    case Opcode::kCustomCall:
      return infer_custom_call(inst);
    case Opcode::kRngBitGenerator:
      return infer_rng_bit_generator(inst);
    case Opcode::kAllReduce:
      return infer_all_reduce(inst);
    case Opcode::kAllGather:
      return infer_all_gather(inst);
    case Opcode::kReduceScatter:
      return infer_reduce_scatter(inst);
    case Opcode::kAllToAll:
      return infer_all_to_all(inst);
    case Opcode::kCollectivePermute:
      return infer_collective_permute(inst);
    case Opcode::kCollectiveBroadcast:
      return infer_collective_broadcast(inst);
    case Opcode::kAllReduceStart:
    case Opcode::kAllGatherStart:
    case Opcode::kCollectivePermuteStart:
      return infer_async_start(inst);
    case Opcode::kAllReduceDone:
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
      return infer_async_done(inst);
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      return infer_generic_async(inst);
    case Opcode::kReplicaId:
    case Opcode::kPartitionId:
      return Shape::scalar(PrimitiveType::kU32);
    default:
      if (is_elementwise(inst.opcode())) return infer_elementwise(inst);
      fail("internal: no shape inference for opcode {}", opcode_name(inst.opcode()));
  }
}

}  // namespace
}  // namespace infer

Shape infer_shape(const Instruction& instruction) {
  try {
    int arity = opcode_arity(instruction.opcode());
    if (arity != kVariadic) infer::expect_operand_count(instruction, arity);
    for (int64_t i = 0; i < instruction.operand_count(); ++i)
      infer::validate_shape(infer::operand_shape(instruction, i), fmt::format("operand {}", i));
    return infer::dispatch(instruction);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", opcode_name(instruction.opcode()), e.what()));
  }
}

}  // namespace podsim::ir
