#include "compiler/passes/spmd/halos.h"

#include <algorithm>
#include <string>

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

std::optional<Instruction*> window(Emitter& e, Instruction* x, const Tiling& t, int64_t d, int64_t size,
                                   const std::vector<int64_t>& lo, int64_t w, Instruction* fill) {
  const int64_t n = x->shape().dim(d);
  int64_t left = 0, right = 0;  // halo widths
  std::vector<int64_t> offsets;
  for (int64_t p = 0; p < e.devices(); ++p) {
    const int64_t start = t.position(p)[static_cast<size_t>(d)] * n;
    left = std::max(left, start - lo[static_cast<size_t>(p)]);
    right = std::max(right, lo[static_cast<size_t>(p)] + w - (start + n));
  }
  if (left > n || right > n) return std::nullopt;
  for (int64_t p = 0; p < e.devices(); ++p)
    offsets.push_back(lo[static_cast<size_t>(p)] - (t.position(p)[static_cast<size_t>(d)] * n - left));
  // Each group along d passes an edge to the next (or previous) device in it.
  auto halo = [&](int64_t from, int64_t width, bool forward) {
    Shape shape = x->shape();
    shape.mutable_dims()[static_cast<size_t>(d)] = width;
    Instruction* edge = e.add(Opcode::kSlice, shape, {x}, "halo");
    for (int64_t k = 0; k < shape.rank(); ++k)
      edge->attrs().slice.push_back({k == d ? from : 0, k == d ? from + width : shape.dim(k), 1});
    Instruction* moved = e.add(Opcode::kCollectivePermute, shape, {edge}, "halo");
    for (const std::vector<int64_t>& g : t.groups_along({d}))
      for (size_t j = 0; j + 1 < g.size(); ++j)
        moved->attrs().source_target_pairs.emplace_back(forward ? g[j] : g[j + 1], forward ? g[j + 1] : g[j]);
    e.attribute(moved);
    moved->attrs().channel_id = e.next_channel();
    return moved;
  };
  std::vector<Instruction*> parts;
  if (left > 0) parts.push_back(halo(n - left, left, true));
  parts.push_back(x);
  if (right > 0) parts.push_back(halo(0, right, false));
  Instruction* ext = x;
  if (parts.size() > 1) {
    Shape shape = x->shape();
    shape.mutable_dims()[static_cast<size_t>(d)] = left + n + right;
    ext = e.add(Opcode::kConcatenate, shape, std::move(parts), x->name());
    ext->attrs().dimensions = {d};
  }
  Shape piece = x->shape();
  piece.mutable_dims()[static_cast<size_t>(d)] = w;
  Instruction* cut = x;  // where every window is the device's own piece
  if (ext != x || w != n || std::any_of(offsets.begin(), offsets.end(), [](int64_t o) { return o != 0; })) {
    std::vector<Instruction*> operands{ext};
    for (int64_t k = 0; k < piece.rank(); ++k)
      operands.push_back(k == d ? e.per_partition(offsets)
                                : e.constant(ir::Literal::scalar(ir::PrimitiveType::kS32, 0), "offset"));
    cut = e.add(Opcode::kDynamicSlice, piece, std::move(operands), x->name());
    cut->attrs().dynamic_slice_sizes = piece.dims();
  }
  if (!fill) return cut;
  return keep_inside(e, cut, d, lo, size, fill);
}

Instruction* positions(Emitter& e, const std::vector<int64_t>& dims, int64_t d, const std::vector<int64_t>& lo) {
  const Shape index(ir::PrimitiveType::kS32, dims);
  Instruction* iota = e.add(Opcode::kIota, index, {}, "position");
  iota->attrs().iota_dimension = d;
  return e.add(Opcode::kAdd, index, {iota, e.splat(e.per_partition(lo), index)}, "position");
}

Instruction* keep_inside(Emitter& e, Instruction* x, int64_t d, const std::vector<int64_t>& lo, int64_t size,
                         Instruction* fill) {
  Instruction* where = positions(e, x->shape().dims(), d, lo);
  const Shape& index = where->shape();
  const Shape pred(ir::PrimitiveType::kPred, x->shape().dims());
  auto compare = [&](int64_t bound, ir::ComparisonDirection direction) {
    Instruction* b = e.constant(ir::Literal::scalar(ir::PrimitiveType::kS32, bound), "bound");
    Instruction* c = e.add(Opcode::kCompare, pred, {where, e.splat(b, index)}, "inside");
    c->attrs().direction = direction;
    return c;
  };
  Instruction* inside = e.add(Opcode::kAnd, pred,
                              {compare(0, ir::ComparisonDirection::kGe), compare(size, ir::ComparisonDirection::kLt)},
                              "inside");
  Shape values = x->shape();
  values.clear_layout();
  return e.add(Opcode::kSelect, values, {inside, x, e.splat(fill, values)}, x->name());
}

Instruction* mask_padding(Emitter& e, Instruction* x, const Tiling& t, const Shape& whole,
                          const std::vector<int64_t>& dims, Instruction* fill) {
  for (int64_t d : dims) {
    if (whole.dim(d) % t.tiles(d) == 0) continue;
    std::vector<int64_t> lo;
    for (int64_t p = 0; p < e.devices(); ++p) lo.push_back(t.position(p)[static_cast<size_t>(d)] * x->shape().dim(d));
    x = keep_inside(e, x, d, lo, whole.dim(d), fill);
  }
  return x;
}

}  // namespace podsim::passes::spmd
