// The derivatives that take more than a line: matmul, slice, index_select, gather and
// the broadcast of a reduction's gradient. They use only ops the TPU lowering has
// (dot, broadcast, compare, select, concatenate, reduce): index gradients are one-hot
// contractions, never scatters.
#include <algorithm>

#include "runtime/autograd/internal.h"

namespace podsim::autograd {
namespace {

using Grads = std::vector<Tensor>;

// 0, 1, ..., size - 1 as s64 on device.
Tensor iota(int64_t size, pjrt::Device* device) {
  lazy::OpSite site{"iota", Loc::current()};
  return lazy::make_result(
      lazy::make_node(site, ir::Opcode::kIota, DType::kS64, lazy::Dims{size}, {}, {0}), device,
      site);
}

// Zeros of like's dtype and device with like's shape but size along dim.
Tensor zeros_along(const Tensor& like, int64_t dim, int64_t size) {
  std::vector<int64_t> shape = like.shape();
  shape[static_cast<size_t>(dim)] = size;
  return zeros(shape, {like.dtype(), like.device()});
}

// t with before zeros in front of it and after zeros behind it along dim.
Tensor pad_zeros(const Tensor& t, int64_t dim, int64_t before, int64_t after) {
  std::vector<Tensor> parts;
  if (before > 0) parts.push_back(zeros_along(t, dim, before));
  parts.push_back(t);
  if (after > 0) parts.push_back(zeros_along(t, dim, after));
  return parts.size() == 1 ? t : cat(parts, dim);
}

// Indices as s64 clamped into [0, size), as the forward gathers clamp them.
Tensor clamped_index(const Tensor& index, int64_t size) {
  return clamp(index.to(DType::kS64), Scalar(int64_t{0}), Scalar(size - 1));
}

}  // namespace

Tensor expand_reduced(const Tensor& g, const std::vector<int64_t>& input_shape,
                      const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = g;
  if (!keepdim) {
    std::vector<int64_t> kept = input_shape;
    for (int64_t d : dims) kept[static_cast<size_t>(d)] = 1;
    out = out.reshape(kept);
  }
  return out.expand(input_shape);
}

Grads matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b) {
  int64_t ra = a.dim(), rb = b.dim();
  if (ra == 1 && rb == 1) return {mul(g, b), mul(g, a)};
  // As matrices: a 1-D a is a row, a 1-D b a column; g gets back the unit dims matmul
  // dropped for them.
  Tensor ma = ra == 1 ? a.unsqueeze(0) : a;
  Tensor mb = rb == 1 ? b.unsqueeze(1) : b;
  std::vector<int64_t> g_shape = g.shape();
  if (ra == 1) g_shape.insert(g_shape.end() - 1, 1);
  if (rb == 1) g_shape.push_back(1);
  Tensor mg = g.reshape(g_shape);
  Tensor ga = matmul(mg, mb.transpose(-1, -2));
  Tensor gb;
  if (mb.dim() == 2 && ma.dim() > 2) {
    // A shared matrix (a Linear weight): one product over all batch rows, no batch sum.
    int64_t k = ma.size(-1), m = mg.size(-1);
    gb = matmul(ma.reshape({-1, k}).t(), mg.reshape({-1, m}));
  } else {
    gb = matmul(ma.transpose(-1, -2), mg);
  }
  return {sum_to(ga, ma.shape()).reshape(a.shape()), sum_to(gb, mb.shape()).reshape(b.shape())};
}

Tensor slice_backward(const Tensor& g, const std::vector<int64_t>& input_shape, int64_t dim,
                      int64_t start, int64_t step) {
  int64_t size = input_shape[static_cast<size_t>(dim)];
  int64_t n = g.size(dim);
  if (n == 0) return zeros(input_shape, {g.dtype(), g.device()});
  Tensor grad = g;
  if (step > 1) {
    // Interleave step - 1 zeros after each element: [.., n, ..] -> [.., n * step, ..].
    Tensor column = g.unsqueeze(dim + 1);
    grad = cat({column, zeros_along(column, dim + 1, step - 1)}, dim + 1).flatten(dim, dim + 1);
    int64_t keep = std::min(n * step, size - start);
    if (keep < n * step) grad = grad.narrow(dim, 0, keep);
  }
  int64_t length = grad.size(dim);
  return pad_zeros(grad, dim, start, size - start - length);
}

Tensor index_select_backward(const Tensor& g, const Tensor& index, int64_t dim,
                             const std::vector<int64_t>& input_shape) {
  int64_t size = input_shape[static_cast<size_t>(dim)];
  int64_t n = g.size(dim);
  // one_hot[j, i] = (index[j] == i): grad_x[.., i, ..] = sum_j g[.., j, ..] one_hot[j, i].
  Tensor idx = clamped_index(index.reshape({n}), size);
  Tensor one_hot = eq(idx.unsqueeze(1), iota(size, g.device()).unsqueeze(0)).to(g.dtype());
  Tensor front = dim == 0 ? g : g.transpose(0, dim);  // [n, rest...]
  std::vector<int64_t> front_shape = front.shape();
  Tensor product = matmul(one_hot.t(), front.reshape({n, -1}));  // [size, rest]
  front_shape[0] = size;
  Tensor grad = product.reshape(front_shape);
  return dim == 0 ? grad : grad.transpose(0, dim);
}

Tensor gather_backward(const Tensor& g, const Tensor& index, int64_t dim,
                       const std::vector<int64_t>& input_shape) {
  if (input_shape.empty()) return g.reshape({});  // a scalar gathers itself
  int64_t size = input_shape[static_cast<size_t>(dim)];
  auto rank = static_cast<int64_t>(input_shape.size());
  // contribution[.., j] = sum over index's dim of g * (index == j): the one-hot of each
  // index along a new last dim, multiplied by g and reduced over dim.
  Tensor one_hot = eq(clamped_index(index, size).unsqueeze(-1), iota(size, g.device()));
  Tensor contribution = sum(mul(g.unsqueeze(-1), one_hot.to(g.dtype())), {dim});
  // The new last dim goes where dim was.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i == dim) perm.push_back(rank - 1);
    perm.push_back(i);
  }
  if (dim == rank - 1) perm.push_back(rank - 1);
  Tensor grad = contribution.permute(perm);
  // An index smaller than the input in other dims leaves the rest of it at zero.
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim && grad.size(i) < input_shape[static_cast<size_t>(i)])
      grad = pad_zeros(grad, i, 0, input_shape[static_cast<size_t>(i)] - grad.size(i));
  return grad;
}

}  // namespace podsim::autograd
