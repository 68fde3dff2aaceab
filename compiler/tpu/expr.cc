#include "compiler/tpu/expr.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "common/error.h"
#include "compiler/ir/native_types.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

// Kernels nest no deeper than this (fusions from the fusion pass hold at most 64 ops).
constexpr int kMaxExprDepth = 400;

bool is_view_op(Opcode op) {
  return op == Opcode::kBroadcast || op == Opcode::kTranspose || op == Opcode::kSlice || op == Opcode::kReshape ||
         op == Opcode::kBitcast || op == Opcode::kCopy;
}

std::vector<int64_t> zeros(size_t n) { return std::vector<int64_t>(n, 0); }

bool reshape_view(const std::vector<int64_t>& od, const std::vector<int64_t>& rd, const View& result, View& out,
                  size_t kernel_rank) {
  out.coef.assign(od.size(), zeros(kernel_rank));
  out.base.assign(od.size(), 0);
  for (int64_t d : od)
    if (d == 0) return true;  // nothing is read
  std::vector<size_t> oi, ri;  // non-unit dims
  for (size_t k = 0; k < od.size(); ++k)
    if (od[k] != 1) oi.push_back(k);
  for (size_t k = 0; k < rd.size(); ++k)
    if (rd[k] != 1) ri.push_back(k);
  size_t a = 0, b = 0;
  while (a < oi.size() && b < ri.size()) {
    size_t a_end = a + 1, b_end = b + 1;
    int64_t po = od[oi[a]], pr = rd[ri[b]];
    while (po != pr) {
      if (po < pr) {
        if (a_end >= oi.size()) return false;
        po *= od[oi[a_end++]];
      } else {
        if (b_end >= ri.size()) return false;
        pr *= rd[ri[b_end++]];
      }
    }
    if (a_end - a != 1) return false;  // the reshape splits a dimension of the view
    // One operand dim = the row-major merge of result dims ri[b..b_end).
    size_t target = oi[a];
    int64_t weight = 1;
    for (size_t k = b_end; k-- > b;) {
      size_t r = ri[k];
      for (size_t e = 0; e < kernel_rank; ++e) out.coef[target][e] += weight * result.coef[r][e];
      out.base[target] += weight * result.base[r];
      weight *= rd[r];
    }
    a = a_end;
    b = b_end;
  }
  return true;
}

}  // namespace

int Expr::add_leaf(Leaf leaf) {
  for (size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].kind == ExprNode::Kind::kLeaf && leaves[static_cast<size_t>(nodes[n].leaf)] == leaf)
      return static_cast<int>(n);
  ExprNode node;
  node.kind = ExprNode::Kind::kLeaf;
  node.type = leaf.type;
  node.leaf = static_cast<int>(leaves.size());
  leaves.push_back(std::move(leaf));
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

int Expr::add_constant(PrimitiveType type, uint32_t bits) {
  for (size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].kind == ExprNode::Kind::kConstant && nodes[n].type == type && nodes[n].bits == bits)
      return static_cast<int>(n);
  ExprNode node;
  node.kind = ExprNode::Kind::kConstant;
  node.type = type;
  node.bits = bits;
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

int Expr::add_op(Opcode op, PrimitiveType type, std::vector<int> operands, const Instruction* origin) {
  ExprNode node;
  node.kind = ExprNode::Kind::kOp;
  node.type = type;
  node.opcode = op;
  node.operands = std::move(operands);
  node.origin = origin;
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

View View::identity(int64_t rank) {
  View v;
  v.coef.assign(static_cast<size_t>(rank), zeros(static_cast<size_t>(rank)));
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) v.coef[d][d] = 1;
  v.base.assign(static_cast<size_t>(rank), 0);
  return v;
}

Leaf leaf_of(const Value& v, const View& view, size_t kernel_rank) {
  Leaf leaf;
  leaf.buffer = v.buffer;
  leaf.type = v.shape.type();
  leaf.strides.assign(kernel_rank, 0);
  std::vector<int64_t> s = ir::row_major_strides(v.shape.dims());
  for (size_t d = 0; d < s.size(); ++d) {
    if (v.shape.dims()[d] == 1) continue;  // index 0 whatever the view says
    for (size_t e = 0; e < kernel_rank; ++e) leaf.strides[e] += s[d] * view.coef[d][e];
    leaf.offset += s[d] * view.base[d];
  }
  return leaf;
}

bool operand_view(const Instruction& i, const View& result, View& out, size_t kernel_rank) {
  const Instruction& op = *i.operand(0);
  const size_t rank = static_cast<size_t>(op.shape().rank());
  switch (i.opcode()) {
    case Opcode::kBroadcast: {
      const auto& dims = i.attrs().dimensions;
      out.coef.assign(rank, zeros(kernel_rank));
      out.base.assign(rank, 0);
      for (size_t k = 0; k < rank; ++k) {
        out.coef[k] = result.coef[static_cast<size_t>(dims[k])];
        out.base[k] = result.base[static_cast<size_t>(dims[k])];
      }
      return true;
    }
    case Opcode::kTranspose: {
      const auto& perm = i.attrs().dimensions;
      out.coef.assign(rank, zeros(kernel_rank));
      out.base.assign(rank, 0);
      for (size_t j = 0; j < rank; ++j) {
        out.coef[static_cast<size_t>(perm[j])] = result.coef[j];
        out.base[static_cast<size_t>(perm[j])] = result.base[j];
      }
      return true;
    }
    case Opcode::kSlice: {
      out = result;
      for (size_t d = 0; d < rank; ++d) {
        const ir::SliceDim& s = i.attrs().slice[d];
        for (int64_t& c : out.coef[d]) c *= s.stride;
        out.base[d] = s.start + s.stride * result.base[d];
      }
      return true;
    }
    case Opcode::kCopy: out = result; return true;
    case Opcode::kReshape:
    case Opcode::kBitcast:
      return reshape_view(op.shape().dims(), i.shape().dims(), result, out, kernel_rank);
    default: fail("internal: operand_view of {}", ir::opcode_name(i.opcode()));
  }
}

uint32_t lane_bits(const Instruction& origin, const ir::Literal& scalar) {
  PrimitiveType t = scalar.type();
  if (t == PrimitiveType::kPred) return scalar.get_as_int64(0) != 0 ? 0xFFFFFFFFu : 0u;
  if (ir::is_float(t)) {
    if (t == PrimitiveType::kF64) unsupported(origin, "f64 has no vector lane form");
    return std::bit_cast<uint32_t>(static_cast<float>(scalar.get_as_double(0)));
  }
  if (t == PrimitiveType::kS64 || t == PrimitiveType::kU64)
    unsupported(origin, "64-bit integers have no vector lane form");
  if (ir::is_signed_int(t)) return static_cast<uint32_t>(static_cast<int32_t>(scalar.get_as_int64(0)));
  return static_cast<uint32_t>(scalar.get_as_uint64(0));
}

int32_t iota_constant(Lowerer& l, PrimitiveType t, int64_t n) {
  ir::Literal lit(ir::Shape(t, {n}));
  for (int64_t k = 0; k < n; ++k) lit.set_from_int64(k, k);
  std::vector<uint8_t> data(lit.bytes().size());
  std::memcpy(data.data(), lit.bytes().data(), data.size());
  return l.constant_buffer(fmt::format("iota.{}.{}", ir::type_name(t), n), std::move(data));
}

int ExprBuilder::build(const Instruction& i, const View& view, bool root) {
  struct Depth {
    int& d;
    explicit Depth(int& depth) : d(depth) { ++d; }
    ~Depth() { --d; }
  } depth(depth_);
  if (depth_ > kMaxExprDepth)
    fail("not supported on the TPU target: a kernel nested deeper than {} ops (at instruction '{}')", kMaxExprDepth,
         i.name());
  if (!i.shape().is_array()) unsupported(i, "a tuple inside an elementwise kernel");
  if (!root) {
    if (const Value* v = l_.find_value(i, s_)) return read(i, *v, view);
    if (!l_.expandable(i, s_)) return read(i, l_.value_of(i, s_), view);
  }
  auto key = std::make_pair(&i, view);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  int node = expand(i, view);
  memo_.emplace(std::move(key), node);
  return node;
}

int ExprBuilder::read(const Instruction& i, const Value& v, const View& view) {
  if (!v.shape.is_array()) fail("internal: reading a tuple value in a kernel");
  isa_dtype(i, v.shape.type());  // vector lanes hold 32 bits at most
  return e_.add_leaf(leaf_of(v, view, e_.dims.size()));
}

int ExprBuilder::iota(const Instruction& i, const View& view) {
  size_t d = static_cast<size_t>(i.attrs().iota_dimension);
  int64_t n = i.shape().dim(static_cast<int64_t>(d));
  Value v;
  v.buffer = iota_constant(l_, i.shape().type(), n);
  v.shape = ir::Shape(i.shape().type(), {n});
  View one;
  one.coef = {view.coef[d]};
  one.base = {view.base[d]};
  return read(i, v, one);
}

int ExprBuilder::expand(const Instruction& i, const View& view) {
  switch (i.opcode()) {
    case Opcode::kConstant:
      if (i.shape().is_scalar()) return e_.add_constant(i.shape().type(), lane_bits(i, *i.attrs().literal));
      return read(i, l_.value_of(i, s_), view);
    case Opcode::kIota: return iota(i, view);
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kCopy: {
      if (i.opcode() == Opcode::kBitcast && i.operand(0)->shape().type() != i.shape().type())
        unsupported(i, "a bitcast that changes the element type");
      View ov;
      if (operand_view(i, view, ov, e_.dims.size())) return build(*i.operand(0), ov);
      // A reshape the view cannot follow: read the operand materialized (row-major, so
      // the reshape's result is the same bytes).
      Value v = l_.value_of(*i.operand(0), s_);
      v.shape = i.shape();
      return read(i, v, view);
    }
    default:
      if (ir::is_elementwise(i.opcode())) return elementwise(i, view);
      return read(i, l_.value_of(i, s_), view);
  }
}

int ExprBuilder::elementwise(const Instruction& i, const View& view) {
  // Vector lanes hold 32 bits at most: name this op, not the leaf it reads.
  isa_dtype(i, i.shape().type());
  for (const Instruction* op : i.operands()) isa_dtype(i, op->shape().type());
  // Before the operands are built with this op's view: a bitcast-convert between
  // widths changes the rank, so its operand cannot be read with that view.
  if (i.opcode() == Opcode::kBitcastConvert &&
      ir::type_byte_size(i.operand(0)->shape().type()) != ir::type_byte_size(i.shape().type()))
    unsupported(i, fmt::format("bitcast-convert from {} to {}", ir::type_name(i.operand(0)->shape().type()),
                               ir::type_name(i.shape().type())));
  std::vector<int> operands;
  for (const Instruction* op : i.operands()) {
    if (op->shape().is_scalar() && !i.shape().is_scalar()) {
      View scalar;  // a scalar operand (select's predicate, clamp's bounds) reads one element
      operands.push_back(build(*op, scalar));
    } else {
      operands.push_back(build(*op, view));
    }
  }
  PrimitiveType t = i.shape().type();
  PrimitiveType ot = i.operand(0)->shape().type();
  switch (i.opcode()) {
    case Opcode::kConvert:
      // Lanes hold 16-bit floats widened to f32 already.
      if (ot == t || (t == PrimitiveType::kF32 && (ot == PrimitiveType::kBF16 || ot == PrimitiveType::kF16)))
        return operands[0];
      break;
    case Opcode::kBitcastConvert: {
      if (ot == t) return operands[0];
      bool word = [](PrimitiveType x) {
        return x == PrimitiveType::kF32 || x == PrimitiveType::kS32 || x == PrimitiveType::kU32;
      }(ot);
      bool word_t = t == PrimitiveType::kF32 || t == PrimitiveType::kS32 || t == PrimitiveType::kU32;
      if (word && word_t) break;
      if (ir::is_integral(ot) && ir::is_integral(t) && ir::type_byte_size(ot) == ir::type_byte_size(t)) {
        // Between integers of one width a bitcast is a wrapping convert.
        return e_.add_op(Opcode::kConvert, t, std::move(operands), &i);
      }
      // bf16 lanes hold the value widened to f32, its bits << 16; 16-bit integers are
      // extended in their lanes: shifts by 16 over the whole lane move between the two.
      auto int16 = [](PrimitiveType x) { return x == PrimitiveType::kU16 || x == PrimitiveType::kS16; };
      const int sixteen = e_.add_constant(PrimitiveType::kU32, 16);
      if (ot == PrimitiveType::kBF16 && int16(t))
        return e_.add_op(t == PrimitiveType::kS16 ? Opcode::kShiftRightArithmetic : Opcode::kShiftRightLogical,
                         t == PrimitiveType::kS16 ? PrimitiveType::kS32 : PrimitiveType::kU32,
                         {operands[0], sixteen}, &i);
      if (int16(ot) && t == PrimitiveType::kBF16)
        return e_.add_op(Opcode::kShiftLeft, PrimitiveType::kU32, {operands[0], sixteen}, &i);
      if (ot == PrimitiveType::kF16 && (int16(t) || t == PrimitiveType::kBF16)) {
        const int bits = f16_bits(i, operands[0]);
        if (t == PrimitiveType::kU16) return bits;
        const int high = e_.add_op(Opcode::kShiftLeft, PrimitiveType::kU32, {bits, sixteen}, &i);
        return t == PrimitiveType::kBF16 ? high
                                         : e_.add_op(Opcode::kShiftRightArithmetic,
                                                     PrimitiveType::kS32, {high, sixteen}, &i);
      }
      if ((int16(ot) || ot == PrimitiveType::kBF16) && t == PrimitiveType::kF16) {
        const int bits =
            ot == PrimitiveType::kBF16
                ? e_.add_op(Opcode::kShiftRightLogical, PrimitiveType::kU32, {operands[0], sixteen},
                            &i)
                : e_.add_op(Opcode::kAnd, PrimitiveType::kU32,
                            {operands[0], e_.add_constant(PrimitiveType::kU32, 0xFFFF)}, &i);
        return f16_of_bits(i, bits);
      }
      unsupported(i, fmt::format("bitcast-convert from {} to {}", ir::type_name(ot), ir::type_name(t)));
    }
    default: break;
  }
  int node = e_.add_op(i.opcode(), t, std::move(operands), &i);
  e_.nodes[static_cast<size_t>(node)].direction = i.attrs().direction;
  return node;
}

// f16 lanes hold the value widened to f32. Its 16 bits (zero-extended in a u32 lane):
// the sign; below 2^-14 (subnormals and zeros) the value times 2^24, an integer; else
// the exponent rebiased (f32's 255, infinities and NaN, to f16's 31) and the top 10
// bits of the mantissa (all an f16 has: exact).
int ExprBuilder::f16_bits(const Instruction& i, int value) {
  using enum Opcode;
  const PrimitiveType u = PrimitiveType::kU32, f = PrimitiveType::kF32;
  auto op = [&](Opcode o, PrimitiveType type, std::vector<int> args) {
    return e_.add_op(o, type, std::move(args), &i);
  };
  auto k = [&](uint32_t v) { return e_.add_constant(u, v); };
  auto field = [&](int x, uint32_t shift, uint32_t mask) {
    return op(kAnd, u, {op(kShiftRightLogical, u, {x, k(shift)}), k(mask)});
  };
  const int b = op(kBitcastConvert, u, {value});
  const int e = field(b, 23, 0xFF);
  const int exponent = op(
      kSelect, u,
      {compare(i, ir::ComparisonDirection::kEq, e, k(255)), k(31), op(kSubtract, u, {e, k(112)})});
  const int normal = op(kOr, u, {op(kShiftLeft, u, {exponent, k(10)}), field(b, 13, 0x3FF)});
  const int a = op(kAbs, f, {value});
  const int small = op(
      kConvert, u, {op(kMultiply, f, {a, e_.add_constant(f, std::bit_cast<uint32_t>(0x1p24f))})});
  const int magnitude = op(kSelect, u,
                           {compare(i, ir::ComparisonDirection::kLt, a,
                                    e_.add_constant(f, std::bit_cast<uint32_t>(0x1p-14f))),
                            small, normal});
  return op(kOr, u, {magnitude, field(b, 16, 0x8000)});
}

// The f16 value of 16 bits (in a u32 lane), widened to f32: the sign; a zero exponent
// (subnormals and zeros) the mantissa times 2^-24; else the exponent rebiased (31 to
// 255) and the mantissa at the top of f32's.
int ExprBuilder::f16_of_bits(const Instruction& i, int bits) {
  using enum Opcode;
  const PrimitiveType u = PrimitiveType::kU32, f = PrimitiveType::kF32;
  auto op = [&](Opcode o, PrimitiveType type, std::vector<int> args) {
    return e_.add_op(o, type, std::move(args), &i);
  };
  auto k = [&](uint32_t v) { return e_.add_constant(u, v); };
  const int e = op(kAnd, u, {op(kShiftRightLogical, u, {bits, k(10)}), k(0x1F)});
  const int m = op(kAnd, u, {bits, k(0x3FF)});
  const int exponent =
      op(kSelect, u,
         {compare(i, ir::ComparisonDirection::kEq, e, k(31)), k(255), op(kAdd, u, {e, k(112)})});
  const int normal =
      op(kOr, u, {op(kShiftLeft, u, {exponent, k(23)}), op(kShiftLeft, u, {m, k(13)})});
  const int small =
      op(kBitcastConvert, u,
         {op(kMultiply, f,
             {op(kConvert, f, {m}), e_.add_constant(f, std::bit_cast<uint32_t>(0x1p-24f))})});
  const int magnitude =
      op(kSelect, u, {compare(i, ir::ComparisonDirection::kEq, e, k(0)), small, normal});
  const int sign = op(kShiftLeft, u, {op(kAnd, u, {bits, k(0x8000)}), k(16)});
  return op(kBitcastConvert, f, {op(kOr, u, {magnitude, sign})});
}

int ExprBuilder::compare(const Instruction& i, ir::ComparisonDirection direction, int a, int b) {
  const int node = e_.add_op(Opcode::kCompare, PrimitiveType::kPred, {a, b}, &i);
  e_.nodes[static_cast<size_t>(node)].direction = direction;
  return node;
}

Leaf view_of(Lowerer& l, Scope& s, const Instruction& i) {
  if (!i.shape().is_array()) unsupported(i, "a tuple where an array is needed");
  const size_t rank = static_cast<size_t>(i.shape().rank());
  const Instruction* cur = &i;
  View v = View::identity(static_cast<int64_t>(rank));
  for (int guard = 0; guard < 100000; ++guard) {
    if (const Value* val = l.find_value(*cur, s)) return leaf_of(*val, v, rank);
    if (!l.expandable(*cur, s) || !is_view_op(cur->opcode())) break;
    if (cur->opcode() == Opcode::kBitcast && cur->operand(0)->shape().type() != cur->shape().type()) break;
    View ov;
    if (!operand_view(*cur, v, ov, rank)) {
      Value m = l.value_of(*cur->operand(0), s);
      m.shape = cur->shape();
      return leaf_of(m, v, rank);
    }
    v = std::move(ov);
    cur = cur->operand(0);
  }
  return leaf_of(l.value_of(*cur, s), v, rank);
}

}  // namespace podsim::tpu
