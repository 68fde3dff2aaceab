// The functional layers that are compositions of tensor ops (their gradients come from
// the ops' own backward functions).
#include "runtime/nn/functional.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "common/error.h"

namespace podsim::nn::functional {
namespace {

[[noreturn]] void fail_at(const Loc& loc, const char* op, const std::string& message) {
  throw Error(fmt::format("{}:{}: {}: {}", loc.file_name(), loc.line(), op, message));
}

std::string shape_text(const Tensor& t) {
  std::string dims;
  for (int64_t d : t.shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return fmt::format("{}[{}]", ir::type_name(t.dtype()), dims);
}

std::string dims_text(const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return "[" + dims + "]";
}

// The trailing dims normalized_shape names, checked against x.
std::vector<int64_t> normalized_dims(const char* op, const Tensor& x,
                                     const std::vector<int64_t>& normalized_shape, const Loc& loc) {
  if (!x.defined()) fail_at(loc, op, "the input is undefined");
  std::vector<int64_t> shape = x.shape();
  auto n = static_cast<int64_t>(normalized_shape.size());
  bool matches = n >= 1 && n <= x.dim();
  for (int64_t i = 0; matches && i < n; ++i)
    matches =
        shape[static_cast<size_t>(x.dim() - n + i)] == normalized_shape[static_cast<size_t>(i)];
  if (!matches)
    fail_at(loc, op,
            fmt::format("normalized_shape {} does not match the trailing dims of the input {}",
                        dims_text(normalized_shape), shape_text(x)));
  std::vector<int64_t> dims;
  for (int64_t i = x.dim() - n; i < x.dim(); ++i) dims.push_back(i);
  return dims;
}

void check_affine(const char* op, const char* what, const Tensor& p,
                  const std::vector<int64_t>& normalized_shape, const Loc& loc) {
  if (p.defined() && p.shape() != normalized_shape)
    fail_at(loc, op,
            fmt::format("{} {} must have the normalized shape {}", what, shape_text(p),
                        dims_text(normalized_shape)));
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc) {
  if (!weight.defined() || weight.dim() != 2)
    fail_at(loc, "linear",
            fmt::format("the weight must be 2-D (out, in), got {}",
                        weight.defined() ? shape_text(weight) : "undefined"));
  Tensor y = matmul(x, weight.t(loc), loc);
  if (bias.defined()) y = add(y, bias, loc);
  return y;
}

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                  const Tensor& weight, const Tensor& bias, double eps, Loc loc) {
  std::vector<int64_t> dims = normalized_dims("layer_norm", x, normalized_shape, loc);
  check_affine("layer_norm", "weight", weight, normalized_shape, loc);
  check_affine("layer_norm", "bias", bias, normalized_shape, loc);
  Tensor centered = sub(x, x.mean(dims, true, loc), loc);
  Tensor variance = mul(centered, centered, loc).mean(dims, true, loc);
  Tensor y = mul(centered, rsqrt(add(variance, eps, loc), loc), loc);
  if (weight.defined()) y = mul(y, weight, loc);
  if (bias.defined()) y = add(y, bias, loc);
  return y;
}

Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                std::optional<double> eps, Loc loc) {
  std::vector<int64_t> dims = normalized_dims("rms_norm", x, normalized_shape, loc);
  check_affine("rms_norm", "weight", weight, normalized_shape, loc);
  double e = eps.value_or(x.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                                                : std::numeric_limits<float>::epsilon());
  Tensor y = mul(x, rsqrt(add(mul(x, x, loc).mean(dims, true, loc), e, loc), loc), loc);
  if (weight.defined()) y = mul(y, weight, loc);
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, Loc loc) {
  if (!(p >= 0 && p <= 1)) fail_at(loc, "dropout", fmt::format("p must be in [0, 1], got {}", p));
  if (!training || p == 0) return x;
  if (!ir::is_float(x.dtype()))
    fail_at(loc, "dropout", fmt::format("expected a floating-point input, got {}", shape_text(x)));
  if (p == 1) return mul(x, 0.0, loc);
  // keep = u >= p keeps with probability 1 - p; p and 1/(1-p) are graph parameters.
  Tensor keep = ge(rand(x.shape(), {x.dtype(), x.device()}, loc), p, loc);
  return where(keep, mul(x, 1.0 / (1.0 - p), loc), 0.0, loc);
}

Tensor silu(const Tensor& x, Loc loc) { return mul(x, sigmoid(x, loc), loc); }

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, bool is_causal, Loc loc) {
  const char* op = "scaled_dot_product_attention";
  for (const Tensor* t : {&q, &k, &v})
    if (!t->defined() || t->dim() < 2)
      fail_at(loc, op, "q, k and v must be defined and at least 2-D (..., length, features)");
  if (q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
    fail_at(loc, op,
            fmt::format("shapes q {}, k {}, v {} do not fit (q and k share the feature size, k "
                        "and v the length)",
                        shape_text(q), shape_text(k), shape_text(v)));
  if (is_causal && attn_mask.defined())
    fail_at(loc, op, "give either attn_mask or is_causal, not both");
  double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = mul(matmul(q, k.transpose(-2, -1, loc), loc), scale, loc);
  double neg_inf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    scores = where(tril_mask(q.size(-2), k.size(-2), 0, q.device(), loc), scores, neg_inf, loc);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? where(attn_mask, scores, neg_inf, loc)
                                        : add(scores, attn_mask, loc);
  }
  return matmul(softmax(scores, -1, loc), v, loc);
}

}  // namespace podsim::nn::functional
