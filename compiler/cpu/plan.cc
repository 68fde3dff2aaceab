#include "compiler/cpu/plan.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <unordered_map>

#include "common/error.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

constexpr size_t kAlign = 64;

void literal_leaves(const ir::Literal& literal, std::vector<const ir::Literal*>& out) {
  if (literal.shape().is_tuple()) {
    for (const ir::Literal& e : literal.elements()) literal_leaves(e, out);
  } else {
    out.push_back(&literal);
  }
}

size_t leaf_count(const ir::Shape& shape) { return leaf_shapes(shape).size(); }

thread_local int depth = 0;

}  // namespace

int plan_depth() { return depth; }

void AlignedDelete::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t{kAlign});
}

AlignedBuffer allocate_aligned(size_t bytes) {
  return AlignedBuffer(static_cast<std::byte*>(
      ::operator new[](std::max<size_t>(bytes, 1), std::align_val_t{kAlign})));
}

Plan::Plan(const ir::Computation& computation) {
  struct DepthGuard {
    DepthGuard() { ++depth; }
    ~DepthGuard() { --depth; }
  } guard;
  const Instruction* root = computation.root();
  if (root == nullptr) fail("computation {} has no root instruction", computation.name());
  // First argument leaf of each parameter.
  std::vector<size_t> parameter_leaf(static_cast<size_t>(computation.parameter_count()), 0);
  for (int64_t p = 0; p < computation.parameter_count(); ++p) {
    const Instruction* parameter = computation.parameter(p);
    if (parameter == nullptr) fail("computation {} has no parameter {}", computation.name(), p);
    parameter_leaf[static_cast<size_t>(p)] = argument_leaves_;
    argument_leaves_ += leaf_count(parameter->shape());
  }
  std::unordered_map<const Instruction*, std::vector<BufferRef>> leaves;
  std::vector<size_t> vb_bytes, vb_def;
  auto leaves_of = [&](const Instruction* i) -> const std::vector<BufferRef>& {
    auto it = leaves.find(i);
    if (it == leaves.end())
      fail("computation {}: operand {} is not defined before its use", computation.name(),
           i ? i->name() : "<null>");
    return it->second;
  };

  for (const auto& owned : computation.instructions()) {
    const Instruction& i = *owned;
    std::vector<BufferRef> out;
    switch (i.opcode()) {
      case Opcode::kParameter: {
        const size_t n = leaf_count(i.shape());
        const auto number = static_cast<size_t>(i.attrs().parameter_number);
        if (number >= parameter_leaf.size() ||
            computation.parameter(i.attrs().parameter_number) != &i)
          fail("computation {}: parameter {} has number {}, which is out of range or taken twice",
               computation.name(), i.name(), number);
        for (size_t j = 0; j < n; ++j)
          out.push_back({BufferRef::Kind::kArgument,
                         static_cast<int32_t>(parameter_leaf[number] + j), nullptr});
        leaves[&i] = std::move(out);
        continue;
      }
      case Opcode::kConstant: {
        if (!i.attrs().literal) fail("constant {} has no value", i.name());
        std::vector<const ir::Literal*> values;
        literal_leaves(*i.attrs().literal, values);
        for (const ir::Literal* v : values)
          out.push_back({BufferRef::Kind::kConstant, 0, v->bytes().data()});
        leaves[&i] = std::move(out);
        continue;
      }
      case Opcode::kTuple:
        for (const Instruction* operand : i.operands()) {
          const std::vector<BufferRef>& l = leaves_of(operand);
          out.insert(out.end(), l.begin(), l.end());
        }
        leaves[&i] = std::move(out);
        continue;
      case Opcode::kGetTupleElement: {
        const ir::Shape& tuple = i.operand(0)->shape();
        const int64_t index = i.attrs().tuple_index;
        if (!tuple.is_tuple() || index < 0 || index >= tuple.tuple_size())
          fail("get-tuple-element {}: index {} is out of range for {}", i.name(), index,
               tuple.to_string(false));
        size_t start = 0;
        for (int64_t e = 0; e < index; ++e) start += leaf_count(tuple.element(e));
        const std::vector<BufferRef>& l = leaves_of(i.operand(0));
        const size_t count = leaf_count(tuple.element(index));
        out.assign(l.begin() + static_cast<ptrdiff_t>(start),
                   l.begin() + static_cast<ptrdiff_t>(start + count));
        leaves[&i] = std::move(out);
        continue;
      }
      default:
        break;
    }
    if ((i.opcode() == Opcode::kOptimizationBarrier && i.operand_count() == 1) ||
        is_byte_alias(i)) {
      leaves[&i] = leaves_of(i.operand(0));
      continue;
    }
    PlanStep step;
    step.instruction = &i;
    step.kernel = make_kernel(i);
    for (const Instruction* operand : i.operands()) {
      const std::vector<BufferRef>& l = leaves_of(operand);
      step.operands.insert(step.operands.end(), l.begin(), l.end());
    }
    for (const ir::Shape& shape : leaf_shapes(i.shape())) {
      out.push_back({BufferRef::Kind::kSlot, static_cast<int32_t>(vb_bytes.size()), nullptr});
      vb_bytes.push_back(static_cast<size_t>(shape.byte_size()));
      vb_def.push_back(steps_.size());
    }
    step.outputs = out;
    if (i.opcode() == Opcode::kFusion) ++fusions_;
    steps_.push_back(std::move(step));
    leaves[&i] = std::move(out);
  }

  // Result leaves: a step's buffer is written into the result directly (its first
  // occurrence); everything else is copied at the end.
  tuple_result_ = root->shape().is_tuple();
  if (tuple_result_)
    result_shapes_ = root->shape().elements();
  else
    result_shapes_ = {root->shape()};
  const std::vector<BufferRef>& root_leaves = leaves_of(root);
  const std::vector<ir::Shape> root_shapes = leaf_shapes(root->shape());
  output_leaves_ = root_shapes.size();
  std::vector<int32_t> vb_output(vb_bytes.size(), -1);
  for (size_t k = 0; k < root_leaves.size(); ++k) {
    const BufferRef& ref = root_leaves[k];
    const auto bytes = static_cast<size_t>(root_shapes[k].byte_size());
    output_bytes_ += static_cast<int64_t>(bytes);
    if (ref.kind == BufferRef::Kind::kSlot && vb_output[static_cast<size_t>(ref.index)] < 0) {
      vb_output[static_cast<size_t>(ref.index)] = static_cast<int32_t>(k);
      continue;
    }
    if (ref.kind == BufferRef::Kind::kArgument) alias_bytes_ += static_cast<int64_t>(bytes);
    copies_.push_back({ref, static_cast<int32_t>(k), bytes});
  }

  // Liveness and greedy slot assignment.
  std::vector<size_t> last_use = vb_def;
  for (size_t s = 0; s < steps_.size(); ++s)
    for (const BufferRef& r : steps_[s].operands)
      if (r.kind == BufferRef::Kind::kSlot) last_use[static_cast<size_t>(r.index)] = s;
  std::vector<std::vector<int32_t>> dying(steps_.size());
  for (size_t vb = 0; vb < vb_bytes.size(); ++vb)
    if (vb_output[vb] < 0) dying[last_use[vb]].push_back(static_cast<int32_t>(vb));
  std::vector<size_t> slot_bytes;
  std::vector<int32_t> vb_slot(vb_bytes.size(), -1), free_slots;
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (const BufferRef& r : steps_[s].outputs) {
      const auto vb = static_cast<size_t>(r.index);
      if (vb_output[vb] >= 0) continue;
      const size_t need = vb_bytes[vb];
      int best = -1, largest = -1;
      for (size_t f = 0; f < free_slots.size(); ++f) {
        const size_t size = slot_bytes[static_cast<size_t>(free_slots[f])];
        if (size >= need &&
            (best < 0 ||
             size < slot_bytes[static_cast<size_t>(free_slots[static_cast<size_t>(best)])]))
          best = static_cast<int>(f);
        if (largest < 0 ||
            size > slot_bytes[static_cast<size_t>(free_slots[static_cast<size_t>(largest)])])
          largest = static_cast<int>(f);
      }
      const int pick = best >= 0 ? best : largest;
      if (pick >= 0) {
        vb_slot[vb] = free_slots[static_cast<size_t>(pick)];
        free_slots.erase(free_slots.begin() + pick);
        size_t& size = slot_bytes[static_cast<size_t>(vb_slot[vb])];
        size = std::max(size, need);
      } else {
        vb_slot[vb] = static_cast<int32_t>(slot_bytes.size());
        slot_bytes.push_back(need);
      }
    }
    for (int32_t vb : dying[s]) free_slots.push_back(vb_slot[static_cast<size_t>(vb)]);
  }
  for (size_t size : slot_bytes) {
    slot_offsets_.push_back(arena_bytes_);
    arena_bytes_ += (size + kAlign - 1) / kAlign * kAlign;
  }
  auto rewrite = [&](BufferRef& r) {
    if (r.kind != BufferRef::Kind::kSlot) return;
    const auto vb = static_cast<size_t>(r.index);
    if (vb_output[vb] >= 0)
      r = {BufferRef::Kind::kOutput, vb_output[vb], nullptr};
    else
      r.index = vb_slot[vb];
  };
  for (PlanStep& step : steps_) {
    for (BufferRef& r : step.operands) rewrite(r);
    for (BufferRef& r : step.outputs) rewrite(r);
  }
  for (OutputCopy& c : copies_) rewrite(c.from);
}

}  // namespace podsim::cpu

namespace podsim::cpu {

void Plan::execute(std::span<const std::byte* const> arguments, std::span<std::byte* const> outputs,
                   std::byte* arena) const {
  if (arguments.size() != argument_leaves_ || outputs.size() != output_leaves_)
    fail("internal: plan run with {} argument and {} output buffers, expected {} and {}",
         arguments.size(), outputs.size(), argument_leaves_, output_leaves_);
  auto resolve = [&](const BufferRef& r) -> std::byte* {
    switch (r.kind) {
      case BufferRef::Kind::kArgument:
        return const_cast<std::byte*>(arguments[static_cast<size_t>(r.index)]);
      case BufferRef::Kind::kConstant:
        return const_cast<std::byte*>(r.constant);
      case BufferRef::Kind::kSlot:
        return arena + slot_offsets_[static_cast<size_t>(r.index)];
      case BufferRef::Kind::kOutput:
        return outputs[static_cast<size_t>(r.index)];
    }
    return nullptr;
  };
  std::vector<const std::byte*> in;
  std::vector<std::byte*> out;
  for (const PlanStep& step : steps_) {
    in.clear();
    out.clear();
    for (const BufferRef& r : step.operands) in.push_back(resolve(r));
    for (const BufferRef& r : step.outputs) out.push_back(resolve(r));
    step.kernel->run(in, out);
  }
  for (const OutputCopy& c : copies_)
    if (c.bytes > 0) std::memmove(outputs[static_cast<size_t>(c.to)], resolve(c.from), c.bytes);
}

}  // namespace podsim::cpu
