#include "compiler/passes/spmd/halos.h"

#include <algorithm>
#include <string>
#include <utility>

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

namespace {

// Where device p's window [lo[p], lo[p] + w) along d meets the piece at position j
// (elements [j * n, min((j + 1) * n, size)) of the value): [begin, end), empty where
// begin >= end.
Interval overlap(int64_t lo, int64_t w, int64_t j, int64_t n, int64_t size) {
  return {std::max(lo, j * n), std::min({lo + w, (j + 1) * n, size})};
}

// The piece each device's window lies within (-1 where it misses the value), or
// nothing where some window meets more than one piece or reaches past its piece's end.
std::vector<int64_t> piece_of_windows(const Tiling& t, int64_t d, int64_t n, int64_t size,
                                      const std::vector<int64_t>& lo, int64_t w, int64_t devices) {
  std::vector<int64_t> out;
  for (int64_t p = 0; p < devices; ++p) {
    const int64_t a = lo[static_cast<size_t>(p)];
    if (a + w <= 0 || a >= size) {
      out.push_back(-1);
      continue;
    }
    const int64_t j = a < 0 ? -1 : a / n;
    if (j < 0 || j >= t.tiles(d) || a + w > (j + 1) * n) return {};
    out.push_back(j);
  }
  return out;
}

// Where positions `where` (s32) on partition p lie in [lo[p], hi[p]).
Instruction* between(Emitter& e, Instruction* where, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  const Shape pred(ir::PrimitiveType::kPred, where->shape().dims());
  auto compare = [&](const std::vector<int64_t>& bound, ir::ComparisonDirection direction) {
    Instruction* c = e.add(Opcode::kCompare, pred, {where, e.splat(e.per_partition(bound), where->shape())}, "inside");
    c->attrs().direction = direction;
    return c;
  };
  return e.add(Opcode::kAnd, pred,
               {compare(lo, ir::ComparisonDirection::kGe), compare(hi, ir::ComparisonDirection::kLt)}, "inside");
}

// Each device's window from its neighbours' edges (widths left and right) by one
// collective-permute each way, cut at a per-device offset.
Instruction* neighbour_window(Emitter& e, Instruction* x, const Tiling& t, int64_t d, const std::vector<int64_t>& lo,
                              int64_t w, int64_t left, int64_t right) {
  const int64_t n = x->shape().dim(d);
  std::vector<int64_t> offsets;
  for (int64_t p = 0; p < e.devices(); ++p)
    offsets.push_back(lo[static_cast<size_t>(p)] - (t.position(p)[static_cast<size_t>(d)] * n - left));
  // Each group along d passes an edge to the next (or previous) device in it.
  auto halo = [&](int64_t from, int64_t width, bool forward) {
    Shape shape = x->shape();
    shape.mutable_dims()[static_cast<size_t>(d)] = width;
    Instruction* edge = e.add(Opcode::kSlice, shape, {x}, "halo");
    for (int64_t k = 0; k < shape.rank(); ++k)
      edge->attrs().slice.push_back({k == d ? from : 0, k == d ? from + width : shape.dim(k), 1});
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const std::vector<int64_t>& g : t.groups_along({d}))
      for (size_t j = 0; j + 1 < g.size(); ++j)
        pairs.emplace_back(forward ? g[j] : g[j + 1], forward ? g[j + 1] : g[j]);
    return e.permute(edge, std::move(pairs));
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
  if (ext == x && w == n && std::all_of(offsets.begin(), offsets.end(), [](int64_t o) { return o == 0; })) return x;
  return e.dynamic_slice(ext, d, offsets, w);
}

// Windows that each lie within one piece: cut there (at a per-device offset) and sent
// to their devices, one collective-permute a shift, each device choosing what came from
// its window's piece.
Instruction* windows_within_pieces(Emitter& e, Instruction* x, const Tiling& t, int64_t d,
                                   const std::vector<int64_t>& lo, int64_t w, const WindowExchange& plan) {
  const int64_t n = x->shape().dim(d);
  const std::vector<int64_t>& within = plan.pieces;
  auto start_in = [&](int64_t p, int64_t j) {
    return std::clamp<int64_t>(lo[static_cast<size_t>(p)] - j * n, 0, n - w);
  };
  std::vector<int64_t> own;
  for (int64_t p = 0; p < e.devices(); ++p) own.push_back(start_in(p, t.position(p)[static_cast<size_t>(d)]));
  Instruction* out = e.dynamic_slice(x, d, own, w);
  const std::vector<std::vector<int64_t>> groups = t.groups_along({d});
  for (int64_t k : plan.shifts) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::vector<int64_t> send(static_cast<size_t>(e.devices()), 0);
    std::vector<bool> mine(static_cast<size_t>(e.devices()), false);
    for (const std::vector<int64_t>& g : groups)
      for (int64_t q = 0; q < static_cast<int64_t>(g.size()); ++q) {
        const int64_t p = g[static_cast<size_t>(q)], j = within[static_cast<size_t>(p)];
        if (j < 0 || j - q != k) continue;
        send[static_cast<size_t>(g[static_cast<size_t>(j)])] = start_in(p, j);
        mine[static_cast<size_t>(p)] = true;
        pairs.emplace_back(g[static_cast<size_t>(j)], p);
      }
    out = e.choose(mine, e.permute(e.dynamic_slice(x, d, send, w), std::move(pairs)), out);
  }
  return out;
}

// Every part (the device's own piece, and what each shift brings: the part of the
// piece k positions along that the device's window needs) placed in the window by
// position: padded by w either side and cut where the window starts in it, then chosen
// where the part holds the window's positions.
Instruction* windows_from_parts(Emitter& e, Instruction* x, const Tiling& t, int64_t d, int64_t size,
                                const std::vector<int64_t>& lo, int64_t w, const WindowExchange& plan) {
  const int64_t n = x->shape().dim(d);
  Shape piece = x->shape();
  piece.clear_layout();
  piece.mutable_dims()[static_cast<size_t>(d)] = w;
  Instruction* where = positions(e, piece.dims(), d, lo);
  Instruction* zero = e.constant(ir::Literal(Shape::scalar(x->shape().type())), "zero");
  auto place = [&](Instruction* part, const std::vector<int64_t>& start) {
    Shape padded = part->shape();
    padded.clear_layout();
    padded.mutable_dims()[static_cast<size_t>(d)] += 2 * w;
    Instruction* ext = e.add(Opcode::kPad, padded, {part, zero}, part->name());
    ext->attrs().padding.assign(static_cast<size_t>(padded.rank()), ir::PadDim{});
    ext->attrs().padding[static_cast<size_t>(d)] = {w, w, 0};
    std::vector<int64_t> at;
    for (int64_t p = 0; p < e.devices(); ++p)
      at.push_back(std::clamp<int64_t>(lo[static_cast<size_t>(p)] - start[static_cast<size_t>(p)] + w, 0,
                                       part->shape().dim(d) + w));
    return e.dynamic_slice(ext, d, at, w);
  };
  std::vector<int64_t> own;
  for (int64_t p = 0; p < e.devices(); ++p) own.push_back(t.position(p)[static_cast<size_t>(d)] * n);
  Instruction* out = place(x, own);
  const std::vector<std::vector<int64_t>> groups = t.groups_along({d});
  for (size_t s = 0; s < plan.shifts.size(); ++s) {
    const int64_t k = plan.shifts[s], width = plan.widths[s];
    // The sender of each receiver, where the part it sends starts in its piece, and where
    // the part lies in the value (a device that receives nothing: a start no position of
    // its window reaches).
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::vector<int64_t> send(static_cast<size_t>(e.devices()), 0), start, end;
    for (int64_t p = 0; p < e.devices(); ++p) start.push_back(lo[static_cast<size_t>(p)] - width - w);
    for (const std::vector<int64_t>& g : groups)
      for (int64_t q = 0; q < static_cast<int64_t>(g.size()); ++q) {
        const int64_t j = q + k, p = g[static_cast<size_t>(q)];
        if (j < 0 || j >= static_cast<int64_t>(g.size())) continue;
        const Interval o = overlap(lo[static_cast<size_t>(p)], w, j, n, size);
        if (o.begin >= o.end) continue;
        const int64_t from = g[static_cast<size_t>(j)];
        const int64_t at = std::clamp<int64_t>(o.begin - j * n, 0, n - width);
        send[static_cast<size_t>(from)] = at;
        start[static_cast<size_t>(p)] = j * n + at;
        pairs.emplace_back(from, p);
      }
    for (int64_t b : start) end.push_back(b + width);
    Instruction* part = e.permute(e.dynamic_slice(x, d, send, width), std::move(pairs));
    out = e.add(Opcode::kSelect, piece, {between(e, where, start, end), place(part, start), out}, x->name());
  }
  return out;
}

}  // namespace

WindowExchange window_exchange(const Tiling& t, int64_t d, int64_t n, int64_t size, const std::vector<int64_t>& lo,
                               int64_t w, int64_t devices) {
  WindowExchange out;
  for (int64_t p = 0; p < devices; ++p) {
    const int64_t start = t.position(p)[static_cast<size_t>(d)] * n;
    out.left = std::max(out.left, start - lo[static_cast<size_t>(p)]);
    out.right = std::max(out.right, lo[static_cast<size_t>(p)] + w - (start + n));
  }
  using Kind = WindowExchange::Kind;
  if (out.left <= n && out.right <= n) {
    out.kind = Kind::kNeighbours;
    for (const auto& [k, width] : {std::pair{int64_t{-1}, out.left}, std::pair{int64_t{1}, out.right}})
      if (width > 0) {
        out.shifts.push_back(k);
        out.widths.push_back(width);
      }
    // Each edge's slice, their concatenation with the piece, the cut and its offsets.
    out.copies = 4 + static_cast<int64_t>(out.shifts.size());
    return out;
  }
  const int64_t tiles = t.tiles(d);
  out.pieces = piece_of_windows(t, d, n, size, lo, w, devices);
  if (!out.pieces.empty()) {
    out.kind = Kind::kWithinPieces;
    for (int64_t p = 0; p < devices; ++p) {
      const int64_t k = out.pieces[static_cast<size_t>(p)] - t.position(p)[static_cast<size_t>(d)];
      if (out.pieces[static_cast<size_t>(p)] >= 0 && k != 0 &&
          std::find(out.shifts.begin(), out.shifts.end(), k) == out.shifts.end())
        out.shifts.push_back(k);
    }
    std::sort(out.shifts.begin(), out.shifts.end());
    out.widths.assign(out.shifts.size(), w);
    // The own cut and its offsets; a shift's cut, offsets, and choice (a table, a
    // comparison, a broadcast, a select).
    out.copies = 3 + 8 * static_cast<int64_t>(out.shifts.size());
    return out;
  }
  // Shift k: each device receives from the piece k positions along d from its own the
  // part of it its window needs (the most any device needs from one such piece).
  out.kind = Kind::kParts;
  for (int64_t k = 1 - tiles; k < tiles; ++k) {
    if (k == 0) continue;
    int64_t width = 0;
    for (int64_t p = 0; p < devices; ++p) {
      const int64_t j = t.position(p)[static_cast<size_t>(d)] + k;
      if (j < 0 || j >= tiles) continue;
      const Interval o = overlap(lo[static_cast<size_t>(p)], w, j, n, size);
      width = std::max(width, o.end - o.begin);
    }
    if (width > 0) {
      out.shifts.push_back(k);
      out.widths.push_back(width);
    }
  }
  // Positions, the own piece padded and cut (offsets); a shift's cut, pad and cut
  // (offsets), the two bounds compared and joined, a select.
  out.copies = 8 + 17 * static_cast<int64_t>(out.shifts.size());
  return out;
}

Instruction* window(Emitter& e, Instruction* x, const Tiling& t, int64_t d, int64_t size,
                    const std::vector<int64_t>& lo, int64_t w, Instruction* fill) {
  const int64_t n = x->shape().dim(d);
  const WindowExchange plan = window_exchange(t, d, n, size, lo, w, e.devices());
  using Kind = WindowExchange::Kind;
  Instruction* out = nullptr;
  if (plan.kind == Kind::kNeighbours) {
    out = neighbour_window(e, x, t, d, lo, w, plan.left, plan.right);
  } else if (plan.kind == Kind::kWithinPieces) {
    out = windows_within_pieces(e, x, t, d, lo, w, plan);
  } else {
    out = windows_from_parts(e, x, t, d, size, lo, w, plan);
  }
  if (!fill) return out;
  return keep_inside(e, out, d, lo, size, fill);
}

Instruction* positions(Emitter& e, const std::vector<int64_t>& dims, int64_t d, const std::vector<int64_t>& lo) {
  const Shape index(ir::PrimitiveType::kS32, dims);
  Instruction* iota = e.add(Opcode::kIota, index, {}, "position");
  iota->attrs().iota_dimension = d;
  return e.add(Opcode::kAdd, index, {iota, e.splat(e.per_partition(lo), index)}, "position");
}

Instruction* keep_inside(Emitter& e, Instruction* x, int64_t d, const std::vector<int64_t>& lo, int64_t size,
                         Instruction* fill) {
  Instruction* inside = between(e, positions(e, x->shape().dims(), d, lo), std::vector<int64_t>(lo.size(), 0),
                                std::vector<int64_t>(lo.size(), size));
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
