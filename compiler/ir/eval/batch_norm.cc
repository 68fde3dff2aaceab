// Reference evaluation of batch-norm-training, -inference and -grad (XLA's semantics:
// statistics over every dimension but feature_index, the biased variance). Computes in
// double and rounds each result once to the operand's type.
#include <cmath>
#include <vector>

#include "compiler/ir/eval/internal.h"

namespace podsim::ir::eval {
namespace {

// The feature of each element, and the per-feature arrays as doubles.
struct Features {
  int64_t count = 0, stride = 1, per_feature = 0;
  int64_t of(int64_t element) const { return element / stride % count; }
};

Features features(const Instruction& instruction, const Literal& operand) {
  const int64_t f = instruction.attrs().feature_index;
  Features out;
  out.count = operand.shape().dim(f);
  for (int64_t d = f + 1; d < operand.shape().rank(); ++d) out.stride *= operand.shape().dim(d);
  out.per_feature = out.count ? operand.num_elements() / out.count : 0;
  return out;
}

std::vector<double> values(const Literal& l) {
  std::vector<double> v(static_cast<size_t>(l.num_elements()));
  for (int64_t i = 0; i < l.num_elements(); ++i) v[static_cast<size_t>(i)] = l.get_as_double(i);
  return v;
}

Literal literal_of(const Shape& shape, const std::vector<double>& v) {
  Literal l(shape);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_from_double(i, v[static_cast<size_t>(i)]);
  return l;
}

}  // namespace

Literal eval_batch_norm(const Instruction& instruction, Operands operands) {
  const Literal& operand = *operands[0];
  const Features f = features(instruction, operand);
  const std::vector<double> x = values(operand);
  const double n = static_cast<double>(f.per_feature);
  const double epsilon = instruction.attrs().epsilon;
  const Shape feature_shape(operand.type(), {f.count});
  const auto F = static_cast<size_t>(f.count);
  // Per-feature mean of g(i, x_i).
  auto feature_mean = [&](auto g) {
    std::vector<double> sum(F, 0.0);
    for (int64_t i = 0; i < operand.num_elements(); ++i) sum[static_cast<size_t>(f.of(i))] += g(i);
    for (double& s : sum) s /= n;
    return sum;
  };
  const std::vector<double> scale = values(*operands[1]);
  std::vector<double> out(x.size());
  auto at = [&](int64_t i) { return static_cast<size_t>(f.of(i)); };
  switch (instruction.opcode()) {
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference: {
      const bool training = instruction.opcode() == Opcode::kBatchNormTraining;
      const std::vector<double> offset = values(*operands[2]);
      const std::vector<double> mean =
          training ? feature_mean([&](int64_t i) { return x[static_cast<size_t>(i)]; })
                   : values(*operands[3]);
      const std::vector<double> variance = training ? feature_mean([&](int64_t i) {
        const double d = x[static_cast<size_t>(i)] - mean[at(i)];
        return d * d;
      })
                                                    : values(*operands[4]);
      for (int64_t i = 0; i < operand.num_elements(); ++i) {
        const size_t c = at(i);
        out[static_cast<size_t>(i)] =
            (x[static_cast<size_t>(i)] - mean[c]) / std::sqrt(variance[c] + epsilon) * scale[c] +
            offset[c];
      }
      Literal normalized = literal_of(operand.shape(), out);
      if (!training) return normalized;
      std::vector<Literal> results;
      results.push_back(std::move(normalized));
      results.push_back(literal_of(feature_shape, mean));
      results.push_back(literal_of(feature_shape, variance));
      return Literal::tuple(std::move(results));
    }
    case Opcode::kBatchNormGrad: {
      // y = (x - mean) / sigma * scale + offset, sigma = sqrt(variance + epsilon), with mean
      // and variance the batch's: dy/dx gives grad_operand = scale / sigma * (g - mean(g) -
      // (x - mean) * mean(g (x - mean)) / sigma^2).
      const std::vector<double> mean = values(*operands[2]), variance = values(*operands[3]);
      const std::vector<double> g = values(*operands[4]);
      auto centered = [&](int64_t i) { return x[static_cast<size_t>(i)] - mean[at(i)]; };
      const std::vector<double> mean_g =
          feature_mean([&](int64_t i) { return g[static_cast<size_t>(i)]; });
      const std::vector<double> mean_gx =
          feature_mean([&](int64_t i) { return g[static_cast<size_t>(i)] * centered(i); });
      std::vector<double> grad_scale(F), grad_offset(F);
      for (size_t c = 0; c < F; ++c) {
        const double sigma = std::sqrt(variance[c] + epsilon);
        grad_scale[c] = mean_gx[c] * n / sigma;
        grad_offset[c] = mean_g[c] * n;
      }
      for (int64_t i = 0; i < operand.num_elements(); ++i) {
        const size_t c = at(i);
        const double var_eps = variance[c] + epsilon;
        out[static_cast<size_t>(i)] =
            scale[c] / std::sqrt(var_eps) *
            (g[static_cast<size_t>(i)] - mean_g[c] - centered(i) * mean_gx[c] / var_eps);
      }
      std::vector<Literal> results;
      results.push_back(literal_of(operand.shape(), out));
      results.push_back(literal_of(feature_shape, grad_scale));
      results.push_back(literal_of(feature_shape, grad_offset));
      return Literal::tuple(std::move(results));
    }
    default:
      break;
  }
  op_fail(instruction, "not a batch-norm op");
}

}  // namespace podsim::ir::eval
