// Dots a bf16 matrix unit does not take as they are (make_dot_expander in pass.h):
// - integer dots: the operands converted to the result type, broadcast against each
//   other over [batch, lhs free, rhs free, contracting], multiplied and summed over the
//   contracting dimensions by a reduce, on the vector unit. Exact (integer sums wrap, in
//   any order, as the evaluator's do). Dots whose product array would pass
//   kMaxProductElements stay as they are.
// - f16 dots: as f32 dots of the operands widened (exact), the MXU's bf16 rounding then
//   as for f32 (TPUs have no f16 matrix unit); the result rounded back.
// - f32 dots at HIGH or HIGHEST precision: each operand split into bf16 pieces
//   (hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid); a piece is 0 where an
//   earlier one is not finite), and the products of pieces that matter summed in f32,
//   smallest first, each a DEFAULT dot whose bf16 rounding is exact: HIGH the 3 passes
//   hi·hi + hi·mid + mid·hi, HIGHEST 6 passes adding mid·mid + hi·lo + lo·hi: what
//   TPUs do (XLA's bf16_3x and bf16_6x), f32 accuracy in 6 passes.
#include <algorithm>
#include <memory>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using internal::Builder;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

constexpr int64_t kMaxProductElements = int64_t{1} << 24;

Instruction* expand_integer_dot(Instruction& dot, ir::Module& module) {
  const PrimitiveType type = dot.shape().type();
  Instruction* lhs = dot.operand(0);
  Instruction* rhs = dot.operand(1);
  const ir::DotDimNumbers& dn = dot.attrs().dot_dims;
  auto free_dims = [](const Instruction& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < x.shape().rank(); ++d)
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), d) == contracting.end())
        out.push_back(d);
    return out;
  };
  const std::vector<int64_t> lhs_free = free_dims(*lhs, dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rhs_free = free_dims(*rhs, dn.rhs_batch, dn.rhs_contracting);
  // The product's dimensions: batch, lhs free, rhs free, contracting.
  std::vector<int64_t> dims, lhs_at, rhs_at;
  auto place = [&](const Instruction& x, int64_t d, std::vector<int64_t>* at, std::vector<int64_t>* also) {
    at->push_back(static_cast<int64_t>(dims.size()));
    if (also) also->push_back(static_cast<int64_t>(dims.size()));
    dims.push_back(x.shape().dim(d));
  };
  // broadcast dims: lhs_at[k] is where lhs dimension order_l[k] goes.
  std::vector<int64_t> order_l, order_r;
  for (size_t k = 0; k < dn.lhs_batch.size(); ++k) {
    place(*lhs, dn.lhs_batch[k], &lhs_at, &rhs_at);
    order_l.push_back(dn.lhs_batch[k]);
    order_r.push_back(dn.rhs_batch[k]);
  }
  for (int64_t d : lhs_free) place(*lhs, d, &lhs_at, nullptr), order_l.push_back(d);
  for (int64_t d : rhs_free) place(*rhs, d, &rhs_at, nullptr), order_r.push_back(d);
  std::vector<int64_t> summed;
  for (size_t k = 0; k < dn.lhs_contracting.size(); ++k) {
    summed.push_back(static_cast<int64_t>(dims.size()));
    place(*lhs, dn.lhs_contracting[k], &lhs_at, &rhs_at);
    order_l.push_back(dn.lhs_contracting[k]);
    order_r.push_back(dn.rhs_contracting[k]);
  }
  int64_t elements = 1;
  for (int64_t n : dims) elements *= n;
  if (elements > kMaxProductElements) return nullptr;

  Builder b(dot);
  const Shape product(type, dims);
  Instruction* l = b.broadcast_in(b.transpose(b.convert(lhs, type), order_l), product, lhs_at);
  Instruction* r = b.broadcast_in(b.transpose(b.convert(rhs, type), order_r), product, rhs_at);
  Instruction* terms = b.add(Opcode::kMultiply, {l, r});
  Instruction* sum = b.add(Opcode::kReduce, Shape(type, dot.shape().dims()), {terms, b.scalar(type, 0)});
  sum->attrs().dimensions = summed;
  sum->add_called(internal::add_scalar_adder(module, type, "dot.add"));
  return sum;
}

Instruction* expand_precise_dot(Instruction& dot, int passes) {
  Builder b(dot);
  // hi, mid, lo of x (f32 values that are exactly bf16).
  auto pieces = [&](Instruction* x) {
    std::vector<Instruction*> out;
    Instruction* rest = x;
    for (int k = 0; k < 3; ++k) {
      Instruction* piece = b.convert(b.convert(rest, PrimitiveType::kBF16), PrimitiveType::kF32);
      out.push_back(piece);
      if (k == 2) break;
      // What is left, 0 where the piece is not finite (inf - inf would be NaN).
      Instruction* finite = b.add(Opcode::kIsFinite, {piece});
      Instruction* left = b.add(Opcode::kSubtract, {rest, piece});
      rest = b.add(Opcode::kSelect, {finite, left, b.broadcast(b.scalar(PrimitiveType::kF32, 0), x->shape().dims())});
    }
    return out;
  };
  const std::vector<Instruction*> a = pieces(dot.operand(0)), c = pieces(dot.operand(1));
  // Products of pieces, smallest first: (i, j) pairs of a's and c's pieces.
  std::vector<std::pair<int, int>> terms = passes == 3 ? std::vector<std::pair<int, int>>{{1, 0}, {0, 1}, {0, 0}}
                                                       : std::vector<std::pair<int, int>>{
                                                             {2, 0}, {0, 2}, {1, 1}, {1, 0}, {0, 1}, {0, 0}};
  Instruction* sum = nullptr;
  for (const auto& [i, j] : terms) {
    Instruction* p = b.add(Opcode::kDot, {a[static_cast<size_t>(i)], c[static_cast<size_t>(j)]},
                           [&](ir::Attributes& at) { at.dot_dims = dot.attrs().dot_dims; });
    p->mutable_shape().set_type(PrimitiveType::kF32);
    sum = sum ? b.add(Opcode::kAdd, {sum, p}) : p;
  }
  return b.convert(sum, dot.shape().type());
}

// 3 or 6 for an f32 dot at HIGH or HIGHEST (either operand's; the more precise), else 0.
int precise_passes(const Instruction& dot) {
  int passes = 0;
  for (size_t k = 0; k < 2; ++k) {
    if (dot.operand(static_cast<int64_t>(k))->shape().type() != PrimitiveType::kF32) continue;
    const auto& precision = dot.attrs().operand_precision;
    if (k >= precision.size()) continue;
    if (precision[k] == ir::Precision::kHighest) passes = 6;
    if (precision[k] == ir::Precision::kHigh) passes = std::max(passes, 3);
  }
  return passes;
}

// An f16 dot as the f32 dot of its operands widened (exactly), at the same precision
// (then in several passes where that asks for them), its result rounded to the type.
Instruction* f16_as_f32(Instruction& dot) {
  Builder b(dot);
  Instruction* wide = b.add(Opcode::kDot,
                            {b.convert(dot.operand(0), PrimitiveType::kF32), b.convert(dot.operand(1), PrimitiveType::kF32)},
                            [&](ir::Attributes& a) {
                              a.dot_dims = dot.attrs().dot_dims;
                              a.operand_precision = dot.attrs().operand_precision;
                            });
  const int passes = precise_passes(*wide);
  return b.convert(passes ? expand_precise_dot(*wide, passes) : wide, dot.shape().type());
}

class DotExpander final : public Pass {
 public:
  std::string_view name() const override { return "dot-expander"; }
  bool run(ir::Module& module) override {
    return internal::expand_instructions(module, [&](Instruction& i) -> Instruction* {
      if (i.opcode() != Opcode::kDot) return nullptr;
      if (ir::is_integral(i.shape().type())) return expand_integer_dot(i, module);
      if (i.operand(0)->shape().type() == PrimitiveType::kF16) return f16_as_f32(i);
      const int passes = precise_passes(i);
      return passes ? expand_precise_dot(i, passes) : nullptr;
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_dot_expander() { return std::make_unique<DotExpander>(); }

}  // namespace podsim::passes
