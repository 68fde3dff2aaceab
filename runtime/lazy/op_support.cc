// Helpers every op uses: type promotion, broadcasting, scalars and constants as graph
// values, and the small node builders.
#include <bit>

#include "runtime/lazy/tensor_impl.h"

namespace podsim::lazy {
namespace {

bool is_bool(DType t) { return t == DType::kPred; }

// Signed integer type of at least bits (s64 at most).
DType signed_of_width(int bits) {
  if (bits <= 8) return DType::kS8;
  if (bits <= 16) return DType::kS16;
  if (bits <= 32) return DType::kS32;
  return DType::kS64;
}

std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (ir::is_float(*higher)) return higher;
  if (!lower) return higher;
  if (is_bool(*higher) || ir::is_float(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType default_float() { return DType::kF32; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  bool fa = ir::is_float(a), fb = ir::is_float(b);
  if (fa != fb) return fa ? a : b;
  int wa = ir::type_bit_width(a), wb = ir::type_bit_width(b);
  if (fa) {
    if (wa == wb) return DType::kF32;  // f16 with bf16: neither holds the other
    return wa > wb ? a : b;
  }
  bool ua = ir::is_unsigned_int(a), ub = ir::is_unsigned_int(b);
  if (ua == ub) return wa > wb ? a : b;
  int unsigned_width = ua ? wa : wb;
  int signed_width = ua ? wb : wa;
  if (signed_width > unsigned_width) return ua ? b : a;
  return signed_of_width(2 * unsigned_width);
}

TypeOperand type_operand(const TensorImpl& impl) {
  return {impl.type,
          impl.dims.empty() ? TypeOperand::Rank::kZeroDim : TypeOperand::Rank::kDimensioned};
}

TypeOperand type_operand(Scalar s) {
  DType t = s.kind() == Scalar::Kind::kBool  ? DType::kPred
            : s.kind() == Scalar::Kind::kInt ? DType::kS64
                                             : default_float();
  return {t, TypeOperand::Rank::kScalar};
}

DType result_type(std::span<const TypeOperand> operands) {
  std::optional<DType> state[3];
  for (const TypeOperand& o : operands) {
    std::optional<DType>& s = state[static_cast<int>(o.rank)];
    s = s ? promote_types(*s, o.type) : o.type;
  }
  std::optional<DType> t = combine_categories(combine_categories(state[0], state[1]), state[2]);
  return t.value_or(default_float());
}

bool can_cast(DType from, DType to) {
  if (ir::is_float(from) && !ir::is_float(to)) return false;
  if (!is_bool(from) && is_bool(to)) return false;
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t rank, const OpSite& site) {
  int64_t bound = rank == 0 ? 1 : rank;  // torch lets a scalar take dim 0 or -1
  if (dim < -bound || dim >= bound)
    op_fail(site, "dimension {} is out of range (expected in [{}, {}])", dim, -bound, bound - 1);
  return dim < 0 ? dim + bound : dim;
}

Dims broadcast_dims(const OpSite& site, ir::PrimitiveType a_type, std::span<const int64_t> a,
                    ir::PrimitiveType b_type, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the trailing dimension.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      op_fail(
          site,
          "shapes {} and {} cannot be broadcast together (dimension {} from the end is {} vs {})",
          shape_string(a_type, a), shape_string(b_type, b), rank - i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

NodePtr unary_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                   const NodePtr& x, std::span<const int64_t> attrs) {
  Node* operand = x.get();
  return make_node(site, op, type, std::move(dims), std::span<Node* const>(&operand, 1), attrs);
}

NodePtr convert(NodePtr x, ir::PrimitiveType type, const OpSite& site) {
  if (x->type == type) return x;
  return make_node(site, ir::Opcode::kConvert, type, x->dims, {x.get()});
}

NodePtr reshape_node(NodePtr x, const Dims& dims, const OpSite& site) {
  if (x->dims == dims) return x;
  return make_node(site, ir::Opcode::kReshape, x->type, dims, {x.get()});
}

NodePtr broadcast_to(NodePtr x, const Dims& dims, const OpSite& site) {
  if (x->dims == dims) return x;
  size_t rank = x->dims.size();
  if (rank > dims.size())
    op_fail(site, "cannot broadcast {} to the lower-rank shape {}", shape_string(x->type, x->dims),
            shape_string(x->type, dims));
  size_t offset = dims.size() - rank;
  Dims kept;
  SmallVec<int64_t, 4> mapping;
  for (size_t i = 0; i < rank; ++i) {
    int64_t d = x->dims[i];
    if (d == dims[offset + i]) {
      kept.push_back(d);
      mapping.push_back(static_cast<int64_t>(offset + i));
    } else if (d != 1) {
      op_fail(site, "cannot broadcast {} to {}", shape_string(x->type, x->dims),
              shape_string(x->type, dims));
    }
  }
  ir::PrimitiveType type = x->type;
  return unary_node(site, ir::Opcode::kBroadcast, type, dims,
                    reshape_node(std::move(x), kept, site), mapping.span());
}

NodePtr scalar_operand(Scalar s, ir::PrimitiveType type, const OpSite& site) {
  return make_scalar_leaf(site, type,
                          {s.kind() != Scalar::Kind::kFloat, s.to_int(), s.to_double()});
}

NodePtr constant_operand(double v, ir::PrimitiveType type, const OpSite& site) {
  return make_constant(site, type, v);
}

namespace {
const Dims& widest(std::initializer_list<const Node*> nodes) {
  const Node* best = *nodes.begin();
  for (const Node* n : nodes)
    if (n->dims.size() > best->dims.size()) best = n;
  return best->dims;
}
}  // namespace

NodePtr elementwise(ir::Opcode op, const NodePtr& a, const NodePtr& b, const OpSite& site) {
  return make_node(site, op, a->type, widest({a.get(), b.get()}), {a.get(), b.get()});
}

NodePtr elementwise(ir::Opcode op, const NodePtr& a, const OpSite& site) {
  return make_node(site, op, a->type, a->dims, {a.get()});
}

NodePtr compare_nodes(ir::ComparisonDirection d, const NodePtr& a, const NodePtr& b,
                      const OpSite& site) {
  return make_node(site, ir::Opcode::kCompare, DType::kPred, widest({a.get(), b.get()}),
                   {a.get(), b.get()}, {static_cast<int64_t>(d)});
}

NodePtr select_nodes(const NodePtr& pred, const NodePtr& a, const NodePtr& b, const OpSite& site) {
  return make_node(site, ir::Opcode::kSelect, a->type, widest({pred.get(), a.get(), b.get()}),
                   {pred.get(), a.get(), b.get()});
}

NodePtr reduce_node(ReduceKind kind, const NodePtr& x, const Dims& dims, const OpSite& site) {
  Dims out;
  SmallVec<int64_t, 4> attrs{static_cast<int64_t>(kind)};
  size_t next = 0;
  for (size_t i = 0; i < x->dims.size(); ++i) {
    if (next < dims.size() && dims[next] == static_cast<int64_t>(i)) {
      attrs.push_back(dims[next++]);
    } else {
      out.push_back(x->dims[i]);
    }
  }
  return unary_node(site, ir::Opcode::kReduce, x->type, std::move(out), x, attrs.span());
}

}  // namespace podsim::lazy
