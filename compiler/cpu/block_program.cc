#include "compiler/cpu/block_program.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "compiler/cpu/block_loops.h"
#include "compiler/cpu/kernel.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

namespace {

constexpr int kRootContext = 0;
constexpr int kScalarContext = 1;
constexpr size_t kSlotBytes = static_cast<size_t>(kBlockElements) * 8;
constexpr size_t kAlign = 64;
constexpr size_t kMaxTasks = 1 << 16;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// kSelect: concatenate and pad, which pick each element from one of several values
// by the masks of their operands' contexts.
enum class TaskKind : uint8_t { kRead, kIota, kElementwise, kFill, kSelect };

bool is_index_map(Opcode opcode) {
  return opcode == Opcode::kBroadcast || opcode == Opcode::kTranspose || opcode == Opcode::kSlice ||
         opcode == Opcode::kReverse;
}

AffineMap index_map_of(const Instruction& node) {
  const std::vector<int64_t>& out = node.shape().dims();
  const std::vector<int64_t>& in = node.operand(0)->shape().dims();
  const ir::Attributes& a = node.attrs();
  switch (node.opcode()) {
    case Opcode::kBroadcast:
      return broadcast_map(out, in, a.dimensions);
    case Opcode::kTranspose:
      return transpose_map(in, a.dimensions);
    case Opcode::kSlice: {
      std::vector<SliceRange> ranges;
      for (const ir::SliceDim& s : a.slice) ranges.push_back({s.start, s.stride});
      return slice_map(out, in, ranges);
    }
    default:
      return reverse_map(in, a.dimensions);
  }
}

}  // namespace

struct BlockProgram::Context {
  int parent = -1;
  AffineMap map;        // from the parent's indices to this context's
  bool masked = false;  // concatenate / pad operand: masked_map instead of map
  MaskedMap masked_map;
  bool invariant = false;  // a single index known when the program is built
  int64_t fixed_index = 0;
  bool fixed_valid = true;
  // Whether a derived context or an iota reads its indices; otherwise reads in it may
  // walk the map directly (AffineMap::gather) without an index array.
  bool needs_indices = false;
  size_t array_offset = 0;  // scratch offsets of its index array and mask (per-block contexts)
  size_t mask_offset = 0;
};

struct BlockProgram::Task {
  TaskKind kind = TaskKind::kRead;
  int context = kRootContext;
  PrimitiveType type = PrimitiveType::kF32;
  size_t width = 4;
  int source = -1;
  const std::byte* constant = nullptr;
  std::vector<int> operands;
  std::unique_ptr<ElementwiseOp> op;
  int64_t iota_stride = 1;
  int64_t iota_size = 1;
  std::vector<int> mask_contexts;  // kSelect: operand k is taken where mask k is set
  bool invariant = false;
  int64_t invariant_count = 0;
  size_t invariant_offset = 0;
  size_t slot_offset = 0;
};

bool BlockProgram::block_evaluable(const Instruction& instruction) {
  if (!instruction.shape().is_array()) return false;
  for (const Instruction* operand : instruction.operands())
    if (operand == nullptr || !operand->shape().is_array()) return false;
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kBitcastConvert)
    return instruction.operand_count() == 1 &&
           ir::type_byte_size(instruction.operand(0)->shape().type()) ==
               ir::type_byte_size(instruction.shape().type()) &&
           (instruction.shape().type() != PrimitiveType::kPred ||
            instruction.operand(0)->shape().type() == PrimitiveType::kPred);
  if (ir::is_elementwise(opcode)) return true;
  switch (opcode) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReverse:
    case Opcode::kReshape:
    case Opcode::kCopy:
      return instruction.operand_count() == 1;
    case Opcode::kBitcast:
      return instruction.operand_count() == 1 && is_byte_alias(instruction);
    case Opcode::kIota:
      return true;
    case Opcode::kConstant:
      return instruction.attrs().literal.has_value() &&
             instruction.attrs().literal->shape().is_array();
    // Empty results of these run through the evaluator (no operand element to pick).
    case Opcode::kConcatenate:
      return instruction.operand_count() >= 1 && instruction.attrs().dimensions.size() == 1 &&
             instruction.shape().num_elements() > 0;
    case Opcode::kPad:
      return instruction.operand_count() == 2 && instruction.operand(1)->shape().is_scalar() &&
             static_cast<int64_t>(instruction.attrs().padding.size()) ==
                 instruction.shape().rank() &&
             instruction.shape().num_elements() > 0;
    default:
      return false;
  }
}

class BlockProgram::Builder {
 public:
  Builder(BlockProgram& program, const SourceIndex& source_index)
      : p_(program), source_index_(source_index) {
    p_.contexts_.resize(2);  // the root context and the scalar context
    p_.contexts_[kScalarContext].invariant = true;
  }

  // The task computing node in context ctx; iterative so that long chains of ops do
  // not recurse deeply.
  int build(const Instruction* root) {
    struct Frame {
      const Instruction* node;
      int ctx;
      bool expanded;
    };
    std::vector<Frame> stack{{root, effective(root, kRootContext), false}};
    while (!stack.empty()) {
      Frame frame = stack.back();
      if (memo_.count({frame.node, frame.ctx})) {
        stack.pop_back();
        continue;
      }
      std::vector<std::pair<const Instruction*, int>> needs =
          operand_requests(*frame.node, frame.ctx);
      if (!frame.expanded) {
        stack.back().expanded = true;
        for (auto it = needs.rbegin(); it != needs.rend(); ++it)
          if (!memo_.count(*it)) stack.push_back({it->first, it->second, false});
        continue;
      }
      std::vector<int> operand_tasks;
      for (const auto& need : needs) operand_tasks.push_back(memo_.at(need));
      memo_[{frame.node, frame.ctx}] = make_task(*frame.node, frame.ctx, operand_tasks);
      stack.pop_back();
    }
    return memo_.at({root, effective(root, kRootContext)});
  }

 private:
  using Key = std::pair<const Instruction*, int>;

  bool invariant_context(int ctx) const { return p_.contexts_[static_cast<size_t>(ctx)].invariant; }

  // A one-element value is the same at every index: evaluate it once.
  int effective(const Instruction* node, int ctx) const {
    return node->shape().num_elements() == 1 ? kScalarContext : ctx;
  }

  bool is_source(const Instruction& node) const { return source_index_(&node) >= 0; }

  // The context of operand `k` of node (a remapping op, or a concatenate / pad).
  int derived_context(int parent, const Instruction& node, int64_t k = 0) {
    auto key = std::make_tuple(parent, &node, k);
    if (auto it = derived_.find(key); it != derived_.end()) return it->second;
    Context c;
    c.parent = parent;
    if (node.opcode() == Opcode::kConcatenate || node.opcode() == Opcode::kPad) {
      c.masked = true;
      c.masked_map = masked_map_of(node, k);
    } else {
      c.map = index_map_of(node);
    }
    const Context& pc = p_.contexts_[static_cast<size_t>(parent)];
    if (pc.invariant) {
      c.invariant = true;
      if (c.masked)
        std::tie(c.fixed_index, c.fixed_valid) = c.masked_map.at(pc.fixed_index);
      else
        c.fixed_index = c.map.at(pc.fixed_index);
      c.fixed_valid = c.fixed_valid && pc.fixed_valid;
    }
    p_.contexts_.push_back(std::move(c));
    const int id = static_cast<int>(p_.contexts_.size()) - 1;
    derived_[key] = id;
    return id;
  }

  static MaskedMap masked_map_of(const Instruction& node, int64_t k) {
    const std::vector<int64_t>& out = node.shape().dims();
    if (node.opcode() == Opcode::kPad) {
      std::vector<int64_t> low, step;
      for (const ir::PadDim& d : node.attrs().padding) {
        low.push_back(d.low);
        step.push_back(d.interior + 1);
      }
      return MaskedMap::pad(out, node.operand(0)->shape().dims(), low, step);
    }
    const int64_t dim = node.attrs().dimensions[0];
    int64_t begin = 0;
    for (int64_t j = 0; j < k; ++j) begin += node.operand(j)->shape().dim(dim);
    return MaskedMap::concatenate(out, dim, begin, node.operand(k)->shape().dim(dim));
  }

  // The operands of a concatenate or pad that contribute elements, each with its context.
  std::vector<Key> pieces(const Instruction& node, int ctx) {
    std::vector<Key> needs;
    const int64_t count = node.opcode() == Opcode::kPad ? 1 : node.operand_count();
    for (int64_t k = 0; k < count; ++k) {
      const Instruction* o = node.operand(k);
      if (o->shape().num_elements() == 0) continue;
      needs.push_back({o, effective(o, derived_context(ctx, node, k))});
    }
    return needs;
  }

  std::vector<Key> operand_requests(const Instruction& node, int ctx) {
    if (is_source(node)) return {};
    const Opcode opcode = node.opcode();
    if (opcode == Opcode::kConstant || opcode == Opcode::kIota) return {};
    if (!block_evaluable(node))
      fail("internal: the block engine cannot evaluate {} ({})", node.name(),
           ir::opcode_name(opcode));
    const Instruction* operand = node.operand_count() > 0 ? node.operand(0) : nullptr;
    if (is_index_map(opcode)) {
      if (operand->shape().num_elements() == 1) return {{operand, kScalarContext}};
      return {{operand, derived_context(ctx, node)}};
    }
    if (opcode == Opcode::kConcatenate || opcode == Opcode::kPad) {
      std::vector<Key> needs = pieces(node, ctx);
      if (opcode == Opcode::kPad) needs.push_back({node.operand(1), kScalarContext});
      return needs;
    }
    std::vector<Key> needs;
    for (const Instruction* o : node.operands()) needs.push_back({o, effective(o, ctx)});
    return needs;
  }

  int add_task(Task task) {
    // A value reached through many different index remappings is evaluated once per
    // remapping; diamonds of transposes could multiply that without bound.
    if (p_.tasks_.size() >= kMaxTasks || p_.contexts_.size() >= kMaxTasks)
      throw TooComplex("more than " + std::to_string(kMaxTasks) + " block tasks");
    task.width = static_cast<size_t>(ir::type_byte_size(task.type));
    if (invariant_context(task.context)) {
      task.invariant = true;
      task.invariant_count = 1;
    }
    p_.tasks_.push_back(std::move(task));
    return static_cast<int>(p_.tasks_.size()) - 1;
  }

  // Repeats a one-element task over a whole block (once per run).
  int fill(int task) {
    if (auto it = fills_.find(task); it != fills_.end()) return it->second;
    Task t;
    t.kind = TaskKind::kFill;
    t.type = p_.tasks_[static_cast<size_t>(task)].type;
    t.operands = {task};
    t.invariant = true;
    t.invariant_count = p_.block_elements_;
    const int id = add_task(std::move(t));
    fills_[task] = id;
    return id;
  }

  // An invariant task in a per-block context is already spread over a block.
  bool one_element(int task) const {
    const Task& t = p_.tasks_[static_cast<size_t>(task)];
    return t.invariant && invariant_context(t.context);
  }

  int make_task(const Instruction& node, int ctx, const std::vector<int>& operands) {
    Task task;
    task.context = ctx;
    task.type = node.shape().type();
    if (int source = source_index_(&node); source >= 0) {
      task.source = source;
      return add_task(std::move(task));
    }
    const Opcode opcode = node.opcode();
    switch (opcode) {
      case Opcode::kConstant:
        task.constant = node.attrs().literal->bytes().data();
        return add_task(std::move(task));
      case Opcode::kIota: {
        const int64_t dim = node.attrs().iota_dimension;
        task.kind = TaskKind::kIota;
        task.iota_stride = ir::row_major_strides(node.shape().dims())[static_cast<size_t>(dim)];
        task.iota_size = node.shape().dim(dim);
        return add_task(std::move(task));
      }
      default:
        break;
    }
    if (is_index_map(opcode) || opcode == Opcode::kReshape || opcode == Opcode::kCopy ||
        opcode == Opcode::kBitcast || opcode == Opcode::kBitcastConvert) {
      // Only the indices (or nothing) change: the operand's values are this node's.
      const int operand = operands[0];
      return one_element(operand) && !invariant_context(ctx) ? fill(operand) : operand;
    }
    if (opcode == Opcode::kConcatenate || opcode == Opcode::kPad)
      return select_task(node, ctx, operands);
    task.kind = TaskKind::kElementwise;
    task.op = make_elementwise_op(node);
    bool all_invariant = true;
    for (int o : operands) {
      const bool spread = one_element(o) && !invariant_context(ctx);
      task.operands.push_back(spread ? fill(o) : o);
      all_invariant =
          all_invariant && p_.tasks_[static_cast<size_t>(task.operands.back())].invariant;
    }
    if (all_invariant && !invariant_context(ctx)) {
      task.invariant = true;
      task.invariant_count = p_.block_elements_;
    }
    return add_task(std::move(task));
  }

  // Each element from the first piece whose mask is set, else from the last value (the
  // padding value of a pad; for a concatenate exactly one mask is set).
  int select_task(const Instruction& node, int ctx, const std::vector<int>& values) {
    const bool spread = !invariant_context(ctx);
    if (values.size() == 1)
      return one_element(values[0]) && spread ? fill(values[0]) : values[0];  // all padding
    Task task;
    task.kind = TaskKind::kSelect;
    task.context = ctx;
    task.type = node.shape().type();
    const int64_t count = node.opcode() == Opcode::kPad ? 1 : node.operand_count();
    for (int64_t k = 0; k < count; ++k)
      if (node.operand(k)->shape().num_elements() > 0)
        task.mask_contexts.push_back(derived_context(ctx, node, k));
    for (int v : values) task.operands.push_back(one_element(v) && spread ? fill(v) : v);
    return add_task(std::move(task));
  }

  BlockProgram& p_;
  const SourceIndex& source_index_;
  std::map<Key, int> memo_;
  std::map<std::tuple<int, const Instruction*, int64_t>, int> derived_;
  std::map<int, int> fills_;
};

BlockProgram::BlockProgram(const Instruction& root, const SourceIndex& source_index)
    : root_shape_(root.shape()) {
  if (!root_shape_.is_array()) fail("internal: block program root {} is not an array", root.name());
  // No evaluation covers more indices than the root has: spread invariants no wider.
  block_elements_ = std::clamp<int64_t>(root_shape_.num_elements(), 1, kBlockElements);
  const int root_task = Builder(*this, source_index).build(&root);
  // The root task goes last, so that eval can write it straight into dest.
  if (root_task != static_cast<int>(tasks_.size()) - 1) {
    Task copy;
    copy.kind = TaskKind::kFill;  // a fill of a full block is a plain copy
    copy.type = tasks_[static_cast<size_t>(root_task)].type;
    copy.width = tasks_[static_cast<size_t>(root_task)].width;
    copy.operands = {root_task};
    copy.invariant = tasks_[static_cast<size_t>(root_task)].invariant;
    copy.invariant_count = tasks_[static_cast<size_t>(root_task)].invariant_count;
    copy.context = tasks_[static_cast<size_t>(root_task)].context;
    tasks_.push_back(std::move(copy));
  }

  for (size_t c = 2; c < contexts_.size(); ++c)
    contexts_[static_cast<size_t>(contexts_[c].parent)].needs_indices = true;
  for (const Task& t : tasks_)
    if (t.kind == TaskKind::kIota) contexts_[static_cast<size_t>(t.context)].needs_indices = true;

  // Scratch: per-block context index arrays, then task slots reused by liveness, then
  // the table of task result pointers.
  size_t offset = 0;
  for (size_t c = 2; c < contexts_.size(); ++c) {
    if (contexts_[c].invariant) continue;
    contexts_[c].array_offset = offset;
    offset += kSlotBytes;
    if (contexts_[c].masked) {
      contexts_[c].mask_offset = offset;
      offset += align_up(static_cast<size_t>(kBlockElements));
    }
  }
  std::vector<size_t> last_use(tasks_.size(), 0);
  for (size_t t = 0; t < tasks_.size(); ++t) {
    last_use[t] = t;
    for (int o : tasks_[t].operands) last_use[static_cast<size_t>(o)] = t;
  }
  std::vector<size_t> free_slots, slot_of(tasks_.size(), 0);
  size_t slots = 0;
  for (size_t t = 0; t < tasks_.size(); ++t) {
    Task& task = tasks_[t];
    if (task.invariant) {
      task.invariant_offset = invariant_bytes_;
      invariant_bytes_ += align_up(static_cast<size_t>(task.invariant_count) * task.width);
      continue;
    }
    if (free_slots.empty()) free_slots.push_back(slots++);
    slot_of[t] = free_slots.back();
    free_slots.pop_back();
    task.slot_offset = offset + slot_of[t] * kSlotBytes;
    for (int o : task.operands) {
      const auto k = static_cast<size_t>(o);
      if (!tasks_[k].invariant && last_use[k] == t &&
          std::find(free_slots.begin(), free_slots.end(), slot_of[k]) == free_slots.end())
        free_slots.push_back(slot_of[k]);
    }
  }
  scratch_slots_ = slots;
  scratch_bytes_ = offset + slots * kSlotBytes +
                   align_up(sizeof(const std::byte*) * contexts_.size() * 3) +
                   align_up(sizeof(const std::byte*) * tasks_.size());
}

BlockProgram::~BlockProgram() = default;

bool BlockProgram::worth_parallel(int64_t indices) const {
  int64_t per_index = 1;
  for (const Task& t : tasks_)
    if (!t.invariant) ++per_index;
  return indices > kBlockElements && indices * per_index >= kParallelWork;
}

std::vector<std::byte> BlockProgram::prepare(std::span<const std::byte* const> inputs) const {
  std::vector<std::byte> values(invariant_bytes_);
  for (const Task& t : tasks_) {
    if (!t.invariant) continue;
    std::byte* out = values.data() + t.invariant_offset;
    const int64_t n = t.invariant_count;
    const int64_t index = contexts_[static_cast<size_t>(t.context)].fixed_index;
    switch (t.kind) {
      case TaskKind::kRead: {
        const std::byte* base = t.constant ? t.constant : inputs[static_cast<size_t>(t.source)];
        std::memcpy(out, base + static_cast<size_t>(index) * t.width, t.width);
        break;
      }
      case TaskKind::kIota:
        iota_block(t.type, t.iota_stride, t.iota_size, index, nullptr, 1, out);
        break;
      case TaskKind::kFill: {
        const Task& from = tasks_[static_cast<size_t>(t.operands[0])];
        const std::byte* v = values.data() + from.invariant_offset;
        if (from.invariant_count == n)
          std::memcpy(out, v, static_cast<size_t>(n) * t.width);
        else
          fill_bytes(v, n, t.width, out);
        break;
      }
      case TaskKind::kElementwise: {
        const void* operands[3] = {};
        for (size_t k = 0; k < t.operands.size(); ++k)
          operands[k] = values.data() + tasks_[static_cast<size_t>(t.operands[k])].invariant_offset;
        t.op->run(std::span<const void* const>(operands, t.operands.size()), out, n);
        break;
      }
      case TaskKind::kSelect: {  // one fixed index: the masks are known
        size_t pick = t.operands.size() - 1;
        for (size_t k = 0; k < t.mask_contexts.size() && k < pick; ++k)
          if (contexts_[static_cast<size_t>(t.mask_contexts[k])].fixed_valid) pick = k;
        std::memcpy(out,
                    values.data() + tasks_[static_cast<size_t>(t.operands[pick])].invariant_offset,
                    t.width);
        break;
      }
    }
  }
  return values;
}

const std::byte* BlockProgram::eval(std::span<const std::byte* const> inputs,
                                    const std::byte* invariants, const IndexSet& at,
                                    std::byte* scratch, std::byte* dest) const {
  const int64_t n = at.n;
  // Per-context state: first index when consecutive (indices null), else the indices.
  const size_t pointer_area = scratch_bytes_ - align_up(sizeof(const std::byte*) * tasks_.size()) -
                              align_up(sizeof(const std::byte*) * contexts_.size() * 3);
  auto** ctx_indices = reinterpret_cast<const int64_t**>(scratch + pointer_area);
  auto* ctx_start = reinterpret_cast<int64_t*>(ctx_indices + contexts_.size());
  // >= 0: the context's indices are map(runs_from + i), read through AffineMap::gather.
  auto* runs_from = ctx_start + contexts_.size();
  auto** results = reinterpret_cast<const std::byte**>(
      scratch + pointer_area + align_up(sizeof(const std::byte*) * contexts_.size() * 3));
  ctx_indices[kRootContext] = at.indices;
  ctx_start[kRootContext] = at.start;
  runs_from[kRootContext] = -1;
  for (size_t c = 2; c < contexts_.size(); ++c) {
    const Context& ctx = contexts_[c];
    if (ctx.invariant) continue;
    const auto parent = static_cast<size_t>(ctx.parent);
    runs_from[c] = -1;
    if (!ctx.masked && !ctx.needs_indices && ctx_indices[parent] == nullptr) {
      ctx_indices[c] = nullptr;
      if (ctx.map.linear_stride() == 1)
        ctx_start[c] = ctx.map.at(ctx_start[parent]);
      else
        runs_from[c] = ctx_start[parent];
      continue;
    }
    auto* buffer = reinterpret_cast<int64_t*>(scratch + ctx.array_offset);
    if (ctx.masked)
      ctx.masked_map.map(ctx_start[parent], ctx_indices[parent], n, buffer,
                         reinterpret_cast<uint8_t*>(scratch + ctx.mask_offset));
    else if (ctx_indices[parent] == nullptr)
      ctx.map.fill(ctx_start[parent], n, buffer);
    else
      ctx.map.map(ctx_indices[parent], n, buffer);
    bool consecutive = true;
    for (int64_t i = 1; i < n && consecutive; ++i) consecutive = buffer[i] == buffer[0] + i;
    ctx_indices[c] = consecutive ? nullptr : buffer;
    ctx_start[c] = n > 0 ? buffer[0] : 0;
  }
  const size_t last = tasks_.size() - 1;
  for (size_t k = 0; k < tasks_.size(); ++k) {
    const Task& t = tasks_[k];
    if (t.invariant) {
      results[k] = invariants + t.invariant_offset;
      continue;
    }
    std::byte* out = (k == last && dest) ? dest : scratch + t.slot_offset;
    const auto c = static_cast<size_t>(t.context);
    switch (t.kind) {
      case TaskKind::kRead: {
        const std::byte* base = t.constant ? t.constant : inputs[static_cast<size_t>(t.source)];
        if (runs_from[c] >= 0) {
          contexts_[c].map.gather(runs_from[c], n, base, t.width, out);
          break;
        }
        if (ctx_indices[c] == nullptr) {
          results[k] = base + static_cast<size_t>(ctx_start[c]) * t.width;
          continue;
        }
        gather_bytes(base, ctx_indices[c], n, t.width, out);
        break;
      }
      case TaskKind::kIota:
        iota_block(t.type, t.iota_stride, t.iota_size, ctx_start[c], ctx_indices[c], n, out);
        break;
      case TaskKind::kFill:  // a copy of a per-block task (the root alias)
        std::memcpy(out, results[static_cast<size_t>(t.operands[0])],
                    static_cast<size_t>(n) * t.width);
        break;
      case TaskKind::kElementwise: {
        const void* operands[3] = {};
        for (size_t i = 0; i < t.operands.size(); ++i)
          operands[i] = results[static_cast<size_t>(t.operands[i])];
        t.op->run(std::span<const void* const>(operands, t.operands.size()), out, n);
        break;
      }
      case TaskKind::kSelect: {
        const size_t fallback = t.operands.size() - 1;
        std::memcpy(out, results[static_cast<size_t>(t.operands[fallback])],
                    static_cast<size_t>(n) * t.width);
        for (size_t i = std::min(fallback, t.mask_contexts.size()); i-- > 0;) {
          const Context& mc = contexts_[static_cast<size_t>(t.mask_contexts[i])];
          blend_bytes(results[static_cast<size_t>(t.operands[i])],
                      reinterpret_cast<const uint8_t*>(scratch + mc.mask_offset), n, t.width, out);
        }
        break;
      }
    }
    results[k] = out;
  }
  const std::byte* result = results[last];
  if (dest == nullptr) return result;
  if (result != dest) std::memcpy(dest, result, static_cast<size_t>(n) * tasks_[last].width);
  return dest;
}

void BlockProgram::run(std::span<const std::byte* const> inputs, std::byte* out) const {
  const int64_t total = root_shape_.num_elements();
  if (total == 0) return;
  const std::vector<std::byte> invariants = prepare(inputs);
  const size_t width = static_cast<size_t>(ir::type_byte_size(root_shape_.type()));
  const int64_t blocks = (total + kBlockElements - 1) / kBlockElements;
  const bool streaming = static_cast<size_t>(total) * width >= kStreamingBytes;
  auto body = [&](int64_t first, int64_t end) {
    std::byte* scratch = thread_scratch(scratch_bytes_);
    for (int64_t b = first; b < end; ++b) {
      const int64_t start = b * kBlockElements;
      const IndexSet at{start, nullptr, std::min(kBlockElements, total - start)};
      std::byte* dest = out + static_cast<size_t>(start) * width;
      if (streaming)
        stream_copy(dest, eval(inputs, invariants.data(), at, scratch, nullptr),
                    static_cast<size_t>(at.n) * width);
      else
        eval(inputs, invariants.data(), at, scratch, dest);
    }
    if (streaming) stream_fence();
  };
  if (blocks == 1 || !worth_parallel(total)) {
    body(0, blocks);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, blocks),
                    [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
}

}  // namespace podsim::cpu
