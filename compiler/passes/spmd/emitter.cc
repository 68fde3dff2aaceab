#include "compiler/passes/spmd/emitter.h"

#include <algorithm>
#include <memory>

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

Emitter::Emitter(ir::Module& module, int64_t devices) : module_(module), devices_(devices) {
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      if (i->attrs().channel_id) next_channel_ = std::max(next_channel_, *i->attrs().channel_id + 1);
}

Instruction* Emitter::add(Opcode op, Shape shape, std::vector<Instruction*> operands, std::string_view name) {
  auto i = std::make_unique<Instruction>(out_->unique_name(name), op, std::move(shape));
  i->set_operands(std::move(operands));
  return out_->add(std::move(i));
}

Instruction* Emitter::constant(ir::Literal value, std::string_view name) {
  Instruction* c = add(Opcode::kConstant, value.shape(), {}, name);
  c->attrs().literal = std::move(value);
  return c;
}

Instruction* Emitter::per_partition(const std::vector<int64_t>& values) {
  const bool same = std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; });
  if (same) return constant(ir::Literal::scalar(ir::PrimitiveType::kS32, values[0]), "offset");
  if (!partition_) {
    Instruction* id = add(Opcode::kPartitionId, Shape::scalar(ir::PrimitiveType::kU32), {}, "partition");
    partition_ = add(Opcode::kConvert, Shape::scalar(ir::PrimitiveType::kS32), {id}, "partition");
  }
  ir::Literal table(Shape(ir::PrimitiveType::kS32, {devices_}));
  for (int64_t p = 0; p < devices_; ++p) table.set_from_int64(p, values[static_cast<size_t>(p)]);
  Instruction* t = constant(std::move(table), "offsets");
  Instruction* one = add(Opcode::kDynamicSlice, Shape(ir::PrimitiveType::kS32, {1}), {t, partition_}, "offset");
  one->attrs().dynamic_slice_sizes = {1};
  return add(Opcode::kReshape, Shape::scalar(ir::PrimitiveType::kS32), {one}, "offset");
}

void Emitter::attribute(Instruction* c) {
  if (current_ == nullptr) return;
  c->metadata() = current_->metadata();
  if (c->metadata().op_name.empty()) c->metadata().op_name = current_->name();
}

Instruction* Emitter::splat(Instruction* scalar, const Shape& shape) {
  Instruction* b = add(Opcode::kBroadcast, shape, {scalar}, scalar->name());
  b->attrs().dimensions = {};
  return b;
}

Instruction* Emitter::dynamic_slice(Instruction* x, int64_t d, const std::vector<int64_t>& offsets, int64_t width) {
  Shape piece = x->shape();
  piece.clear_layout();
  piece.mutable_dims()[static_cast<size_t>(d)] = width;
  std::vector<Instruction*> operands{x};
  for (int64_t k = 0; k < piece.rank(); ++k)
    operands.push_back(k == d ? per_partition(offsets)
                              : constant(ir::Literal::scalar(ir::PrimitiveType::kS32, 0), "offset"));
  Instruction* cut = add(Opcode::kDynamicSlice, piece, std::move(operands), x->name());
  cut->attrs().dynamic_slice_sizes = piece.dims();
  return cut;
}

Instruction* Emitter::permute(Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs) {
  Instruction* moved = add(Opcode::kCollectivePermute, x->shape(), {x}, "halo");
  moved->attrs().source_target_pairs = std::move(pairs);
  attribute(moved);
  moved->attrs().channel_id = next_channel();
  return moved;
}

Instruction* Emitter::choose(const std::vector<bool>& on, Instruction* a, Instruction* b) {
  const Shape scalar = Shape::scalar(ir::PrimitiveType::kPred);
  std::vector<int64_t> flags(on.begin(), on.end());
  Instruction* zero = constant(ir::Literal::scalar(ir::PrimitiveType::kS32, 0), "zero");
  Instruction* here = add(Opcode::kCompare, scalar, {per_partition(flags), zero}, "here");
  here->attrs().direction = ir::ComparisonDirection::kNe;
  Shape values = a->shape();
  values.clear_layout();
  return add(Opcode::kSelect, values, {splat(here, Shape(ir::PrimitiveType::kPred, values.dims())), a, b}, a->name());
}

Instruction* Emitter::first_row(const Tiling& t, int64_t rows, ir::PrimitiveType type) {
  std::vector<int64_t> first;
  for (int64_t p = 0; p < devices_; ++p) first.push_back(t.position(p)[0] * rows);
  Instruction* f = per_partition(first);
  return type == ir::PrimitiveType::kS32 ? f : add(Opcode::kConvert, Shape::scalar(type), {f}, "first");
}

void Emitter::collective_attrs(Instruction* c, const std::vector<std::vector<int64_t>>& partitions) {
  attribute(c);
  ir::ReplicaGroups groups;
  for (int64_t replica = 0; replica < module_.replica_count; ++replica)
    for (const std::vector<int64_t>& g : partitions) {
      std::vector<int64_t>& ids = groups.groups.emplace_back();
      for (int64_t p : g) ids.push_back(replica * devices_ + p);
    }
  c->attrs().replica_groups = std::move(groups);
  c->attrs().channel_id = next_channel();
  c->attrs().use_global_device_ids = true;
}

}  // namespace podsim::passes::spmd
