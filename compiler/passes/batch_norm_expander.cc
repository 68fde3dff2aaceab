// batch-norm-training, -inference and -grad as reductions and elementwise ops (XLA's
// BatchNormExpander; make_batch_norm_expander in pass.h). 16-bit floats compute in f32
// and round once at the end. The variance is the mean of squared deviations from the
// mean (two passes), not E[x^2] - E[x]^2, which cancels where the mean is large.
#include <memory>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

Instruction* expand(ir::Module& module, Instruction& bn) {
  internal::Builder b(bn);
  const Shape& shape = bn.operand(0)->shape();
  const PrimitiveType type = shape.type();
  const PrimitiveType compute = ir::type_bit_width(type) < 32 ? PrimitiveType::kF32 : type;
  const int64_t f = bn.attrs().feature_index;
  const int64_t features = shape.dim(f);
  const Shape whole(compute, shape.dims()), feature(compute, {features});
  std::vector<int64_t> reduced;
  for (int64_t d = 0; d < shape.rank(); ++d)
    if (d != f) reduced.push_back(d);
  const double n = static_cast<double>(shape.num_elements() / std::max<int64_t>(features, 1));

  auto in = [&](int64_t k) { return b.convert(bn.operand(k), compute); };
  auto out = [&](Instruction* v) { return b.convert(v, type); };
  auto binary = [&](Opcode o, Instruction* x, Instruction* y) { return b.add(o, {x, y}); };
  auto spread = [&](Instruction* v) { return b.broadcast_in(v, whole, {f}); };
  auto per_feature = [&](double value) {
    return b.broadcast(b.scalar(compute, value), {features});
  };
  ir::Computation* adder = nullptr;
  auto sum = [&](Instruction* v) {
    if (adder == nullptr) adder = internal::add_scalar_adder(module, compute, bn.name() + ".add");
    Instruction* r = b.add(Opcode::kReduce, feature, {v, b.scalar(compute, 0)});
    r->attrs().dimensions = reduced;
    r->add_called(adder);
    return r;
  };
  auto mean = [&](Instruction* v) { return binary(Opcode::kDivide, sum(v), per_feature(n)); };
  const double epsilon = bn.attrs().epsilon;

  Instruction* x = in(0);
  Instruction* scale = in(1);
  if (bn.opcode() == Opcode::kBatchNormGrad) {
    Instruction* var_eps = binary(Opcode::kAdd, in(3), per_feature(epsilon));
    Instruction* inv = b.add(Opcode::kRsqrt, {var_eps});
    Instruction* centered = binary(Opcode::kSubtract, x, spread(in(2)));
    Instruction* g = in(4);
    Instruction* sum_g = sum(g);
    Instruction* sum_gx = sum(binary(Opcode::kMultiply, g, centered));
    Instruction* mean_g = binary(Opcode::kDivide, sum_g, per_feature(n));
    Instruction* mean_gx = binary(Opcode::kDivide, sum_gx, per_feature(n));
    // scale / sigma * (g - mean(g) - (x - mean) * mean(g (x - mean)) / sigma^2)
    Instruction* inner = binary(
        Opcode::kSubtract, binary(Opcode::kSubtract, g, spread(mean_g)),
        binary(Opcode::kMultiply, centered, spread(binary(Opcode::kDivide, mean_gx, var_eps))));
    Instruction* grad =
        binary(Opcode::kMultiply, spread(binary(Opcode::kMultiply, scale, inv)), inner);
    return b.add(Opcode::kTuple,
                 {out(grad), out(binary(Opcode::kMultiply, sum_gx, inv)), out(sum_g)});
  }
  const bool training = bn.opcode() == Opcode::kBatchNormTraining;
  Instruction* mu = training ? mean(x) : in(3);
  Instruction* centered = binary(Opcode::kSubtract, x, spread(mu));
  Instruction* variance = training ? mean(binary(Opcode::kMultiply, centered, centered)) : in(4);
  Instruction* factor =
      binary(Opcode::kMultiply,
             b.add(Opcode::kRsqrt, {binary(Opcode::kAdd, variance, per_feature(epsilon))}), scale);
  Instruction* y =
      binary(Opcode::kAdd, binary(Opcode::kMultiply, centered, spread(factor)), spread(in(2)));
  if (!training) return out(y);
  return b.add(Opcode::kTuple, {out(y), out(mu), out(variance)});
}

}  // namespace

std::unique_ptr<Pass> make_batch_norm_expander() {
  return internal::make_opcode_expander(
      "batch-norm-expander",
      {Opcode::kBatchNormTraining, Opcode::kBatchNormInference, Opcode::kBatchNormGrad}, expand);
}

}  // namespace podsim::passes
