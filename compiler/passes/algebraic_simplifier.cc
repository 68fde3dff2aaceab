// Algebraic simplification: local rewrites that give bit-identical results under the
// reference evaluator's semantics (no reassociation, no "fast math"). Floating-point
// identities are used only where IEEE arithmetic makes them exact:
//   x * 1, 1 * x, x / 1           exact for every x (NaN stays NaN)
//   x + (-0), (-0) + x, x - (+0)  exact; x + (+0) is not (-0 + +0 = +0)
//   x * 0                         integers only (NaN * 0 is NaN, -1 * 0 is -0)
//   dot with a scalar operand     integers only (the evaluator's dot adds the product
//                                 to an accumulator starting at +0, so -0 becomes +0)
// Other rewrites only move or drop data movement: reshape / transpose / broadcast
// chains composed, identity data movement removed, elementwise ops on broadcast scalars
// done once on the scalars, uniform constant arrays turned into broadcast scalars
// (which constant folding and fusion then handle cheaply).
// A replacement must have the replaced instruction's shape, layout included.
#include <algorithm>
#include <cmath>

#include "compiler/ir/literal.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using internal::uniform_value;
using ir::Computation;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

bool is_identity_permutation(const std::vector<int64_t>& p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

bool is_scalar_broadcast(const Instruction& i) {
  return i.opcode() == Opcode::kBroadcast && i.operand_count() == 1 &&
         i.operand(0)->shape().is_scalar();
}

class Simplifier {
 public:
  explicit Simplifier(Computation& computation) : c_(computation) {}

  // nullptr when nothing applies; &i when i was rewritten in place; otherwise the
  // instruction that replaces i.
  Instruction* simplify(Instruction& i) {
    if (i.shape().is_array() && ir::is_elementwise(i.opcode()))
      if (Instruction* r = hoist_scalar_broadcasts(i)) return r;
    switch (i.opcode()) {
      case Opcode::kAdd:
        return simplify_add(i);
      case Opcode::kSubtract:
        return simplify_subtract(i);
      case Opcode::kMultiply:
        return simplify_multiply(i);
      case Opcode::kDivide:
        if (arithmetic(i) && has_value(*i.operand(1), internal::is_one))
          return same(i.operand(0), i);
        return nullptr;
      case Opcode::kNegate:
      case Opcode::kNot:
        if (i.operand(0)->opcode() == i.opcode()) return same(i.operand(0)->operand(0), i);
        return nullptr;
      case Opcode::kAnd:
      case Opcode::kOr:
      case Opcode::kMaximum:
      case Opcode::kMinimum:
        // f(x, x) = x; for floats max/min pick the first operand on ties and NaN.
        return i.operand(0) == i.operand(1) ? same(i.operand(0), i) : nullptr;
      case Opcode::kCompare:
        return simplify_compare(i);
      case Opcode::kSelect:
        return simplify_select(i);
      case Opcode::kConvert:
        return i.operand(0)->shape().type() == i.shape().type() ? same(i.operand(0), i) : nullptr;
      case Opcode::kReshape:
        return simplify_reshape(i);
      case Opcode::kTranspose:
        return simplify_transpose(i);
      case Opcode::kBroadcast:
        return simplify_broadcast(i);
      case Opcode::kSlice:
        return simplify_slice(i);
      case Opcode::kReverse:
        return simplify_reverse(i);
      case Opcode::kCopy:
        return same(i.operand(0), i);
      case Opcode::kConcatenate:
        return i.operand_count() == 1 ? same(i.operand(0), i) : nullptr;
      case Opcode::kPad: {
        for (const ir::PadDim& p : i.attrs().padding)
          if (p.low != 0 || p.high != 0 || p.interior != 0) return nullptr;
        return same(i.operand(0), i);
      }
      case Opcode::kReduce:
        return simplify_reduce(i);
      case Opcode::kDot:
        return simplify_dot(i);
      case Opcode::kGetTupleElement: {
        const Instruction* tuple = i.operand(0);
        int64_t index = i.attrs().tuple_index;
        if (tuple->opcode() != Opcode::kTuple || index < 0 || index >= tuple->operand_count())
          return nullptr;
        return same(tuple->operand(index), i);
      }
      case Opcode::kConstant:
        return simplify_constant(i);
      default:
        return nullptr;
    }
  }

 private:
  // candidate, when it can stand for i (same type, dims and layout).
  static Instruction* same(Instruction* candidate, const Instruction& i) {
    return candidate->shape() == i.shape() ? candidate : nullptr;
  }

  // Integer or floating-point result (pred arithmetic has its own rules).
  static bool arithmetic(const Instruction& i) {
    PrimitiveType t = i.shape().type();
    return ir::is_integral(t) || ir::is_float(t);
  }

  template <typename Test>
  static bool has_value(const Instruction& i, Test&& test) {
    std::optional<Literal> v = uniform_value(i);
    return v && test(*v);
  }

  Instruction* add(std::unique_ptr<Instruction> instruction) {
    return c_.add(std::move(instruction));
  }

  Instruction* broadcast_scalar(Instruction* scalar, const Shape& shape) {
    auto b = std::make_unique<Instruction>(c_.unique_name("broadcast"), Opcode::kBroadcast, shape);
    b->add_operand(scalar);
    return add(std::move(b));
  }

  Instruction* constant(Literal value, const Shape& shape) {
    auto k = std::make_unique<Instruction>(c_.unique_name("constant"), Opcode::kConstant, shape);
    k->attrs().literal = std::move(value);
    return add(std::move(k));
  }

  // op(broadcast(a), broadcast(b)) = broadcast(op(a, b)) for scalars a, b: every
  // element is the same op on the same values.
  Instruction* hoist_scalar_broadcasts(Instruction& i) {
    if (i.shape().rank() == 0 || i.operand_count() == 0) return nullptr;
    for (const Instruction* op : i.operands())
      if (!is_scalar_broadcast(*op) || op->shape().dims() != i.shape().dims()) return nullptr;
    std::vector<Instruction*> scalars;
    for (const Instruction* op : i.operands()) scalars.push_back(op->operand(0));
    std::unique_ptr<Instruction> scalar_op =
        i.clone(c_.unique_name(ir::opcode_name(i.opcode())), scalars);
    scalar_op->mutable_shape() = Shape::scalar(i.shape().type());
    scalar_op->sharding().reset();
    return broadcast_scalar(add(std::move(scalar_op)), i.shape());
  }

  Instruction* simplify_add(Instruction& i) {
    if (!arithmetic(i)) return nullptr;
    bool integral = ir::is_integral(i.shape().type());
    auto neutral = [&](const Literal& v) {
      return integral ? internal::is_zero(v) : internal::is_negative_zero(v);
    };
    if (has_value(*i.operand(1), neutral))
      if (Instruction* r = same(i.operand(0), i)) return r;
    if (has_value(*i.operand(0), neutral)) return same(i.operand(1), i);
    return nullptr;
  }

  Instruction* simplify_subtract(Instruction& i) {
    if (!arithmetic(i)) return nullptr;
    bool integral = ir::is_integral(i.shape().type());
    auto neutral = [&](const Literal& v) {
      return integral ? internal::is_zero(v) : internal::is_positive_zero(v);
    };
    return has_value(*i.operand(1), neutral) ? same(i.operand(0), i) : nullptr;
  }

  Instruction* simplify_multiply(Instruction& i) {
    if (!arithmetic(i)) return nullptr;
    for (int k = 0; k < 2; ++k) {
      Instruction* x = i.operand(k);
      Instruction* y = i.operand(1 - k);
      if (has_value(*y, internal::is_one))
        if (Instruction* r = same(x, i)) return r;
      if (ir::is_integral(i.shape().type()) && has_value(*y, internal::is_zero))
        if (Instruction* r = same(y, i)) return r;
    }
    return nullptr;
  }

  // Integer and pred values equal themselves; the ordering directions that include
  // equality hold, the others do not (not so for floats: NaN).
  Instruction* simplify_compare(Instruction& i) {
    PrimitiveType t = i.operand(0)->shape().type();
    if (i.operand(0) != i.operand(1) || !(ir::is_integral(t) || t == PrimitiveType::kPred))
      return nullptr;
    ir::ComparisonDirection d = i.attrs().direction;
    bool holds = d == ir::ComparisonDirection::kEq || d == ir::ComparisonDirection::kLe ||
                 d == ir::ComparisonDirection::kGe;
    Literal value = Literal::scalar(PrimitiveType::kPred, holds ? 1 : 0);
    if (i.shape().rank() == 0) return constant(std::move(value), i.shape());
    return broadcast_scalar(constant(std::move(value), Shape::scalar(PrimitiveType::kPred)),
                            i.shape());
  }

  Instruction* simplify_select(Instruction& i) {
    if (i.operand(1) == i.operand(2)) return same(i.operand(1), i);
    std::optional<Literal> p = uniform_value(*i.operand(0));
    if (!p) return nullptr;
    return same(i.operand(internal::is_zero(*p) ? 2 : 1), i);
  }

  Instruction* simplify_reshape(Instruction& i) {
    Instruction* x = i.operand(0);
    if (x->shape().dims() == i.shape().dims()) return same(x, i);
    // Reshapes relabel the row-major element order: two in a row are one.
    if (x->opcode() == Opcode::kReshape) {
      i.set_operand(0, x->operand(0));
      return &i;
    }
    if (is_scalar_broadcast(*x)) return broadcast_scalar(x->operand(0), i.shape());
    return nullptr;
  }

  Instruction* simplify_transpose(Instruction& i) {
    Instruction* x = i.operand(0);
    std::vector<int64_t>& perm = i.attrs().dimensions;
    if (is_identity_permutation(perm)) return same(x, i);
    if (x->opcode() == Opcode::kTranspose) {
      // Result dimension k is x's dimension perm[k], which is its operand's
      // inner[perm[k]].
      const std::vector<int64_t>& inner = x->attrs().dimensions;
      std::vector<int64_t> composed;
      for (int64_t p : perm) composed.push_back(inner.at(static_cast<size_t>(p)));
      perm = std::move(composed);
      i.set_operand(0, x->operand(0));
      return &i;
    }
    if (is_scalar_broadcast(*x)) return broadcast_scalar(x->operand(0), i.shape());
    return nullptr;
  }

  Instruction* simplify_broadcast(Instruction& i) {
    Instruction* x = i.operand(0);
    std::vector<int64_t>& dims = i.attrs().dimensions;
    if (x->opcode() == Opcode::kBroadcast) {
      // x's operand dimension k lands in x's dimension inner[k], which lands in ours
      // at dims[inner[k]].
      std::vector<int64_t> composed;
      for (int64_t d : x->attrs().dimensions) composed.push_back(dims.at(static_cast<size_t>(d)));
      dims = std::move(composed);
      i.set_operand(0, x->operand(0));
      return &i;
    }
    if (x->shape().dims() == i.shape().dims() && is_identity_permutation(dims)) return same(x, i);
    return nullptr;
  }

  Instruction* simplify_slice(Instruction& i) {
    Instruction* x = i.operand(0);
    const auto& slice = i.attrs().slice;
    bool full = slice.size() == x->shape().dims().size();
    for (size_t d = 0; full && d < slice.size(); ++d)
      full = slice[d].start == 0 && slice[d].limit == x->shape().dims()[d] && slice[d].stride == 1;
    if (full) return same(x, i);
    if (is_scalar_broadcast(*x)) return broadcast_scalar(x->operand(0), i.shape());
    return nullptr;
  }

  Instruction* simplify_reverse(Instruction& i) {
    Instruction* x = i.operand(0);
    std::vector<int64_t> dims = i.attrs().dimensions;
    std::sort(dims.begin(), dims.end());
    bool trivial = true;  // reversing dimensions of size 0 or 1 moves nothing
    for (int64_t d : dims) trivial = trivial && i.shape().dim(d) <= 1;
    if (trivial) return same(x, i);
    if (x->opcode() == Opcode::kReverse) {
      std::vector<int64_t> inner = x->attrs().dimensions;
      std::sort(inner.begin(), inner.end());
      if (inner == dims) return same(x->operand(0), i);
    }
    if (is_scalar_broadcast(*x)) return broadcast_scalar(x->operand(0), i.shape());
    return nullptr;
  }

  // A reduce over no dimensions computes f(init, x) per element: x itself when init
  // is an exact identity of f (checked for the evaluator's float max/min too:
  // max(-inf, x) is x for x = -inf and NaN).
  Instruction* simplify_reduce(Instruction& i) {
    if (!i.attrs().dimensions.empty() || i.operand_count() != 2 || i.called().size() != 1)
      return nullptr;
    Instruction* x = i.operand(0);
    std::optional<Opcode> op = internal::simple_reducer(*i.called(0));
    std::optional<Literal> init = uniform_value(*i.operand(1));
    if (!op || !init || !x->shape().is_array() ||
        x->shape().type() != i.called(0)->root()->shape().type())
      return nullptr;
    PrimitiveType t = x->shape().type();
    bool identity = false;
    switch (*op) {
      case Opcode::kAdd:
        identity = ir::is_float(t) ? internal::is_negative_zero(*init) : internal::is_zero(*init);
        break;
      case Opcode::kMultiply:
        identity = internal::is_one(*init);
        break;
      case Opcode::kOr:
        identity = internal::is_zero(*init);
        break;
      case Opcode::kAnd:
        identity = t == PrimitiveType::kPred ? !internal::is_zero(*init) : all_ones(*init);
        break;
      case Opcode::kMaximum:
        identity = is_extreme(*init, /*lowest=*/true);
        break;
      case Opcode::kMinimum:
        identity = is_extreme(*init, /*lowest=*/false);
        break;
      default:
        break;
    }
    return identity ? same(x, i) : nullptr;
  }

  static bool all_ones(const Literal& v) {
    int bits = ir::type_bit_width(v.type());
    uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return (v.get_as_uint64(0) & mask) == mask;
  }

  // -inf / +inf for floats, the type's minimum / maximum for integers.
  static bool is_extreme(const Literal& v, bool lowest) {
    PrimitiveType t = v.type();
    if (ir::is_float(t)) {
      double x = v.get_as_double(0);
      return std::isinf(x) && (x < 0) == lowest;
    }
    int bits = ir::type_bit_width(t);
    if (ir::is_unsigned_int(t)) {
      uint64_t max = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      return v.get_as_uint64(0) == (lowest ? 0 : max);
    }
    if (ir::is_signed_int(t)) {
      int64_t max = static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1);
      return v.get_as_int64(0) == (lowest ? -max - 1 : max);
    }
    return false;
  }

  // dot with a rank-0 operand and no contracting dimensions multiplies elementwise.
  // Integers only (see the top of the file).
  Instruction* simplify_dot(Instruction& i) {
    Instruction* lhs = i.operand(0);
    Instruction* rhs = i.operand(1);
    PrimitiveType t = i.shape().type();
    if (!ir::is_integral(t) || lhs->shape().type() != t || rhs->shape().type() != t) return nullptr;
    const ir::DotDimNumbers& dn = i.attrs().dot_dims;
    if (!dn.lhs_batch.empty() || !dn.rhs_batch.empty() || !dn.lhs_contracting.empty() ||
        !dn.rhs_contracting.empty())
      return nullptr;
    Instruction* other = lhs->shape().is_scalar() ? rhs : rhs->shape().is_scalar() ? lhs : nullptr;
    if (!other || other->shape().dims() != i.shape().dims()) return nullptr;
    if (i.shape().rank() > 0) {
      if (lhs->shape().is_scalar())
        lhs = broadcast_scalar(lhs, i.shape());
      else
        rhs = broadcast_scalar(rhs, i.shape());
    }
    auto m =
        std::make_unique<Instruction>(c_.unique_name("multiply"), Opcode::kMultiply, i.shape());
    m->add_operand(lhs);
    m->add_operand(rhs);
    return add(std::move(m));
  }

  Instruction* simplify_constant(Instruction& i) {
    if (!i.shape().is_array() || i.shape().rank() == 0 || i.shape().num_elements() < 2)
      return nullptr;
    std::optional<Literal> v = uniform_value(i);
    if (!v) return nullptr;
    Instruction* scalar = constant(std::move(*v), Shape::scalar(i.shape().type()));
    return broadcast_scalar(scalar, i.shape());
  }

  Computation& c_;
};

bool run_on(Computation& computation, const internal::SideEffects& side_effects) {
  auto linked = internal::control_linked(computation);
  internal::Replacements replacements;
  Simplifier simplifier(computation);
  bool changed = false;
  std::vector<Instruction*> snapshot;
  for (const auto& i : computation.instructions()) snapshot.push_back(i.get());
  for (Instruction* i : snapshot) {
    replacements.resolve_operands(*i);
    if (linked.count(i)) continue;
    // In-place rewrites may enable further ones (a transpose of a transpose of a
    // transpose); a few rounds reach the end of any such chain built so far.
    for (int round = 0; round < 8; ++round) {
      Instruction* r = simplifier.simplify(*i);
      if (!r) break;
      changed = true;
      if (r != i) {
        replacements.add(i, r);
        break;
      }
    }
  }
  if (!changed) return false;
  replacements.apply(computation);
  computation.sort_topologically();  // new instructions were appended at the end
  // What was replaced goes now, so that a second run finds nothing left to rewrite.
  internal::remove_dead_instructions(computation, side_effects);
  return true;
}

class AlgebraicSimplifier final : public Pass {
 public:
  std::string_view name() const override { return "algebraic-simplifier"; }

  bool run(ir::Module& module) override {
    internal::SideEffects side_effects(module);
    bool changed = false;
    for (Computation* c : internal::non_fusion_computations(module))
      changed |= run_on(*c, side_effects);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_algebraic_simplifier() {
  return std::make_unique<AlgebraicSimplifier>();
}

}  // namespace podsim::passes
