#include "compiler/opencl/kernel_source.h"

#include <fmt/format.h>

#include <bit>
#include <map>
#include <utility>

#include "compiler/ir/module.h"
#include "compiler/ir/rng_layout.h"
#include "compiler/opencl/emitter.h"

namespace podsim::opencl {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

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

namespace {

// A reduce whose reduced extent is at least this takes a work-group per result element.
constexpr int64_t kTreeReduceMin = kWorkGroup;

std::string signature(const std::string& name, const std::vector<const Instruction*>& inputs,
                      const Shape& out, const std::string& attributes = "") {
  std::string args;
  for (size_t k = 0; k < inputs.size(); ++k)
    args += fmt::format("__global const {}* restrict in{}, ",
                        *storage_type(inputs[k]->shape().type()), k);
  return fmt::format("__kernel {}void {}({}__global {}* restrict out)", attributes, name, args,
                     *storage_type(out.type()));
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

// rng-bit-generator, bit for bit the evaluator's (see compiler/ir/eval/rng.cc for
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

std::optional<KernelSource> rng_bit_generator_kernel(const Instruction& rng,
                                                     const std::string& name) {
  KernelSource k;
  k.name = name;
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
std::optional<KernelSource> map_kernel(const Instruction& map, const std::string& name) {
  KernelSource k;
  k.name = name;
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
  if (instruction.opcode() == Opcode::kRngBitGenerator)
    return rng_bit_generator_kernel(instruction, name);
  if (instruction.opcode() == Opcode::kMap) return map_kernel(instruction, name);
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
