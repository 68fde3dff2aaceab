// Shape and indexing ops: reshape/view, permute/transpose, expand, squeeze/unsqueeze,
// flatten, cat/stack, slice/narrow, index_select, gather.
#include <algorithm>

#include "runtime/autograd/internal.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using ir::Opcode;
using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;
using lazy::TensorImpl;

std::string dims_string(std::span<const int64_t> dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", dims[i]);
  return out + "]";
}

int64_t rank_of(const TensorImpl& impl) { return static_cast<int64_t>(impl.dims.size()); }

Tensor reshaped(const TensorImpl& impl, const Dims& dims, const OpSite& site) {
  if (impl.dims == dims) return lazy::share_value(impl);
  return lazy::make_result(lazy::reshape_node(lazy::value_of(impl, site), dims, site), impl.device,
                           site);
}

Dims infer_shape(const OpSite& site, const TensorImpl& impl, const std::vector<int64_t>& shape) {
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer)
        lazy::op_fail(site, "only one dimension can be inferred (-1) in shape {}",
                      dims_string(shape));
      infer = i;
    } else if (shape[i] < 0) {
      lazy::op_fail(site, "invalid shape dimension {} in {}", shape[i], dims_string(shape));
    } else {
      known *= shape[i];
      if (known > ir::kMaxElements)
        lazy::op_fail(site, "shape {} is too large", dims_string(shape));
    }
  }
  int64_t numel = lazy::num_elements(impl.dims);
  Dims out(shape);
  if (infer) {
    if (known == 0 || numel % known != 0)
      lazy::op_fail(site, "shape {} is invalid for input {} of size {}", dims_string(shape),
                    lazy::impl_shape_string(impl), numel);
    out[*infer] = numel / known;
  } else if (known != numel) {
    lazy::op_fail(site, "shape {} is invalid for input {} of size {}", dims_string(shape),
                  lazy::impl_shape_string(impl), numel);
  }
  return out;
}

Tensor permuted(const TensorImpl& impl, const Dims& perm, const OpSite& site) {
  bool identity = true;
  Dims out;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity = identity && perm[i] == static_cast<int64_t>(i);
    out.push_back(impl.dims[static_cast<size_t>(perm[i])]);
  }
  if (identity) return lazy::share_value(impl);
  NodePtr t = lazy::unary_node(site, Opcode::kTranspose, impl.type, out, lazy::value_of(impl, site),
                               perm.span());
  return lazy::make_result(t, impl.device, site);
}

// The tensors of a list, checked: same device, promoted to one type.
struct ListOperands {
  pjrt::Device* device = nullptr;
  DType type = DType::kF32;
  std::vector<const TensorImpl*> impls;
};
ListOperands list_operands(const OpSite& site, const std::vector<Tensor>& tensors) {
  if (tensors.empty()) lazy::op_fail(site, "expected a non-empty list of tensors");
  ListOperands out;
  out.device = lazy::common_device(site, std::span<const Tensor>(tensors));
  std::vector<lazy::TypeOperand> types;
  for (const Tensor& t : tensors) {
    out.impls.push_back(t.impl().get());
    types.push_back({t.impl()->type, lazy::TypeOperand::Rank::kDimensioned});
  }
  out.type = lazy::result_type(types);
  return out;
}

Tensor concatenate(const OpSite& site, const ListOperands& list, std::vector<NodePtr> values,
                   int64_t dim) {
  Dims out = values[0]->dims;
  out[static_cast<size_t>(dim)] = 0;
  std::vector<lazy::Node*> operands;
  for (const NodePtr& v : values) {
    out[static_cast<size_t>(dim)] += v->dims[static_cast<size_t>(dim)];
    operands.push_back(v.get());
  }
  int64_t attrs[] = {dim};
  return lazy::make_result(
      lazy::make_node(site, Opcode::kConcatenate, list.type, out, operands, attrs), list.device,
      site);
}

void require_index_type(const OpSite& site, const TensorImpl& index) {
  if (index.type != DType::kS64 && index.type != DType::kS32)
    lazy::op_fail(site, "expected an s64 or s32 index tensor, got {}",
                  lazy::impl_shape_string(index));
}

using Grads = std::vector<Tensor>;

// Ops that keep every element in order (reshape, squeeze, ...): the gradient takes the
// input's shape back.
Tensor record_reshape(const char* name, const Tensor& x, Tensor out) {
  if (autograd::needs_grad({&x}))
    autograd::record(name, out, {&x},
                     [shape = x.shape()](const Tensor& g) { return Grads{g.reshape(shape)}; });
  return out;
}

Tensor record_permute(const Tensor& x, const Dims& perm, Tensor out) {
  if (autograd::needs_grad({&x})) {
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    autograd::record("permute", out, {&x},
                     [inverse](const Tensor& g) { return Grads{g.permute(inverse)}; });
  }
  return out;
}

// cat / stack: each input's part of the gradient along dim.
Tensor record_concatenate(const char* name, const std::vector<Tensor>& tensors, int64_t dim,
                          bool stacked, Tensor out) {
  if (!autograd::needs_grad(std::span<const Tensor>(tensors))) return out;
  std::vector<int64_t> sizes;
  for (const Tensor& t : tensors)
    sizes.push_back(stacked ? 1 : t.impl()->dims[static_cast<size_t>(dim)]);
  autograd::record(name, out, std::span<const Tensor>(tensors),
                   [sizes, dim, stacked](const Tensor& g) {
                     Grads grads;
                     int64_t at = 0;
                     for (int64_t size : sizes) {
                       Tensor part = g.slice(dim, at, at + size);
                       grads.push_back(stacked ? part.squeeze(dim) : part);
                       at += size;
                     }
                     return grads;
                   });
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Loc loc) {
  OpSite site{"reshape", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  return record_reshape("reshape", x, reshaped(impl, infer_shape(site, impl, shape), site));
}

Tensor permute(const Tensor& x, std::vector<int64_t> dims, Loc loc) {
  OpSite site{"permute", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  if (static_cast<int64_t>(dims.size()) != rank_of(impl))
    lazy::op_fail(site, "{} dims given for a tensor of rank {} ({})", dims.size(), rank_of(impl),
                  lazy::impl_shape_string(impl));
  Dims perm;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = lazy::wrap_dim(d, rank_of(impl), site);
    if (seen[static_cast<size_t>(w)])
      lazy::op_fail(site, "dimension {} appears more than once in {}", d, dims_string(dims));
    seen[static_cast<size_t>(w)] = true;
    perm.push_back(w);
  }
  return record_permute(x, perm, permuted(impl, perm, site));
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Loc loc) {
  OpSite site{"transpose", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.dims.empty()) {
    lazy::wrap_dim(dim0, 0, site);
    lazy::wrap_dim(dim1, 0, site);
    return record_reshape("transpose", x, lazy::share_value(impl));
  }
  Dims perm;
  for (int64_t i = 0; i < rank_of(impl); ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(lazy::wrap_dim(dim0, rank_of(impl), site))],
            perm[static_cast<size_t>(lazy::wrap_dim(dim1, rank_of(impl), site))]);
  return record_permute(x, perm, permuted(impl, perm, site));
}

Tensor expand(const Tensor& x, std::vector<int64_t> sizes, Loc loc) {
  OpSite site{"expand", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  size_t rank = impl.dims.size();
  if (sizes.size() < rank)
    lazy::op_fail(site,
                  "{} sizes given for a tensor of rank {} ({}): expand cannot drop dimensions",
                  sizes.size(), rank, lazy::impl_shape_string(impl));
  size_t offset = sizes.size() - rank;
  Dims out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t s = sizes[i];
    if (i < offset) {
      if (s < 0)
        lazy::op_fail(site, "size {} is not allowed for the new leading dimension {}", s, i);
      out.push_back(s);
      continue;
    }
    int64_t existing = impl.dims[i - offset];
    if (s == -1) s = existing;
    if (s != existing && existing != 1)
      lazy::op_fail(
          site,
          "the expanded size {} must match the existing size {} at non-singleton dimension {} "
          "(target sizes {}, tensor {})",
          s, existing, i, dims_string(sizes), lazy::impl_shape_string(impl));
    if (s < 0) lazy::op_fail(site, "invalid size {} in {}", s, dims_string(sizes));
    out.push_back(s);
  }
  Tensor result = out == impl.dims
                      ? lazy::share_value(impl)
                      : lazy::make_result(lazy::broadcast_to(lazy::value_of(impl, site), out, site),
                                          impl.device, site);
  if (autograd::needs_grad({&x}))
    autograd::record("expand", result, {&x}, [shape = impl.dims.vec()](const Tensor& g) {
      return Grads{autograd::sum_to(g, shape)};
    });
  return result;
}

Tensor squeeze(const Tensor& x, std::optional<int64_t> dim, Loc loc) {
  OpSite site{"squeeze", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  Dims out;
  if (dim) {
    int64_t d = lazy::wrap_dim(*dim, rank_of(impl), site);
    for (size_t i = 0; i < impl.dims.size(); ++i)
      if (static_cast<int64_t>(i) != d || impl.dims[i] != 1) out.push_back(impl.dims[i]);
  } else {
    for (int64_t s : impl.dims)
      if (s != 1) out.push_back(s);
  }
  return record_reshape("squeeze", x, reshaped(impl, out, site));
}

Tensor unsqueeze(const Tensor& x, int64_t dim, Loc loc) {
  OpSite site{"unsqueeze", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  int64_t d = lazy::wrap_dim(dim, rank_of(impl) + 1, site);
  Dims out = impl.dims;
  out.insert(static_cast<size_t>(d), 1);
  return record_reshape("unsqueeze", x, reshaped(impl, out, site));
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim, Loc loc) {
  OpSite site{"flatten", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.dims.empty()) {
    lazy::wrap_dim(start_dim, 0, site);
    lazy::wrap_dim(end_dim, 0, site);
    return record_reshape("flatten", x, reshaped(impl, Dims{1}, site));
  }
  int64_t s = lazy::wrap_dim(start_dim, rank_of(impl), site);
  int64_t e = lazy::wrap_dim(end_dim, rank_of(impl), site);
  if (s > e) lazy::op_fail(site, "start_dim {} comes after end_dim {}", start_dim, end_dim);
  Dims out;
  int64_t merged = 1;
  for (int64_t i = 0; i < rank_of(impl); ++i) {
    int64_t size = impl.dims[static_cast<size_t>(i)];
    if (i < s || i > e) {
      out.push_back(size);
    } else {
      merged *= size;
      if (i == e) out.push_back(merged);
    }
  }
  return record_reshape("flatten", x, reshaped(impl, out, site));
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  OpSite site{"cat", loc};
  ListOperands list = list_operands(site, tensors);
  const TensorImpl& first = *list.impls[0];
  if (first.dims.empty()) lazy::op_fail(site, "zero-dimensional tensors cannot be concatenated");
  int64_t d = lazy::wrap_dim(dim, rank_of(first), site);
  std::vector<NodePtr> values;
  for (size_t k = 0; k < list.impls.size(); ++k) {
    const TensorImpl& impl = *list.impls[k];
    bool same = impl.dims.size() == first.dims.size();
    for (size_t i = 0; same && i < impl.dims.size(); ++i)
      same = static_cast<int64_t>(i) == d || impl.dims[i] == first.dims[i];
    if (!same)
      lazy::op_fail(site,
                    "tensor {} is {} but tensor 0 is {}: sizes must match except in dimension {}",
                    k, lazy::impl_shape_string(impl), lazy::impl_shape_string(first), d);
    values.push_back(lazy::convert(lazy::value_of(impl, site), list.type, site));
  }
  return record_concatenate("cat", tensors, d, false,
                            concatenate(site, list, std::move(values), d));
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  OpSite site{"stack", loc};
  ListOperands list = list_operands(site, tensors);
  const TensorImpl& first = *list.impls[0];
  int64_t d = lazy::wrap_dim(dim, rank_of(first) + 1, site);
  Dims unsqueezed = first.dims;
  unsqueezed.insert(static_cast<size_t>(d), 1);
  std::vector<NodePtr> values;
  for (size_t k = 0; k < list.impls.size(); ++k) {
    const TensorImpl& impl = *list.impls[k];
    if (!(impl.dims == first.dims))
      lazy::op_fail(site, "tensors must have equal shapes, but tensor 0 is {} and tensor {} is {}",
                    lazy::impl_shape_string(first), k, lazy::impl_shape_string(impl));
    values.push_back(lazy::reshape_node(lazy::convert(lazy::value_of(impl, site), list.type, site),
                                        unsqueezed, site));
  }
  return record_concatenate("stack", tensors, d, true,
                            concatenate(site, list, std::move(values), d));
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step, Loc loc) {
  OpSite site{"slice", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.dims.empty()) lazy::op_fail(site, "a zero-dimensional tensor cannot be sliced");
  if (step <= 0) lazy::op_fail(site, "the step must be positive, got {}", step);
  int64_t d = lazy::wrap_dim(dim, rank_of(impl), site);
  int64_t size = impl.dims[static_cast<size_t>(d)];
  // Python slice semantics: negative positions count from the end, then clamp.
  auto clamp_position = [&](int64_t p) {
    if (p < 0) p += size;
    return std::clamp<int64_t>(p, 0, size);
  };
  int64_t s = clamp_position(start.value_or(0));
  int64_t e = std::max(s, clamp_position(end.value_or(size)));
  if (s == 0 && e == size && step == 1)
    return record_reshape("slice", x, lazy::share_value(impl));
  Dims out = impl.dims;
  out[static_cast<size_t>(d)] = (e - s + step - 1) / step;
  lazy::SmallVec<int64_t, 4> attrs;
  for (int64_t i = 0; i < rank_of(impl); ++i) {
    bool here = i == d;
    attrs.push_back(here ? s : 0);
    attrs.push_back(here ? e : impl.dims[static_cast<size_t>(i)]);
    attrs.push_back(here ? step : 1);
  }
  NodePtr v = lazy::unary_node(site, Opcode::kSlice, impl.type, out, lazy::value_of(impl, site),
                               attrs.span());
  Tensor result = lazy::make_result(v, impl.device, site);
  if (autograd::needs_grad({&x}))
    autograd::record("slice", result, {&x}, [shape = impl.dims.vec(), d, s, step](const Tensor& g) {
      return Grads{autograd::slice_backward(g, shape, d, s, step)};
    });
  return result;
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Loc loc) {
  OpSite site{"narrow", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.dims.empty()) lazy::op_fail(site, "a zero-dimensional tensor cannot be narrowed");
  int64_t d = lazy::wrap_dim(dim, rank_of(impl), site);
  int64_t size = impl.dims[static_cast<size_t>(d)];
  if (start < -size || start > size)
    lazy::op_fail(site, "start {} is out of range for dimension {} of size {}", start, d, size);
  if (start < 0) start += size;
  if (length < 0 || start + length > size)
    lazy::op_fail(site, "start ({}) + length ({}) exceeds dimension {} of size {}", start, length,
                  d, size);
  return slice(x, d, start, start + length, 1, loc);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Loc loc) {
  OpSite site{"index_select", loc};
  pjrt::Device* device = lazy::common_device(site, {&x, &index});
  const TensorImpl& impl = lazy::checked(x, site);
  const TensorImpl& idx = lazy::checked(index, site);
  require_index_type(site, idx);
  if (idx.dims.size() > 1)
    lazy::op_fail(site, "the index must be 0- or 1-dimensional, got {}",
                  lazy::impl_shape_string(idx));
  if (impl.dims.empty()) lazy::op_fail(site, "the input must have at least one dimension");
  int64_t d = lazy::wrap_dim(dim, rank_of(impl), site);
  int64_t n = lazy::num_elements(idx.dims);
  NodePtr indices = lazy::reshape_node(lazy::convert(lazy::value_of(idx, site), DType::kS64, site),
                                       Dims{n}, site);
  Dims out = impl.dims;
  out[static_cast<size_t>(d)] = n;
  // offset_dims: every output dim but d; the index picks along d (collapsed).
  lazy::SmallVec<int64_t, 4> attrs;
  attrs.push_back(rank_of(impl) - 1);
  for (int64_t i = 0; i < rank_of(impl); ++i)
    if (i != d) attrs.push_back(i);
  attrs.push_back(1);
  attrs.push_back(d);
  attrs.push_back(1);
  attrs.push_back(d);
  attrs.push_back(1);  // index_vector_dim = rank of indices: each index is a scalar
  for (int64_t i = 0; i < rank_of(impl); ++i)
    attrs.push_back(i == d ? 1 : impl.dims[static_cast<size_t>(i)]);
  NodePtr v = lazy::value_of(impl, site);
  lazy::Node* operands[] = {v.get(), indices.get()};
  Tensor result = lazy::make_result(
      lazy::make_node(site, Opcode::kGather, impl.type, out, operands, attrs.span()), device, site);
  if (autograd::needs_grad({&x}))
    autograd::record("index_select", result, {&x, &index},
                     [si = autograd::saved(index), d, shape = impl.dims.vec()](const Tensor& g) {
                       return Grads{autograd::index_select_backward(g, si, d, shape), Tensor()};
                     });
  return result;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Loc loc) {
  OpSite site{"gather", loc};
  pjrt::Device* device = lazy::common_device(site, {&x, &index});
  const TensorImpl& impl = lazy::checked(x, site);
  const TensorImpl& idx = lazy::checked(index, site);
  require_index_type(site, idx);
  if (idx.dims.size() != impl.dims.size())
    lazy::op_fail(site, "the index {} must have the rank of the input {}",
                  lazy::impl_shape_string(idx), lazy::impl_shape_string(impl));
  int64_t d = lazy::wrap_dim(dim, rank_of(impl), site);
  for (size_t i = 0; i < impl.dims.size(); ++i)
    if (static_cast<int64_t>(i) != d && idx.dims[i] > impl.dims[i])
      lazy::op_fail(site, "the index {} is larger than the input {} in dimension {}",
                    lazy::impl_shape_string(idx), lazy::impl_shape_string(impl), i);
  // Scalars gather as one-element vectors.
  Dims in_dims = impl.dims.empty() ? Dims{1} : impl.dims;
  Dims idx_dims = idx.dims.empty() ? Dims{1} : idx.dims;
  auto rank = static_cast<int64_t>(in_dims.size());
  NodePtr along = lazy::reshape_node(lazy::convert(lazy::value_of(idx, site), DType::kS64, site),
                                     idx_dims, site);
  // Full coordinates [idx..., rank]: the index along d, the position itself elsewhere.
  Dims column = idx_dims;
  column.push_back(1);
  std::vector<NodePtr> columns;
  std::vector<lazy::Node*> operands;
  for (int64_t k = 0; k < rank; ++k) {
    NodePtr c =
        k == d ? along : lazy::make_node(site, Opcode::kIota, DType::kS64, idx_dims, {}, {k});
    columns.push_back(lazy::reshape_node(c, column, site));
    operands.push_back(columns.back().get());
  }
  Dims coordinates_dims = idx_dims;
  coordinates_dims.push_back(rank);
  int64_t concat_dim[] = {rank};
  NodePtr coordinates = lazy::make_node(site, Opcode::kConcatenate, DType::kS64, coordinates_dims,
                                        operands, concat_dim);
  lazy::SmallVec<int64_t, 4> attrs{0, rank};
  for (int64_t i = 0; i < rank; ++i) attrs.push_back(i);
  attrs.push_back(rank);
  for (int64_t i = 0; i < rank; ++i) attrs.push_back(i);
  attrs.push_back(rank);  // index_vector_dim
  for (int64_t i = 0; i < rank; ++i) attrs.push_back(1);
  NodePtr input = lazy::reshape_node(lazy::value_of(impl, site), in_dims, site);
  lazy::Node* gather_operands[] = {input.get(), coordinates.get()};
  NodePtr g =
      lazy::make_node(site, Opcode::kGather, impl.type, idx_dims, gather_operands, attrs.span());
  Tensor result = lazy::make_result(lazy::reshape_node(g, idx.dims, site), device, site);
  if (autograd::needs_grad({&x}))
    autograd::record("gather", result, {&x, &index},
                     [si = autograd::saved(index), d, shape = impl.dims.vec()](const Tensor& g) {
                       return Grads{autograd::gather_backward(g, si, d, shape), Tensor()};
                     });
  return result;
}

// ---- Methods -----------------------------------------------------------------------
Tensor Tensor::reshape(std::vector<int64_t> shape, Loc loc) const {
  return podsim::reshape(*this, std::move(shape), loc);
}
Tensor Tensor::view(std::vector<int64_t> shape, Loc loc) const {
  return podsim::reshape(*this, std::move(shape), loc);
}
Tensor Tensor::permute(std::vector<int64_t> dims, Loc loc) const {
  return podsim::permute(*this, std::move(dims), loc);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Loc loc) const {
  return podsim::transpose(*this, dim0, dim1, loc);
}
Tensor Tensor::t(Loc loc) const {
  OpSite site{"t", loc};
  const TensorImpl& impl = lazy::checked(*this, site);
  if (impl.dims.size() > 2)
    lazy::op_fail(site, "expects a tensor of rank <= 2, got {}", lazy::impl_shape_string(impl));
  return impl.dims.size() < 2 ? record_reshape("t", *this, lazy::share_value(impl))
                              : podsim::transpose(*this, 0, 1, loc);
}
Tensor Tensor::expand(std::vector<int64_t> sizes, Loc loc) const {
  return podsim::expand(*this, std::move(sizes), loc);
}
Tensor Tensor::squeeze(Loc loc) const { return podsim::squeeze(*this, std::nullopt, loc); }
Tensor Tensor::squeeze(int64_t dim, Loc loc) const { return podsim::squeeze(*this, dim, loc); }
Tensor Tensor::unsqueeze(int64_t dim, Loc loc) const { return podsim::unsqueeze(*this, dim, loc); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, Loc loc) const {
  return podsim::flatten(*this, start_dim, end_dim, loc);
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step, Loc loc) const {
  return podsim::slice(*this, dim, start, end, step, loc);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length, Loc loc) const {
  return podsim::narrow(*this, dim, start, length, loc);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index, Loc loc) const {
  return podsim::index_select(*this, dim, index, loc);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, Loc loc) const {
  return podsim::gather(*this, dim, index, loc);
}

}  // namespace podsim
