// torch.nn.functional for lazy tensors: the stateless forms of the nn layers and losses.
// Each follows the torch function of the same name (argument order, defaults, shapes,
// NCHW / OIHW layouts) and is differentiable through autograd. Most are compositions of
// tensor ops; conv2d, the pools, embedding and the masks are ops of their own
// (runtime/nn/primitives.cc) whose backward is written out, in TPU-friendly form: no scatter
// anywhere (embedding and cross-entropy use one-hot compares, max-pool backward with
// kernel == stride and no padding a first-maximum mask; other max pools use
// select-and-scatter).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::nn {

// An (height, width) pair; one number means both (torch's int-or-tuple arguments).
struct Int2 {
  Int2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit by design
  Int2(int64_t height, int64_t width) : h(height), w(width) {}
  int64_t h;
  int64_t w;
};

enum class Reduction { kNone, kMean, kSum };

namespace functional {

// The activations that are tensor ops, under their torch.nn.functional names.
using podsim::gelu;
using podsim::log_softmax;
using podsim::relu;
using podsim::sigmoid;
using podsim::softmax;
using podsim::tanh;

// ---- Layers --------------------------------------------------------------------------
// x @ weight^T + bias; weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Loc loc = Loc::current());
// Rows of weight (num_embeddings, dim) picked by integer indices of any shape; the
// result has shape indices.shape + (dim). The weight gradient is one_hot^T @ grad.
Tensor embedding(const Tensor& indices, const Tensor& weight, Loc loc = Loc::current());
// (..., num_classes) with 1 where the class equals the index (an iota compare; indices
// outside [0, num_classes) give all zeros).
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = kInt64,
               Loc loc = Loc::current());
// Normalizes over the trailing dims given by normalized_shape (biased variance).
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), double eps = 1e-5,
                  Loc loc = Loc::current());
// x / sqrt(mean(x^2) + eps) * weight over the trailing dims; eps defaults to the dtype's
// machine epsilon (torch.nn.RMSNorm's default).
Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                const Tensor& weight = Tensor(), std::optional<double> eps = {},
                Loc loc = Loc::current());
// Zeroes each element with probability p (device RNG) and scales the rest by 1/(1-p);
// identity when !training or p == 0. p is a graph parameter: changing it recompiles nothing.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Loc loc = Loc::current());
Tensor silu(const Tensor& x, Loc loc = Loc::current());  // x * sigmoid(x)

// ---- Masks and attention ---------------------------------------------------------------
// bool (rows, cols) with true where col <= row + diagonal (torch.ones(...).tril(diagonal)).
Tensor tril_mask(int64_t rows, int64_t cols, int64_t diagonal = 0,
                 pjrt::Device* device = nullptr, Loc loc = Loc::current());
// x with the elements above (tril) / below (triu) the diagonal of its last two dims zeroed.
Tensor tril(const Tensor& x, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& x, int64_t diagonal = 0, Loc loc = Loc::current());
// softmax(q k^T / sqrt(E) + mask) v over (..., L, E) x (..., S, E) x (..., S, Ev).
// attn_mask: bool (true = attend) or float (added to the scores), broadcast to (..., L, S).
// is_causal: position i attends to j <= i (attn_mask must then be undefined).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), bool is_causal = false,
                                    Loc loc = Loc::current());

// ---- Convolution and pooling (NCHW input, OIHW weight) ---------------------------------
// groups = 1 only.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Int2 stride = 1,
              Int2 padding = 0, Int2 dilation = 1, Loc loc = Loc::current());
// stride defaults to kernel_size; padding pads with -inf (max) or zeros counted in the
// average (avg, torch's count_include_pad=True); floor mode.
Tensor max_pool2d(const Tensor& x, Int2 kernel_size, std::optional<Int2> stride = {},
                  Int2 padding = 0, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& x, Int2 kernel_size, std::optional<Int2> stride = {},
                  Int2 padding = 0, Loc loc = Loc::current());

// ---- Losses -----------------------------------------------------------------------------
// logits (N, C) or (N, C, d1, ...), integer class targets (N) or (N, d1, ...). Targets
// equal to ignore_index contribute nothing and are not counted by the mean. With label
// smoothing s the target distribution is (1 - s) one_hot + s / C.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     Reduction reduction = Reduction::kMean, double label_smoothing = 0.0,
                     int64_t ignore_index = -100, Loc loc = Loc::current());
// log_probs laid out like cross_entropy's logits.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                Reduction reduction = Reduction::kMean, int64_t ignore_index = -100,
                Loc loc = Loc::current());
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::kMean,
                Loc loc = Loc::current());

}  // namespace functional
}  // namespace podsim::nn
