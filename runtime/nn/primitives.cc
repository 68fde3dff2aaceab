// The nn ops that are not compositions of tensor ops: conv2d (IR convolution), max/avg
// pooling (IR reduce-window), embedding and one_hot (gather / iota compare) and the
// triangular masks (iota compares), each recording its backward with autograd.
//
// Backward forms follow XLA's (JAX's) autodiff rules:
//   conv2d: input grad = convolution of the output grad, base-dilated by the stride,
//     with the kernel reversed and its feature dims swapped; kernel grad = convolution
//     of the input (batch and feature swapped) with the output grad as the kernel,
//     window-dilated by the stride.
//   avg_pool2d: the transpose of a window sum: the output grad padded (interior padding
//     stride - 1) and summed over windows of stride 1.
//   max_pool2d: kernel == stride, no padding and sizes divisible by the kernel: a
//     reshape into windows and a mask of each window's first maximum (no scatter, for
//     the TPU target); otherwise select-and-scatter (first maximum, as torch).
//   embedding: one_hot(indices)^T @ grad (no scatter).
#include <fmt/format.h>

#include <array>

#include "runtime/autograd/autograd.h"
#include "runtime/nn/functional.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::nn::functional {
namespace {

using ir::Opcode;
using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;
using lazy::TensorImpl;

int64_t dilate(int64_t size, int64_t dilation) { return size == 0 ? 0 : 1 + dilation * (size - 1); }

// One spatial dimension of a window (IR WindowDim without reversal).
struct Win {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0, lhs_dilation = 1, rhs_dilation = 1;
  int64_t output(int64_t in) const {
    int64_t padded = dilate(in, lhs_dilation) + pad_low + pad_high;
    int64_t extent = dilate(size, rhs_dilation);
    return padded < extent ? 0 : (padded - extent) / stride + 1;
  }
  void append(lazy::SmallVec<int64_t, 4>& attrs) const {
    for (int64_t v : {size, stride, pad_low, pad_high, lhs_dilation, rhs_dilation})
      attrs.push_back(v);
  }
};

// Convolution dim labels of a 2-D convolution: {batch, feature, spatial0, spatial1}
// positions of the input and output, {input feature, output feature, spatial...} of
// the kernel.
struct ConvLabels {
  std::array<int64_t, 4> input;
  std::array<int64_t, 4> kernel;
  std::array<int64_t, 4> output;
};
constexpr ConvLabels kNchw{{0, 1, 2, 3}, {1, 0, 2, 3}, {0, 1, 2, 3}};

// Attribute layout (read by runtime/lazy/lowering.cc): [#spatial, input labels, kernel labels,
// output labels, then per spatial dim: size stride pad_low pad_high lhs_dil rhs_dil].
NodePtr convolution(const OpSite& site, const NodePtr& x, const NodePtr& w, const ConvLabels& l,
                    const std::array<Win, 2>& win) {
  Dims out(4, 0);
  out[static_cast<size_t>(l.output[0])] = x->dims[static_cast<size_t>(l.input[0])];
  out[static_cast<size_t>(l.output[1])] = w->dims[static_cast<size_t>(l.kernel[1])];
  for (size_t i = 0; i < 2; ++i)
    out[static_cast<size_t>(l.output[2 + i])] =
        win[i].output(x->dims[static_cast<size_t>(l.input[2 + i])]);
  lazy::SmallVec<int64_t, 4> attrs{2};
  for (const auto* labels : {&l.input, &l.kernel, &l.output})
    for (int64_t v : *labels) attrs.push_back(v);
  for (const Win& w2 : win) w2.append(attrs);
  lazy::Node* operands[] = {x.get(), w.get()};
  return lazy::make_node(site, Opcode::kConvolution, x->type, std::move(out), operands,
                         attrs.span());
}

NodePtr reverse_spatial(const OpSite& site, const NodePtr& w) {
  return lazy::make_node(site, Opcode::kReverse, w->type, w->dims, {w.get()}, {2, 3});
}

// A window over the two trailing dims of an NCHW tensor (the others have size 1).
std::array<Win, 4> nchw_window(const Win& h, const Win& w) { return {Win{}, Win{}, h, w}; }

Dims window_output(const Dims& in, const std::array<Win, 4>& window) {
  Dims out;
  for (size_t i = 0; i < 4; ++i) out.push_back(window[i].output(in[i]));
  return out;
}

// Attribute layout: [ReduceKind, then per dim: size stride pad_low pad_high lhs rhs].
NodePtr reduce_window(const OpSite& site, lazy::ReduceKind kind, const NodePtr& x,
                      const std::array<Win, 4>& window) {
  lazy::SmallVec<int64_t, 4> attrs{static_cast<int64_t>(kind)};
  for (const Win& w : window) w.append(attrs);
  lazy::Node* operand = x.get();
  return lazy::make_node(site, Opcode::kReduceWindow, x->type, window_output(x->dims, window),
                         std::span<lazy::Node* const>(&operand, 1), attrs.span());
}

// Zero padding: attrs [low high interior] per dim.
NodePtr pad_zero(const OpSite& site, const NodePtr& x,
                 const std::vector<std::array<int64_t, 3>>& p) {
  Dims out;
  lazy::SmallVec<int64_t, 4> attrs;
  for (size_t i = 0; i < p.size(); ++i) {
    auto [lo, hi, interior] = p[i];
    out.push_back(dilate(x->dims[i], interior + 1) + lo + hi);
    for (int64_t v : {lo, hi, interior}) attrs.push_back(v);
  }
  NodePtr zero = lazy::make_constant(site, x->type, 0);
  lazy::Node* operands[] = {x.get(), zero.get()};
  return lazy::make_node(site, Opcode::kPad, x->type, std::move(out), operands, attrs.span());
}

const TensorImpl& nchw_float(const OpSite& site, const Tensor& x, const char* what) {
  const TensorImpl& impl = lazy::checked(x, site);
  if (impl.dims.size() != 4 || !ir::is_float(impl.type))
    lazy::op_fail(site, "expected a floating-point 4-D {} (N, C, H, W), got {}", what,
                  lazy::impl_shape_string(impl));
  return impl;
}

void check_positive(const OpSite& site, const char* what, Int2 v, int64_t minimum) {
  if (v.h < minimum || v.w < minimum)
    lazy::op_fail(site, "{} must be at least {}, got ({}, {})", what, minimum, v.h, v.w);
}

// 3-D (C, H, W) inputs of the pools run as a batch of one.
template <typename F>
Tensor unbatched_as_batch(const Tensor& x, const OpSite& site, F&& f) {
  if (lazy::checked(x, site).dims.size() == 3)
    return f(x.unsqueeze(0, site.loc)).squeeze(0, site.loc);
  return f(x);
}

Tensor max_pool_reshaped(const OpSite& site, const Tensor& x, Int2 k) {
  int64_t n = x.size(0), c = x.size(1), ho = x.size(2) / k.h, wo = x.size(3) / k.w;
  auto loc = site.loc;
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x.reshape({n, c, ho, k.h, wo, k.w}, loc).max({3, 5}, false, loc);
  }
  if (!autograd::needs_grad({&x})) return out;
  autograd::record("max_pool2d", out, {&x},
                   [sx = autograd::saved(x), sout = autograd::saved(out), k, n, c, ho, wo,
                    loc](const Tensor& g) -> std::vector<Tensor> {
                     int64_t kk = k.h * k.w;
                     Tensor windows = sx.reshape({n, c, ho, k.h, wo, k.w}, loc)
                                          .permute({0, 1, 2, 4, 3, 5}, loc)
                                          .reshape({n, c, ho, wo, kk}, loc);
                     Tensor is_max = eq(windows, sout.unsqueeze(-1, loc), loc);
                     Tensor position = arange(kk, {kInt32, sx.device()}, loc);  // s32: TPU-friendly
                     Tensor first = where(is_max, position, kk, loc).min({-1}, true, loc);
                     Tensor mask = eq(position, first, loc);
                     Tensor spread = where(mask, g.unsqueeze(-1, loc), 0, loc);
                     return {spread.reshape({n, c, ho, wo, k.h, k.w}, loc)
                                 .permute({0, 1, 2, 4, 3, 5}, loc)
                                 .reshape({n, c, ho * k.h, wo * k.w}, loc)};
                   });
  return out;
}

// Select-and-scatter (first maximum, add) over the same window; attrs [size stride
// pad_low pad_high] per dim.
NodePtr select_and_scatter(const OpSite& site, const NodePtr& x, const NodePtr& source,
                           const std::array<Win, 4>& window) {
  lazy::SmallVec<int64_t, 4> attrs;
  for (const Win& w : window)
    for (int64_t v : {w.size, w.stride, w.pad_low, w.pad_high}) attrs.push_back(v);
  lazy::Node* operands[] = {x.get(), source.get()};
  return lazy::make_node(site, Opcode::kSelectAndScatter, x->type, x->dims, operands, attrs.span());
}

Tensor max_pool_windowed(const OpSite& site, const Tensor& x, const std::array<Win, 4>& window) {
  const TensorImpl& impl = *x.impl();
  Tensor out = lazy::make_result(
      reduce_window(site, lazy::ReduceKind::kMax, lazy::value_of(impl, site), window), impl.device,
      site);
  if (!autograd::needs_grad({&x})) return out;
  autograd::record(
      "max_pool2d", out, {&x}, [sx = autograd::saved(x), window, loc = site.loc](const Tensor& g) {
        OpSite back{"max_pool2d_backward", loc};
        NodePtr r =
            select_and_scatter(back, lazy::value_of(sx, back), lazy::value_of(g, back), window);
        return std::vector<Tensor>{lazy::make_result(r, sx.device(), back)};
      });
  return out;
}

}  // namespace

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype, Loc loc) {
  OpSite site{"one_hot", loc};
  const TensorImpl& idx = lazy::checked(indices, site);
  if (!ir::is_integral(idx.type) || idx.type == DType::kPred)
    lazy::op_fail(site, "expected integer class indices, got {}", lazy::impl_shape_string(idx));
  if (num_classes <= 0) lazy::op_fail(site, "num_classes must be positive, got {}", num_classes);
  Dims dims = idx.dims;
  Dims expanded = dims;
  dims.push_back(1);
  expanded.push_back(num_classes);
  NodePtr v = lazy::convert(lazy::value_of(idx, site), DType::kS64, site);
  v = lazy::broadcast_to(lazy::reshape_node(v, dims, site), expanded, site);
  NodePtr classes = lazy::make_node(site, Opcode::kIota, DType::kS64, expanded, {},
                                    {static_cast<int64_t>(expanded.size()) - 1});
  NodePtr hot = lazy::compare_nodes(ir::ComparisonDirection::kEq, v, classes, site);
  return lazy::make_result(lazy::convert(hot, dtype, site), idx.device, site);
}

Tensor embedding(const Tensor& indices, const Tensor& weight, Loc loc) {
  OpSite site{"embedding", loc};
  lazy::common_device(site, {&indices, &weight});
  const TensorImpl& w = lazy::checked(weight, site);
  if (w.dims.size() != 2)
    lazy::op_fail(site, "the weight must be 2-D (num_embeddings, dim), got {}",
                  lazy::impl_shape_string(w));
  std::vector<int64_t> shape = indices.shape();
  shape.push_back(w.dims[1]);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = weight.index_select(0, indices.flatten(0, -1, loc), loc).reshape(shape, loc);
  }
  if (!autograd::needs_grad({&weight})) return out;
  autograd::record("embedding", out, {&weight},
                   [idx = autograd::saved(indices), rows = w.dims[0], dim = w.dims[1],
                    type = w.type, loc](const Tensor& g) -> std::vector<Tensor> {
                     Tensor hot = one_hot(idx.flatten(0, -1, loc), rows, type, loc);
                     return {matmul(hot.t(loc), g.reshape({-1, dim}, loc), loc)};
                   });
  return out;
}

Tensor tril_mask(int64_t rows, int64_t cols, int64_t diagonal, pjrt::Device* device, Loc loc) {
  OpSite site{"tril_mask", loc};
  if (rows < 0 || cols < 0)
    lazy::op_fail(site, "sizes must be non-negative, got ({}, {})", rows, cols);
  Dims dims{rows, cols};
  NodePtr row = lazy::make_node(site, Opcode::kIota, DType::kS64, dims, {}, {0});
  NodePtr col = lazy::make_node(site, Opcode::kIota, DType::kS64, dims, {}, {1});
  NodePtr limit = lazy::elementwise(
      Opcode::kAdd, row, lazy::scalar_operand(Scalar(diagonal), DType::kS64, site), site);
  return lazy::make_result(lazy::compare_nodes(ir::ComparisonDirection::kLe, col, limit, site),
                           device, site);
}

Tensor tril(const Tensor& x, int64_t diagonal, Loc loc) {
  if (x.dim() < 2)
    throw Error(fmt::format("{}:{}: tril: expected at least 2 dims, got {}", loc.file_name(),
                            loc.line(), x.dim()));
  return where(tril_mask(x.size(-2), x.size(-1), diagonal, x.device(), loc), x, 0, loc);
}

Tensor triu(const Tensor& x, int64_t diagonal, Loc loc) {
  if (x.dim() < 2)
    throw Error(fmt::format("{}:{}: triu: expected at least 2 dims, got {}", loc.file_name(),
                            loc.line(), x.dim()));
  return where(tril_mask(x.size(-2), x.size(-1), diagonal - 1, x.device(), loc), 0, x, loc);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Int2 stride, Int2 padding,
              Int2 dilation, Loc loc) {
  OpSite site{"conv2d", loc};
  pjrt::Device* device = lazy::common_device(site, {&x, &weight});
  const TensorImpl& in = nchw_float(site, x, "input");
  const TensorImpl& w = nchw_float(site, weight, "weight (O, I, kH, kW)");
  if (in.type != w.type)
    lazy::op_fail(site, "input {} and weight {} have different dtypes", lazy::impl_shape_string(in),
                  lazy::impl_shape_string(w));
  if (in.dims[1] != w.dims[1])
    lazy::op_fail(site, "input {} has {} channels but weight {} expects {} (groups = 1 only)",
                  lazy::impl_shape_string(in), in.dims[1], lazy::impl_shape_string(w), w.dims[1]);
  check_positive(site, "stride", stride, 1);
  check_positive(site, "dilation", dilation, 1);
  check_positive(site, "padding", padding, 0);
  std::array<Win, 2> win{Win{w.dims[2], stride.h, padding.h, padding.h, 1, dilation.h},
                         Win{w.dims[3], stride.w, padding.w, padding.w, 1, dilation.w}};
  for (size_t i = 0; i < 2; ++i)
    if (dilate(in.dims[2 + i], 1) + 2 * win[i].pad_low < dilate(win[i].size, win[i].rhs_dilation))
      lazy::op_fail(site, "the (dilated) kernel {} is larger than the padded input {}",
                    lazy::impl_shape_string(w), lazy::impl_shape_string(in));
  Tensor out = lazy::make_result(
      convolution(site, lazy::value_of(in, site), lazy::value_of(w, site), kNchw, win), device,
      site);
  if (autograd::needs_grad({&x, &weight})) {
    autograd::record(
        "conv2d", out, {&x, &weight},
        [sx = autograd::saved(x), sw = autograd::saved(weight), win, loc](const Tensor& g) {
          OpSite back{"conv2d_backward", loc};
          NodePtr vg = lazy::value_of(g, back), vx = lazy::value_of(sx, back),
                  vw = lazy::value_of(sw, back);
          std::array<Win, 2> wx, ww;
          for (size_t i = 0; i < 2; ++i) {
            const Win& f = win[i];
            int64_t in_size = vx->dims[2 + i], out_size = vg->dims[2 + i];
            int64_t k = dilate(f.size, f.rhs_dilation);
            int64_t lo = k - 1 - f.pad_low;
            wx[i] = Win{f.size,   1,
                        lo,       in_size + k - 1 - dilate(out_size, f.stride) - lo,
                        f.stride, f.rhs_dilation};
            ww[i] = Win{out_size,  f.rhs_dilation,
                        f.pad_low, dilate(out_size, f.stride) - in_size + k - f.pad_low - 1,
                        1,         f.stride};
          }
          // Input grad: g (N, O) against the reversed kernel read as (I <- O).
          NodePtr dx = convolution(back, vg, reverse_spatial(back, vw),
                                   ConvLabels{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}, wx);
          // Kernel grad: x read as batch C, feature N; g as the kernel (N -> O); the
          // result's batch dim (C) is dim 1 and its feature dim (O) dim 0: OIHW.
          NodePtr dw =
              convolution(back, vx, vg, ConvLabels{{1, 0, 2, 3}, {0, 1, 2, 3}, {1, 0, 2, 3}}, ww);
          return std::vector<Tensor>{lazy::make_result(dx, sx.device(), back),
                                     lazy::make_result(dw, sx.device(), back)};
        });
  }
  if (bias.defined()) out = out + bias.reshape({1, -1, 1, 1}, loc);
  return out;
}

// The NCHW window of a 2-D pooling, after checking its arguments against the input.
static std::array<Win, 4> pool_window(const OpSite& site, const TensorImpl& impl, Int2 kernel_size,
                                      Int2 stride, Int2 padding) {
  check_positive(site, "kernel_size", kernel_size, 1);
  check_positive(site, "stride", stride, 1);
  check_positive(site, "padding", padding, 0);
  if (2 * padding.h > kernel_size.h || 2 * padding.w > kernel_size.w)
    lazy::op_fail(site, "padding ({}, {}) must be at most half the kernel size ({}, {})", padding.h,
                  padding.w, kernel_size.h, kernel_size.w);
  auto window = nchw_window(Win{kernel_size.h, stride.h, padding.h, padding.h},
                            Win{kernel_size.w, stride.w, padding.w, padding.w});
  Dims out = window_output(impl.dims, window);
  if (out[2] == 0 || out[3] == 0)
    lazy::op_fail(site, "the kernel ({}, {}) does not fit the input {}", kernel_size.h,
                  kernel_size.w, lazy::impl_shape_string(impl));
  return window;
}

Tensor max_pool2d(const Tensor& x, Int2 kernel_size, std::optional<Int2> stride, Int2 padding,
                  Loc loc) {
  OpSite site{"max_pool2d", loc};
  return unbatched_as_batch(x, site, [&](const Tensor& input) {
    const TensorImpl& impl = nchw_float(site, input, "input");
    Int2 s = stride.value_or(kernel_size);
    std::array<Win, 4> window = pool_window(site, impl, kernel_size, s, padding);
    bool tiles = kernel_size.h == s.h && kernel_size.w == s.w && padding.h == 0 && padding.w == 0 &&
                 impl.dims[2] % s.h == 0 && impl.dims[3] % s.w == 0;
    return tiles ? max_pool_reshaped(site, input, kernel_size)
                 : max_pool_windowed(site, input, window);
  });
}

Tensor avg_pool2d(const Tensor& x, Int2 kernel_size, std::optional<Int2> stride, Int2 padding,
                  Loc loc) {
  OpSite site{"avg_pool2d", loc};
  return unbatched_as_batch(x, site, [&](const Tensor& input) {
    const TensorImpl& impl = nchw_float(site, input, "input");
    Int2 s = stride.value_or(kernel_size);
    std::array<Win, 4> window = pool_window(site, impl, kernel_size, s, padding);
    double count = static_cast<double>(kernel_size.h * kernel_size.w);
    Tensor sums = lazy::make_result(
        reduce_window(site, lazy::ReduceKind::kSum, lazy::value_of(impl, site), window),
        impl.device, site);
    if (autograd::needs_grad({&input})) {
      autograd::record(
          "avg_pool2d", sums, {&input}, [in_dims = impl.dims, window, loc](const Tensor& g) {
            OpSite back{"avg_pool2d_backward", loc};
            NodePtr vg = lazy::value_of(g, back);
            std::vector<std::array<int64_t, 3>> pads(2, {0, 0, 0});
            std::array<Win, 4> sum_window;
            for (size_t i = 2; i < 4; ++i) {
              const Win& f = window[i];
              int64_t lo = f.size - 1 - f.pad_low;
              int64_t hi = in_dims[i] + f.size - 1 - dilate(vg->dims[i], f.stride) - lo;
              pads.push_back({lo, hi, f.stride - 1});
              sum_window[i] = Win{f.size, 1};
            }
            NodePtr r =
                reduce_window(back, lazy::ReduceKind::kSum, pad_zero(back, vg, pads), sum_window);
            return std::vector<Tensor>{lazy::make_result(r, g.device(), back)};
          });
    }
    return sums / count;
  });
}

}  // namespace podsim::nn::functional
