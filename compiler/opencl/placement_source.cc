// Internal to the OpenCL target: the kernels whose results land where data says -
// sort (each element at its rank), scatter (at its indices) and select-and-scatter (at
// the selected positions) - in the order the reference evaluator applies them.
#include "compiler/opencl/placement_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/ir/module.h"
#include "compiler/opencl/emitter.h"

namespace podsim::opencl {
namespace {

using ir::Instruction;
using ir::PrimitiveType;
using ir::Shape;

// Buffer arguments for inputs (read only), then one output per shape.
std::string arguments(const std::vector<const Instruction*>& inputs,
                      const std::vector<Shape>& outputs) {
  std::string args;
  for (size_t k = 0; k < inputs.size(); ++k)
    args += fmt::format("{}__global const {}* restrict in{}", k == 0 ? "" : ", ",
                        *storage_type(inputs[k]->shape().type()), k);
  for (size_t k = 0; k < outputs.size(); ++k)
    args += fmt::format(", __global {}* restrict out{}", *storage_type(outputs[k].type()), k);
  return args;
}

// Sort, stably, as the evaluator does: one work-item per element counts the elements of
// its line that sort before it (the comparator says so, or they are equivalent and come
// earlier), which is its position in the stably sorted line, and copies its elements of
// every operand there. Exact for comparators that are strict weak orders, as XLA
// requires; quadratic in the line length, so long lines stay on the host.
constexpr int64_t kMaxSortLine = 16384;

}  // namespace

std::optional<KernelSource> make_sort_source(const Instruction& sort, const std::string& name) {
  KernelSource k;
  k.name = name;
  const int64_t operands = sort.operand_count();
  if (operands == 0 || sort.attrs().dimensions.size() != 1) return std::nullopt;
  const Shape& first = sort.operand(0)->shape();
  const int64_t dim = sort.attrs().dimensions[0];
  if (dim < 0 || dim >= first.rank() || first.dim(dim) > kMaxSortLine) return std::nullopt;
  std::vector<Shape> outs;
  for (const Instruction* o : sort.operands()) {
    if (!o->shape().is_array() || o->shape().dims() != first.dims() ||
        !storage_type(o->shape().type()))
      return std::nullopt;
    outs.push_back(o->shape());
  }
  k.uses_fp64 = needs_fp64(sort);
  std::map<const Instruction*, int> inputs = bind_inputs(sort, k.inputs);
  const int64_t n = first.num_elements(), length = first.dim(dim);
  const int64_t inner = strides_of(first.dims())[static_cast<size_t>(dim)];
  std::string loads, body;
  int counter = 0;
  Emitter e({}, body, counter);
  std::vector<std::string> mine, other;
  for (int64_t o = 0; o < operands; ++o) {
    const PrimitiveType t = sort.operand(o)->shape().type();
    const std::string in = fmt::format("in{}", inputs.at(sort.operand(o)));
    mine.push_back(fmt::format("x{}", o));
    other.push_back(fmt::format("y{}", o));
    loads += fmt::format("  const {} x{} = {};\n", *compute_type(t), o, load_expr(t, in, "i"));
    body += fmt::format("  const {} y{} = {};\n", *compute_type(t), o,
                        load_expr(t, in, "base + j * (I)" + std::to_string(inner)));
  }
  std::vector<std::string> before_args, after_args;  // comparator(y, x) and (x, y)
  for (int64_t o = 0; o < operands; ++o) {
    before_args.insert(before_args.end(),
                       {other[static_cast<size_t>(o)], mine[static_cast<size_t>(o)]});
    after_args.insert(after_args.end(),
                      {mine[static_cast<size_t>(o)], other[static_cast<size_t>(o)]});
  }
  const ir::Computation& comparator = *sort.called(0);
  const std::vector<std::string> before = e.apply(comparator, before_args);
  const std::vector<std::string> after = e.apply(comparator, after_args);
  if (!e.ok() || before.size() != 1 || after.size() != 1 ||
      comparator.root()->shape().type() != PrimitiveType::kPred)
    return std::nullopt;
  std::string stores;  // the bits as they are (f16 through f32, which holds every f16)
  for (int64_t o = 0; o < operands; ++o) {
    const PrimitiveType t = sort.operand(o)->shape().type();
    const std::string in = fmt::format("in{}", inputs.at(sort.operand(o)));
    const std::string at = fmt::format("base + rank * (I){}", inner);
    stores += "  " +
              (t == PrimitiveType::kF16
                   ? store_stmt(t, fmt::format("out{}", o), at, load_expr(t, in, "i"))
                   : fmt::format("out{}[{}] = {}[i];", o, at, in)) +
              "\n";
  }
  k.source = fmt::format(
      "__kernel void {name}({args}) {{\n  typedef {I} I;\n  const I i = (I)get_global_id(0);\n"
      "  if (i >= {n}) return;\n  const I pos = i / {inner} % {length};\n"
      "  const I base = i - pos * {inner};\n{loads}  I rank = 0;\n"
      "  for (I j = 0; j < {length}; ++j) {{\n{body}"
      "    rank += {before} || (j < pos && !{after});\n  }}\n{stores}}}\n",
      fmt::arg("name", k.name), fmt::arg("args", arguments(k.inputs, outs)),
      fmt::arg("I", n > INT32_MAX ? "long" : "int"), fmt::arg("n", n), fmt::arg("inner", inner),
      fmt::arg("length", length), fmt::arg("loads", loads), fmt::arg("body", body),
      fmt::arg("before", before[0]), fmt::arg("after", after[0]), fmt::arg("stores", stores));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

// Select-and-scatter, one work-item per result element o: from init, in the order of
// the source positions (as the evaluator runs them), every window that covers o selects
// its element (the first, replaced by each later candidate that select(current,
// candidate) does not keep); where that is o, o = scatter(o, source). No dilation.
std::optional<KernelSource> make_select_and_scatter_source(const Instruction& sas,
                                                           const std::string& name) {
  KernelSource k;
  k.name = name;
  if (sas.operand_count() != 3 || sas.called().size() != 2 || !sas.attrs().window)
    return std::nullopt;
  const Shape& shape = sas.operand(0)->shape();
  const Shape& source = sas.operand(1)->shape();
  const PrimitiveType t = shape.type();
  const std::vector<ir::WindowDim>& window = sas.attrs().window->dims;
  if (!shape.is_array() || !compute_type(t) || source.type() != t ||
      static_cast<int64_t>(window.size()) != shape.rank() || !sas.shape().is_array())
    return std::nullopt;
  for (const ir::WindowDim& w : window)
    if (w.lhs_dilation != 1 || w.rhs_dilation != 1 || w.reversal || w.pad_low < 0 || w.stride < 1 ||
        w.size < 1)
      return std::nullopt;
  k.uses_fp64 = needs_fp64(sas);
  std::map<const Instruction*, int> inputs = bind_inputs(sas, k.inputs);
  const std::string c = *compute_type(t);
  const std::string in_operand = fmt::format("in{}", inputs.at(sas.operand(0)));
  const std::string in_source = fmt::format("in{}", inputs.at(sas.operand(1)));
  const std::string in_init = fmt::format("in{}", inputs.at(sas.operand(2)));
  const int64_t rank = shape.rank(), n = shape.num_elements();
  const std::vector<int64_t> strides = strides_of(shape.dims());
  const std::vector<int64_t> source_strides = strides_of(source.dims());
  int counter = 0;
  std::string head, select_body, scatter_body;
  Emitter outer({}, head, counter);
  const std::vector<std::string> o = outer.delinearize(shape.dims(), "i");
  Emitter select_e({}, select_body, counter), scatter_e({}, scatter_body, counter);
  const std::vector<std::string> keep = select_e.apply(*sas.called(0), {"selv", "cand"});
  const std::vector<std::string> combined = scatter_e.apply(*sas.called(1), {"acc", "src"});
  if (!outer.ok() || !select_e.ok() || !scatter_e.ok() || keep.size() != 1 ||
      combined.size() != 1 || sas.called(0)->root()->shape().type() != PrimitiveType::kPred ||
      sas.called(1)->root()->shape().type() != t)
    return std::nullopt;
  // Source loops (the windows covering o), then window loops (the candidates).
  std::string open_source, open_window, close_window, close_source;
  std::string source_lin = "0", position_lin = "0";
  for (int64_t d = 0; d < rank; ++d) {
    const ir::WindowDim& w = window[static_cast<size_t>(d)];
    const std::string od = o[static_cast<size_t>(d)];
    open_source += fmt::format(
        "  {{ const I num = {0} + {1} - {2} + 1;\n"
        "  const I hi = min((I)(({0} + {1}) / {3}), (I){4});\n"
        "  for (I s{5} = num <= 0 ? 0 : (num + {3} - 1) / {3}; s{5} <= hi; ++s{5}) {{\n",
        od, w.pad_low, w.size, w.stride, source.dim(d) - 1, d);
    open_window += fmt::format(
        "  for (I w{0} = 0; w{0} < {1}; ++w{0}) {{\n"
        "    const I p{0} = s{0} * {2} - {3} + w{0};\n    if (p{0} < 0 || p{0} >= {4}) continue;\n",
        d, w.size, w.stride, w.pad_low, shape.dim(d));
    close_window += "  }\n";
    close_source += "  }}\n";
    source_lin += fmt::format(" + s{} * (I){}", d, source_strides[static_cast<size_t>(d)]);
    position_lin += fmt::format(" + p{} * (I){}", d, strides[static_cast<size_t>(d)]);
  }
  k.source = fmt::format(
      "__kernel void {name}({args}) {{\n  typedef {I} I;\n  const I i = (I)get_global_id(0);\n"
      "  if (i >= {n}) return;\n{head}  {c} acc = {init};\n{open_source}"
      "  I sel = -1;\n  {c} selv = 0;\n{open_window}"
      "    const I at = {position};\n    const {c} cand = {operand};\n"
      "    if (sel >= 0) {{\n{select_body}      if ({keep}) continue;\n    }}\n"
      "    sel = at;\n    selv = cand;\n{close_window}"
      "  if (sel == i) {{\n    const {c} src = {source_value};\n{scatter_body}    acc = "
      "{combined};\n  }}\n"
      "{close_source}  {store}\n}}\n",
      fmt::arg("name", k.name), fmt::arg("args", arguments(k.inputs, {sas.shape()})),
      fmt::arg("I", n > INT32_MAX || source.num_elements() > INT32_MAX ? "long" : "int"),
      fmt::arg("n", n), fmt::arg("head", head), fmt::arg("c", c),
      fmt::arg("init", load_expr(t, in_init, "0")), fmt::arg("open_source", open_source),
      fmt::arg("open_window", open_window), fmt::arg("position", position_lin),
      fmt::arg("operand", load_expr(t, in_operand, "at")), fmt::arg("select_body", select_body),
      fmt::arg("keep", keep[0]), fmt::arg("close_window", close_window),
      fmt::arg("source_value", load_expr(t, in_source, source_lin)),
      fmt::arg("scatter_body", scatter_body), fmt::arg("combined", combined[0]),
      fmt::arg("close_source", close_source), fmt::arg("store", store_stmt(t, "out0", "i", "acc")));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

namespace {

// An index vector's element as a signed 64-bit start (unsigned values beyond int64
// saturate, as the evaluator reads them).
std::string start_value(PrimitiveType t, const std::string& loaded) {
  if (t == PrimitiveType::kU64) return fmt::format("(long)min({}, (ulong)LONG_MAX)", loaded);
  return fmt::format("(long){}", loaded);
}

}  // namespace

std::optional<KernelSource> make_scatter_source(const Instruction& scatter,
                                                const std::string& name) {
  const int64_t n = scatter.operand_count() / 2;
  if (scatter.operand_count() < 3 || scatter.operand_count() % 2 == 0 ||
      scatter.called().size() != 1)
    return std::nullopt;
  const ir::ScatterDimNumbers& sd = scatter.attrs().scatter_dims;
  const Shape& op = scatter.operand(0)->shape();
  const Shape& indices = scatter.operand(n)->shape();
  const Shape& up = scatter.operand(n + 1)->shape();
  if (!indices.is_array() || !ir::is_integral(indices.type()) || !compute_type(indices.type()))
    return std::nullopt;
  std::vector<Shape> outs;
  for (int64_t k = 0; k < n; ++k) {
    const Shape& o = scatter.operand(k)->shape();
    const Shape& u = scatter.operand(n + 1 + k)->shape();
    if (!o.is_array() || !u.is_array() || o.dims() != op.dims() || u.dims() != up.dims() ||
        u.type() != o.type() || !compute_type(o.type()))
      return std::nullopt;
    outs.push_back(o);
  }
  const int64_t rank = op.rank(), ivd = sd.index_vector_dim;
  if (ivd < 0 || ivd > indices.rank()) return std::nullopt;
  // Operand dimensions of the window, and each one's extent (1 where inserted or batching).
  std::vector<bool> removed(static_cast<size_t>(rank), false);
  for (int64_t d : sd.inserted_window_dims) removed.at(static_cast<size_t>(d)) = true;
  for (int64_t d : sd.input_batching_dims) removed.at(static_cast<size_t>(d)) = true;
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[static_cast<size_t>(d)]) window_operand_dims.push_back(d);
  if (window_operand_dims.size() != sd.update_window_dims.size()) return std::nullopt;
  std::vector<bool> is_window(static_cast<size_t>(up.rank()), false);
  for (int64_t d : sd.update_window_dims) is_window.at(static_cast<size_t>(d)) = true;
  std::vector<int64_t> update_scatter_dims, scatter_sizes, window_sizes;
  for (int64_t d = 0; d < up.rank(); ++d)
    if (!is_window[static_cast<size_t>(d)]) {
      update_scatter_dims.push_back(d);
      scatter_sizes.push_back(up.dim(d));
    }
  std::vector<int64_t> extent(static_cast<size_t>(rank), 1);
  for (size_t k = 0; k < sd.update_window_dims.size(); ++k) {
    window_sizes.push_back(up.dim(sd.update_window_dims[k]));
    extent[static_cast<size_t>(window_operand_dims[k])] = window_sizes.back();
  }
  // Work-items take window positions and walk the scatter indices in order: two updates of
  // one element then come from one work-item, in the evaluator's order, as long as windows
  // do not extend along a dimension indices move (else one work-item takes everything).
  bool parallel = true;
  for (int64_t d : sd.scatter_dims_to_operand_dims)
    if (d < 0 || d >= rank || extent[static_cast<size_t>(d)] != 1) parallel = false;
  int64_t windows = 1, updates = 1;
  for (int64_t w : window_sizes) windows *= w;
  for (int64_t g : scatter_sizes) updates *= g;
  constexpr int64_t kMaxSequentialUpdates = int64_t{1} << 16;
  if (!parallel && windows * updates > kMaxSequentialUpdates) return std::nullopt;

  KernelSource k;
  k.name = name;
  std::vector<const Instruction*> bound;  // indices and updates (the operands are outputs)
  for (int64_t i = n; i < scatter.operand_count(); ++i) bound.push_back(scatter.operand(i));
  std::map<const Instruction*, int> inputs;
  for (const Instruction* b : bound)
    if (inputs.emplace(b, static_cast<int>(k.inputs.size())).second) k.inputs.push_back(b);
  for (const Instruction* o : scatter.operands())
    k.uses_fp64 = k.uses_fp64 || o->shape().type() == PrimitiveType::kF64;

  int counter = 0;
  std::string head, body;
  Emitter outer({}, head, counter), inner({}, body, counter);
  const std::vector<std::string> w = outer.delinearize(window_sizes, "wi");
  const std::vector<std::string> g = inner.delinearize(scatter_sizes, "g");
  // Start per operand dimension.
  const std::vector<int64_t> index_strides = strides_of(indices.dims());
  std::string index_base = "0";
  for (int64_t d = 0, j = 0; d < indices.rank(); ++d) {
    if (d == ivd) continue;
    index_base += fmt::format(" + (long){} * {}", g[static_cast<size_t>(j++)],
                              index_strides[static_cast<size_t>(d)]);
  }
  const int64_t vector_stride = ivd < indices.rank() ? index_strides[static_cast<size_t>(ivd)] : 0;
  std::vector<std::string> start(static_cast<size_t>(rank), "0L");
  const std::string in_indices = fmt::format("in{}", inputs.at(scatter.operand(n)));
  for (size_t k2 = 0; k2 < sd.scatter_dims_to_operand_dims.size(); ++k2)
    start[static_cast<size_t>(sd.scatter_dims_to_operand_dims[k2])] = inner.temp(
        "long",
        start_value(indices.type(),
                    load_expr(indices.type(), in_indices,
                              fmt::format("ib + {}", static_cast<int64_t>(k2) * vector_stride))));
  for (size_t b = 0; b < sd.input_batching_dims.size(); ++b) {
    const int64_t d = sd.scatter_indices_batching_dims[b];
    if (d == ivd || d < 0 || d >= indices.rank()) return std::nullopt;
    start[static_cast<size_t>(sd.input_batching_dims[b])] =
        fmt::format("(long){}", g[static_cast<size_t>(d < ivd ? d : d - 1)]);
  }
  std::string in_bounds = "1";
  const std::vector<int64_t> op_strides = strides_of(op.dims()), up_strides = strides_of(up.dims());
  std::string op_offset = "0", up_offset = "0";
  for (int64_t d = 0; d < rank; ++d) {
    const std::string& sv = start[static_cast<size_t>(d)];
    if (sv != "0L")
      in_bounds +=
          fmt::format(" && {0} >= 0 && {0} <= {1}", sv, op.dim(d) - extent[static_cast<size_t>(d)]);
    op_offset += fmt::format(" + (I){} * {}", sv, op_strides[static_cast<size_t>(d)]);
  }
  for (size_t k2 = 0; k2 < window_operand_dims.size(); ++k2) {
    op_offset += fmt::format(" + (I){} * {}", w[k2],
                             op_strides[static_cast<size_t>(window_operand_dims[k2])]);
    up_offset += fmt::format(" + (I){} * {}", w[k2],
                             up_strides[static_cast<size_t>(sd.update_window_dims[k2])]);
  }
  for (size_t j = 0; j < update_scatter_dims.size(); ++j)
    up_offset +=
        fmt::format(" + (I){} * {}", g[j], up_strides[static_cast<size_t>(update_scatter_dims[j])]);
  std::vector<std::string> args;
  std::string loads;
  for (int64_t i = 0; i < n; ++i) {
    const PrimitiveType t = outs[static_cast<size_t>(i)].type();
    loads += fmt::format("    const {} old{} = {};\n", *compute_type(t), i,
                         load_expr(t, fmt::format("out{}", i), "at"));
    args.push_back(fmt::format("old{}", i));
  }
  for (int64_t i = 0; i < n; ++i) {
    const PrimitiveType t = outs[static_cast<size_t>(i)].type();
    loads += fmt::format(
        "    const {} upd{} = {};\n", *compute_type(t), i,
        load_expr(t, fmt::format("in{}", inputs.at(scatter.operand(n + 1 + i))), "from"));
    args.push_back(fmt::format("upd{}", i));
  }
  std::string combine;
  Emitter apply_e({}, combine, counter);
  const std::vector<std::string> combined = apply_e.apply(*scatter.called(0), args);
  if (!outer.ok() || !inner.ok() || !apply_e.ok() || static_cast<int64_t>(combined.size()) != n)
    return std::nullopt;
  std::string stores;
  for (int64_t i = 0; i < n; ++i)
    stores += "    " +
              store_stmt(outs[static_cast<size_t>(i)].type(), fmt::format("out{}", i), "at",
                         combined[static_cast<size_t>(i)]) +
              "\n";
  const int64_t largest = std::max({op.num_elements(), up.num_elements(), indices.num_elements()});
  // Per scatter index: its start, skipped when the window does not fit; per window
  // position: the element's update.
  const std::string per_update = fmt::format(
      "    const long ib = {};\n{}    if (!({})) continue;\n", index_base, body, in_bounds);
  const std::string per_element =
      fmt::format("{}    const I at = {};\n    const I from = {};\n{}{}{}", head, op_offset,
                  up_offset, loads, combine, stores);
  const std::string loops =
      parallel
          ? fmt::format(
                "  for (I wi = (I)get_global_id(0); wi < {0}; wi += (I)get_global_size(0)) {{\n"
                "  for (I g = 0; g < {1}; ++g) {{\n{2}{3}  }}\n  }}\n",
                windows, updates, per_update, per_element)
          : fmt::format(
                "  for (I g = 0; g < {1}; ++g) {{\n{2}"
                "  for (I wi = 0; wi < {0}; ++wi) {{\n{3}  }}\n  }}\n",
                windows, updates, per_update, per_element);
  k.source = fmt::format("__kernel void {}({}) {{\n  typedef {} I;\n{}}}\n", name,
                         arguments(k.inputs, outs), largest > INT32_MAX ? "long" : "int", loops);
  k.local_size = parallel ? std::clamp<int64_t>(windows, 1, kWorkGroup) : 1;
  k.global_size =
      parallel ? std::max<int64_t>(1, (windows + k.local_size - 1) / k.local_size) * k.local_size
               : 1;
  return k;
}
}  // namespace podsim::opencl
