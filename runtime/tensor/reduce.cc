// Reductions and the normalizations built from them (softmax, log_softmax, logsumexp),
// written in the numerically stable form: the maximum is subtracted before exp.
#include <algorithm>

#include "runtime/autograd/internal.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using ir::Opcode;
using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;
using lazy::ReduceKind;
using lazy::TensorImpl;
using Grads = std::vector<Tensor>;

// Non-negative, sorted, unique dims to reduce; empty means all. A 0-dim tensor accepts
// dim 0 / -1 and reduces over nothing.
Dims reduce_dims(const OpSite& site, const TensorImpl& impl, const std::vector<int64_t>& dims) {
  auto rank = static_cast<int64_t>(impl.dims.size());
  Dims out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = lazy::wrap_dim(d, rank, site);
    for (int64_t seen : out)
      if (seen == w)
        lazy::op_fail(site, "dimension {} appears more than once in the dims to reduce", d);
    out.push_back(w);
  }
  if (rank == 0) return Dims();
  std::sort(out.begin(), out.end());
  return out;
}

Dims keepdim_shape(const Dims& dims, const Dims& reduced) {
  Dims out = dims;
  for (int64_t d : reduced) out[static_cast<size_t>(d)] = 1;
  return out;
}

NodePtr keep(const NodePtr& reduced, bool keepdim, const Dims& input_dims, const Dims& rdims,
             const OpSite& site) {
  return keepdim ? lazy::reshape_node(reduced, keepdim_shape(input_dims, rdims), site) : reduced;
}

bool is_half(DType t) { return t == DType::kF16 || t == DType::kBF16; }

void reject_empty(const OpSite& site, const TensorImpl& impl, const Dims& rdims) {
  for (int64_t d : rdims)
    if (impl.dims[static_cast<size_t>(d)] == 0)
      lazy::op_fail(site, "dimension {} of {} has size 0: the reduction has no identity", d,
                    lazy::impl_shape_string(impl));
  if (rdims.empty() && lazy::num_elements(impl.dims) == 0)
    lazy::op_fail(site, "the tensor {} is empty: the reduction has no identity",
                  lazy::impl_shape_string(impl));
}

void require_float(const OpSite& site, const TensorImpl& impl) {
  if (!ir::is_float(impl.type))
    lazy::op_fail(site, "expected a floating-point tensor, got {}", lazy::impl_shape_string(impl));
}

// Sum in the accumulation type (s64 for bool and integers, f32 for 16-bit floats).
NodePtr sum_node(const TensorImpl& impl, const Dims& rdims, const OpSite& site) {
  NodePtr v = lazy::value_of(impl, site);
  DType acc = impl.type;
  if (!ir::is_float(acc)) acc = DType::kS64;
  if (is_half(acc)) acc = DType::kF32;
  return lazy::reduce_node(ReduceKind::kSum, lazy::convert(v, acc, site), rdims, site);
}

NodePtr widen(const NodePtr& v, const OpSite& site) {
  if (is_half(v->type) || !ir::is_float(v->type)) return lazy::convert(v, DType::kF32, site);
  return v;
}

// max over dim of v, kept as a size-1 dim and broadcast back to v's shape.
NodePtr max_broadcast(const NodePtr& v, int64_t dim, const OpSite& site) {
  Dims rdims{dim};
  NodePtr m = lazy::reduce_node(ReduceKind::kMax, v, rdims, site);
  return lazy::broadcast_to(lazy::reshape_node(m, keepdim_shape(v->dims, rdims), site), v->dims,
                            site);
}

NodePtr sum_broadcast(const NodePtr& v, int64_t dim, const OpSite& site) {
  Dims rdims{dim};
  NodePtr s = lazy::reduce_node(ReduceKind::kSum, v, rdims, site);
  return lazy::broadcast_to(lazy::reshape_node(s, keepdim_shape(v->dims, rdims), site), v->dims,
                            site);
}

// Softmax-family ops along one dim; a 0-dim input is treated as one element.
struct AlongDim {
  NodePtr value;  // in the computation type (f32 for 16-bit floats)
  int64_t dim;
  Dims original;
};
AlongDim along_dim(const TensorImpl& impl, int64_t dim, const OpSite& site) {
  int64_t d = lazy::wrap_dim(dim, static_cast<int64_t>(impl.dims.size()), site);
  NodePtr v = widen(lazy::value_of(impl, site), site);
  if (impl.dims.empty()) v = lazy::reshape_node(v, Dims{1}, site);
  return {v, d, impl.dims};
}

Tensor finish(NodePtr v, const TensorImpl& impl, const Dims& dims, const OpSite& site) {
  v = lazy::reshape_node(v, dims, site);
  return lazy::make_result(lazy::convert(v, impl.type, site), impl.device, site);
}

Tensor min_max(const OpSite& site, ReduceKind kind, const Tensor& x,
               const std::vector<int64_t>& dims, bool keepdim) {
  const TensorImpl& impl = lazy::checked(x, site);
  Dims rdims = reduce_dims(site, impl, dims);
  reject_empty(site, impl, rdims);
  NodePtr r = lazy::reduce_node(kind, lazy::value_of(impl, site), rdims, site);
  Tensor out = lazy::make_result(keep(r, keepdim, impl.dims, rdims, site), impl.device, site);
  if (autograd::needs_grad({&x}))
    // amax/amin: the gradient is shared evenly by the elements equal to the extreme.
    autograd::record(
        site.op, out, {&x},
        [sx = autograd::saved(x), so = autograd::saved(out), rdims = rdims.vec(),
         keepdim](const Tensor& g) {
          std::vector<int64_t> shape = sx.shape();
          Tensor extreme = autograd::expand_reduced(so, shape, rdims, keepdim);
          Tensor mask = eq(sx, extreme).to(g.dtype());
          Tensor count = sum(mask, rdims, true);
          return Grads{div(mul(autograd::expand_reduced(g, shape, rdims, keepdim), mask), count)};
        });
  return out;
}

Tensor arg_extreme(const OpSite& site, ReduceKind kind, const Tensor& x, std::optional<int64_t> dim,
                   bool keepdim) {
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.type == DType::kPred) lazy::op_fail(site, "bool tensors are not supported");
  NodePtr v = lazy::value_of(impl, site);
  auto rank = static_cast<int64_t>(impl.dims.size());
  Dims out_keep;
  int64_t d = 0;
  if (!dim || rank == 0) {
    if (dim) lazy::wrap_dim(*dim, rank, site);
    if (lazy::num_elements(impl.dims) == 0)
      lazy::op_fail(site, "the tensor {} is empty", lazy::impl_shape_string(impl));
    v = lazy::reshape_node(v, Dims{lazy::num_elements(impl.dims)}, site);
    out_keep = Dims(impl.dims.size(), 1);
  } else {
    d = lazy::wrap_dim(*dim, rank, site);
    if (impl.dims[static_cast<size_t>(d)] == 0)
      lazy::op_fail(site, "dimension {} of {} has size 0", *dim, lazy::impl_shape_string(impl));
    out_keep = keepdim_shape(impl.dims, Dims{d});
  }
  // The first index of the extreme, from single-operand reductions that every backend
  // lowers (the TPU target has no variadic reduce): the extreme m, then the smallest
  // index whose value is m, or is NaN (a NaN is the extreme, as in torch).
  const Dims& vd = v->dims;
  NodePtr m = lazy::reduce_node(kind, v, Dims{d}, site);
  NodePtr mb =
      lazy::broadcast_to(lazy::reshape_node(m, keepdim_shape(vd, Dims{d}), site), vd, site);
  NodePtr hit = lazy::compare_nodes(ir::ComparisonDirection::kEq, v, mb, site);
  if (ir::is_float(impl.type))
    hit = lazy::elementwise(ir::Opcode::kOr, hit,
                            lazy::compare_nodes(ir::ComparisonDirection::kNe, v, v, site), site);
  NodePtr index = lazy::make_node(site, ir::Opcode::kIota, DType::kS64, vd, {}, {d});
  NodePtr none =
      lazy::constant_operand(static_cast<double>(vd[static_cast<size_t>(d)]), DType::kS64, site);
  NodePtr r = lazy::reduce_node(ReduceKind::kMin, lazy::select_nodes(hit, index, none, site),
                                Dims{d}, site);
  if (keepdim) r = lazy::reshape_node(r, out_keep, site);
  return lazy::make_result(r, impl.device, site);
}

// 16-bit floats differentiate the softmax family in f32, as they compute it.
Tensor widened(const Tensor& t) { return is_half(t.dtype()) ? t.to(DType::kF32) : t; }

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpSite site{"sum", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  Dims rdims = reduce_dims(site, impl, dims);
  NodePtr s = sum_node(impl, rdims, site);
  if (is_half(impl.type)) s = lazy::convert(s, impl.type, site);
  Tensor out = lazy::make_result(keep(s, keepdim, impl.dims, rdims, site), impl.device, site);
  if (autograd::needs_grad({&x}))
    autograd::record("sum", out, {&x},
                     [shape = impl.dims.vec(), rdims = rdims.vec(), keepdim](const Tensor& g) {
                       return Grads{autograd::expand_reduced(g, shape, rdims, keepdim)};
                     });
  return out;
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpSite site{"mean", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  require_float(site, impl);
  Dims rdims = reduce_dims(site, impl, dims);
  NodePtr s = sum_node(impl, rdims, site);
  int64_t count = 1;
  for (int64_t d : rdims) count *= impl.dims[static_cast<size_t>(d)];
  // The count follows from the shape, which the graph hash covers: a constant is right.
  NodePtr m = lazy::elementwise(
      Opcode::kDivide, s, lazy::constant_operand(static_cast<double>(count), s->type, site), site);
  m = lazy::convert(m, impl.type, site);
  Tensor out = lazy::make_result(keep(m, keepdim, impl.dims, rdims, site), impl.device, site);
  if (autograd::needs_grad({&x}))
    autograd::record(
        "mean", out, {&x},
        [shape = impl.dims.vec(), rdims = rdims.vec(), keepdim, count](const Tensor& g) {
          return Grads{
              div(autograd::expand_reduced(g, shape, rdims, keepdim), static_cast<double>(count))};
        });
  return out;
}

Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return min_max({"max", loc}, ReduceKind::kMax, x, dims, keepdim);
}
Tensor min(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return min_max({"min", loc}, ReduceKind::kMin, x, dims, keepdim);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return arg_extreme({"argmax", loc}, ReduceKind::kMax, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return arg_extreme({"argmin", loc}, ReduceKind::kMin, x, dim, keepdim);
}

Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  OpSite site{"logsumexp", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  Dims rdims = reduce_dims(site, impl, dims);
  NodePtr v = widen(lazy::value_of(impl, site), site);
  NodePtr m = lazy::reduce_node(ReduceKind::kMax, v, rdims, site);
  // An infinite maximum (all -inf, or a +inf) would give inf - inf: shift by 0 instead.
  NodePtr finite = lazy::make_node(site, Opcode::kIsFinite, DType::kPred, m->dims, {m.get()});
  NodePtr shift = lazy::select_nodes(finite, m, lazy::constant_operand(0, m->type, site), site);
  NodePtr shift_b = lazy::broadcast_to(
      lazy::reshape_node(shift, keepdim_shape(v->dims, rdims), site), v->dims, site);
  NodePtr e =
      lazy::elementwise(Opcode::kExp, lazy::elementwise(Opcode::kSubtract, v, shift_b, site), site);
  NodePtr s = lazy::reduce_node(ReduceKind::kSum, e, rdims, site);
  NodePtr r =
      lazy::elementwise(Opcode::kAdd, lazy::elementwise(Opcode::kLog, s, site), shift, site);
  DType out_type = ir::is_float(impl.type) ? impl.type : lazy::default_float();
  Tensor out = lazy::make_result(
      keep(lazy::convert(r, out_type, site), keepdim, impl.dims, rdims, site), impl.device, site);
  if (autograd::needs_grad({&x}))
    autograd::record(
        "logsumexp", out, {&x},
        [sx = autograd::saved(x), so = autograd::saved(out), rdims = rdims.vec(),
         keepdim](const Tensor& g) {
          std::vector<int64_t> shape = sx.shape();
          Tensor r = autograd::expand_reduced(so, shape, rdims, keepdim);
          return Grads{mul(autograd::expand_reduced(g, shape, rdims, keepdim), exp(sub(sx, r)))};
        });
  return out;
}

Tensor softmax(const Tensor& x, int64_t dim, Loc loc) {
  OpSite site{"softmax", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  require_float(site, impl);
  AlongDim a = along_dim(impl, dim, site);
  NodePtr e = lazy::elementwise(
      Opcode::kExp,
      lazy::elementwise(Opcode::kSubtract, a.value, max_broadcast(a.value, a.dim, site), site),
      site);
  NodePtr out = lazy::elementwise(Opcode::kDivide, e, sum_broadcast(e, a.dim, site), site);
  Tensor y = finish(out, impl, a.original, site);
  if (autograd::needs_grad({&x}))
    // y (g - sum(g y)) along dim.
    autograd::record(
        "softmax", y, {&x},
        [sy = autograd::saved(y),
         dims = impl.dims.empty() ? std::vector<int64_t>{} : std::vector{a.dim}](const Tensor& g) {
          Tensor y32 = widened(sy), g32 = widened(g);
          Tensor gy = mul(g32, y32);
          return Grads{mul(y32, sub(g32, sum(gy, dims, true)))};
        });
  return y;
}

Tensor log_softmax(const Tensor& x, int64_t dim, Loc loc) {
  OpSite site{"log_softmax", loc};
  const TensorImpl& impl = lazy::checked(x, site);
  require_float(site, impl);
  AlongDim a = along_dim(impl, dim, site);
  NodePtr shifted =
      lazy::elementwise(Opcode::kSubtract, a.value, max_broadcast(a.value, a.dim, site), site);
  NodePtr e = lazy::elementwise(Opcode::kExp, shifted, site);
  NodePtr log_sum = lazy::elementwise(Opcode::kLog, sum_broadcast(e, a.dim, site), site);
  Tensor y =
      finish(lazy::elementwise(Opcode::kSubtract, shifted, log_sum, site), impl, a.original, site);
  if (autograd::needs_grad({&x}))
    // g - exp(y) sum(g) along dim.
    autograd::record(
        "log_softmax", y, {&x},
        [sy = autograd::saved(y),
         dims = impl.dims.empty() ? std::vector<int64_t>{} : std::vector{a.dim}](const Tensor& g) {
          Tensor g32 = widened(g);
          return Grads{sub(g32, mul(exp(widened(sy)), sum(g32, dims, true)))};
        });
  return y;
}

Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim, Loc loc) const {
  return podsim::sum(*this, dims, keepdim, loc);
}
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim, Loc loc) const {
  return podsim::mean(*this, dims, keepdim, loc);
}
Tensor Tensor::max(std::vector<int64_t> dims, bool keepdim, Loc loc) const {
  return podsim::max(*this, dims, keepdim, loc);
}
Tensor Tensor::min(std::vector<int64_t> dims, bool keepdim, Loc loc) const {
  return podsim::min(*this, dims, keepdim, loc);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim, Loc loc) const {
  return podsim::argmax(*this, dim, keepdim, loc);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim, Loc loc) const {
  return podsim::argmin(*this, dim, keepdim, loc);
}
Tensor Tensor::logsumexp(std::vector<int64_t> dims, bool keepdim, Loc loc) const {
  return podsim::logsumexp(*this, dims, keepdim, loc);
}
Tensor Tensor::softmax(int64_t dim, Loc loc) const { return podsim::softmax(*this, dim, loc); }
Tensor Tensor::log_softmax(int64_t dim, Loc loc) const {
  return podsim::log_softmax(*this, dim, loc);
}

}  // namespace podsim
