// torch.nn.MultiheadAttention: packed q/k/v input projection (in_proj_weight (3E, E),
// in_proj_bias (3E)) and an output projection (out_proj, a Linear), so that torch state
// dicts load unchanged. The attention itself is functional::scaled_dot_product_attention.
//
// Differences from torch: forward returns only the attention output (torch's
// need_weights=False); no key_padding_mask, dropout, add_bias_kv, or separate k/v
// dimensions (kdim, vdim).
#pragma once

#include "runtime/nn/layers.h"
#include "runtime/nn/module.h"

namespace podsim::nn {

class MultiheadAttention : public Module {
 public:
  // causal: forward(x) and forward(q, k, v) mask future positions unless told otherwise.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias = true,
                     bool batch_first = false, bool causal = false, TensorOptions options = {});

  // Self-attention: forward(x, x, x) with the module's causal setting.
  Tensor forward(const Tensor& x) override;
  // query (L, N, E) and key/value (S, N, E), or (N, L, E) / (N, S, E) with batch_first,
  // or unbatched (L, E) / (S, E). attn_mask as torch's: (L, S) or (N * heads, L, S),
  // bool (true = may NOT attend) or float (added to the scores).
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& attn_mask = Tensor());
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& attn_mask, bool is_causal);

  const Tensor& in_proj_weight() const { return in_proj_weight_; }
  const Tensor& in_proj_bias() const { return in_proj_bias_; }
  const std::shared_ptr<Linear>& out_proj() const { return out_proj_; }

 private:
  int64_t embed_dim_, num_heads_;
  bool batch_first_, causal_;
  Tensor in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
};

}  // namespace podsim::nn
