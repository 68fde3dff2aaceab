// The partitioner's windowed instructions (partitioner.h): slices, pads, concatenates,
// convolutions and reduce-windows whose pieces read windows of other devices' pieces.
#include "compiler/passes/spmd/partitioner.h"

#include <algorithm>

#include "compiler/ir/sharding.h"
#include "compiler/passes/spmd/dim_maps.h"

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

std::optional<Held> Partitioner::partition_shift(const Instruction& i, const Tiling& want) {
  const bool pad = i.opcode() == Opcode::kPad;
  if (!pad && i.opcode() != Opcode::kSlice) return std::nullopt;
  const Instruction& o = *i.operand(0);
  const int64_t rank = i.shape().rank();
  std::vector<int64_t> shifted;
  for (int64_t d = 0; d < rank; ++d) {
    if (want.tiles(d) == 1) continue;
    const ir::SliceDim s = pad ? ir::SliceDim{} : i.attrs().slice[static_cast<size_t>(d)];
    const ir::PadDim p = pad ? i.attrs().padding[static_cast<size_t>(d)] : ir::PadDim{};
    if (s.stride != 1 || p.interior != 0) return std::nullopt;
    if (pad ? p.low != 0 || p.high != 0 : s.start != 0 || s.limit != o.shape().dim(d)) shifted.push_back(d);
  }
  if (shifted.empty()) return std::nullopt;
  // Each device's window of the operand along each shifted dimension, and what
  // exchanging them costs against gathering the operand.
  const Shape piece = ir::shard_shape(i.shape(), want.sharding());
  const Shape operand_piece = ir::shard_shape(o.shape(), want.sharding());
  std::vector<std::vector<int64_t>> windows;
  double ns = cost(o, want);
  for (int64_t d : shifted) {
    const int64_t m = piece.dim(d);
    const auto k = static_cast<size_t>(d);
    const int64_t shift = pad ? -i.attrs().padding[k].low : i.attrs().slice[k].start;
    std::vector<int64_t>& lo = windows.emplace_back();
    for (int64_t p = 0; p < devices_; ++p) lo.push_back(want.position(p)[k] * m + shift);
    ns += cost(window_exchange(want, d, operand_piece.dim(d), o.shape().dim(d), lo, m, devices_), want, d,
               operand_piece);
  }
  // Else (partition_on_pieces): the operand gathered along the shifted dimensions, the op
  // on it, the result cut (a dynamic-slice and its table of offsets).
  Tiling gathered = want;
  for (int64_t d : shifted) gathered = gathered.unsplit(d);
  if (ns > cost(o, gathered) + 3 * copy_cost(piece, shifted.front())) return std::nullopt;
  Instruction* x = reshard(held_.at(&o), want, o.shape()).hlo;
  Instruction* fill = pad ? replicate(*i.operand(1)).hlo : nullptr;
  for (size_t j = 0; j < shifted.size(); ++j)
    x = window(*this, x, want, shifted[j], o.shape().dim(shifted[j]), windows[j], piece.dim(shifted[j]), fill);
  // What is left: the op on the dimensions that are whole on every device.
  bool left = false;
  for (int64_t d = 0; d < rank; ++d)
    left = left || (want.tiles(d) == 1 && (pad ? !(i.attrs().padding[static_cast<size_t>(d)] == ir::PadDim{})
                                               : !(i.attrs().slice[static_cast<size_t>(d)] ==
                                                   ir::SliceDim{0, o.shape().dim(d), 1})));
  if (!left) return Held{x, Layout{want, {}}};
  std::vector<Instruction*> operands{x};
  if (pad) operands.push_back(fill);
  Instruction* c = clone(i, piece, std::move(operands));
  for (int64_t d = 0; d < rank; ++d) {
    if (want.tiles(d) == 1) continue;
    if (pad)
      c->attrs().padding[static_cast<size_t>(d)] = {};
    else
      c->attrs().slice[static_cast<size_t>(d)] = {0, piece.dim(d), 1};
  }
  return Held{c, Layout{want, {}}};
}

std::optional<Held> Partitioner::partition_windowed(const Instruction& i, const Tiling& want) {
  std::vector<std::pair<int64_t, int64_t>> split;  // (result, input) dimensions
  for (const auto& dims : window_dims(i))
    if (want.tiles(dims.first) > 1) split.push_back(dims);
  if (split.empty()) return std::nullopt;
  const bool conv = i.opcode() == Opcode::kConvolution;
  const Instruction& input = *i.operand(0);
  const std::vector<int64_t> map = *operand_dims_along_result(i, 0);
  // Every split dimension of the result must be one the input follows (or, for a
  // convolution, the kernel's output features).
  for (int64_t d = 0; d < i.shape().rank(); ++d)
    if (want.tiles(d) > 1 && std::find(map.begin(), map.end(), d) == map.end() &&
        !(conv && d == i.attrs().conv_dims.output_feature))
      return std::nullopt;
  const Tiling t = want.remap(map);
  const Shape piece = ir::shard_shape(i.shape(), want.sharding());
  const Shape input_piece = ir::shard_shape(input.shape(), t.sharding());
  // The window dimension (its index) along result dimension r.
  auto window_index = [&](int64_t r) {
    if (!conv) return static_cast<size_t>(r);
    const auto& spatial = i.attrs().conv_dims.output_spatial;
    return static_cast<size_t>(std::find(spatial.begin(), spatial.end(), r) - spatial.begin());
  };
  std::vector<std::vector<int64_t>> windows;
  std::vector<int64_t> widths;
  Tiling gathered = t;
  double ns = cost(input, t);
  for (const auto& [r, d] : split) {
    const ir::WindowDim& wd = i.attrs().window->dims.at(window_index(r));
    const int64_t m = piece.dim(r);
    std::vector<int64_t>& lo = windows.emplace_back();
    for (int64_t p = 0; p < devices_; ++p)
      lo.push_back(want.position(p)[static_cast<size_t>(r)] * m * wd.stride - wd.pad_low);
    widths.push_back((m - 1) * wd.stride + (wd.size - 1) * wd.rhs_dilation + 1);
    ns += cost(window_exchange(t, d, input_piece.dim(d), input.shape().dim(d), lo, widths.back(), devices_), t, d,
               input_piece);
    gathered = gathered.unsplit(d);
  }
  // Else (partition_on_pieces): the input gathered along them, the result cut.
  if (ns > cost(input, gathered) + 3 * copy_cost(piece, split.front().first)) return std::nullopt;
  Instruction* x = reshard(held_.at(&input), t, input.shape()).hlo;
  Instruction* fill =
      conv ? constant(ir::Literal(Shape::scalar(input.shape().type())), "zero") : replicate(*i.operand(1)).hlo;
  for (size_t k = 0; k < split.size(); ++k)
    x = window(*this, x, t, split[k].second, input.shape().dim(split[k].second), windows[k], widths[k], fill);
  std::vector<Instruction*> operands{x};
  if (conv)
    operands.push_back(
        reshard(held_.at(i.operand(1)), want.remap(*operand_dims_in_result(i, 1)), i.operand(1)->shape()).hlo);
  else
    operands.push_back(fill);
  Instruction* c = clone(i, piece, std::move(operands));
  for (const auto& [r, d] : split) {
    ir::WindowDim& wd = c->attrs().window->dims.at(window_index(r));
    wd.pad_low = wd.pad_high = 0;
  }
  return Held{c, Layout{want, {}}};
}

std::optional<Held> Partitioner::partition_concatenate(const Instruction& i, const Tiling& want) {
  const int64_t d = i.attrs().dimensions.at(0);
  if (want.tiles(d) == 1) return std::nullopt;
  const Shape piece = ir::shard_shape(i.shape(), want.sharding());
  const int64_t m = piece.dim(d);
  std::vector<int64_t> start;  // of each device's piece of the result
  for (int64_t p = 0; p < devices_; ++p) start.push_back(want.position(p)[static_cast<size_t>(d)] * m);
  // Each operand's windows, and whether exchanging them costs less than gathering the
  // operand and cutting them from it (a pad and a cut with its offsets). Where none does, the operands
  // are gathered, concatenated and cut as any other op (one cut in all).
  std::vector<std::vector<int64_t>> windows;
  std::vector<bool> exchange;
  int64_t offset = 0;
  for (const Instruction* o : i.operands()) {
    const int64_t size = o->shape().dim(d);
    // Where a device's window misses this operand, any window will do: its own piece.
    const Shape operand_piece = ir::shard_shape(o->shape(), want.sharding());
    const int64_t n = operand_piece.dim(d);
    std::vector<int64_t>& lo = windows.emplace_back();
    for (int64_t p = 0; p < devices_; ++p) {
      const int64_t at = start[static_cast<size_t>(p)] - offset;
      lo.push_back(at + m <= 0 || at >= size ? want.position(p)[static_cast<size_t>(d)] * n : at);
    }
    const WindowExchange plan = window_exchange(want, d, n, size, lo, m, devices_);
    exchange.push_back(cost(*o, want) + cost(plan, want, d, operand_piece) <=
                       cost(*o, want.unsplit(d)) + 4 * copy_cost(piece, d));
    offset += size;
  }
  if (std::find(exchange.begin(), exchange.end(), true) == exchange.end()) return std::nullopt;
  Instruction* result = nullptr;
  Instruction* where = nullptr;  // each element's position in the result, once needed
  offset = 0;
  for (size_t k = 0; k < i.operands().size(); ++k) {
    const Instruction* o = i.operand(static_cast<int64_t>(k));
    const int64_t size = o->shape().dim(d);
    Instruction* w = nullptr;
    if (exchange[k]) {
      w = window(*this, reshard(held_.at(o), want, o->shape()).hlo, want, d, size, windows[k], m, nullptr);
    } else {
      // The operand whole along d (split as the result elsewhere), m zeros either side,
      // cut at each device's window.
      Instruction* whole = reshard(held_.at(o), want.unsplit(d), o->shape()).hlo;
      Shape padded = whole->shape();
      padded.mutable_dims()[static_cast<size_t>(d)] += 2 * m;
      std::vector<ir::PadDim> padding(static_cast<size_t>(padded.rank()));
      padding[static_cast<size_t>(d)] = {m, m, 0};
      Instruction* zero = constant(ir::Literal(Shape::scalar(o->shape().type())), "zero");
      Instruction* ext = add(Opcode::kPad, padded, {whole, zero},
                             o->name());
      ext->attrs().padding = padding;
      std::vector<int64_t> at;
      for (int64_t p = 0; p < devices_; ++p)
        at.push_back(std::clamp<int64_t>(start[static_cast<size_t>(p)] - offset, -m, size) + m);
      w = dynamic_slice(ext, d, at, m);
    }
    if (result == nullptr) {
      result = w;
    } else {
      // From this operand on: positions at or past its offset.
      if (where == nullptr) where = positions(*this, piece.dims(), d, start);
      Instruction* from =
          splat(constant(ir::Literal::scalar(ir::PrimitiveType::kS32, offset), "offset"), where->shape());
      Instruction* mine = add(Opcode::kCompare, Shape(ir::PrimitiveType::kPred, piece.dims()), {where, from}, "mine");
      mine->attrs().direction = ir::ComparisonDirection::kGe;
      Shape values = piece;
      values.clear_layout();
      result = add(Opcode::kSelect, values, {mine, w, result}, i.name());
    }
    offset += size;
  }
  return Held{result, Layout{want, {}}};
}

double Partitioner::cost(const WindowExchange& w, const Tiling& t, int64_t d, const Shape& piece) const {
  const double bytes_per_element =
      static_cast<double>(piece.byte_size()) / static_cast<double>(std::max<int64_t>(1, piece.dim(d)));
  const std::vector<std::vector<int64_t>> groups = t.groups_along({d});
  double ns = 0;
  for (size_t s = 0; s < w.shifts.size(); ++s) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const std::vector<int64_t>& g : groups)
      for (int64_t q = 0; q < static_cast<int64_t>(g.size()); ++q)
        if (q + w.shifts[s] >= 0 && q + w.shifts[s] < static_cast<int64_t>(g.size()))
          pairs.emplace_back(g[static_cast<size_t>(q + w.shifts[s])], g[static_cast<size_t>(q)]);
    ns += costs_.permute(pairs, bytes_per_element * static_cast<double>(w.widths[s]));
  }
  return ns + static_cast<double>(w.copies) * copy_cost(piece, d);
}

double Partitioner::copy_cost(const Shape& piece, int64_t d) const {
  double run = static_cast<double>(ir::type_byte_size(piece.type()));
  for (int64_t k = d; k < piece.rank(); ++k) run *= static_cast<double>(piece.dim(k));
  return costs_.copy(static_cast<double>(piece.byte_size()), run);
}

}  // namespace podsim::passes::spmd
