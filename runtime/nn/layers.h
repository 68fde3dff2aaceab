// The basic torch.nn layers on lazy tensors: Linear, Embedding, LayerNorm, RMSNorm,
// Dropout, the activations, Softmax and Flatten. Parameter names, shapes and default
// initializations are torch's (random ones from the device RNG of options' device,
// podsim::rand / randn), so state dicts move between the two unchanged.
#pragma once

#include <optional>
#include <vector>

#include "runtime/nn/functional.h"
#include "runtime/nn/module.h"

namespace podsim::nn {

// y = x W^T + b; weight (out, in) and bias (out) from U(-1/sqrt(in), 1/sqrt(in)) (what
// torch's kaiming_uniform_(a=sqrt(5)) gives).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, TensorOptions options = {});
  Tensor forward(const Tensor& input) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias

 private:
  Tensor weight_, bias_;
};

// weight (num_embeddings, embedding_dim) from N(0, 1).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, TensorOptions options = {});
  Tensor forward(const Tensor& indices) override;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

// weight ones, bias zeros (both absent without elementwise_affine).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true, TensorOptions options = {});
  Tensor forward(const Tensor& input) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
  Tensor weight_, bias_;
};

// torch.nn.BatchNorm2d over NCHW inputs: in training, each channel is normalized by
// the batch's mean and (biased) variance over N, H and W, and the buffers running_mean
// and running_var follow them with `momentum` (the variance unbiased, n / (n - 1));
// num_batches_tracked counts those steps. In eval, the running statistics normalize.
// weight ones, bias zeros, running_mean zeros, running_var ones (torch's names and
// initial values, so state dicts move between the two).
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       TensorOptions options = {});
  Tensor forward(const Tensor& input) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }

 private:
  int64_t num_features_;
  double eps_, momentum_;
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};

// torch.nn.RMSNorm: weight ones; eps defaults to the input dtype's machine epsilon.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = {},
                   bool elementwise_affine = true, TensorOptions options = {});
  Tensor forward(const Tensor& input) override;
  const Tensor& weight() const { return weight_; }

 private:
  std::vector<int64_t> normalized_shape_;
  std::optional<double> eps_;
  Tensor weight_;
};

// Identity in eval mode; see functional::dropout.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;

 private:
  double p_;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override { return relu(input); }
};

class GELU : public Module {
 public:
  explicit GELU(GeluApproximate approximate = GeluApproximate::kNone)
      : Module("GELU"), approximate_(approximate) {}
  Tensor forward(const Tensor& input) override { return gelu(input, approximate_); }

 private:
  GeluApproximate approximate_;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override { return functional::silu(input); }
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override { return tanh(input); }
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim_(dim) {}
  Tensor forward(const Tensor& input) override { return softmax(input, dim_); }

 private:
  int64_t dim_;
};

// Flattens dims start_dim..end_dim (torch's defaults keep the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& input) override { return flatten(input, start_dim_, end_dim_); }

 private:
  int64_t start_dim_, end_dim_;
};

namespace detail {
// U(-bound, bound) of shape from the RNG of options' device (f32 unless options say).
Tensor uniform(std::vector<int64_t> shape, double bound, const TensorOptions& options);
}  // namespace detail

}  // namespace podsim::nn
