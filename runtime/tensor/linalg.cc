// matmul with torch.matmul's rules, lowered to one dot (batch dimensions broadcast
// first when both operands have them).
#include "runtime/autograd/internal.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;
using lazy::TensorImpl;

NodePtr dot(const OpSite& site, const NodePtr& a, const NodePtr& b, Dims out, int64_t batch,
            int64_t lhs_contracting, int64_t rhs_contracting) {
  lazy::SmallVec<int64_t, 4> attrs{batch, 1, batch, 1};
  for (int64_t i = 0; i < batch; ++i) attrs.push_back(i);
  attrs.push_back(lhs_contracting);
  for (int64_t i = 0; i < batch; ++i) attrs.push_back(i);
  attrs.push_back(rhs_contracting);
  lazy::Node* operands[] = {a.get(), b.get()};
  return lazy::make_node(site, ir::Opcode::kDot, a->type, std::move(out), operands, attrs.span());
}

Tensor matmul_forward(const Tensor& a, const Tensor& b, Loc loc);

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) {
  Tensor out = matmul_forward(a, b, loc);
  if (autograd::needs_grad({&a, &b}))
    autograd::record("matmul", out, {&a, &b},
                     [sa = autograd::saved(a), sb = autograd::saved(b)](const Tensor& g) {
                       return autograd::matmul_backward(g, sa, sb);
                     });
  return out;
}

namespace {

Tensor matmul_forward(const Tensor& a, const Tensor& b, Loc loc) {
  OpSite site{"matmul", loc};
  pjrt::Device* device = lazy::common_device(site, {&a, &b});
  const TensorImpl& x = *a.impl();
  const TensorImpl& y = *b.impl();
  if (x.type != y.type)
    lazy::op_fail(site, "expected both operands to have the same dtype, got {} and {}",
                  lazy::impl_shape_string(x), lazy::impl_shape_string(y));
  if (x.type == DType::kPred) lazy::op_fail(site, "bool tensors are not supported");
  size_t ra = x.dims.size(), rb = y.dims.size();
  if (ra == 0 || rb == 0)
    lazy::op_fail(site, "both operands need at least one dimension, got {} and {}",
                  lazy::impl_shape_string(x), lazy::impl_shape_string(y));
  // The contracted dimensions: the last of a, the second-to-last of b (its only one if 1-D).
  int64_t ka = x.dims[ra - 1];
  int64_t kb = rb == 1 ? y.dims[0] : y.dims[rb - 2];
  if (ka != kb)
    lazy::op_fail(site,
                  "shapes {} and {} cannot be multiplied ({} vs {} in the contracted dimension)",
                  lazy::impl_shape_string(x), lazy::impl_shape_string(y), ka, kb);
  NodePtr va = lazy::value_of(x, site);
  NodePtr vb = lazy::value_of(y, site);

  if ((ra <= 2 && rb <= 2) || ra == 1 || rb == 1) {
    // No batch dimensions on both sides: a dot of a's free dims with b's free dims
    // (a 1-D operand simply has none), which is what torch's promote-then-squeeze gives.
    Dims out;
    for (size_t i = 0; i + 1 < ra; ++i) out.push_back(x.dims[i]);
    for (size_t i = 0; i < rb; ++i)
      if (i != (rb == 1 ? 0 : rb - 2)) out.push_back(y.dims[i]);
    int64_t rhs_contracting = rb == 1 ? 0 : static_cast<int64_t>(rb) - 2;
    return lazy::make_result(
        dot(site, va, vb, std::move(out), 0, static_cast<int64_t>(ra) - 1, rhs_contracting), device,
        site);
  }

  // Both at least 2-D, one at least 3-D: broadcast the batch dimensions.
  std::span<const int64_t> batch_a(x.dims.data(), ra - 2);
  std::span<const int64_t> batch_b(y.dims.data(), rb - 2);
  Dims batch = lazy::broadcast_dims(site, x.type, batch_a, y.type, batch_b);
  Dims da = batch, db = batch;
  da.push_back(x.dims[ra - 2]);
  da.push_back(ka);
  db.push_back(kb);
  db.push_back(y.dims[rb - 1]);
  va = lazy::broadcast_to(va, da, site);
  vb = lazy::broadcast_to(vb, db, site);
  Dims out = batch;
  out.push_back(x.dims[ra - 2]);
  out.push_back(y.dims[rb - 1]);
  auto nb = static_cast<int64_t>(batch.size());
  return lazy::make_result(dot(site, va, vb, std::move(out), nb, nb + 1, nb), device, site);
}

}  // namespace

Tensor Tensor::matmul(const Tensor& other, Loc loc) const {
  return podsim::matmul(*this, other, loc);
}

}  // namespace podsim
