// Elementwise ops: arithmetic, comparisons, where, clamp, activations, and the
// operators. Operands are promoted to torch's result type and broadcast; C++ scalars
// become graph parameters.
#include <array>
#include <cmath>
#include <numbers>

#include "runtime/autograd/internal.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;
using lazy::TensorImpl;
using D = ir::ComparisonDirection;
using ir::Opcode;

struct Arg {
  Arg(const Tensor& t) : tensor(&t) {}  // NOLINT: implicit by design
  Arg(Scalar s) : scalar(s) {}          // NOLINT: implicit by design
  const Tensor* tensor = nullptr;
  Scalar scalar = 0;
};

enum class Compute {
  kPromoted,       // torch's result type
  kFloatPromoted,  // the result type, or the default float type if that is integral
};

struct Prepared {
  pjrt::Device* device = nullptr;
  DType type = DType::kF32;
  Dims dims;
  std::array<NodePtr, 3> values;
};

// Rank-0 values stay rank 0: elementwise nodes broadcast them.
NodePtr stretch(NodePtr v, const Dims& dims, const OpSite& site) {
  return v->dims.empty() ? v : lazy::broadcast_to(std::move(v), dims, site);
}

// Checks devices, promotes types, broadcasts shapes; the values come out in the
// computation type with the common shape.
Prepared prepare(const OpSite& site, std::initializer_list<Arg> args,
                 Compute compute = Compute::kPromoted) {
  Prepared p;
  std::array<lazy::TypeOperand, 3> types{};
  size_t count = 0;
  const TensorImpl* first = nullptr;
  for (const Arg& arg : args) {
    if (arg.tensor == nullptr) {
      types[count++] = lazy::type_operand(arg.scalar);
      continue;
    }
    const TensorImpl& impl = lazy::checked(*arg.tensor, site);
    types[count++] = lazy::type_operand(impl);
    if (first == nullptr) {
      first = &impl;
      p.dims = impl.dims;
    } else {
      if (impl.device != first->device)
        lazy::op_fail(site, "expected all tensors on one device, but found {} ({}) and {} ({})",
                      lazy::device_name(first->device), lazy::impl_shape_string(*first),
                      lazy::device_name(impl.device), lazy::impl_shape_string(impl));
      p.dims = lazy::broadcast_dims(site, first->type, p.dims, impl.type, impl.dims);
    }
  }
  p.device = first->device;
  p.type = lazy::result_type(std::span<const lazy::TypeOperand>(types.data(), count));
  if (compute == Compute::kFloatPromoted && !ir::is_float(p.type)) p.type = lazy::default_float();
  size_t i = 0;
  for (const Arg& arg : args) {
    if (arg.tensor != nullptr)
      p.values[i++] =
          stretch(lazy::convert(lazy::value_of(*arg.tensor, site), p.type, site), p.dims, site);
    else
      p.values[i++] = lazy::scalar_operand(arg.scalar, p.type, site);
  }
  return p;
}

Tensor result(const NodePtr& node, const Prepared& p, const OpSite& site) {
  return lazy::make_result(node, p.device, site);
}

// ---- Derivatives -------------------------------------------------------------------
using Grads = std::vector<Tensor>;

void record_arithmetic(const char* name, Opcode op, const Arg& a, const Arg& b,
                       const Tensor& out) {
  if (!autograd::needs_grad({a.tensor, b.tensor})) return;
  if (autograd::BackwardFn fn =
          autograd::arithmetic_backward(op, {a.tensor, a.scalar}, {b.tensor, b.scalar}, out))
    autograd::record(name, out, {a.tensor, b.tensor}, std::move(fn));
}

// For unary ops whose derivative is a function of the input (x) and the result (y).
template <typename F>
void record_unary(const char* name, const Tensor& x, const Tensor& out, bool save_input,
                  bool save_result, F derivative) {
  if (!autograd::needs_grad({&x})) return;
  autograd::record(name, out, {&x},
                   [x = save_input ? autograd::saved(x) : Tensor(),
                    y = save_result ? autograd::saved(out) : Tensor(),
                    derivative](const Tensor& g) { return Grads{derivative(g, x, y)}; });
}

Tensor arithmetic(const OpSite& site, Opcode op, Arg a, Arg b) {
  Prepared p =
      prepare(site, {a, b}, op == Opcode::kDivide ? Compute::kFloatPromoted : Compute::kPromoted);
  if (p.type == DType::kPred) {
    // pred is 1-bit: torch's bool add is a logical or, bool mul a logical and.
    if (op == Opcode::kAdd)
      op = Opcode::kOr;
    else if (op == Opcode::kMultiply)
      op = Opcode::kAnd;
    else if (op == Opcode::kSubtract)
      lazy::op_fail(site,
                    "subtracting bool tensors is not supported; use logical ops to invert a mask");
    else if (op == Opcode::kPower)
      lazy::op_fail(site, "bool tensors are not supported");
  }
  Tensor out = result(lazy::elementwise(op, p.values[0], p.values[1], site), p, site);
  record_arithmetic(site.op, op, a, b, out);
  return out;
}

Tensor comparison(const OpSite& site, D direction, Arg a, Arg b) {
  Prepared p = prepare(site, {a, b});
  return result(lazy::compare_nodes(direction, p.values[0], p.values[1], site), p, site);
}

// The operand of a unary op in the type it computes in (integral inputs of
// floating-point functions compute in the default float type, as in torch).
struct Unary {
  const TensorImpl* impl;
  NodePtr value;
};
Unary unary_operand(const Tensor& x, const OpSite& site, bool to_float) {
  const TensorImpl& impl = lazy::checked(x, site);
  NodePtr v = lazy::value_of(impl, site);
  if (to_float && !ir::is_float(impl.type)) v = lazy::convert(v, lazy::default_float(), site);
  return {&impl, std::move(v)};
}

Tensor unary_float(const Tensor& x, Opcode op, const OpSite& site) {
  Unary u = unary_operand(x, site, true);
  Tensor out = lazy::make_result(lazy::elementwise(op, u.value, site), u.impl->device, site);
  switch (op) {
    case Opcode::kExp:
      record_unary(site.op, x, out, false, true,
                   [](const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, y); });
      break;
    case Opcode::kLog:
      record_unary(site.op, x, out, true, false,
                   [](const Tensor& g, const Tensor& x, const Tensor&) { return div(g, x); });
      break;
    case Opcode::kSqrt:
      record_unary(
          site.op, x, out, false, true,
          [](const Tensor& g, const Tensor&, const Tensor& y) { return div(g, mul(y, 2)); });
      break;
    case Opcode::kRsqrt:  // d/dx x^-1/2 = -y^3 / 2
      record_unary(site.op, x, out, false, true,
                   [](const Tensor& g, const Tensor&, const Tensor& y) {
                     return mul(g, mul(mul(mul(y, y), y), -0.5));
                   });
      break;
    case Opcode::kTanh:
      record_unary(site.op, x, out, false, true,
                   [](const Tensor& g, const Tensor&, const Tensor& y) {
                     return mul(g, sub(1, mul(y, y)));
                   });
      break;
    case Opcode::kLogistic:
      record_unary(site.op, x, out, false, true,
                   [](const Tensor& g, const Tensor&, const Tensor& y) {
                     return mul(mul(g, sub(1, y)), y);
                   });
      break;
    default:
      break;
  }
  return out;
}

void reject_bool(const TensorImpl& impl, const OpSite& site) {
  if (impl.type == DType::kPred)
    lazy::op_fail(site, "bool tensors are not supported ({})", lazy::impl_shape_string(impl));
}

NodePtr constant_like(double v, const NodePtr& like, const OpSite& site) {
  return lazy::constant_operand(v, like->type, site);
}

// 16-bit floats compute in f32 (as torch does for these composite functions).
NodePtr widen_half(const NodePtr& v, const OpSite& site) {
  if (v->type == DType::kF16 || v->type == DType::kBF16) return lazy::convert(v, DType::kF32, site);
  return v;
}

// 0.5 * erfc(z) for z >= 0 (the Chebyshev fit of Numerical Recipes' erfcc: relative
// error below 1.2e-7 everywhere, tails included).
NodePtr half_erfc(const NodePtr& z, const OpSite& site) {
  static constexpr double kCoefficients[] = {-1.26551223, 1.00002368, 0.37409196,  0.09678418,
                                             -0.18628806, 0.27886807, -1.13520398, 1.48851587,
                                             -0.82215223, 0.17087277};
  auto c = [&](double v) { return constant_like(v, z, site); };
  NodePtr t = lazy::elementwise(
      Opcode::kDivide, c(1.0),
      lazy::elementwise(Opcode::kAdd, c(1.0), lazy::elementwise(Opcode::kMultiply, c(0.5), z, site),
                        site),
      site);
  NodePtr poly = c(kCoefficients[9]);
  for (int i = 8; i >= 0; --i)
    poly = lazy::elementwise(Opcode::kAdd, c(kCoefficients[i]),
                             lazy::elementwise(Opcode::kMultiply, t, poly, site), site);
  NodePtr z2 = lazy::elementwise(Opcode::kMultiply, z, z, site);
  NodePtr e =
      lazy::elementwise(Opcode::kExp, lazy::elementwise(Opcode::kSubtract, poly, z2, site), site);
  return lazy::elementwise(Opcode::kMultiply, c(0.5),
                           lazy::elementwise(Opcode::kMultiply, t, e, site), site);
}

// Phi(x) = 0.5 erfc(-x / sqrt 2), computed from the tail 0.5 erfc(|x| / sqrt 2) so that
// large negative x keeps its relative accuracy.
NodePtr normal_cdf(const NodePtr& v, const OpSite& site) {
  NodePtr z = lazy::elementwise(Opcode::kMultiply, lazy::elementwise(Opcode::kAbs, v, site),
                                constant_like(std::numbers::sqrt2 / 2, v, site), site);
  NodePtr tail = half_erfc(z, site);
  NodePtr positive = lazy::compare_nodes(D::kGe, v, constant_like(0.0, v, site), site);
  return lazy::select_nodes(
      positive,
      lazy::elementwise(Opcode::kSubtract, constant_like(1.0, v, site), tail, site), tail, site);
}

// torch's gelu_backward, in f32 for 16-bit floats.
Tensor gelu_backward(const Tensor& g, const Tensor& x, GeluApproximate approximate) {
  OpSite site{"gelu_backward", Loc::current()};
  const TensorImpl& impl = lazy::checked(x, site);
  NodePtr v = widen_half(lazy::value_of(impl, site), site);
  auto c = [&](double value) { return constant_like(value, v, site); };
  auto mul = [&](const NodePtr& a, const NodePtr& b) {
    return lazy::elementwise(Opcode::kMultiply, a, b, site);
  };
  auto add = [&](const NodePtr& a, const NodePtr& b) {
    return lazy::elementwise(Opcode::kAdd, a, b, site);
  };
  NodePtr square = mul(v, v);
  NodePtr derivative;
  if (approximate == GeluApproximate::kTanh) {
    constexpr double kKappa = 0.044715;
    const double beta = std::sqrt(2.0 / std::numbers::pi);
    NodePtr t = lazy::elementwise(
        Opcode::kTanh, mul(c(beta), add(v, mul(c(kKappa), mul(square, v)))), site);
    NodePtr left = mul(c(0.5), add(c(1.0), t));
    NodePtr sech2 = lazy::elementwise(Opcode::kSubtract, c(1.0), mul(t, t), site);
    NodePtr right =
        mul(mul(mul(c(0.5), v), sech2), mul(c(beta), add(c(1.0), mul(c(3 * kKappa), square))));
    derivative = add(left, right);
  } else {
    // Phi(x) + x phi(x)
    NodePtr pdf = mul(c(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2),
                      lazy::elementwise(Opcode::kExp, mul(c(-0.5), square), site));
    derivative = add(normal_cdf(v, site), mul(v, pdf));
  }
  NodePtr gv = lazy::convert(lazy::value_of(g, site), v->type, site);
  return lazy::make_result(lazy::convert(mul(gv, derivative), impl.type, site), impl.device, site);
}

}  // namespace

// ---- Arithmetic --------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"add", loc}, Opcode::kAdd, a, b);
}
Tensor add(const Tensor& a, Scalar b, Loc loc) {
  return arithmetic({"add", loc}, Opcode::kAdd, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"sub", loc}, Opcode::kSubtract, a, b);
}
Tensor sub(const Tensor& a, Scalar b, Loc loc) {
  return arithmetic({"sub", loc}, Opcode::kSubtract, a, b);
}
Tensor sub(Scalar a, const Tensor& b, Loc loc) {
  return arithmetic({"rsub", loc}, Opcode::kSubtract, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"mul", loc}, Opcode::kMultiply, a, b);
}
Tensor mul(const Tensor& a, Scalar b, Loc loc) {
  return arithmetic({"mul", loc}, Opcode::kMultiply, a, b);
}
Tensor div(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"div", loc}, Opcode::kDivide, a, b);
}
Tensor div(const Tensor& a, Scalar b, Loc loc) {
  return arithmetic({"div", loc}, Opcode::kDivide, a, b);
}
Tensor div(Scalar a, const Tensor& b, Loc loc) {
  return arithmetic({"div", loc}, Opcode::kDivide, a, b);
}
Tensor pow(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"pow", loc}, Opcode::kPower, a, b);
}
Tensor pow(const Tensor& a, Scalar b, Loc loc) {
  return arithmetic({"pow", loc}, Opcode::kPower, a, b);
}
Tensor pow(Scalar a, const Tensor& b, Loc loc) {
  return arithmetic({"pow", loc}, Opcode::kPower, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"maximum", loc}, Opcode::kMaximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b, Loc loc) {
  return arithmetic({"minimum", loc}, Opcode::kMinimum, a, b);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) {
  OpSite site{"clamp", loc};
  if (!min && !max) lazy::op_fail(site, "at least one of min and max must be given");
  Prepared p = prepare(site, {x, min.value_or(max.value_or(0)), max.value_or(min.value_or(0))});
  reject_bool(*x.impl(), site);
  NodePtr v = p.values[0];
  if (min) v = lazy::elementwise(Opcode::kMaximum, v, p.values[1], site);
  if (max) v = lazy::elementwise(Opcode::kMinimum, v, p.values[2], site);
  Tensor out = result(v, p, site);
  // torch's clamp_backward: the gradient passes where min <= x <= max (not at NaN).
  record_unary("clamp", x, out, true, false,
               [min, max](const Tensor& g, const Tensor& x, const Tensor&) {
                 Tensor pass = min ? ge(x, *min) : Tensor();
                 if (max) pass = pass.defined() ? mul(pass, le(x, *max)) : le(x, *max);
                 return where(pass, g, 0);
               });
  return out;
}

Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, Loc loc) {
  OpSite site{"clamp", loc};
  Prepared p = prepare(site, {x, min, max});
  reject_bool(*x.impl(), site);
  NodePtr v = lazy::elementwise(Opcode::kMaximum, p.values[0], p.values[1], site);
  Tensor out = result(lazy::elementwise(Opcode::kMinimum, v, p.values[2], site), p, site);
  if (autograd::needs_grad({&x, &min, &max}))
    // torch's clamp_backward_min_max: max wins where min > max.
    autograd::record("clamp", out, {&x, &min, &max},
                     [sx = autograd::saved(x), smin = autograd::saved(min),
                      smax = autograd::saved(max)](const Tensor& g) {
                       Tensor inside = mul(ge(sx, smin), le(sx, smax));
                       Tensor below = mul(lt(sx, smin), lt(smin, smax));
                       Tensor above = add(gt(sx, smax), lt(smax, smin));
                       return Grads{where(inside, g, 0), where(below, g, 0), where(above, g, 0)};
                     });
  return out;
}

// ---- Unary -------------------------------------------------------------------------
Tensor neg(const Tensor& x, Loc loc) {
  OpSite site{"neg", loc};
  Unary u = unary_operand(x, site, false);
  if (u.impl->type == DType::kPred)
    lazy::op_fail(site,
                  "negating a bool tensor is not supported; use logical ops to invert a mask");
  Tensor out =
      lazy::make_result(lazy::elementwise(Opcode::kNegate, u.value, site), u.impl->device, site);
  record_unary("neg", x, out, false, false,
               [](const Tensor& g, const Tensor&, const Tensor&) { return neg(g); });
  return out;
}

Tensor abs(const Tensor& x, Loc loc) {
  OpSite site{"abs", loc};
  Unary u = unary_operand(x, site, false);
  reject_bool(*u.impl, site);
  Tensor out =
      lazy::make_result(lazy::elementwise(Opcode::kAbs, u.value, site), u.impl->device, site);
  // g sgn(x), 0 at 0.
  record_unary("abs", x, out, true, false, [](const Tensor& g, const Tensor& x, const Tensor&) {
    return where(gt(x, 0), g, where(lt(x, 0), neg(g), 0));
  });
  return out;
}

Tensor exp(const Tensor& x, Loc loc) { return unary_float(x, Opcode::kExp, {"exp", loc}); }
Tensor log(const Tensor& x, Loc loc) { return unary_float(x, Opcode::kLog, {"log", loc}); }
Tensor sqrt(const Tensor& x, Loc loc) { return unary_float(x, Opcode::kSqrt, {"sqrt", loc}); }
Tensor rsqrt(const Tensor& x, Loc loc) { return unary_float(x, Opcode::kRsqrt, {"rsqrt", loc}); }
Tensor tanh(const Tensor& x, Loc loc) { return unary_float(x, Opcode::kTanh, {"tanh", loc}); }
Tensor sigmoid(const Tensor& x, Loc loc) {
  return unary_float(x, Opcode::kLogistic, {"sigmoid", loc});
}

Tensor relu(const Tensor& x, Loc loc) {
  OpSite site{"relu", loc};
  Unary u = unary_operand(x, site, false);
  reject_bool(*u.impl, site);
  NodePtr v = lazy::elementwise(Opcode::kMaximum, u.value, constant_like(0, u.value, site), site);
  Tensor out = lazy::make_result(v, u.impl->device, site);
  // torch's threshold_backward on the result.
  record_unary("relu", x, out, false, true, [](const Tensor& g, const Tensor&, const Tensor& y) {
    return where(gt(y, 0), g, 0);
  });
  return out;
}

Tensor gelu(const Tensor& x, GeluApproximate approximate, Loc loc) {
  OpSite site{"gelu", loc};
  Unary u = unary_operand(x, site, false);
  if (!ir::is_float(u.impl->type))
    lazy::op_fail(site, "expected a floating-point tensor, got {}",
                  lazy::impl_shape_string(*u.impl));
  NodePtr v = widen_half(u.value, site);
  auto c = [&](double value) { return constant_like(value, v, site); };
  auto mul = [&](const NodePtr& a, const NodePtr& b) {
    return lazy::elementwise(Opcode::kMultiply, a, b, site);
  };
  NodePtr out;
  if (approximate == GeluApproximate::kTanh) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    NodePtr cube = mul(mul(v, v), v);
    NodePtr inner = mul(c(std::sqrt(2.0 / std::numbers::pi)),
                        lazy::elementwise(Opcode::kAdd, v, mul(c(0.044715), cube), site));
    NodePtr one_plus = lazy::elementwise(Opcode::kAdd, c(1.0),
                                         lazy::elementwise(Opcode::kTanh, inner, site), site);
    out = mul(mul(c(0.5), v), one_plus);
  } else {
    out = mul(v, normal_cdf(v, site));
  }
  Tensor y = lazy::make_result(lazy::convert(out, u.impl->type, site), u.impl->device, site);
  record_unary("gelu", x, y, true, false,
               [approximate](const Tensor& g, const Tensor& x, const Tensor&) {
                 return gelu_backward(g, x, approximate);
               });
  return y;
}

// ---- Comparisons and where ---------------------------------------------------------
Tensor eq(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"eq", loc}, D::kEq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"ne", loc}, D::kNe, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"lt", loc}, D::kLt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"le", loc}, D::kLe, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"gt", loc}, D::kGt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b, Loc loc) {
  return comparison({"ge", loc}, D::kGe, a, b);
}
Tensor eq(const Tensor& a, Scalar b, Loc loc) { return comparison({"eq", loc}, D::kEq, a, b); }
Tensor ne(const Tensor& a, Scalar b, Loc loc) { return comparison({"ne", loc}, D::kNe, a, b); }
Tensor lt(const Tensor& a, Scalar b, Loc loc) { return comparison({"lt", loc}, D::kLt, a, b); }
Tensor le(const Tensor& a, Scalar b, Loc loc) { return comparison({"le", loc}, D::kLe, a, b); }
Tensor gt(const Tensor& a, Scalar b, Loc loc) { return comparison({"gt", loc}, D::kGt, a, b); }
Tensor ge(const Tensor& a, Scalar b, Loc loc) { return comparison({"ge", loc}, D::kGe, a, b); }

namespace {

Tensor where_impl(const OpSite& site, const Tensor& condition, Arg a, Arg b) {
  const TensorImpl& c = lazy::checked(condition, site);
  if (c.type != DType::kPred)
    lazy::op_fail(site, "the condition must be a bool tensor, got {}", lazy::impl_shape_string(c));
  Prepared p = prepare(site, {a, b});
  if (a.tensor != nullptr) lazy::common_device(site, {&condition, a.tensor});
  if (b.tensor != nullptr) lazy::common_device(site, {&condition, b.tensor});
  p.device = c.device;
  Dims dims = lazy::broadcast_dims(site, c.type, c.dims, p.type, p.dims);
  NodePtr pred = stretch(lazy::value_of(c, site), dims, site);
  NodePtr va = stretch(p.values[0], dims, site);
  NodePtr vb = stretch(p.values[1], dims, site);
  Tensor out = result(lazy::select_nodes(pred, va, vb, site), p, site);
  if (autograd::needs_grad({a.tensor, b.tensor}))
    autograd::record("where", out, {&condition, a.tensor, b.tensor},
                     [c = autograd::saved(condition)](const Tensor& g) {
                       return Grads{Tensor(), where(c, g, 0), where(c, 0, g)};
                     });
  return out;
}

}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Loc loc) {
  return where_impl({"where", loc}, condition, a, b);
}
Tensor where(const Tensor& condition, const Tensor& a, Scalar b, Loc loc) {
  return where_impl({"where", loc}, condition, a, b);
}
Tensor where(const Tensor& condition, Scalar a, const Tensor& b, Loc loc) {
  return where_impl({"where", loc}, condition, a, b);
}

// ---- Operators ---------------------------------------------------------------------
Tensor operator+(TensorAt a, const Tensor& b) { return add(a.tensor, b, a.loc); }
Tensor operator+(TensorAt a, Scalar b) { return add(a.tensor, b, a.loc); }
Tensor operator+(Scalar a, TensorAt b) { return add(b.tensor, a, b.loc); }
Tensor operator-(TensorAt a, const Tensor& b) { return sub(a.tensor, b, a.loc); }
Tensor operator-(TensorAt a, Scalar b) { return sub(a.tensor, b, a.loc); }
Tensor operator-(Scalar a, TensorAt b) { return sub(a, b.tensor, b.loc); }
Tensor operator*(TensorAt a, const Tensor& b) { return mul(a.tensor, b, a.loc); }
Tensor operator*(TensorAt a, Scalar b) { return mul(a.tensor, b, a.loc); }
Tensor operator*(Scalar a, TensorAt b) { return mul(b.tensor, a, b.loc); }
Tensor operator/(TensorAt a, const Tensor& b) { return div(a.tensor, b, a.loc); }
Tensor operator/(TensorAt a, Scalar b) { return div(a.tensor, b, a.loc); }
Tensor operator/(Scalar a, TensorAt b) { return div(a, b.tensor, b.loc); }
Tensor operator-(TensorAt a) { return neg(a.tensor, a.loc); }
Tensor operator<(TensorAt a, const Tensor& b) { return lt(a.tensor, b, a.loc); }
Tensor operator<(TensorAt a, Scalar b) { return lt(a.tensor, b, a.loc); }
Tensor operator<=(TensorAt a, const Tensor& b) { return le(a.tensor, b, a.loc); }
Tensor operator<=(TensorAt a, Scalar b) { return le(a.tensor, b, a.loc); }
Tensor operator>(TensorAt a, const Tensor& b) { return gt(a.tensor, b, a.loc); }
Tensor operator>(TensorAt a, Scalar b) { return gt(a.tensor, b, a.loc); }
Tensor operator>=(TensorAt a, const Tensor& b) { return ge(a.tensor, b, a.loc); }
Tensor operator>=(TensorAt a, Scalar b) { return ge(a.tensor, b, a.loc); }

// ---- Methods -----------------------------------------------------------------------
Tensor Tensor::exp(Loc loc) const { return podsim::exp(*this, loc); }
Tensor Tensor::log(Loc loc) const { return podsim::log(*this, loc); }
Tensor Tensor::sqrt(Loc loc) const { return podsim::sqrt(*this, loc); }
Tensor Tensor::abs(Loc loc) const { return podsim::abs(*this, loc); }
Tensor Tensor::relu(Loc loc) const { return podsim::relu(*this, loc); }
Tensor Tensor::sigmoid(Loc loc) const { return podsim::sigmoid(*this, loc); }
Tensor Tensor::tanh(Loc loc) const { return podsim::tanh(*this, loc); }
Tensor Tensor::pow(Scalar exponent, Loc loc) const { return podsim::pow(*this, exponent, loc); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) const {
  return podsim::clamp(*this, min, max, loc);
}

}  // namespace podsim
