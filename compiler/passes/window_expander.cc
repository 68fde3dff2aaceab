// Convolution, reduce-window and select-and-scatter (and reduces of a few elements along
// a narrow innermost dimension, a window over the reduced dimensions) written as the ops
// a target without window hardware lowers: pads, strided slices, one dot, and the called
// computations inlined over whole arrays (make_window_expander in pass.h).
//
// Each is exact with respect to the reference evaluator (compiler/ir/eval):
// - convolution: the input moved to [batch, spatial..., feature], padded (base dilation
//   as interior padding), one strided slice per kernel position concatenated along the
//   features (im2col: row p * C + c of the patch matrix holds position p, feature c),
//   and one dot with the kernel as a [positions x features, output features] matrix.
//   Feature groups and batch groups become a batch dimension of the dot. bf16 and f16
//   results are accumulated in f32 and rounded once, as the MXU does; the dot keeps the
//   convolution's operand_precision. The one difference: a padding (or base-dilation)
//   zero times an infinite or NaN kernel value is NaN here, as on hardware that pads,
//   where the evaluator skips the term.
// - reduce-window: the accumulator starts at the init value and takes the window's
//   strided slices in row-major window order, as the evaluator's loop does; where
//   padding or base dilation puts holes in windows, a mask keeps them out (the evaluator
//   does not visit them, whatever the init value).
// - select-and-scatter: per window position in row-major order, the selected value and
//   position (the first real element, replaced by each later one the select computation
//   does not keep); then each position's selected sources, spread back onto the padded
//   operand by interior padding, are combined by the scatter computation in reverse
//   row-major position order: for one operand element, that is the evaluator's order of
//   the windows that select it.
// Called computations are inlined when every instruction in them is elementwise (a
// parameter, a scalar constant, an elementwise op); ops with other bodies, variadic
// reduce-windows, convolutions of mixed float and integer types and windows of more
// than kMaxPositions positions stay as they are, for the target to lower or refuse. Integer convolutions become
// integer dots (make_dot_expander writes those for a bf16 matrix unit).
#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;
using internal::Builder;

// Windows with more positions than this stay (a slice and an op per position).
constexpr int64_t kMaxPositions = 64;
// Reduces of at most this many elements per result, along an innermost dimension at
// most this wide, are written as windows (expand_narrow_reduce).
constexpr int64_t kMaxNarrowReduce = 16;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

// Calls f(position) for every window position in row-major order.
void for_each_position(const std::vector<int64_t>& sizes, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> p(sizes.size(), 0);
  for (int64_t n = product(sizes); n-- > 0;) {
    f(p);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++p[d] < sizes[d]) break;
      p[d] = 0;
    }
  }
}

// The strided slice of a padded array that window position p reads for every window:
// along d from p[d] x dilation[d], `out[d]` elements `stride[d]` apart, after `lead`
// whole dimensions (any after the windowed ones are whole too).
std::vector<ir::SliceDim> window_slice(const Shape& padded, size_t lead, const std::vector<int64_t>& p,
                                       const std::vector<int64_t>& dilation, const std::vector<int64_t>& stride,
                                       const std::vector<int64_t>& out) {
  std::vector<ir::SliceDim> s;
  for (int64_t d = 0; d < padded.rank(); ++d) s.push_back({0, padded.dim(d), 1});
  for (size_t d = 0; d < p.size(); ++d) {
    const int64_t start = p[d] * dilation[d];
    s[lead + d] = {start, start + (out[d] - 1) * stride[d] + 1, stride[d]};
  }
  return s;
}

// A window's sizes, strides, window dilations and padding (base dilation as interior
// padding), and whether windows have holes (padding or base dilation).
struct WindowParts {
  explicit WindowParts(const ir::Window& w) {
    for (const ir::WindowDim& d : w.dims) {
      sizes.push_back(d.size);
      stride.push_back(d.stride);
      dilation.push_back(d.rhs_dilation);
      padding.push_back({d.pad_low, d.pad_high, d.lhs_dilation - 1});
      holes = holes || d.pad_low > 0 || d.pad_high > 0 || d.lhs_dilation > 1;
    }
  }
  std::vector<int64_t> sizes, stride, dilation;
  std::vector<ir::PadDim> padding;
  bool holes = false;
};

bool mxu_type(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

Instruction* expand_convolution(Instruction& conv) {
  Instruction* lhs = conv.operand(0);
  Instruction* rhs = conv.operand(1);
  const PrimitiveType out_type = conv.shape().type();
  const bool integral = ir::is_integral(lhs->shape().type()) && ir::is_integral(rhs->shape().type()) &&
                        ir::is_integral(out_type);
  if (!integral && (!mxu_type(lhs->shape().type()) || !mxu_type(rhs->shape().type()) || !mxu_type(out_type)))
    return nullptr;
  const ir::ConvDimNumbers& cd = conv.attrs().conv_dims;
  const size_t spatial = cd.input_spatial.size();
  const int64_t groups = conv.attrs().feature_group_count, batch_groups = conv.attrs().batch_group_count;
  // No window attribute: size 1 steps, no padding or dilation.
  const ir::Window window = conv.attrs().window.value_or(ir::Window{std::vector<ir::WindowDim>(spatial)});
  const WindowParts w(window);
  const std::vector<int64_t>&stride = w.stride, &dilation = w.dilation;
  std::vector<ir::PadDim> padding{{}};  // [batch, spatial..., feature]
  padding.insert(padding.end(), w.padding.begin(), w.padding.end());
  padding.emplace_back();
  std::vector<int64_t> kernel(spatial), out(spatial);
  for (size_t s = 0; s < spatial; ++s) {
    kernel[s] = rhs->shape().dim(cd.kernel_spatial[s]);
    out[s] = conv.shape().dim(cd.output_spatial[s]);
  }
  const int64_t positions = product(kernel);
  if (positions > kMaxPositions || conv.shape().num_elements() == 0 || lhs->shape().num_elements() == 0 ||
      rhs->shape().num_elements() == 0)
    return nullptr;

  Builder b(conv);
  // Operands the MXU takes: f16 is widened (exactly) to f32.
  if (lhs->shape().type() == PrimitiveType::kF16) lhs = b.convert(lhs, PrimitiveType::kF32);
  if (rhs->shape().type() == PrimitiveType::kF16) rhs = b.convert(rhs, PrimitiveType::kF32);
  // The input as [batch, spatial..., feature], padded and base-dilated.
  std::vector<int64_t> order{cd.input_batch};
  order.insert(order.end(), cd.input_spatial.begin(), cd.input_spatial.end());
  order.push_back(cd.input_feature);
  Instruction* input = b.pad(b.transpose(lhs, order), b.scalar(lhs->shape().type(), 0), padding);
  const int64_t batch = input->shape().dim(0), features = input->shape().dim(static_cast<int64_t>(spatial) + 1);
  // im2col: per kernel position, the slice its windows read (feature groups apart).
  std::vector<int64_t> patch_dims{batch};
  patch_dims.insert(patch_dims.end(), out.begin(), out.end());
  if (groups > 1) patch_dims.push_back(groups);
  patch_dims.push_back(features / groups);
  std::vector<Instruction*> patches;
  for_each_position(kernel, [&](const std::vector<int64_t>& p) {
    patches.push_back(b.reshape(b.slice(input, window_slice(input->shape(), 1, p, dilation, stride, out)), patch_dims));
  });
  Instruction* patch = b.concatenate(std::move(patches), static_cast<int64_t>(patch_dims.size()) - 1);
  const int64_t width = positions * patch_dims.back();  // the dot's contraction
  if (batch_groups > 1) {
    std::vector<int64_t> dims{batch_groups, batch / batch_groups};
    dims.insert(dims.end(), out.begin(), out.end());
    dims.push_back(width);
    patch = b.reshape(patch, dims);
  }
  // The kernel as [positions x input features, output features] (grouped: the groups
  // split the output features).
  std::vector<int64_t> korder(cd.kernel_spatial.begin(), cd.kernel_spatial.end());
  korder.push_back(cd.kernel_input_feature);
  korder.push_back(cd.kernel_output_feature);
  Instruction* k = b.transpose(rhs, korder);
  std::vector<int64_t> flipped;
  for (size_t s = 0; s < spatial; ++s)
    if (window.dims[s].reversal && kernel[s] > 1) flipped.push_back(static_cast<int64_t>(s));
  if (!flipped.empty()) k = b.add(Opcode::kReverse, {k}, [&](ir::Attributes& a) { a.dimensions = flipped; });
  const int64_t out_features = rhs->shape().dim(cd.kernel_output_feature), split = std::max(groups, batch_groups);
  k = split > 1 ? b.reshape(k, {width, split, out_features / split}) : b.reshape(k, {width, out_features});

  const int64_t rank = patch->shape().rank();
  Instruction* dot = b.add(Opcode::kDot, {patch, k}, [&](ir::Attributes& a) {
    a.dot_dims.lhs_contracting = {rank - 1};
    a.dot_dims.rhs_contracting = {0};
    if (groups > 1) a.dot_dims.lhs_batch = {rank - 2};
    if (batch_groups > 1) a.dot_dims.lhs_batch = {0};
    if (split > 1) a.dot_dims.rhs_batch = {1};
    a.operand_precision = conv.attrs().operand_precision;
  });
  dot->mutable_shape().set_type(integral ? out_type : PrimitiveType::kF32);
  Instruction* result = dot;
  if (split > 1) {
    // [split, batch, out..., features / split] -> [batch, out..., split x features / split]
    std::vector<int64_t> perm;
    for (int64_t d = 1; d <= static_cast<int64_t>(spatial) + 1; ++d) perm.push_back(d);
    perm.push_back(0);
    perm.push_back(static_cast<int64_t>(spatial) + 2);
    result = b.transpose(result, perm);
    std::vector<int64_t> dims(result->shape().dims().begin(), result->shape().dims().end() - 2);
    dims.push_back(out_features);
    result = b.reshape(result, dims);
  }
  result = b.convert(result, out_type);
  // [batch, spatial..., feature] -> the output's order.
  std::vector<int64_t> perm(spatial + 2);
  perm[static_cast<size_t>(cd.output_batch)] = 0;
  perm[static_cast<size_t>(cd.output_feature)] = static_cast<int64_t>(spatial) + 1;
  for (size_t s = 0; s < spatial; ++s) perm[static_cast<size_t>(cd.output_spatial[s])] = static_cast<int64_t>(s) + 1;
  return b.transpose(result, perm);
}

Instruction* expand_reduce_window(Instruction& rw) {
  if (rw.operand_count() != 2 || !rw.shape().is_array() || !internal::elementwise_body(*rw.called(0))) return nullptr;
  Instruction* x = rw.operand(0);
  Instruction* init = rw.operand(1);
  const WindowParts w(*rw.attrs().window);
  const std::vector<int64_t>& sizes = w.sizes;
  const std::vector<ir::PadDim>& padding = w.padding;
  const std::vector<int64_t>& out = rw.shape().dims();
  Builder b(rw);
  Instruction* acc = b.broadcast(init, out);
  if (rw.shape().num_elements() == 0 || x->shape().num_elements() == 0) return acc;
  if (product(sizes) > kMaxPositions) return nullptr;
  Instruction* padded = b.pad(x, init, padding);
  Instruction* real = w.holes ? b.pad(b.broadcast(b.pred(true), x->shape().dims()), b.pred(false), padding) : nullptr;
  for_each_position(sizes, [&](const std::vector<int64_t>& p) {
    Instruction* v = b.slice(padded, window_slice(padded->shape(), 0, p, w.dilation, w.stride, out));
    Instruction* next = b.inline_elementwise(*rw.called(0), {acc, v}, out);
    if (real) {
      Instruction* inside = b.slice(real, window_slice(real->shape(), 0, p, w.dilation, w.stride, out));
      next = b.add(Opcode::kSelect, {inside, next, acc});
    }
    acc = next;
  });
  return acc;
}

Instruction* expand_select_and_scatter(Instruction& sas) {
  if (!internal::elementwise_body(*sas.called(0)) || !internal::elementwise_body(*sas.called(1))) return nullptr;
  Instruction* x = sas.operand(0);
  Instruction* source = sas.operand(1);
  Instruction* init = sas.operand(2);
  const WindowParts w(*sas.attrs().window);  // (no dilation here: the verifier checked)
  const std::vector<int64_t>& sizes = w.sizes;
  const std::vector<int64_t>& stride = w.stride;
  const std::vector<ir::PadDim>& padding = w.padding;
  const bool padded_any = w.holes;
  for (const ir::PadDim& d : padding)
    if (d.low < 0 || d.high < 0) return nullptr;
  const std::vector<int64_t>& dims = x->shape().dims();
  const std::vector<int64_t>& out = source->shape().dims();
  Builder b(sas);
  if (sas.shape().num_elements() == 0 || source->shape().num_elements() == 0) return b.broadcast(init, dims);
  if (product(sizes) > kMaxPositions) return nullptr;
  Instruction* padded = b.pad(x, init, padding);
  Instruction* real = padded_any ? b.pad(b.broadcast(b.pred(true), dims), b.pred(false), padding) : nullptr;

  // Selection: per window, the value and the position chosen so far, and whether any
  // real element was seen.
  Instruction *best = nullptr, *chosen = nullptr, *seen = nullptr;
  int64_t n = 0;
  for_each_position(sizes, [&](const std::vector<int64_t>& p) {
    Instruction* v = b.slice(padded, window_slice(padded->shape(), 0, p, w.dilation, stride, out));
    Instruction* inside = real ? b.slice(real, window_slice(real->shape(), 0, p, w.dilation, stride, out)) : nullptr;
    Instruction* here = b.broadcast(b.scalar(PrimitiveType::kS32, static_cast<double>(n++)), out);
    if (!best) {
      best = v, chosen = here, seen = inside;
      return;
    }
    Instruction* keep = b.inline_elementwise(*sas.called(0), {best, v}, out);
    Instruction* take = b.add(Opcode::kNot, {keep});
    if (real) {
      take = b.add(Opcode::kOr, {b.add(Opcode::kNot, {seen}), take});
      take = b.add(Opcode::kAnd, {inside, take});
      seen = b.add(Opcode::kOr, {seen, inside});
    }
    best = b.add(Opcode::kSelect, {take, v, best});
    chosen = b.add(Opcode::kSelect, {take, here, chosen});
  });

  // Scatter: each position's selected sources, placed where that position's windows
  // read the padded operand, in reverse row-major position order.
  std::vector<std::vector<int64_t>> all;
  for_each_position(sizes, [&](const std::vector<int64_t>& p) { all.push_back(p); });
  Instruction* result = b.broadcast(init, padded->shape().dims());
  for (int64_t k = static_cast<int64_t>(all.size()); k-- > 0;) {
    const std::vector<int64_t>& p = all[static_cast<size_t>(k)];
    Instruction* position = b.broadcast(b.scalar(PrimitiveType::kS32, static_cast<double>(k)), out);
    Instruction* mine = b.compare(chosen, position, ir::ComparisonDirection::kEq);
    if (seen) mine = b.add(Opcode::kAnd, {mine, seen});
    std::vector<ir::PadDim> spread;
    for (size_t d = 0; d < p.size(); ++d) {
      const int64_t last = p[d] + (out[d] - 1) * stride[d];
      spread.push_back({p[d], padded->shape().dim(static_cast<int64_t>(d)) - last - 1, stride[d] - 1});
    }
    Instruction* where = b.pad(mine, b.pred(false), spread);
    Instruction* value = b.pad(source, init, spread);
    Instruction* combined = b.inline_elementwise(*sas.called(1), {result, value}, padded->shape().dims());
    result = b.add(Opcode::kSelect, {where, combined, result});
  }
  if (!padded_any) return result;
  std::vector<ir::SliceDim> inner;
  for (size_t d = 0; d < dims.size(); ++d) inner.push_back({padding[d].low, padding[d].low + dims[d], 1});
  return b.slice(result, inner);
}

// A reduce of a few elements per result whose innermost dimension is a narrow reduced
// one (max pooling written as a reshape and a reduce, an argmax over a window's
// positions): the reducer applied to one slice per reduced index, in the evaluator's
// row-major order, as for a window that covers the reduced dimensions. (A vector unit
// reduces along 128 lanes; two of them used per row is the slow case.)
Instruction* expand_narrow_reduce(Instruction& reduce) {
  if (reduce.operand_count() != 2 || !reduce.shape().is_array() || !internal::elementwise_body(*reduce.called(0)))
    return nullptr;
  Instruction* x = reduce.operand(0);
  const std::vector<int64_t>& dims = x->shape().dims();
  std::vector<int64_t> reduced = reduce.attrs().dimensions;
  std::sort(reduced.begin(), reduced.end());
  std::vector<int64_t> sizes;
  for (int64_t d : reduced) sizes.push_back(dims[static_cast<size_t>(d)]);
  const int64_t innermost = static_cast<int64_t>(dims.size()) - 1;
  if (reduced.empty() || reduced.back() != innermost || dims.back() > kMaxNarrowReduce ||
      product(sizes) > kMaxNarrowReduce || product(sizes) == 0 || x->shape().num_elements() == 0)
    return nullptr;
  Builder b(reduce);
  const std::vector<int64_t>& out = reduce.shape().dims();
  Instruction* acc = b.broadcast(reduce.operand(1), out);
  for_each_position(sizes, [&](const std::vector<int64_t>& p) {
    std::vector<ir::SliceDim> cut;
    for (int64_t d : dims) cut.push_back({0, d, 1});
    for (size_t k = 0; k < reduced.size(); ++k) cut[static_cast<size_t>(reduced[k])] = {p[k], p[k] + 1, 1};
    acc = b.inline_elementwise(*reduce.called(0), {acc, b.reshape(b.slice(x, cut), out)}, out);
  });
  return acc;
}

class WindowExpander final : public Pass {
 public:
  std::string_view name() const override { return "window-expander"; }
  bool run(ir::Module& module) override {
    return internal::expand_instructions(module, [](Instruction& i) -> Instruction* {
      switch (i.opcode()) {
        case Opcode::kConvolution: return expand_convolution(i);
        case Opcode::kReduceWindow: return expand_reduce_window(i);
        case Opcode::kSelectAndScatter: return expand_select_and_scatter(i);
        case Opcode::kReduce: return expand_narrow_reduce(i);
        default: return nullptr;
      }
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_window_expander() { return std::make_unique<WindowExpander>(); }

}  // namespace podsim::passes
