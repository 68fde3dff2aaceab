#include "runtime/nn/attention.h"

#include <fmt/format.h>

#include <cmath>

#include "common/error.h"
#include "runtime/autograd/autograd.h"
#include "runtime/nn/functional.h"

namespace podsim::nn {

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias,
                                       bool batch_first, bool causal, TensorOptions options)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      batch_first_(batch_first),
      causal_(causal) {
  if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0)
    throw Error(fmt::format(
        "MultiheadAttention: embed_dim ({}) must be a positive multiple of num_heads ({})",
        embed_dim, num_heads));
  TensorOptions f(options.dtype().value_or(kFloat32), options.device());
  // torch: xavier_uniform_ for the packed projection, zero biases.
  double bound = std::sqrt(6.0 / static_cast<double>(embed_dim + 3 * embed_dim));
  in_proj_weight_ = detail::uniform({3 * embed_dim, embed_dim}, bound, f);
  if (bias) in_proj_bias_ = zeros({3 * embed_dim}, f);
  register_parameter("in_proj_weight", &in_proj_weight_);
  register_parameter("in_proj_bias", &in_proj_bias_);
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias, f));
  if (bias) {  // torch zeroes out_proj.bias too
    NoGradGuard no_grad;
    Tensor out_bias = out_proj_->bias();
    out_bias.copy_(zeros({embed_dim}, f));
  }
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x, Tensor(), causal_); }

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& attn_mask) {
  return forward(query, key, value, attn_mask, causal_ && !attn_mask.defined());
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& attn_mask, bool is_causal) {
  for (const Tensor* t : {&query, &key, &value})
    if (!t->defined() || (t->dim() != 2 && t->dim() != 3) || t->size(-1) != embed_dim_)
      throw Error(fmt::format(
          "MultiheadAttention: query, key and value must be 2-D or 3-D with {} features",
          embed_dim_));
  bool unbatched = query.dim() == 2;
  if (key.dim() != query.dim() || value.dim() != query.dim())
    throw Error("MultiheadAttention: query, key and value must have the same rank");
  // To (N, L, E).
  auto batched = [&](const Tensor& t) {
    if (unbatched) return t.unsqueeze(0);
    return batch_first_ ? t : t.transpose(0, 1);
  };
  Tensor q = batched(query), k = batched(key), v = batched(value);
  int64_t n = q.size(0), l = q.size(1), s = k.size(1), e = embed_dim_;
  if (k.size(0) != n || v.size(0) != n || v.size(1) != s)
    throw Error("MultiheadAttention: query, key and value batch sizes or key/value lengths differ");
  auto project = [&](const Tensor& t, int64_t part) {
    Tensor w = in_proj_weight_.narrow(0, part * e, e);
    Tensor b = in_proj_bias_.defined() ? in_proj_bias_.narrow(0, part * e, e) : Tensor();
    return functional::linear(t, w, b);
  };
  int64_t heads = num_heads_, d = e / heads;
  auto split_heads = [&](const Tensor& t, int64_t length) {
    return t.reshape({n, length, heads, d}).transpose(1, 2);  // (N, H, length, D)
  };
  Tensor qp, kp, vp;
  if (query.is_same(key) && key.is_same(value)) {
    // Self-attention: one (N, L, 3E) projection instead of three.
    Tensor qkv = functional::linear(q, in_proj_weight_, in_proj_bias_);
    qp = qkv.narrow(-1, 0, e);
    kp = qkv.narrow(-1, e, e);
    vp = qkv.narrow(-1, 2 * e, e);
  } else {
    qp = project(q, 0);
    kp = project(k, 1);
    vp = project(v, 2);
  }
  Tensor qh = split_heads(qp, l);
  Tensor kh = split_heads(kp, s);
  Tensor vh = split_heads(vp, s);
  Tensor mask;
  if (attn_mask.defined()) {
    // torch's MultiheadAttention: bool true = masked out, the opposite of SDPA's.
    mask = attn_mask.dtype() == kBool ? eq(attn_mask, Scalar(false)) : attn_mask;
    if (mask.dim() == 3)
      mask = mask.reshape({n, heads, l, s});
    else if (mask.dim() != 2)
      throw Error("MultiheadAttention: attn_mask must be (L, S) or (N * num_heads, L, S)");
  }
  Tensor attended = functional::scaled_dot_product_attention(qh, kh, vh, mask, is_causal);
  Tensor merged = attended.transpose(1, 2).reshape({n, l, e});
  Tensor out = out_proj_->forward(merged);
  if (unbatched) return out.squeeze(0);
  return batch_first_ ? out : out.transpose(0, 1);
}

}  // namespace podsim::nn
