// The derivatives of the binary arithmetic ops (add, sub, mul, div, pow, maximum,
// minimum), following torch's derivatives.yaml.
#include "runtime/autograd/internal.h"

namespace podsim::autograd {
namespace {

using Grads = std::vector<Tensor>;

// An operand as its backward sees it: a C++ scalar, or a tensor (kept as a snapshot
// when keep is set: only operands some gradient reads are kept).
struct Saved {
  Saved(const Operand& arg, bool keep)
      : tensor(arg.tensor && keep ? saved(*arg.tensor) : Tensor()),
        scalar(arg.scalar),
        is_tensor(arg.tensor != nullptr),
        wants_grad(arg.tensor != nullptr && arg.tensor->requires_grad()) {}
  Tensor tensor;
  Scalar scalar;
  bool is_tensor;
  bool wants_grad;  // whether this operand gets a gradient
};

Tensor times(const Tensor& g, const Saved& v) {
  return v.is_tensor ? mul(g, v.tensor) : mul(g, v.scalar);
}
Tensor over(const Tensor& g, const Saved& v) {
  return v.is_tensor ? div(g, v.tensor) : div(g, v.scalar);
}

}  // namespace

BackwardFn arithmetic_backward(ir::Opcode op, const Operand& a, const Operand& b,
                               const Tensor& out) {
  using ir::Opcode;
  bool a_grad = a.tensor != nullptr && a.tensor->requires_grad();
  bool b_grad = b.tensor != nullptr && b.tensor->requires_grad();
  switch (op) {
    case Opcode::kAdd:
      return [](const Tensor& g) { return Grads{g, g}; };
    case Opcode::kSubtract:
      return [](const Tensor& g) { return Grads{g, neg(g)}; };
    case Opcode::kMultiply:
      return [sa = Saved(a, b_grad), sb = Saved(b, a_grad)](const Tensor& g) {
        return Grads{sa.wants_grad ? times(g, sb) : Tensor(),
                     sb.wants_grad ? times(g, sa) : Tensor()};
      };
    case Opcode::kDivide:
      return [sa = Saved(a, b_grad), sb = Saved(b, true)](const Tensor& g) {
        Tensor gb;
        if (sb.wants_grad) gb = neg(div(times(g, sa), mul(sb.tensor, sb.tensor)));
        return Grads{sa.wants_grad ? over(g, sb) : Tensor(), gb};
      };
    case Opcode::kPower:
      return [sa = Saved(a, true), sb = Saved(b, true),
              so = b_grad ? saved(out) : Tensor()](const Tensor& g) {
        Tensor ga, gb;
        if (sa.wants_grad && sb.is_tensor) {
          // b a^(b-1), zero where b == 0 (torch's pow_backward_self).
          const Tensor& e = sb.tensor;
          ga = where(eq(e, 0), 0, mul(g, mul(e, pow(sa.tensor, sub(e, 1)))));
        } else if (sa.wants_grad) {
          const Scalar& e = sb.scalar;
          if (e.to_double() == 0) {
            ga = zeros(sa.tensor.shape(), {g.dtype(), g.device()});
          } else {
            Scalar e1 = e.is_floating() ? Scalar(e.to_double() - 1) : Scalar(e.to_int() - 1);
            ga = mul(g, mul(pow(sa.tensor, e1), e));
          }
        }
        if (sb.wants_grad) {
          // a^b log a, zero where a == 0 and b >= 0 (torch's pow_backward_exponent).
          Tensor base =
              sa.is_tensor ? sa.tensor : full(g.shape(), sa.scalar, {g.dtype(), g.device()});
          gb = where(mul(eq(base, 0), ge(sb.tensor, 0)), 0, mul(g, mul(so, log(base))));
        }
        return Grads{ga, gb};
      };
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      bool is_max = op == Opcode::kMaximum;
      // Ties share the gradient (torch: grad / 2 to each side).
      return [sa = Saved(a, true), sb = Saved(b, true), is_max](const Tensor& g) {
        Tensor tie = eq(sa.tensor, sb.tensor);
        Tensor split = where(tie, div(g, 2), g);
        Tensor a_loses = is_max ? lt(sa.tensor, sb.tensor) : gt(sa.tensor, sb.tensor);
        Tensor b_loses = is_max ? gt(sa.tensor, sb.tensor) : lt(sa.tensor, sb.tensor);
        return Grads{sa.wants_grad ? where(a_loses, 0, split) : Tensor(),
                     sb.wants_grad ? where(b_loses, 0, split) : Tensor()};
      };
    }
    default:
      return nullptr;
  }
}

}  // namespace podsim::autograd
