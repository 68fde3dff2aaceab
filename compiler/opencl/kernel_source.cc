#include "compiler/opencl/kernel_source.h"

#include <fmt/format.h>

#include <bit>
#include <map>
#include <utility>

#include "compiler/ir/module.h"
#include "compiler/ir/rng_layout.h"
#include "compiler/opencl/emitter.h"

namespace podsim::opencl {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

constexpr int64_t kWorkGroup = 256;
// A reduce whose reduced extent is at least this takes a work-group per result element.
constexpr int64_t kTreeReduceMin = kWorkGroup;

// Map from each distinct source instruction to its buffer argument number, in first-use
// order: the fused computation's parameters (by number), or a stand-alone
// instruction's operands.
std::map<const Instruction*, int> bind_inputs(const Instruction& instruction,
                                              std::vector<const Instruction*>& inputs) {
  std::map<const Instruction*, int> map;
  if (instruction.opcode() == Opcode::kFusion) {
    const ir::Computation& fused = *instruction.called(0);
    for (int64_t k = 0; k < instruction.operand_count(); ++k) {
      map.emplace(fused.parameter(k), static_cast<int>(k));
      inputs.push_back(instruction.operand(k));
    }
    return map;
  }
  for (const Instruction* o : instruction.operands())
    if (map.emplace(o, static_cast<int>(inputs.size())).second) inputs.push_back(o);
  return map;
}

std::string signature(const std::string& name, const std::vector<const Instruction*>& inputs,
                      const Shape& out, const std::string& attributes = "") {
  std::string args;
  for (size_t k = 0; k < inputs.size(); ++k)
    args += fmt::format("__global const {}* restrict in{}, ",
                        *storage_type(inputs[k]->shape().type()), k);
  return fmt::format("__kernel {}void {}({}__global {}* restrict out)", attributes, name, args,
                     *storage_type(out.type()));
}

bool needs_fp64(const Instruction& instruction) {
  auto f64 = [](const Shape& s) { return s.is_array() && s.type() == PrimitiveType::kF64; };
  if (f64(instruction.shape())) return true;
  for (const Instruction* o : instruction.operands())
    if (f64(o->shape())) return true;
  if (instruction.opcode() == Opcode::kFusion)
    for (const auto& i : instruction.called(0)->instructions())
      if (f64(i->shape())) return true;
  return false;
}

// The root of a reducer `ROOT r = op(p0, p1)` on its two parameters; null otherwise.
const Instruction* simple_reducer(const ir::Computation& reducer) {
  const Instruction* op = reducer.root();
  if (reducer.parameter_count() != 2 || op->operand_count() != 2 ||
      op->operand(0) != reducer.parameter(0) || op->operand(1) != reducer.parameter(1))
    return nullptr;
  return op;
}

std::optional<KernelSource> elementwise_kernel(const Instruction& instruction,
                                               const Instruction& root,
                                               std::map<const Instruction*, int> inputs,
                                               KernelSource k) {
  const Shape& out = instruction.shape();
  const int64_t n = out.num_elements();
  std::string body;
  int counter = 0;
  Emitter e(std::move(inputs), body, counter);
  const std::vector<std::string> idx = e.delinearize(out.dims(), "i");
  const std::string v = e.value(&root, idx);
  if (!e.ok()) return std::nullopt;
  int64_t largest = n;
  for (const Instruction* in : k.inputs) largest = std::max(largest, in->shape().num_elements());
  const std::string index_type = largest > INT32_MAX ? "long" : "int";
  k.source = fmt::format(
      "{} {{\n  typedef {} I;\n  const I i = (I)get_global_id(0);\n  if (i >= {}) return;\n{}  "
      "{}\n}}\n",
      signature(k.name, k.inputs, out), index_type, n, body, store_stmt(out.type(), "out", "i", v));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

std::optional<KernelSource> reduce_kernel(const Instruction& instruction, const Instruction& reduce,
                                          std::map<const Instruction*, int> inputs,
                                          KernelSource k) {
  if (reduce.operand_count() != 2 || !reduce.shape().is_array()) return std::nullopt;
  const Instruction* op = simple_reducer(*reduce.called(0));
  if (op == nullptr) return std::nullopt;
  const Instruction* input = reduce.operand(0);
  const Shape& in_shape = input->shape();
  const Shape& out = instruction.shape();
  const PrimitiveType t = out.type();
  if (!compute_type(t) || in_shape.type() != t) return std::nullopt;
  const std::string c = *compute_type(t);
  std::vector<bool> reduced(static_cast<size_t>(in_shape.rank()), false);
  std::vector<int64_t> reduced_dims;
  for (int64_t d : reduce.attrs().dimensions) reduced[static_cast<size_t>(d)] = true;
  for (int64_t d = 0; d < in_shape.rank(); ++d)
    if (reduced[static_cast<size_t>(d)]) reduced_dims.push_back(in_shape.dim(d));
  int64_t rn = 1;
  for (int64_t d : reduced_dims) rn *= d;
  const int64_t n = out.num_elements();
  const bool tree = rn >= kTreeReduceMin;
  const std::string index_type = std::max(n, in_shape.num_elements()) > INT32_MAX ? "long" : "int";

  int counter = 0;
  std::string head, loop, tail;
  Emitter outer(inputs, head, counter);
  const std::vector<std::string> out_idx = outer.delinearize(out.dims(), "o");
  // The input's value at reduced index r (emitted once per loop body: fresh memo).
  Emitter inner(inputs, loop, counter);
  std::vector<std::string> r_idx = inner.delinearize(reduced_dims, "r");
  std::vector<std::string> in_idx;
  for (size_t d = 0, ko = 0, kr = 0; d < reduced.size(); ++d)
    in_idx.push_back(reduced[d] ? r_idx[kr++] : out_idx[ko++]);
  const std::string x = inner.value(input, in_idx);
  Emitter last(inputs, tail, counter);
  const std::string init = last.value(reduce.operand(1), {});
  std::optional<std::string> fold = outer.binary(op->opcode(), t, "acc", x);
  std::optional<std::string> final_fold =
      outer.binary(op->opcode(), t, init, tree ? "part[0]" : "acc");
  std::optional<std::string> pair = outer.binary(op->opcode(), t, "part[l]", "part[l + s]");
  if (!outer.ok() || !inner.ok() || !last.ok() || !fold || !final_fold || !pair)
    return std::nullopt;

  if (tree) {
    k.source = fmt::format(
        "{sig} {{\n  typedef {I} I;\n  const I o = (I)get_group_id(0);\n  const int l = "
        "get_local_id(0);\n"
        "  __local {c} part[{wg}];\n{head}"
        "  {c} acc;\n  {{\n    const I r = l;\n{loop}    acc = {x};\n  }}\n"
        "  for (I r = l + {wg}; r < {rn}; r += {wg}) {{\n{loop}    acc = {fold};\n  }}\n"
        "  part[l] = acc;\n  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  for (int s = {half}; s > 0; s >>= 1) {{\n    if (l < s) part[l] = {pair};\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n  }}\n"
        "  if (l == 0) {{\n{tail}    {store}\n  }}\n}}\n",
        fmt::arg("sig", signature(k.name, k.inputs, out,
                                  fmt::format("__attribute__((reqd_work_group_size({}, 1, 1))) ",
                                              kWorkGroup))),
        fmt::arg("I", index_type), fmt::arg("c", c), fmt::arg("wg", kWorkGroup),
        fmt::arg("head", head), fmt::arg("loop", loop), fmt::arg("x", x), fmt::arg("fold", *fold),
        fmt::arg("rn", rn), fmt::arg("half", kWorkGroup / 2), fmt::arg("pair", *pair),
        fmt::arg("tail", tail), fmt::arg("store", store_stmt(t, "out", "o", *final_fold)));
    k.local_size = kWorkGroup;
    k.global_size = n * kWorkGroup;
    return k;
  }
  // Sequential in index order from the init value, as the evaluator folds.
  k.source = fmt::format(
      "{sig} {{\n  typedef {I} I;\n  const I o = (I)get_global_id(0);\n  if (o >= {n}) "
      "return;\n{head}{tail}"
      "  {c} acc = {init};\n  for (I r = 0; r < {rn}; ++r) {{\n{loop}    acc = {fold};\n  }}\n  "
      "{store}\n}}\n",
      fmt::arg("sig", signature(k.name, k.inputs, out)), fmt::arg("I", index_type),
      fmt::arg("n", n), fmt::arg("head", head), fmt::arg("tail", tail), fmt::arg("c", c),
      fmt::arg("init", init), fmt::arg("rn", rn), fmt::arg("loop", loop), fmt::arg("fold", *fold),
      fmt::arg("store", store_stmt(t, "out", "o", "acc")));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

// XLA convolution, directly: one result element per work-item, the dot product of the
// input window (padded, base-dilated) with the kernel (window-dilated, maybe reversed)
// over the input features of its feature group, as the evaluator computes it.
std::optional<KernelSource> convolution_kernel(const Instruction& conv, KernelSource k) {
  const Shape& lhs = conv.operand(0)->shape();
  const Shape& rhs = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  if (!ir::is_float(lhs.type()) || !ir::is_float(rhs.type()) || !ir::is_float(out.type()))
    return std::nullopt;
  const ir::ConvDimNumbers& cd = conv.attrs().conv_dims;
  const size_t spatial = cd.input_spatial.size();
  const int64_t groups = conv.attrs().feature_group_count,
                batch_groups = conv.attrs().batch_group_count;
  const int64_t kernel_in = rhs.dim(cd.kernel_input_feature),
                kernel_out = rhs.dim(cd.kernel_output_feature);
  if (groups < 1 || batch_groups < 1 || kernel_out % groups != 0 || kernel_out % batch_groups != 0)
    return std::nullopt;
  const bool f64 = lhs.type() == PrimitiveType::kF64 || rhs.type() == PrimitiveType::kF64 ||
                   out.type() == PrimitiveType::kF64;
  const std::vector<int64_t> ls = strides_of(lhs.dims()), rs = strides_of(rhs.dims());
  const int64_t n = out.num_elements();
  const int64_t largest = std::max({n, lhs.num_elements(), rhs.num_elements()});
  std::string body;
  int counter = 0;
  Emitter e({}, body, counter);
  const std::vector<std::string> idx = e.delinearize(out.dims(), "o");
  const auto at = [&](int64_t d) { return idx[static_cast<size_t>(d)]; };
  body += fmt::format("  const I f = {};\n  const I group = f / {};\n", at(cd.output_feature),
                      kernel_out / groups);
  body += fmt::format("  const I lbase = ((f / {}) * {} + {}) * {} + group * {};\n",
                      kernel_out / batch_groups, out.dim(cd.output_batch), at(cd.output_batch),
                      ls[static_cast<size_t>(cd.input_batch)],
                      kernel_in * ls[static_cast<size_t>(cd.input_feature)]);
  body += fmt::format("  const I rbase = f * {};\n  {} sum = 0;\n",
                      rs[static_cast<size_t>(cd.kernel_output_feature)], f64 ? "double" : "float");
  std::string lsum = "lbase", rsum = "rbase", close;
  for (size_t sd = 0; sd < spatial; ++sd) {
    ir::WindowDim w;
    const int64_t size = rhs.dim(cd.kernel_spatial[sd]);
    if (conv.attrs().window) w = conv.attrs().window->dims[sd];
    const std::string pad(4 + 2 * sd, ' ');
    body += fmt::format(
        "{p}for (I k{s} = 0; k{s} < {size}; ++k{s}) {{\n"
        "{p}  const I pos{s} = {o} * {stride} + k{s} * {rdil} - {low};\n"
        "{p}  if (pos{s} < 0 || pos{s} % {ldil} != 0 || pos{s} / {ldil} >= {in}) continue;\n"
        "{p}  const I l{s} = (pos{s} / {ldil}) * {lstride};\n"
        "{p}  const I r{s} = ({rev}) * {rstride};\n",
        fmt::arg("p", pad.substr(2)), fmt::arg("s", sd), fmt::arg("size", size),
        fmt::arg("o", at(cd.output_spatial[sd])), fmt::arg("stride", w.stride),
        fmt::arg("rdil", w.rhs_dilation), fmt::arg("low", w.pad_low),
        fmt::arg("ldil", w.lhs_dilation), fmt::arg("in", lhs.dim(cd.input_spatial[sd])),
        fmt::arg("lstride", ls[static_cast<size_t>(cd.input_spatial[sd])]),
        fmt::arg("rev",
                 w.reversal ? fmt::format("{} - k{}", size - 1, sd) : fmt::format("k{}", sd)),
        fmt::arg("rstride", rs[static_cast<size_t>(cd.kernel_spatial[sd])]));
    lsum += fmt::format(" + l{}", sd);
    rsum += fmt::format(" + r{}", sd);
    close = pad.substr(2) + "}\n" + close;
  }
  const std::string pad(2 + 2 * spatial, ' ');
  body += fmt::format(
      "{p}for (I c = 0; c < {kin}; ++c)\n{p}  sum += ({acc})({l}) * ({acc})({r});\n{close}",
      fmt::arg("p", pad), fmt::arg("kin", kernel_in), fmt::arg("acc", f64 ? "double" : "float"),
      fmt::arg("l", load_expr(lhs.type(), "in0",
                              fmt::format("{} + c * {}", lsum,
                                          ls[static_cast<size_t>(cd.input_feature)]))),
      fmt::arg("r", load_expr(rhs.type(), "in1",
                              fmt::format("{} + c * {}", rsum,
                                          rs[static_cast<size_t>(cd.kernel_input_feature)]))),
      fmt::arg("close", close));
  const std::string result = out.type() == PrimitiveType::kF64 ? "sum" : "(float)sum";
  k.source = fmt::format(
      "{} {{\n  typedef {} I;\n  const I o = (I)get_global_id(0);\n  if (o >= {}) return;\n{}  "
      "{}\n}}\n",
      signature(k.name, k.inputs, out), largest > INT32_MAX ? "long" : "int", n, body,
      store_stmt(out.type(), "out", "o", result));
  k.uses_fp64 = f64;
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

// reduce-window with one input and a reducer of one binary op: per result element, the
// init value folded with the window's real input elements in row-major window order
// (padding and base-dilation holes are skipped), as the evaluator folds them.
std::optional<KernelSource> reduce_window_kernel(const Instruction& rw, KernelSource k) {
  if (rw.operand_count() != 2 || !rw.shape().is_array() || !rw.attrs().window) return std::nullopt;
  const Instruction* op = simple_reducer(*rw.called(0));
  const Shape& in = rw.operand(0)->shape();
  const Shape& out = rw.shape();
  const PrimitiveType t = out.type();
  if (op == nullptr || in.type() != t || rw.operand(0) == rw.operand(1)) return std::nullopt;
  const std::string c = *compute_type(t);
  const int64_t n = out.num_elements();
  std::string head, loop, tail;
  int counter = 0;
  std::map<const Instruction*, int> inputs = {{rw.operand(0), 0}, {rw.operand(1), 1}};
  Emitter outer(inputs, head, counter);
  const std::vector<std::string> idx = outer.delinearize(out.dims(), "o");
  Emitter inner(inputs, loop, counter);
  std::vector<std::string> at;
  std::string open, close;
  for (size_t d = 0; d < idx.size(); ++d) {
    const ir::WindowDim& w = rw.attrs().window->dims[d];
    const std::string pad(2 + 2 * d, ' ');
    open += fmt::format(
        "{p}for (I k{d} = 0; k{d} < {size}; ++k{d}) {{\n"
        "{p}  const I pos{d} = {o} * {stride} - {low} + k{d} * {rdil};\n"
        "{p}  if (pos{d} < 0 || pos{d} > {last} || pos{d} % {ldil} != 0) continue;\n",
        fmt::arg("p", pad), fmt::arg("d", d), fmt::arg("size", w.size), fmt::arg("o", idx[d]),
        fmt::arg("stride", w.stride), fmt::arg("low", w.pad_low), fmt::arg("rdil", w.rhs_dilation),
        fmt::arg("last", (in.dim(static_cast<int64_t>(d)) - 1) * w.lhs_dilation),
        fmt::arg("ldil", w.lhs_dilation));
    at.push_back(w.lhs_dilation == 1 ? fmt::format("pos{}", d)
                                     : fmt::format("(pos{} / {})", d, w.lhs_dilation));
    close = pad + "}\n" + close;
  }
  const std::string x = inner.value(rw.operand(0), at);
  Emitter last(inputs, tail, counter);
  const std::string init = last.value(rw.operand(1), {});
  std::optional<std::string> fold = outer.binary(op->opcode(), t, "acc", x);
  if (!outer.ok() || !inner.ok() || !last.ok() || !fold || in.num_elements() == 0)
    return std::nullopt;
  const std::string pad(2 + 2 * idx.size(), ' ');
  k.source = fmt::format(
      "{sig} {{\n  typedef {I} I;\n  const I o = (I)get_global_id(0);\n  if (o >= {n}) "
      "return;\n{head}{tail}"
      "  {c} acc = {init};\n{open}{loop}{p}acc = {fold};\n{close}  {store}\n}}\n",
      fmt::arg("sig", signature(k.name, k.inputs, out)),
      fmt::arg("I", std::max(n, in.num_elements()) > INT32_MAX ? "long" : "int"), fmt::arg("n", n),
      fmt::arg("head", head), fmt::arg("tail", tail), fmt::arg("c", c), fmt::arg("init", init),
      fmt::arg("open", open), fmt::arg("loop", loop), fmt::arg("p", pad), fmt::arg("fold", *fold),
      fmt::arg("close", close), fmt::arg("store", store_stmt(t, "out", "o", "acc")));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

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

std::optional<KernelSource> sort_kernel(const Instruction& sort, KernelSource k) {
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
std::optional<KernelSource> select_and_scatter_kernel(const Instruction& sas, KernelSource k) {
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

namespace {

// rng-bit-generator, bit for bit the evaluator's (see compiler/ir/evaluator_rng.cc for
// how elements map to generator outputs): one work-item per Threefry output pair (or
// 64-bit element) or per Philox block; work-item 0 also writes the new state.
constexpr std::string_view kRngHelpers = R"(#ifndef PODSIM_RNG_HELPERS
#define PODSIM_RNG_HELPERS
uint2 podsim_threefry(ulong counter, ulong key) {
  const uint k0 = (uint)key, k1 = (uint)(key >> 32);
  const uint ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  const uint rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint x0 = (uint)counter + ks[0], x1 = (uint)(counter >> 32) + ks[1];
  for (uint block = 0; block < 5; ++block) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotate(x1, rot[block % 2][r]);
      x1 ^= x0;
    }
    x0 += ks[(block + 1) % 3];
    x1 += ks[(block + 2) % 3] + block + 1;
  }
  return (uint2)(x0, x1);
}
uint4 podsim_philox(ulong low, ulong high, ulong key) {
  uint x0 = (uint)low, x1 = (uint)(low >> 32), x2 = (uint)high, x3 = (uint)(high >> 32);
  uint k0 = (uint)key, k1 = (uint)(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint h0 = mul_hi(x0, 0xD2511F53u), l0 = x0 * 0xD2511F53u;
    const uint h1 = mul_hi(x2, 0xCD9E8D57u), l1 = x2 * 0xCD9E8D57u;
    x0 = h1 ^ x1 ^ k0;
    x1 = l1;
    x2 = h0 ^ x3 ^ k1;
    x3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (uint4)(x0, x1, x2, x3);
}
#endif
)";

std::optional<KernelSource> rng_bit_generator_kernel(const Instruction& rng, KernelSource k) {
  const Shape& shape = rng.shape();
  const Shape& state = rng.operand(0)->shape();
  if (!shape.is_tuple() || shape.tuple_size() != 2 || !shape.element(1).is_array() ||
      state.type() != PrimitiveType::kU64 || state.rank() != 1)
    return std::nullopt;
  const Shape& data = shape.element(1);
  const int width = ir::type_byte_size(data.type());
  if (data.type() == PrimitiveType::kPred || (width != 1 && width != 2 && width != 4 && width != 8))
    return std::nullopt;
  const bool threefry = rng.attrs().rng_algorithm == ir::RngAlgorithm::kThreeFry;
  const int64_t state_size = state.dim(0);
  if (threefry ? state_size != 2 : state_size != 2 && state_size != 3) return std::nullopt;
  const std::string bits = width == 1   ? "uchar"
                           : width == 2 ? "ushort"
                           : width == 4 ? "uint"
                                        : "ulong";
  const std::vector<int64_t>& dims = data.dims();
  const int64_t n = data.num_elements();
  bind_inputs(rng, k.inputs);
  int counter = 0;
  std::string body, new_state;
  Emitter e({}, body, counter);
  int64_t work = 0;
  if (threefry) {
    new_state = "  if (w == 0) { out0[0] = in0[0]; out0[1] = in0[1] + (ulong)";
    if (width == 8 || dims.empty()) {
      work = n;
      body += width == 8
                  ? "  const uint2 y = podsim_threefry(in0[1] + (ulong)w, in0[0]);\n"
                    "  out1[w] = (ulong)y.x | (ulong)y.y << 32;\n"
                  : fmt::format("  out1[0] = ({})podsim_threefry(in0[1], in0[0]).x;\n", bits);
    } else {
      // Pair h's two words fill positions 2h and 2h + 1 of the split dimension.
      const size_t split = ir::three_fry_split_dimension(dims);
      std::vector<int64_t> half = dims;
      half[split] = (dims[split] + 1) / 2;
      work = 1;
      for (int64_t d : half) work *= d;
      std::vector<std::string> h = e.delinearize(half, "w");
      body += "  const uint2 y = podsim_threefry(in0[1] + (ulong)w, in0[0]);\n";
      for (int word = 0; word < 2; ++word) {
        std::vector<std::string> at = h;
        at[split] = e.temp("I", fmt::format("2 * {} + {}", h[split], word));
        const std::string lin = e.linear(dims, at);
        body += fmt::format("  if ({} < {}) out1[{}] = ({})y.{};\n", at[split], dims[split], lin,
                            bits, word == 0 ? "x" : "y");
      }
    }
    new_state += fmt::format("{}; }}\n", work);
  } else {
    const int64_t per_block = width == 8 ? 2 : 4;
    work = (n + per_block - 1) / per_block;
    // The 128-bit counter (low, high): {state[1], state[2]}, or {state[1], state[0]}.
    const std::string high = state_size == 3 ? "in0[2]" : "in0[0]";
    body += fmt::format(
        "  const ulong low = in0[1] + (ulong)w;\n"
        "  const ulong high = {0} + (low < in0[1] ? 1 : 0);\n"
        "  const uint4 y = podsim_philox(low, high, in0[0]);\n",
        high);
    if (width == 8) {
      body += fmt::format(
          "  out1[2 * (I)w] = (ulong)y.x | (ulong)y.y << 32;\n"
          "  if (2 * (I)w + 1 < {}) out1[2 * (I)w + 1] = (ulong)y.z | (ulong)y.w << 32;\n",
          n);
    } else {
      body += fmt::format(
          "  const uint words[4] = {{y.x, y.y, y.z, y.w}};\n"
          "  for (int j = 0; j < 4 && 4 * (I)w + j < {}; ++j)\n"
          "    out1[4 * (I)w + j] = ({})words[j];\n",
          n, bits);
    }
    new_state = fmt::format(
        "  if (w == 0) {{\n    const ulong low = in0[1] + (ulong){0};\n    out0[0] = in0[0];\n"
        "    out0[1] = low;\n{1}  }}\n",
        work, state_size == 3 ? "    out0[2] = in0[2] + (low < in0[1] ? 1 : 0);\n" : "");
  }
  if (!e.ok()) return std::nullopt;
  const int64_t items = std::max<int64_t>(work, 1);
  k.source = fmt::format(
      "{helpers}__kernel void {name}(__global const ulong* restrict in0, __global ulong* restrict "
      "out0, __global {bits}* restrict out1) {{\n  typedef {I} I;\n  const I w = "
      "(I)get_global_id(0);\n"
      "  if (w >= {items}) return;\n{state}  if (w >= {work}) return;\n{body}}}\n",
      fmt::arg("helpers", kRngHelpers), fmt::arg("name", k.name), fmt::arg("bits", bits),
      fmt::arg("I", n > INT32_MAX ? "long" : "int"), fmt::arg("items", items),
      fmt::arg("state", new_state), fmt::arg("work", work), fmt::arg("body", body));
  k.local_size = std::clamp<int64_t>(items, 1, kWorkGroup);
  k.global_size = (items + k.local_size - 1) / k.local_size * k.local_size;
  return k;
}

// map: one work-item per element applies the computation to the operands' elements.
std::optional<KernelSource> map_kernel(const Instruction& map, KernelSource k) {
  const Shape& out = map.shape();
  if (!out.is_array() || !storage_type(out.type()) || map.called().size() != 1) return std::nullopt;
  for (const Instruction* o : map.operands())
    if (!o->shape().is_array() || !storage_type(o->shape().type())) return std::nullopt;
  k.uses_fp64 = needs_fp64(map);
  std::string body;
  int counter = 0;
  Emitter e(bind_inputs(map, k.inputs), body, counter);
  const std::vector<std::string> idx = e.delinearize(out.dims(), "i");
  std::vector<std::string> args;
  for (const Instruction* o : map.operands()) args.push_back(e.value(o, idx));
  const std::vector<std::string> v = e.apply(*map.called(0), args);
  if (!e.ok() || v.size() != 1) return std::nullopt;
  const int64_t n = out.num_elements();
  k.source = fmt::format(
      "{} {{\n  typedef {} I;\n  const I i = (I)get_global_id(0);\n  if (i >= {}) return;\n{}  "
      "{}\n}}\n",
      signature(k.name, k.inputs, out), n > INT32_MAX ? "long" : "int", n, body,
      store_stmt(out.type(), "out", "i", v[0]));
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

}  // namespace

std::optional<std::string> storage_type(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred:
      return "uchar";
    case PrimitiveType::kS8:
      return "char";
    case PrimitiveType::kS16:
      return "short";
    case PrimitiveType::kS32:
      return "int";
    case PrimitiveType::kS64:
      return "long";
    case PrimitiveType::kU8:
      return "uchar";
    case PrimitiveType::kU16:
      return "ushort";
    case PrimitiveType::kU32:
      return "uint";
    case PrimitiveType::kU64:
      return "ulong";
    case PrimitiveType::kF16:
      return "half";
    case PrimitiveType::kBF16:
      return "ushort";
    case PrimitiveType::kF32:
      return "float";
    case PrimitiveType::kF64:
      return "double";
    default:
      return std::nullopt;
  }
}

std::optional<std::string> compute_type(PrimitiveType type) {
  if (is_16bit_float(type)) return "float";
  return storage_type(type);
}

std::string load_expr(PrimitiveType type, const std::string& buffer, const std::string& index) {
  if (type == PrimitiveType::kBF16)
    return fmt::format("as_float((uint){}[{}] << 16)", buffer, index);
  if (type == PrimitiveType::kF16) return fmt::format("vload_half({}, {})", index, buffer);
  return fmt::format("{}[{}]", buffer, index);
}

std::string store_stmt(PrimitiveType type, const std::string& buffer, const std::string& index,
                       const std::string& value) {
  if (type == PrimitiveType::kBF16)
    return fmt::format("{}[{}] = podsim_to_bf16({});", buffer, index, value);
  if (type == PrimitiveType::kF16)
    return fmt::format("vstore_half_rte({}, {}, {});", value, index, buffer);
  return fmt::format("{}[{}] = {};", buffer, index, value);
}

std::string prelude_source(bool fp64) {
  std::string s = fp64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
  s += R"(#pragma OPENCL FP_CONTRACT OFF
ushort podsim_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float podsim_round_bf16(float f) { return as_float((uint)podsim_to_bf16(f) << 16); }
float podsim_round_f16(float f) {
  ushort h;
  vstore_half_rte(f, 0, (__private half*)&h);
  return vload_half(0, (__private const half*)&h);
}
float podsim_tanh(float x) {
  const float c = fmin(fmax(x, -7.90531110763549805f), 7.90531110763549805f);
  const float c2 = c * c;
  float p = -2.76076847742355e-16f;
  p = fma(p, c2, 2.00018790482477e-13f);
  p = fma(p, c2, -8.60467152213735e-11f);
  p = fma(p, c2, 5.12229709037114e-08f);
  p = fma(p, c2, 1.48572235717979e-05f);
  p = fma(p, c2, 6.37261928875436e-04f);
  p = fma(p, c2, 4.89352455891786e-03f);
  float q = 1.19825839466702e-06f;
  q = fma(q, c2, 1.18534705686654e-04f);
  q = fma(q, c2, 2.26843463243900e-03f);
  q = fma(q, c2, 4.89352518554385e-03f);
  const float r = (c * p) / q;
  const float a = fabs(x);
  return isnan(x) ? x : a < 0.0004f ? x : a >= 9.1f ? copysign(1.0f, x) : r;
}
)";
  return s;
}

std::optional<KernelSource> make_kernel_source(const Instruction& instruction,
                                               const std::string& name) {
  if (instruction.opcode() == Opcode::kSort) return sort_kernel(instruction, {name});
  if (instruction.opcode() == Opcode::kRngBitGenerator)
    return rng_bit_generator_kernel(instruction, {name});
  if (instruction.opcode() == Opcode::kSelectAndScatter)
    return select_and_scatter_kernel(instruction, {name});
  if (instruction.opcode() == Opcode::kMap) return map_kernel(instruction, {name});
  if (!instruction.shape().is_array() || !storage_type(instruction.shape().type()))
    return std::nullopt;
  for (const Instruction* o : instruction.operands())
    if (!o->shape().is_array() || !storage_type(o->shape().type())) return std::nullopt;
  const Opcode op = instruction.opcode();
  const Instruction* root = &instruction;
  if (op == Opcode::kFusion) {
    root = instruction.called(0)->root();
  } else if (!ir::is_elementwise(op) && op != Opcode::kReduce && op != Opcode::kBroadcast &&
             op != Opcode::kTranspose && op != Opcode::kReshape && op != Opcode::kSlice &&
             op != Opcode::kPad && op != Opcode::kConcatenate && op != Opcode::kReverse &&
             op != Opcode::kIota && op != Opcode::kCopy && op != Opcode::kGather &&
             op != Opcode::kDynamicSlice && op != Opcode::kDynamicUpdateSlice &&
             op != Opcode::kConvolution && op != Opcode::kReduceWindow) {
    return std::nullopt;
  }
  if (instruction.shape().num_elements() == 0) return std::nullopt;  // nothing to launch
  KernelSource k;
  k.name = name;
  k.uses_fp64 = needs_fp64(instruction);
  std::map<const Instruction*, int> inputs = bind_inputs(instruction, k.inputs);
  if (op == Opcode::kReduceWindow) return reduce_window_kernel(instruction, std::move(k));
  if (op == Opcode::kConvolution) {
    if (instruction.operand(0) == instruction.operand(1))
      return std::nullopt;  // one buffer, two roles
    return convolution_kernel(instruction, std::move(k));
  }
  if (root->opcode() == Opcode::kReduce)
    return reduce_kernel(instruction, *root, std::move(inputs), std::move(k));
  return elementwise_kernel(instruction, *root, std::move(inputs), std::move(k));
}

KernelSource make_transpose_source(const Shape& from, const std::vector<int64_t>& permutation,
                                   const std::string& name) {
  std::vector<int64_t> to_dims;
  for (int64_t d : permutation) to_dims.push_back(from.dim(d));
  const Shape to(from.type(), to_dims);
  const int64_t n = to.num_elements();
  std::string body;
  int counter = 0;
  Emitter e({}, body, counter);
  const std::vector<std::string> idx = e.delinearize(to_dims, "i");
  std::vector<std::string> src(idx.size());
  for (size_t d = 0; d < permutation.size(); ++d) src[static_cast<size_t>(permutation[d])] = idx[d];
  const std::string lin = e.linear(from.dims(), src);
  // Moves bits: an unsigned type of the element's width (no 16-bit float arithmetic).
  const int width = ir::type_byte_size(from.type());
  const std::string storage = width == 1   ? "uchar"
                              : width == 2 ? "ushort"
                              : width == 4 ? "uint"
                                           : "ulong";
  KernelSource k;
  k.name = name;
  k.source = fmt::format(
      "__kernel void {}(__global const {}* restrict in0, __global {}* restrict out) {{\n  typedef "
      "{} I;\n"
      "  const I i = (I)get_global_id(0);\n  if (i >= {}) return;\n{}  out[i] = in0[{}];\n}}\n",
      name, storage, storage, n > INT32_MAX ? "long" : "int", n, body, lin);
  k.local_size = kWorkGroup;
  k.global_size = (n + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  return k;
}

}  // namespace podsim::opencl
