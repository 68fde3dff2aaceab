#include "compiler/opencl/emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "compiler/ir/module.h"

namespace podsim::opencl {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

namespace {

// The value of a float of compute type rounded to t's precision.
std::string rounded(PrimitiveType t, const std::string& expr) {
  if (t == PrimitiveType::kBF16) return "podsim_round_bf16(" + expr + ")";
  if (t == PrimitiveType::kF16) return "podsim_round_f16(" + expr + ")";
  return expr;
}

std::string unsigned_of(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS8:
    case PrimitiveType::kU8:
      return "uchar";
    case PrimitiveType::kS16:
    case PrimitiveType::kU16:
      return "ushort";
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
      return "uint";
    default:
      return "ulong";
  }
}

std::string scalar_literal(const ir::Literal& literal) {
  const PrimitiveType t = literal.type();
  if (t == PrimitiveType::kF64)
    return fmt::format("as_double(0x{:x}ul)", std::bit_cast<uint64_t>(literal.get_as_double(0)));
  if (ir::is_float(t))
    return fmt::format("as_float(0x{:x}u)",
                       std::bit_cast<uint32_t>(static_cast<float>(literal.get_as_double(0))));
  if (t == PrimitiveType::kPred) return literal.get_as_int64(0) != 0 ? "(uchar)1" : "(uchar)0";
  return fmt::format("(({})0x{:x}ul)", *compute_type(t), literal.get_as_uint64(0));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + ",";
  return out;
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

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

std::string Emitter::linear(const std::vector<int64_t>& dims, const std::vector<std::string>& idx) {
  if (dims.empty()) return "0";
  std::string expr = idx[0];
  for (size_t d = 1; d < dims.size(); ++d)
    expr = fmt::format("({})*{} + {}", expr, dims[d], idx[d]);
  return dims.size() == 1 ? expr : temp("I", expr);
}

std::vector<std::string> Emitter::delinearize(const std::vector<int64_t>& dims,
                                              const std::string& lin) {
  std::vector<std::string> idx(dims.size());
  const std::vector<int64_t> s = strides_of(dims);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) {
      idx[d] = std::string(1, '0');
      continue;
    }
    std::string e = s[d] == 1 ? lin : fmt::format("({}) / {}", lin, s[d]);
    if (d > 0) e = fmt::format("({}) % {}", e, dims[d]);
    idx[d] = d == 0 && s[d] == 1 ? lin : temp("I", e);
  }
  return idx;
}

std::string Emitter::temp(const std::string& type, const std::string& expr) {
  std::string name = fmt::format("t{}", counter_++);
  body_ += fmt::format("  const {} {} = {};\n", type, name, expr);
  return name;
}

std::string Emitter::value(const Instruction* i, const std::vector<std::string>& idx) {
  if (!ok_) return "0";
  auto key = std::pair(i, join(idx));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  std::string v = compute(i, idx);
  if (!ok_) return "0";
  memo_.emplace(std::move(key), v);
  return v;
}

void Emitter::bind(const Instruction* i, const std::string& expr) {
  memo_[std::pair(i, std::string())] = expr;
}

std::vector<std::string> Emitter::apply(const ir::Computation& c,
                                        const std::vector<std::string>& args) {
  for (const auto& i : c.instructions())  // values of an earlier application are stale
    std::erase_if(memo_, [&](const auto& entry) { return entry.first.first == i.get(); });
  if (args.size() != static_cast<size_t>(c.parameter_count())) {
    fail_unsupported();
    return {};
  }
  for (size_t k = 0; k < args.size(); ++k) bind(c.parameter(static_cast<int64_t>(k)), args[k]);
  const Instruction* root = c.root();
  std::vector<std::string> values;
  if (root->opcode() == Opcode::kTuple) {
    for (const Instruction* o : root->operands()) values.push_back(value(o, {}));
  } else {
    values.push_back(value(root, {}));
  }
  return values;
}

std::optional<std::string> Emitter::binary(Opcode op, PrimitiveType t, const std::string& x,
                                           const std::string& y) {
  // Patterns: {0} x, {1} y, {2} the compute type, {3} its unsigned twin (wrapping
  // integer arithmetic).
  static const std::map<Opcode, std::string_view> kFloat = {
      {Opcode::kAdd, "{0} + {1}"},
      {Opcode::kSubtract, "{0} - {1}"},
      {Opcode::kMultiply, "{0} * {1}"},
      {Opcode::kDivide, "{0} / {1}"},
      {Opcode::kRemainder, "fmod({0}, {1})"},
      {Opcode::kPower, "pow({0}, {1})"},
      {Opcode::kAtan2, "atan2({0}, {1})"},
      {Opcode::kMaximum, "({0} >= {1} || isnan({0})) ? {0} : {1}"},
      {Opcode::kMinimum, "({0} <= {1} || isnan({0})) ? {0} : {1}"},
  };
  static const std::map<Opcode, std::string_view> kInteger = {
      {Opcode::kAdd, "({2})(({3}){0} + ({3}){1})"},
      {Opcode::kSubtract, "({2})(({3}){0} - ({3}){1})"},
      {Opcode::kMultiply, "({2})(({3}){0} * ({3}){1})"},
      {Opcode::kMaximum, "({0} > {1} ? {0} : {1})"},
      {Opcode::kMinimum, "({0} < {1} ? {0} : {1})"},
      {Opcode::kAnd, "({2})({0} & {1})"},
      {Opcode::kOr, "({2})({0} | {1})"},
      {Opcode::kXor, "({2})({0} ^ {1})"},
  };
  const bool is_float = ir::is_float(t);
  const auto& table = is_float ? kFloat : kInteger;
  const auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  if (t == PrimitiveType::kPred &&
      (op == Opcode::kAdd || op == Opcode::kSubtract || op == Opcode::kMultiply))
    return std::nullopt;
  const std::string e =
      fmt::format(fmt::runtime(it->second), x, y, *compute_type(t), unsigned_of(t));
  return is_float ? rounded(t, "(" + e + ")") : e;
}

std::string Emitter::fail_unsupported() {
  ok_ = false;
  return "0";
}

std::string Emitter::compute(const Instruction* i, const std::vector<std::string>& idx) {
  const Shape& shape = i->shape();
  if (!shape.is_array() || (shape.has_layout() && !row_major(shape))) return fail_unsupported();
  const PrimitiveType t = shape.type();
  if (!compute_type(t)) return fail_unsupported();
  const std::string c = *compute_type(t);
  if (auto it = inputs_.find(i); it != inputs_.end())
    return temp(c, load_expr(t, fmt::format("in{}", it->second), linear(shape.dims(), idx)));

  // An operand's value at the same index (or at no index: a scalar operand of a
  // select or clamp).
  auto operand = [&](int64_t k) {
    const Instruction* o = i->operand(k);
    return o->shape().is_scalar() && !shape.is_scalar() ? value(o, {}) : value(o, idx);
  };
  const Opcode op = i->opcode();
  switch (op) {
    case Opcode::kConstant:
      if (!shape.is_scalar()) return fail_unsupported();
      return temp(c, scalar_literal(*i->attrs().literal));
    case Opcode::kIota:
      return temp(c, rounded(t, fmt::format("({})({})", c,
                                            idx[static_cast<size_t>(i->attrs().iota_dimension)])));
    case Opcode::kBroadcast: {
      std::vector<std::string> from;
      for (int64_t d : i->attrs().dimensions) from.push_back(idx[static_cast<size_t>(d)]);
      return value(i->operand(0), from);
    }
    case Opcode::kTranspose: {
      std::vector<std::string> from(idx.size());
      const auto& perm = i->attrs().dimensions;
      for (size_t d = 0; d < perm.size(); ++d) from[static_cast<size_t>(perm[d])] = idx[d];
      return value(i->operand(0), from);
    }
    case Opcode::kReshape:
    case Opcode::kCopy:
    case Opcode::kBitcast: {
      const Shape& from_shape = i->operand(0)->shape();
      if (from_shape.has_layout() && !row_major(from_shape)) return fail_unsupported();
      if (op == Opcode::kBitcast && from_shape.type() != t) return fail_unsupported();
      return value(i->operand(0), reshape_index(shape.dims(), from_shape.dims(), idx));
    }
    case Opcode::kSlice: {
      std::vector<std::string> from(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) {
        const ir::SliceDim& s = i->attrs().slice[d];
        from[d] = s.start == 0 && s.stride == 1
                      ? idx[d]
                      : temp("I", fmt::format("{} + ({})*{}", s.start, idx[d], s.stride));
      }
      return value(i->operand(0), from);
    }
    case Opcode::kReverse: {
      std::vector<std::string> from = idx;
      for (int64_t d : i->attrs().dimensions)
        from[static_cast<size_t>(d)] =
            temp("I", fmt::format("{} - ({})", shape.dim(d) - 1, idx[static_cast<size_t>(d)]));
      return value(i->operand(0), from);
    }
    case Opcode::kPad:
      return pad(i, idx);
    case Opcode::kGather:
      return gather(i, idx);
    case Opcode::kDynamicSlice: {
      const Shape& from = i->operand(0)->shape();
      std::vector<std::string> at(idx.size());
      for (size_t d = 0; d < idx.size(); ++d)
        at[d] = temp("I", fmt::format("{} + {}",
                                      start_index(i->operand(static_cast<int64_t>(d) + 1),
                                                  from.dim(static_cast<int64_t>(d)) -
                                                      shape.dim(static_cast<int64_t>(d))),
                                      idx[d]));
      return value(i->operand(0), at);
    }
    case Opcode::kDynamicUpdateSlice: {
      const Shape& update = i->operand(1)->shape();
      std::vector<std::string> at(idx.size());
      std::string inside = "1";
      for (size_t d = 0; d < idx.size(); ++d) {
        const auto dd = static_cast<int64_t>(d);
        const std::string start = start_index(i->operand(dd + 2), shape.dim(dd) - update.dim(dd));
        const std::string in = temp(
            "int", fmt::format("{0} >= {1} && {0} < {1} + {2}", idx[d], start, update.dim(dd)));
        inside += " && " + in;
        at[d] = temp("I", fmt::format("{} ? {} - {} : 0", in, idx[d], start));
      }
      const std::string u = value(i->operand(1), at), o = value(i->operand(0), idx);
      return temp(c, fmt::format("({}) ? {} : {}", inside, u, o));
    }
    case Opcode::kConcatenate:
      return concatenate(i, idx);
    case Opcode::kConvert:
      return convert(i, value(i->operand(0), idx));
    case Opcode::kBitcastConvert:
      return bitcast_convert(i, value(i->operand(0), idx));
    case Opcode::kCompare:
      return compare(i, operand(0), operand(1));
    case Opcode::kSelect: {
      std::string p = operand(0), a = operand(1), b = operand(2);
      return temp(c, fmt::format("{} ? {} : {}", p, a, b));
    }
    case Opcode::kClamp: {
      std::string lo = operand(0), x = operand(1), hi = operand(2);
      if (ir::is_float(t)) {
        std::string m = temp(c, fmt::format("({0} >= {1} || isnan({0})) ? {0} : {1}", x, lo));
        return temp(c, fmt::format("({0} <= {1} || isnan({0})) ? {0} : {1}", m, hi));
      }
      std::string r = temp(c, fmt::format("{0} < {1} ? {1} : {0}", x, lo));
      return temp(c, fmt::format("{1} < {0} ? {1} : {0}", r, hi));
    }
    default:
      break;
  }
  if (!ir::is_elementwise(op)) return fail_unsupported();
  if (i->operand_count() == 2) {
    const std::string x = operand(0), y = operand(1);
    std::optional<std::string> e = binary(op, t, x, y);
    return e ? temp(c, *e) : fail_unsupported();
  }
  if (i->operand_count() != 1) return fail_unsupported();
  std::optional<std::string> e = unary(op, t, operand(0));
  return e ? temp(c, *e) : fail_unsupported();
}

bool Emitter::row_major(const Shape& s) {
  const auto& m = s.layout().minor_to_major;
  for (size_t k = 0; k < m.size(); ++k)
    if (m[k] != static_cast<int64_t>(m.size() - 1 - k)) return false;
  return true;
}

std::vector<std::string> Emitter::reshape_index(const std::vector<int64_t>& to,
                                                const std::vector<int64_t>& from,
                                                const std::vector<std::string>& idx) {
  std::vector<int64_t> to_big, from_big;
  std::vector<std::string> big_idx;
  for (size_t d = 0; d < to.size(); ++d)
    if (to[d] != 1) {
      to_big.push_back(to[d]);
      big_idx.push_back(idx[d]);
    }
  for (int64_t d : from)
    if (d != 1) from_big.push_back(d);
  if (to_big == from_big) {  // only unit dimensions come or go
    std::vector<std::string> out;
    size_t k = 0;
    for (int64_t d : from) out.push_back(d == 1 ? "0" : big_idx[k++]);
    return out;
  }
  return delinearize(from, linear(to, idx));
}

std::string Emitter::pad(const Instruction* i, const std::vector<std::string>& idx) {
  const std::vector<int64_t>& in_dims = i->operand(0)->shape().dims();
  std::vector<std::string> from(idx.size());
  std::string inside = "1";
  for (size_t d = 0; d < idx.size(); ++d) {
    const ir::PadDim& p = i->attrs().padding[d];
    const int64_t step = p.interior + 1;
    std::string shifted = temp("I", fmt::format("({}) - ({})", idx[d], p.low));
    std::string cond = fmt::format("{0} >= 0 && {0} < {1}", shifted, (in_dims[d] - 1) * step + 1);
    if (step > 1) cond += fmt::format(" && {} % {} == 0", shifted, step);
    std::string ok = temp("int", cond);
    inside += " && " + ok;
    from[d] = temp("I", step > 1 ? fmt::format("{} ? {} / {} : 0", ok, shifted, step)
                                 : fmt::format("{} ? {} : 0", ok, shifted));
  }
  const std::string c = *compute_type(i->shape().type());
  std::string x = value(i->operand(0), from);
  std::string fill = value(i->operand(1), {});
  return temp(c, fmt::format("({}) ? {} : {}", inside, x, fill));
}

std::string Emitter::index_value(const Instruction* index, const std::vector<std::string>& at,
                                 int64_t max) {
  std::string v = value(index, at);
  if (index->shape().type() == PrimitiveType::kU64)
    v = fmt::format("min({}, (ulong)0x7fffffffffffffff)", v);
  return temp("I", fmt::format("(I)clamp((long)({}), 0L, {}L)", v, std::max<int64_t>(max, 0)));
}

std::string Emitter::start_index(const Instruction* index, int64_t max) {
  return index_value(index, {}, max);
}

std::string Emitter::gather(const Instruction* i, const std::vector<std::string>& idx) {
  const ir::GatherDimNumbers& gd = i->attrs().gather_dims;
  const std::vector<int64_t>& sizes = i->attrs().gather_slice_sizes;
  const Shape& operand = i->operand(0)->shape();
  const Shape& indices = i->operand(1)->shape();
  std::vector<bool> is_offset(idx.size(), false),
      removed(static_cast<size_t>(operand.rank()), false);
  for (int64_t d : gd.offset_dims) is_offset[static_cast<size_t>(d)] = true;
  for (int64_t d : gd.collapsed_slice_dims) removed[static_cast<size_t>(d)] = true;
  for (int64_t d : gd.operand_batching_dims) removed[static_cast<size_t>(d)] = true;
  std::vector<std::string> g;  // batch index, in the indices' dimension order
  for (size_t d = 0; d < idx.size(); ++d)
    if (!is_offset[d]) g.push_back(idx[d]);
  const auto ivd = static_cast<size_t>(gd.index_vector_dim);
  auto batch_position = [&](int64_t d) {
    return static_cast<size_t>(d < gd.index_vector_dim ? d : d - 1);
  };
  std::vector<std::string> start(static_cast<size_t>(operand.rank()), "0");
  for (size_t k = 0; k < gd.start_index_map.size(); ++k) {
    std::vector<std::string> at = g;
    if (ivd < static_cast<size_t>(indices.rank()))
      at.insert(at.begin() + static_cast<std::ptrdiff_t>(ivd), std::to_string(k));
    const auto d = gd.start_index_map[k];
    start[static_cast<size_t>(d)] =
        index_value(i->operand(1), at, operand.dim(d) - sizes[static_cast<size_t>(d)]);
  }
  for (size_t b = 0; b < gd.operand_batching_dims.size(); ++b)
    start[static_cast<size_t>(gd.operand_batching_dims[b])] =
        g[batch_position(gd.start_indices_batching_dims[b])];
  for (size_t d = 0, k = 0; d < removed.size(); ++d) {
    if (removed[d]) continue;
    const std::string offset = idx[static_cast<size_t>(gd.offset_dims[k++])];
    start[d] = start[d] == "0" ? offset : temp("I", fmt::format("{} + {}", start[d], offset));
  }
  return value(i->operand(0), start);
}

std::string Emitter::concatenate(const Instruction* i, const std::vector<std::string>& idx) {
  const size_t dim = static_cast<size_t>(i->attrs().dimensions.at(0));
  const std::string c = *compute_type(i->shape().type());
  std::string result;
  int64_t offset = 0;
  for (int64_t k = 0; k < i->operand_count(); ++k) {
    const int64_t size = i->operand(k)->shape().dim(static_cast<int64_t>(dim));
    std::vector<std::string> from = idx;
    from[dim] = temp("I", fmt::format("clamp(({}) - {}, ({})0, ({}){})", idx[dim], offset, "I", "I",
                                      std::max<int64_t>(size - 1, 0)));
    std::string v = value(i->operand(k), from);
    result = k == 0 ? v : temp(c, fmt::format("({}) < {} ? {} : {}", idx[dim], offset, result, v));
    offset += size;
  }
  return result;
}

std::string Emitter::convert(const Instruction* i, const std::string& x) {
  const PrimitiveType from = i->operand(0)->shape().type(), to = i->shape().type();
  const std::string c = *compute_type(to);
  if (from == to) return x;
  if (to == PrimitiveType::kPred) return temp(c, fmt::format("(uchar)({} != 0)", x));
  if (is_16bit_float(to)) {
    if (from == PrimitiveType::kF64 || ir::is_integral(from)) return fail_unsupported();
    return temp(c, rounded(to, fmt::format("(float){}", x)));
  }
  if (to == PrimitiveType::kF32) return temp(c, fmt::format("convert_float({})", x));
  if (to == PrimitiveType::kF64) return temp(c, fmt::format("convert_double({})", x));
  if (ir::is_float(from)) {
    // NaN converts to 0 (as the evaluator does); OpenCL's saturating conversions promise
    // that too, but NVIDIA's give the type's minimum for 64-bit targets.
    const std::string v = temp(*compute_type(from), x);
    return temp(c, fmt::format("(isnan({0}) ? ({1})0 : convert_{1}_sat_rtz({0}))", v, c));
  }
  return temp(c, fmt::format("({}){}", c, x));
}

std::string Emitter::bitcast_convert(const Instruction* i, const std::string& x) {
  const PrimitiveType from = i->operand(0)->shape().type(), to = i->shape().type();
  if (ir::type_byte_size(from) != ir::type_byte_size(to) || is_16bit_float(from) ||
      is_16bit_float(to) || from == PrimitiveType::kPred || to == PrimitiveType::kPred)
    return fail_unsupported();
  const std::string c = *compute_type(to);
  if (ir::is_float(from) || ir::is_float(to)) return temp(c, fmt::format("as_{}({})", c, x));
  return temp(c, fmt::format("({}){}", c, x));
}

std::string Emitter::compare(const Instruction* i, std::string x, std::string y) {
  const PrimitiveType t = i->operand(0)->shape().type();
  if (i->attrs().comparison_type == ir::ComparisonType::kTotalOrder && ir::is_float(t)) {
    // -NaN < -inf < ... < -0 < +0 < ... < inf < NaN: the bits as a signed integer, with
    // the magnitude bits of negative values flipped. bf16 widens to f32 bit for bit,
    // which keeps the order; f16 widens through vload_half, which need not keep a NaN's
    // sign (NVIDIA's does not), so f16 orders on the host.
    if (t == PrimitiveType::kF16) return fail_unsupported();
    const bool f64 = t == PrimitiveType::kF64;
    const std::string it = f64 ? "long" : "int";
    const std::string mask = f64 ? "0x7fffffffffffffffL" : "0x7fffffff";
    auto key = [&](const std::string& v) {
      const std::string bits = temp(it, fmt::format("as_{}({})", it, v));
      return temp(it, fmt::format("{0} ^ (({0} >> {1}) & {2})", bits, f64 ? 63 : 31, mask));
    };
    x = key(x);
    y = key(y);
  }
  const char* op = "==";
  switch (i->attrs().direction) {
    case ir::ComparisonDirection::kEq:
      op = "==";
      break;
    case ir::ComparisonDirection::kNe:
      op = "!=";
      break;
    case ir::ComparisonDirection::kLt:
      op = "<";
      break;
    case ir::ComparisonDirection::kLe:
      op = "<=";
      break;
    case ir::ComparisonDirection::kGt:
      op = ">";
      break;
    case ir::ComparisonDirection::kGe:
      op = ">=";
      break;
  }
  return temp("uchar", fmt::format("(uchar)({} {} {})", x, op, y));
}

std::optional<std::string> Emitter::unary(Opcode op, PrimitiveType t, const std::string& x) {
  const std::string c = *compute_type(t);
  if (ir::is_float(t)) {
    // {0} x, {1} the compute type, {2} podsim's tanh for f32 (bit for bit the
    // evaluator's), the library's for f64, {3} where log1p(x) rounds to x (some
    // libraries flush subnormal x to 0 there).
    static const std::map<Opcode, std::string_view> kFloat = {
        {Opcode::kNegate, "-{0}"},
        {Opcode::kAbs, "fabs({0})"},
        {Opcode::kSign, "(isnan({0}) || {0} == 0) ? {0} : copysign(({1})1, {0})"},
        {Opcode::kExp, "exp({0})"},
        {Opcode::kExpm1, "expm1({0})"},
        {Opcode::kLog, "log({0})"},
        {Opcode::kLog1p, "fabs({0}) < ({1}){3} ? {0} : log1p({0})"},
        {Opcode::kSqrt, "sqrt({0})"},
        {Opcode::kRsqrt, "({1})1 / sqrt({0})"},
        {Opcode::kCbrt, "cbrt({0})"},
        {Opcode::kTanh, "{2}({0})"},
        {Opcode::kLogistic, "({1})1 / (({1})1 + exp(-{0}))"},
        {Opcode::kSin, "sin({0})"},
        {Opcode::kCos, "cos({0})"},
        {Opcode::kTan, "tan({0})"},
        {Opcode::kErf, "erf({0})"},
        {Opcode::kFloor, "floor({0})"},
        {Opcode::kCeil, "ceil({0})"},
        {Opcode::kRoundNearestAfz, "round({0})"},
        {Opcode::kRoundNearestEven, "rint({0})"},
    };
    const auto it = kFloat.find(op);
    if (it == kFloat.end()) return std::nullopt;
    const bool f64 = c == "double";
    return rounded(t, "(" +
                          fmt::format(fmt::runtime(it->second), x, c, f64 ? "tanh" : "podsim_tanh",
                                      f64 ? "1e-17" : "1e-8f") +
                          ")");
  }
  if (t == PrimitiveType::kPred)
    return op == Opcode::kNot ? std::optional(fmt::format("(uchar)({} ^ 1)", x)) : std::nullopt;
  const std::string u = unsigned_of(t);
  switch (op) {
    case Opcode::kNot:
      return fmt::format("({})~{}", c, x);
    case Opcode::kPopcnt:  // of the bits, in the type's width
      return fmt::format("({})popcount(({}){})", c, u, x);
    case Opcode::kClz:
      return fmt::format("({})clz(({}){})", c, u, x);
    case Opcode::kNegate:
      return fmt::format("({})(-({}){})", c, u, x);
    case Opcode::kAbs:
      if (ir::is_unsigned_int(t)) return x;
      return fmt::format("{0} < 0 ? ({1})(-({2}){0}) : {0}", x, c, u);
    case Opcode::kSign:
      if (ir::is_unsigned_int(t)) return fmt::format("({})({} != 0)", c, x);
      return fmt::format("({0})(({1} > 0) - ({1} < 0))", c, x);
    default:
      return std::nullopt;
  }
}

}  // namespace podsim::opencl
