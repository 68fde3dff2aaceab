// Shape inference of collectives. Group sizes follow XLA: replica_groups hold replica
// ids, partition ids or flattened device ids depending on channel_id and
// use_global_device_ids; empty groups mean every replica (or partition) takes part.
#include <fmt/format.h>

#include <set>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {
namespace {

const Module* module_of(const Instruction& inst) {
  return inst.parent() ? inst.parent()->parent() : nullptr;
}

// Participants per group. Unknown when groups are empty and the module gives no count
// above 1 (its default), as XLA's verifier then trusts the declared shape.
struct GroupSize {
  int64_t size = 1;
  bool known = false;
};

GroupSize group_size(const Instruction& inst) {
  GroupMode mode = collective_group_mode(inst);
  const Module* m = module_of(inst);
  const auto& rg = inst.attrs().replica_groups;
  if (rg && !rg->groups.empty()) {
    auto size = static_cast<int64_t>(rg->groups[0].size());
    for (size_t g = 0; g < rg->groups.size(); ++g)
      if (static_cast<int64_t>(rg->groups[g].size()) != size)
        fail("replica groups must all have the same size; group 0 has {} ids, group {} has {}",
             size, g, rg->groups[g].size());
    if (size == 0) fail("replica groups are empty");
    if (mode == GroupMode::kCrossReplicaAndPartition && m) {
      size = mul_checked(size, m->num_partitions);
      if (size < 1)
        fail("group size {} is not positive (num_partitions {})", size, m->num_partitions);
    }
    return {size, true};
  }
  if (mode == GroupMode::kFlattenedId) fail("use_global_device_ids needs explicit replica_groups");
  if (!m) return {};
  int64_t count = mode == GroupMode::kCrossReplica ? m->replica_count
                  : mode == GroupMode::kCrossPartition
                      ? m->num_partitions
                      : mul_checked(m->replica_count, m->num_partitions);
  return {count, count > 1};
}

int64_t single_dimension(const Instruction& inst) {
  const auto& dims = inst.attrs().dimensions;
  if (dims.size() != 1) fail("dimensions {} must name exactly one dimension", str(dims));
  return dims[0];
}

// The declared shape of inst's collective result: an all-gather-start declares
// (operands, results).
const Shape& declared_result(const Instruction& inst) {
  const Shape& d = inst.shape();
  if (inst.opcode() == Opcode::kAllGatherStart && d.is_tuple() && d.tuple_size() == 2)
    return d.element(1);
  return d;
}

const Shape* declared_element(const Instruction& inst, int64_t i) {
  const Shape& d = declared_result(inst);
  if (inst.operand_count() == 1) return d.is_array() ? &d : nullptr;
  return d.is_tuple() && i < d.tuple_size() && d.element(i).is_array() ? &d.element(i) : nullptr;
}

Shape tuple_if_many(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::tuple(std::move(shapes));
}

void check_to_apply(const Instruction& inst) {
  expect_called_count(inst, 1);
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    Shape t = Shape::scalar(operand_shape(inst, i).type());
    check_signature(called_computation(inst, 0), {t, t}, &t, "to_apply");
  }
}

// all-gather multiplies and reduce-scatter divides dimension d of every operand by the
// group size. With an unknown group size the factor is read off the declared shape.
Shape infer_resized(const Instruction& inst, bool gather) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  int64_t d = single_dimension(inst);
  GroupSize group = group_size(inst);
  std::vector<Shape> results;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const Shape& in = operand_shape(inst, i);
    expect_array(in, fmt::format("operand {}", i));
    if (d < 0 || d >= in.rank())
      fail("dimension {} is out of range for operand {} {}", d, i, str(in));
    int64_t size = in.dim(d);
    int64_t factor = group.size;
    if (!group.known) {
      const Shape* declared = declared_element(inst, i);
      int64_t out = declared && declared->rank() == in.rank() ? declared->dim(d) : size;
      int64_t big = gather ? out : size, small = gather ? size : out;
      if (small > 0 && big % small == 0 && big > 0)
        factor = big / small;
      else if (small != 0 || big != 0)
        fail(
            "replica_groups are empty and the module has no replica count, so the group size is "
            "unknown; declared dimension {} of size {} is not a multiple of {}",
            d, out, size);
    }
    std::vector<int64_t> dims = in.dims();
    if (gather) {
      dims[static_cast<size_t>(d)] = mul_checked(size, factor);
    } else {
      if (size % factor != 0)
        fail("dimension {} of operand {} {} is not divisible by the group size {}", d, i, str(in),
             factor);
      dims[static_cast<size_t>(d)] = size / factor;
    }
    results.push_back(make_shape(in.type(), std::move(dims)));
  }
  return tuple_if_many(std::move(results));
}

}  // namespace

int64_t collective_id_bound(const Instruction& inst, GroupMode mode) {
  const Module* m = module_of(inst);
  if (!m) return 0;
  int64_t bound = m->replica_count;
  if (mode == GroupMode::kCrossPartition) bound = m->num_partitions;
  if (mode == GroupMode::kFlattenedId &&
      __builtin_mul_overflow(m->replica_count, m->num_partitions, &bound))
    return 0;
  return bound > 1 ? bound : 0;
}

Shape infer_all_reduce(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  collective_group_mode(inst);
  std::vector<Shape> results;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const Shape& in = operand_shape(inst, i);
    expect_array(in, fmt::format("operand {}", i));
    results.emplace_back(in.type(), in.dims());
  }
  check_to_apply(inst);
  return tuple_if_many(std::move(results));
}

Shape infer_all_gather(const Instruction& inst) { return infer_resized(inst, /*gather=*/true); }

Shape infer_reduce_scatter(const Instruction& inst) {
  Shape result = infer_resized(inst, /*gather=*/false);
  check_to_apply(inst);
  return result;
}

Shape infer_all_to_all(const Instruction& inst) {
  if (inst.operand_count() < 1) fail("expects at least one operand");
  std::vector<Shape> results;
  for (int64_t i = 0; i < inst.operand_count(); ++i) {
    const Shape& in = operand_shape(inst, i);
    expect_array(in, fmt::format("operand {}", i));
    results.emplace_back(in.type(), in.dims());
  }
  GroupSize group = group_size(inst);
  if (inst.attrs().dimensions.empty()) return Shape::tuple(std::move(results));
  // Array form: the operand is split along d into one chunk per participant.
  if (inst.operand_count() != 1)
    fail("with dimensions it takes one operand, got {}", inst.operand_count());
  int64_t d = single_dimension(inst);
  const Shape& in = results[0];
  if (d < 0 || d >= in.rank()) fail("dimension {} is out of range for {}", d, str(in));
  if (group.known && in.dim(d) % group.size != 0)
    fail("dimension {} of {} is not divisible by the group size {}", d, str(in), group.size);
  return results[0];
}

Shape infer_collective_permute(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  std::set<int64_t> sources, targets;
  for (const auto& [source, target] : inst.attrs().source_target_pairs) {
    if (source < 0 || target < 0)
      fail("source_target_pairs has a negative id in {{{},{}}}", source, target);
    if (!sources.insert(source).second)
      fail("source {} appears twice in source_target_pairs", source);
    if (!targets.insert(target).second)
      fail("target {} appears twice in source_target_pairs", target);
  }
  return without_layout(in);
}

Shape infer_collective_broadcast(const Instruction& inst) {
  const Shape& in = operand_shape(inst, 0);
  expect_array(in, "operand 0");
  group_size(inst);  // groups of equal size
  return without_layout(in);
}

Shape infer_async_start(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kAllReduceStart:
      return infer_all_reduce(inst);
    case Opcode::kAllGatherStart: {
      std::vector<Shape> operands;
      for (int64_t i = 0; i < inst.operand_count(); ++i)
        operands.push_back(without_layout(operand_shape(inst, i)));
      Shape result = infer_all_gather(inst);
      return Shape::tuple({tuple_if_many(std::move(operands)), std::move(result)});
    }
    case Opcode::kCollectivePermuteStart: {
      Shape result = infer_collective_permute(inst);
      std::vector<Shape> elements{result, result};
      // XLA before 2024 adds two u32[] context words; both forms are accepted.
      const Shape& d = inst.shape();
      if (d.is_tuple() && d.tuple_size() == 4)
        for (int k = 0; k < 2; ++k) elements.push_back(Shape::scalar(PrimitiveType::kU32));
      return Shape::tuple(std::move(elements));
    }
    default:
      fail("internal: {} is not an async start", opcode_name(inst.opcode()));
  }
}

Shape infer_async_done(const Instruction& inst) {
  const Opcode start = inst.opcode() == Opcode::kAllReduceDone   ? Opcode::kAllReduceStart
                       : inst.opcode() == Opcode::kAllGatherDone ? Opcode::kAllGatherStart
                                                                 : Opcode::kCollectivePermuteStart;
  const Instruction* operand = inst.operand(0);
  if (!operand || operand->opcode() != start)
    fail("its operand must be a {}, got {}", opcode_name(start),
         operand ? opcode_name(operand->opcode()) : "nothing");
  const Shape& s = operand->shape();
  if (start == Opcode::kAllReduceStart) return without_layout(s);
  if (!s.is_tuple() || s.tuple_size() < 2) fail("its operand's shape {} is not a start's", str(s));
  return without_layout(s.element(1));
}

}  // namespace podsim::ir::infer
