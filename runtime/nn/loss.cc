// Losses as compositions of tensor ops. Target log-probabilities are picked with a
// one-hot compare (never scatter, which the TPU target lacks; its gradient is a mul).
#include "runtime/nn/loss.h"

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/nn/functional.h"

namespace podsim::nn {
namespace functional {
namespace {

[[noreturn]] void fail_at(const Loc& loc, const char* op, const std::string& message) {
  throw Error(fmt::format("{}:{}: {}: {}", loc.file_name(), loc.line(), op, message));
}

std::string shape_text(const Tensor& t) {
  std::string dims;
  for (int64_t d : t.shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return fmt::format("{}[{}]", ir::type_name(t.dtype()), dims);
}

Tensor reduce(const Tensor& loss, Reduction reduction, const Loc& loc) {
  switch (reduction) {
    case Reduction::kNone:
      return loss;
    case Reduction::kSum:
      return loss.sum({}, false, loc);
    case Reduction::kMean:
      break;
  }
  return loss.mean({}, false, loc);
}

// Per-element loss of log-probabilities (N, C, d...) against class targets (N, d...):
// -( (1 - s) logp[target] + s/C sum_c logp[c] ), zero where target == ignore_index;
// reduced, the mean divides by the number of targets not ignored (torch's rule).
Tensor class_loss(const char* op, const Tensor& input, const Tensor& target, Reduction reduction,
                  double label_smoothing, int64_t ignore_index, bool from_logits, const Loc& loc) {
  if (!input.defined() || !target.defined()) fail_at(loc, op, "input and target must be defined");
  if (!ir::is_float(input.dtype()) || input.dim() < 1)
    fail_at(loc, op,
            fmt::format("expected floating-point scores (N, C, ...), got {}", shape_text(input)));
  if (!ir::is_integral(target.dtype()) || target.dtype() == kBool)
    fail_at(loc, op,
            fmt::format("expected integer class targets, got {} (probability targets are not "
                        "supported)",
                        shape_text(target)));
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    fail_at(loc, op, fmt::format("label_smoothing must be in [0, 1], got {}", label_smoothing));
  bool unbatched = input.dim() == 1;
  Tensor x = unbatched ? input.unsqueeze(0, loc) : input;
  Tensor t = unbatched ? target.unsqueeze(0, loc) : target;
  std::vector<int64_t> expected = x.shape();
  expected.erase(expected.begin() + 1);
  if (t.shape() != expected)
    fail_at(loc, op,
            fmt::format("target {} does not fit the input {} (expected the input's shape "
                        "without the class dim 1)",
                        shape_text(target), shape_text(input)));
  int64_t classes = x.size(1);
  if (x.dim() > 2) {  // classes last
    std::vector<int64_t> order{0};
    for (int64_t i = 2; i < x.dim(); ++i) order.push_back(i);
    order.push_back(1);
    x = x.permute(order, loc);
  }
  Tensor logp = from_logits ? x.log_softmax(-1, loc) : x;
  Tensor hot = one_hot(t, classes, x.dtype(), loc);
  Tensor loss = neg(mul(logp, hot, loc).sum({-1}, false, loc), loc);
  if (label_smoothing > 0) {
    Tensor smooth = neg(logp.sum({-1}, false, loc), loc);
    loss = add(mul(loss, 1.0 - label_smoothing, loc),
               mul(smooth, label_smoothing / static_cast<double>(classes), loc), loc);
  }
  Tensor valid = ne(t, Scalar(ignore_index), loc);
  loss = where(valid, loss, 0.0, loc);
  if (reduction == Reduction::kMean)
    return div(loss.sum({}, false, loc), valid.sum({}, false, loc).to(loss.dtype(), loc), loc);
  if (reduction == Reduction::kNone && unbatched) return loss.squeeze(0, loc);
  return reduce(loss, reduction, loc);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     double label_smoothing, int64_t ignore_index, Loc loc) {
  return class_loss("cross_entropy", logits, target, reduction, label_smoothing, ignore_index, true,
                    loc);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction,
                int64_t ignore_index, Loc loc) {
  return class_loss("nll_loss", log_probs, target, reduction, 0.0, ignore_index, false, loc);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, Loc loc) {
  if (!input.defined() || !target.defined())
    fail_at(loc, "mse_loss", "input and target must be defined");
  if (input.shape() != target.shape())
    fail_at(loc, "mse_loss",
            fmt::format("input {} and target {} must have the same shape", shape_text(input),
                        shape_text(target)));
  Tensor d = sub(input, target, loc);
  return reduce(mul(d, d, loc), reduction, loc);
}

}  // namespace functional

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target, reduction_, label_smoothing_, ignore_index_);
}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target, reduction_, ignore_index_);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, reduction_);
}

}  // namespace podsim::nn
