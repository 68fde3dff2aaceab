// The partitioner's tables split by rows (partitioner.h): lookups (gathers) and
// scatters that run on each device's rows with local indices.
#include "compiler/passes/spmd/partitioner.h"

#include <algorithm>

#include "compiler/ir/sharding.h"
#include "compiler/passes/spmd/dim_maps.h"

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

std::optional<Held> Partitioner::partition_row_gather(const Instruction& i) {
  const Instruction& table = *i.operand(0);
  const Instruction& indices = *i.operand(1);
  const ir::GatherDimNumbers& g = i.attrs().gather_dims;
  const Tiling& t = *held_.at(&table).layout.array;
  const Shape& ts = table.shape();
  const Shape& is = indices.shape();
  if (t.tiles(0) == 1 || t.pieces() != t.tiles(0) || ts.dim(0) % t.tiles(0) != 0) return std::nullopt;
  if (g.collapsed_slice_dims != std::vector<int64_t>{0} || g.start_index_map != std::vector<int64_t>{0} ||
      !g.operand_batching_dims.empty() || g.index_vector_dim != is.rank() || !ir::is_integral(is.type()))
    return std::nullopt;
  for (int64_t d = 1; d < ts.rank(); ++d)
    if (i.attrs().gather_slice_sizes[static_cast<size_t>(d)] != ts.dim(d)) return std::nullopt;
  // Worth it when the all-reduce of the result moves less than gathering the table.
  const int64_t k = t.tiles(0);
  if (2 * i.shape().byte_size() >= ts.byte_size() / k * (k - 1)) return std::nullopt;
  const int64_t rows = ts.dim(0) / k;
  Instruction* piece = held_.at(&table).hlo;
  Instruction* idx = replicate(indices).hlo;
  const Shape ishape(is.type(), is.dims());
  auto bound = [&](int64_t v) { return splat(constant(ir::Literal::scalar(is.type(), v), "bound"), ishape); };
  // Global indices clamped into the table, then made local to this device's rows.
  Instruction* low = bound(0);
  Instruction* clamped = add(Opcode::kClamp, ishape, {low, idx, bound(ts.dim(0) - 1)}, "index");
  Instruction* local = add(Opcode::kSubtract, ishape, {clamped, splat(first_row(t, rows, is.type()), ishape)}, "local");
  const Shape pred(ir::PrimitiveType::kPred, is.dims());
  Instruction* above = add(Opcode::kCompare, pred, {local, low}, "mine");
  above->attrs().direction = ir::ComparisonDirection::kGe;
  Instruction* below = add(Opcode::kCompare, pred, {local, bound(rows)}, "mine");
  below->attrs().direction = ir::ComparisonDirection::kLt;
  Instruction* mine = add(Opcode::kAnd, pred, {above, below}, "mine");
  Instruction* safe = add(Opcode::kClamp, ishape, {low, local, bound(rows - 1)}, "local");
  Instruction* rows_found = clone(i, i.shape(), {piece, safe});
  // Zero where the row is another device's.
  Shape result(i.shape().type(), i.shape().dims());
  std::vector<int64_t> batch;  // the result's dimensions that are the indices'
  for (int64_t d = 0; d < result.rank(); ++d)
    if (std::find(g.offset_dims.begin(), g.offset_dims.end(), d) == g.offset_dims.end()) batch.push_back(d);
  Instruction* keep = add(Opcode::kBroadcast, Shape(ir::PrimitiveType::kPred, result.dims()), {mine}, "mine");
  keep->attrs().dimensions = batch;
  Instruction* zero = splat(constant(ir::Literal(Shape::scalar(result.type())), "zero"), result);
  Instruction* masked = add(Opcode::kSelect, result, {keep, rows_found, zero}, i.name());
  return Held{all_reduce(masked, t.groups_along({0}), adder(result.type())),
              Layout{Tiling::replicated(result.rank(), devices_), {}}};
}

std::optional<Held> Partitioner::partition_row_scatter(const Instruction& i) {
  if (i.operand_count() != 3) return std::nullopt;
  const Instruction& table = *i.operand(0);
  const Instruction& indices = *i.operand(1);
  const Instruction& updates = *i.operand(2);
  const ir::ScatterDimNumbers& sd = i.attrs().scatter_dims;
  const Tiling& t = *held_.at(&table).layout.array;
  const Shape& ts = table.shape();
  const Shape& is = indices.shape();
  if (t.tiles(0) == 1 || t.pieces() != t.tiles(0) || ts.dim(0) % t.tiles(0) != 0) return std::nullopt;
  const std::vector<int64_t> rows_only{0};
  if (sd.inserted_window_dims != rows_only || sd.scatter_dims_to_operand_dims != rows_only ||
      !sd.input_batching_dims.empty() || sd.index_vector_dim != is.rank() || !ir::is_integral(is.type()))
    return std::nullopt;
  for (size_t j = 0; j < sd.update_window_dims.size(); ++j)
    if (updates.shape().dim(sd.update_window_dims[j]) != ts.dim(static_cast<int64_t>(j) + 1)) return std::nullopt;
  const Shape ishape(is.type(), is.dims());
  Instruction* first = splat(first_row(t, ts.dim(0) / t.tiles(0), is.type()), ishape);
  Instruction* local = add(Opcode::kSubtract, ishape, {replicate(indices).hlo, first}, "local");
  Instruction* piece = held_.at(&table).hlo;
  Instruction* c = clone(i, piece->shape(), {piece, local, replicate(updates).hlo});
  return Held{c, Layout{t, {}}};
}

}  // namespace podsim::passes::spmd
