#include "runtime/nn/layers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "runtime/autograd/autograd.h"

namespace podsim::nn {
namespace detail {

Tensor uniform(std::vector<int64_t> shape, double bound, const TensorOptions& options) {
  NoGradGuard no_grad;
  return sub(mul(rand(std::move(shape), options), 2 * bound), bound);
}

}  // namespace detail

namespace {

void check_sizes(const char* module, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s <= 0) throw Error(fmt::format("{}: sizes must be positive, got {}", module, s));
}

TensorOptions float_options(const TensorOptions& options) {
  return TensorOptions(options.dtype().value_or(kFloat32), options.device());
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, TensorOptions options)
    : Module("Linear") {
  check_sizes("Linear", {in_features, out_features});
  double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight_ = detail::uniform({out_features, in_features}, bound, float_options(options));
  if (bias) bias_ = detail::uniform({out_features}, bound, float_options(options));
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight_, bias_); }

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, TensorOptions options)
    : Module("Embedding") {
  check_sizes("Embedding", {num_embeddings, embedding_dim});
  weight_ = randn({num_embeddings, embedding_dim}, float_options(options));
  register_parameter("weight", &weight_);
}

Tensor Embedding::forward(const Tensor& indices) { return functional::embedding(indices, weight_); }

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine,
                     TensorOptions options)
    : Module("LayerNorm"), normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (normalized_shape_.empty()) throw Error("LayerNorm: normalized_shape must not be empty");
  for (int64_t s : normalized_shape_) check_sizes("LayerNorm", {s});
  if (elementwise_affine) {
    weight_ = ones(normalized_shape_, float_options(options));
    bias_ = zeros(normalized_shape_, float_options(options));
  }
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

Tensor LayerNorm::forward(const Tensor& input) {
  return functional::layer_norm(input, normalized_shape_, weight_, bias_, eps_);
}

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, double momentum, TensorOptions options)
    : Module("BatchNorm2d"), num_features_(num_features), eps_(eps), momentum_(momentum) {
  check_sizes("BatchNorm2d", {num_features});
  const TensorOptions f = float_options(options);
  weight_ = ones({num_features}, f);
  bias_ = zeros({num_features}, f);
  running_mean_ = zeros({num_features}, f);
  running_var_ = ones({num_features}, f);
  num_batches_tracked_ = zeros({}, TensorOptions(kInt64, options.device()));
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
  register_buffer("running_mean", &running_mean_);
  register_buffer("running_var", &running_var_);
  register_buffer("num_batches_tracked", &num_batches_tracked_);
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  if (input.dim() != 4 || input.size(1) != num_features_)
    throw Error(fmt::format("BatchNorm2d({}): expected an input of shape (N, {}, H, W), got [{}]", num_features_,
                            num_features_, fmt::join(input.shape(), ",")));
  auto channels = [&](const Tensor& t) { return t.reshape({1, num_features_, 1, 1}); };
  Tensor mean, var;
  if (is_training()) {
    mean = input.mean({0, 2, 3});
    const Tensor centered = input - channels(mean);
    var = (centered * centered).mean({0, 2, 3});
    const double n = static_cast<double>(input.numel() / num_features_);
    NoGradGuard no_grad;
    running_mean_ = running_mean_ * (1 - momentum_) + mean.detach() * momentum_;
    running_var_ = running_var_ * (1 - momentum_) + var.detach() * (momentum_ * n / std::max(n - 1, 1.0));
    num_batches_tracked_ = num_batches_tracked_ + 1;
  } else {
    mean = running_mean_;
    var = running_var_;
  }
  return (input - channels(mean)) * channels(rsqrt(var + eps_) * weight_) + channels(bias_);
}

RMSNorm::RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps,
                 bool elementwise_affine, TensorOptions options)
    : Module("RMSNorm"), normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (normalized_shape_.empty()) throw Error("RMSNorm: normalized_shape must not be empty");
  for (int64_t s : normalized_shape_) check_sizes("RMSNorm", {s});
  if (elementwise_affine) weight_ = ones(normalized_shape_, float_options(options));
  register_parameter("weight", &weight_);
}

Tensor RMSNorm::forward(const Tensor& input) {
  return functional::rms_norm(input, normalized_shape_, weight_, eps_);
}

Dropout::Dropout(double p) : Module("Dropout"), p_(p) {
  if (!(p >= 0 && p <= 1)) throw Error(fmt::format("Dropout: p must be in [0, 1], got {}", p));
}

Tensor Dropout::forward(const Tensor& input) {
  return functional::dropout(input, p_, is_training());
}

}  // namespace podsim::nn
