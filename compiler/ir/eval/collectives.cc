// Collective ops of the reference evaluator, with XLA's participant rules
// (CollectiveOpGroupMode) and a fixed reduction order: contributions combine left to
// right in the order the group lists its devices, so every run gives the same bits.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "compiler/ir/collective_groups.h"
#include "compiler/ir/eval/collectives.h"
#include "compiler/ir/eval/elementwise.h"
#include "compiler/ir/module.h"

namespace podsim::ir::eval {
namespace {

// The devices taking part with this one, in the order the collective combines them.
std::vector<int64_t> participants(const Instruction& instruction, DeviceContext& context) {
  const DeviceGrid& grid = context.grid();
  if (grid.solo) return {context.device()};
  return collective_participants(instruction, grid.replicas, grid.partitions, context.device());
}

int64_t position_in(const std::vector<int64_t>& group, int64_t device) {
  return std::find(group.begin(), group.end(), device) - group.begin();
}

Literal tuple_of_copies(Operands operands) {
  std::vector<Literal> copies;
  for (const Literal* operand : operands) copies.push_back(*operand);
  return Literal::tuple(std::move(copies));
}

void check_array(const Instruction& instruction, const Literal& value) {
  if (value.shape().is_tuple())
    fail("{}: operand shape {} is a tuple; pass arrays", describe(instruction), value.shape().to_string(false));
}

int64_t collective_dimension(const Instruction& instruction, const Literal& operand) {
  const auto& dims = instruction.attrs().dimensions;
  if (dims.size() != 1)
    fail("{}: needs exactly one dimension in dimensions={{...}}, got {}", describe(instruction), dims.size());
  if (dims[0] < 0 || dims[0] >= operand.shape().rank())
    fail("{}: dimension {} is out of range for operand shape {}", describe(instruction), dims[0],
         operand.shape().to_string(false));
  return dims[0];
}

// Byte extents around dimension dim: (product of dims before, bytes per index of dim).
std::pair<int64_t, int64_t> extents(const Shape& shape, int64_t dim) {
  int64_t outer = 1;
  int64_t inner = type_byte_size(shape.type());
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (i < dim) outer *= shape.dim(i);
    else if (i > dim) inner *= shape.dim(i);
  }
  return {outer, inner};
}

Literal concatenate(const Instruction& instruction, const std::vector<const Literal*>& parts, int64_t dim) {
  Shape shape = parts[0]->shape();
  int64_t total = 0;
  for (const Literal* part : parts) {
    if (part->shape().rank() != shape.rank())
      fail("{}: participants contribute shapes {} and {}", describe(instruction), part->shape().to_string(false),
           shape.to_string(false));
    Shape a = part->shape(), b = shape;
    a.mutable_dims()[static_cast<size_t>(dim)] = 0;
    b.mutable_dims()[static_cast<size_t>(dim)] = 0;
    if (!a.compatible(b))
      fail("{}: participants contribute shapes {} and {}", describe(instruction), part->shape().to_string(false),
           parts[0]->shape().to_string(false));
    total += part->shape().dim(dim);
  }
  shape.mutable_dims()[static_cast<size_t>(dim)] = total;
  Literal out(shape);
  auto [outer, inner] = extents(shape, dim);
  std::byte* o = out.bytes().data();
  for (int64_t i = 0; i < outer; ++i) {
    for (const Literal* part : parts) {
      auto bytes = static_cast<size_t>(part->shape().dim(dim) * inner);
      if (bytes > 0) std::memcpy(o, part->bytes().data() + static_cast<size_t>(i) * bytes, bytes);  // empty: no data
      o += bytes;
    }
  }
  return out;
}

// Chunk index of count equal chunks of value along dim.
Literal chunk(const Instruction& instruction, const Literal& value, int64_t dim, int64_t count, int64_t index) {
  int64_t size = value.shape().dim(dim);
  if (size % count != 0)
    fail("{}: dimension {} of size {} does not split into {} equal parts", describe(instruction), dim, size, count);
  Shape shape = value.shape();
  shape.mutable_dims()[static_cast<size_t>(dim)] = size / count;
  Literal out(shape);
  auto [outer, inner] = extents(shape, dim);
  auto bytes = static_cast<size_t>((size / count) * inner);
  for (int64_t i = 0; i < outer && bytes > 0; ++i)  // an empty chunk has no data to copy
    std::memcpy(out.bytes().data() + static_cast<size_t>(i) * bytes,
                value.bytes().data() + static_cast<size_t>(i * count + index) * bytes, bytes);
  return out;
}

// The binary elementwise op to_apply computes on its two parameters, if it is only that.
const Instruction* simple_reducer(const Computation& to_apply) {
  const Instruction* root = to_apply.root();
  if (to_apply.instruction_count() != 3 || to_apply.parameter_count() != 2 || root == nullptr) return nullptr;
  if (!is_elementwise(root->opcode()) || opcode_arity(root->opcode()) != 2 || root->opcode() == Opcode::kCompare)
    return nullptr;
  if (root->operand(0) != to_apply.parameter(0) || root->operand(1) != to_apply.parameter(1)) return nullptr;
  return root;
}

// a (op) b elementwise, with op the scalar computation to_apply.
Literal combine(const Instruction& instruction, const Computation& to_apply, const Literal& a, const Literal& b,
                Context& context) {
  check_array(instruction, a);
  if (!a.shape().compatible(b.shape()))
    fail("{}: participants contribute shapes {} and {}", describe(instruction), a.shape().to_string(false),
         b.shape().to_string(false));
  if (const Instruction* op = simple_reducer(to_apply);
      op != nullptr && op->shape().is_scalar() && op->shape().type() == a.type()) {
    Instruction whole(op->name(), op->opcode(), Shape(a.type(), a.shape().dims()));
    whole.set_pos(op->pos());
    const Literal* pair[] = {&a, &b};
    return eval_elementwise(whole, pair);
  }
  Literal out(a.shape());
  auto width = static_cast<size_t>(type_byte_size(a.type()));
  Literal x(Shape::scalar(a.type()));
  Literal y(Shape::scalar(a.type()));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    auto offset = static_cast<size_t>(i) * width;
    std::memcpy(x.bytes().data(), a.bytes().data() + offset, width);
    std::memcpy(y.bytes().data(), b.bytes().data() + offset, width);
    std::vector<Literal> args;
    args.push_back(x);
    args.push_back(y);
    Literal r = context.call(to_apply, std::move(args));
    if (!r.shape().compatible(x.shape()))
      fail("{}: to_apply {} returned {} for {} operands", describe(instruction), to_apply.name(),
           r.shape().to_string(false), x.shape().to_string(false));
    std::memcpy(out.bytes().data() + offset, r.bytes().data(), width);
  }
  return out;
}

const Computation& reducer(const Instruction& instruction) {
  if (instruction.called().size() != 1 || instruction.called(0) == nullptr)
    fail("{}: needs a to_apply computation", describe(instruction));
  return *instruction.called(0);
}

// Element k of every contribution reduced in group order.
Literal reduce_all(const Instruction& instruction, const std::vector<Literal>& all, size_t k, Context& context) {
  const Computation& to_apply = reducer(instruction);
  Literal acc = all[0].elements()[k];
  for (size_t m = 1; m < all.size(); ++m) acc = combine(instruction, to_apply, acc, all[m].elements()[k], context);
  return acc;
}

Literal pack(std::vector<Literal> results) {
  if (results.size() == 1) return std::move(results[0]);
  return Literal::tuple(std::move(results));
}

Literal all_reduce(const Instruction& instruction, Operands operands, DeviceContext& context, bool scatter) {
  std::vector<int64_t> group = participants(instruction, context);
  for (const Literal* operand : operands) check_array(instruction, *operand);
  int64_t dim = scatter ? collective_dimension(instruction, *operands[0]) : 0;
  Contributions all =
      context.rendezvous().exchange(context.device(), instruction, group, tuple_of_copies(operands));
  int64_t me = position_in(group, context.device());
  auto count = static_cast<int64_t>(group.size());
  std::vector<Literal> results;
  for (size_t k = 0; k < operands.size(); ++k) {
    Literal sum = reduce_all(instruction, *all, k, context);
    results.push_back(scatter ? chunk(instruction, sum, dim, count, me) : std::move(sum));
  }
  return pack(std::move(results));
}

Literal all_gather(const Instruction& instruction, Operands operands, DeviceContext& context) {
  std::vector<int64_t> group = participants(instruction, context);
  for (const Literal* operand : operands) check_array(instruction, *operand);
  int64_t dim = collective_dimension(instruction, *operands[0]);
  Contributions all =
      context.rendezvous().exchange(context.device(), instruction, group, tuple_of_copies(operands));
  std::vector<Literal> results;
  for (size_t k = 0; k < operands.size(); ++k) {
    std::vector<const Literal*> parts;
    for (const Literal& contribution : *all) parts.push_back(&contribution.elements()[k]);
    results.push_back(concatenate(instruction, parts, dim));
  }
  return pack(std::move(results));
}

Literal all_to_all(const Instruction& instruction, Operands operands, DeviceContext& context) {
  std::vector<int64_t> group = participants(instruction, context);
  int64_t me = position_in(group, context.device());
  auto count = static_cast<int64_t>(group.size());
  if (!instruction.attrs().dimensions.empty()) {
    if (operands.size() != 1)
      fail("{}: all-to-all with dimensions={{...}} takes one operand, got {}", describe(instruction),
           operands.size());
    check_array(instruction, *operands[0]);
    int64_t dim = collective_dimension(instruction, *operands[0]);
    if (operands[0]->shape().dim(dim) % count != 0)
      fail("{}: dimension {} of size {} does not split into {} equal parts", describe(instruction), dim,
           operands[0]->shape().dim(dim), count);
    Contributions all = context.rendezvous().exchange(context.device(), instruction, group, *operands[0]);
    std::vector<Literal> received;
    for (const Literal& contribution : *all) received.push_back(chunk(instruction, contribution, dim, count, me));
    std::vector<const Literal*> parts;
    for (const Literal& r : received) parts.push_back(&r);
    return concatenate(instruction, parts, dim);
  }
  if (static_cast<int64_t>(operands.size()) != count)
    fail("{}: all-to-all without dimensions sends operand i to group member i, so it needs {} operands (one per "
         "member), got {}",
         describe(instruction), count, operands.size());
  Contributions all =
      context.rendezvous().exchange(context.device(), instruction, group, tuple_of_copies(operands));
  std::vector<Literal> results;
  for (const Literal& contribution : *all) results.push_back(contribution.elements()[static_cast<size_t>(me)]);
  return Literal::tuple(std::move(results));
}

Literal collective_permute(const Instruction& instruction, Operands operands, DeviceContext& context) {
  if (operands.size() != 1)
    fail("{}: collective-permute takes one operand, got {}", describe(instruction), operands.size());
  const DeviceGrid& grid = context.grid();
  int64_t device = context.device();
  bool cross_partition = collective_group_mode(instruction) == GroupMode::kCrossPartition;
  // Every device of the replica (or partition) takes part; pairs name ids within it.
  std::vector<int64_t> domain;
  int64_t my_id = 0;
  if (grid.solo) {
    domain = {device};
  } else if (cross_partition) {
    for (int64_t p = 0; p < grid.partitions; ++p) domain.push_back(device - device % grid.partitions + p);
    my_id = device % grid.partitions;
  } else {
    for (int64_t r = 0; r < grid.replicas; ++r) domain.push_back(r * grid.partitions + device % grid.partitions);
    my_id = device / grid.partitions;
  }
  std::optional<int64_t> source;
  for (auto [from, to] : instruction.attrs().source_target_pairs) {
    if (!grid.solo && (from < 0 || to < 0 || from >= static_cast<int64_t>(domain.size()) ||
                       to >= static_cast<int64_t>(domain.size())))
      fail("{}: source_target_pairs entry {{{},{}}} is out of range for {} {}", describe(instruction), from, to,
           domain.size(), cross_partition ? "partitions" : "replicas");
    if (to != my_id) continue;
    if (source) fail("{}: id {} is the target of more than one source", describe(instruction), to);
    source = from;
  }
  Contributions all = context.rendezvous().exchange(device, instruction, domain, *operands[0]);
  if (!source || *source < 0 || *source >= static_cast<int64_t>(all->size())) return Literal(operands[0]->shape());
  return (*all)[static_cast<size_t>(*source)];
}

// The value of the first device of the group, on every device of it.
Literal collective_broadcast(const Instruction& instruction, Operands operands, DeviceContext& context) {
  check_array(instruction, *operands[0]);
  std::vector<int64_t> group = participants(instruction, context);
  Contributions all = context.rendezvous().exchange(context.device(), instruction, group, *operands[0]);
  return (*all)[0];
}

// An async start's value as XLA shapes it, around its collective's result.
Literal start_value(const Instruction& instruction, Operands operands, Literal result) {
  switch (instruction.opcode()) {
    case Opcode::kAllGatherStart: {
      std::vector<Literal> copies;
      for (const Literal* operand : operands) copies.push_back(*operand);
      return Literal::tuple({pack(std::move(copies)), std::move(result)});
    }
    case Opcode::kCollectivePermuteStart: {
      std::vector<Literal> elements;
      elements.push_back(*operands[0]);
      elements.push_back(std::move(result));
      if (instruction.shape().is_tuple() && instruction.shape().tuple_size() == 4)
        for (int k = 0; k < 2; ++k) elements.push_back(Literal::scalar<uint32_t>(PrimitiveType::kU32, 0));
      return Literal::tuple(std::move(elements));
    }
    default:
      return result;
  }
}

}  // namespace

Literal eval_async_done(const Instruction& instruction, const Literal& start) {
  if (instruction.opcode() == Opcode::kAllReduceDone) return start;
  if (!start.shape().is_tuple() || start.elements().size() < 2)
    fail("{}: its operand is not the value of a start", describe(instruction));
  return start.elements()[1];
}

Literal eval_collective(const Instruction& instruction, Operands operands, DeviceContext& context) {
  if (operands.empty()) fail("{}: a collective needs operands", describe(instruction));
  if (collective_kind(instruction.opcode()) != instruction.opcode()) {
    Literal result;
    switch (collective_kind(instruction.opcode())) {
      case Opcode::kAllReduce: result = all_reduce(instruction, operands, context, false); break;
      case Opcode::kAllGather: result = all_gather(instruction, operands, context); break;
      default: result = collective_permute(instruction, operands, context); break;
    }
    return start_value(instruction, operands, std::move(result));
  }
  switch (instruction.opcode()) {
    case Opcode::kCollectiveBroadcast: return collective_broadcast(instruction, operands, context);
    case Opcode::kAllReduce: return all_reduce(instruction, operands, context, false);
    case Opcode::kReduceScatter: return all_reduce(instruction, operands, context, true);
    case Opcode::kAllGather: return all_gather(instruction, operands, context);
    case Opcode::kAllToAll: return all_to_all(instruction, operands, context);
    case Opcode::kCollectivePermute: return collective_permute(instruction, operands, context);
    default: fail("internal: {} is not a collective", opcode_name(instruction.opcode()));
  }
}

}  // namespace podsim::ir::eval
