// while, conditional and call run their computations as nested plans, so that loop
// bodies and branches get the same kernels (fusions, BLAS, buffer reuse) as the entry.
// A while loop keeps its state in two buffers that alternate: each iteration's body
// reads one and writes the other.
#include <cstring>

#include "common/error.h"
#include "compiler/cpu/kernel.h"
#include "compiler/cpu/plan.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;

size_t aligned(size_t n) { return (n + 63) / 64 * 64; }

class WhileKernel final : public Kernel {
 public:
  explicit WhileKernel(const Instruction& w) : condition_(*w.called(0)), body_(*w.called(1)) {
    for (const ir::Shape& leaf : leaf_shapes(w.shape())) {
      leaf_offsets_.push_back(state_bytes_);
      leaf_bytes_.push_back(static_cast<size_t>(leaf.byte_size()));
      state_bytes_ += aligned(leaf_bytes_.back());
    }
    if (condition_.argument_leaves() != leaf_bytes_.size() ||
        body_.argument_leaves() != leaf_bytes_.size() ||
        body_.output_leaves() != leaf_bytes_.size() || condition_.output_leaves() != 1)
      fail("while {}: condition and body do not match the loop state {}", w.name(),
           w.shape().to_string(false));
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    AlignedBuffer states = allocate_aligned(2 * state_bytes_);
    AlignedBuffer arena = allocate_aligned(std::max(condition_.arena_bytes(), body_.arena_bytes()));
    const size_t leaves = leaf_bytes_.size();
    std::vector<const std::byte*> current(operands.begin(), operands.end());
    std::vector<std::byte*> next(leaves);
    size_t half = 0;
    std::byte go{0};
    std::byte* const condition_out[1] = {&go};
    while (true) {
      condition_.execute(current, condition_out, arena.get());
      if (go == std::byte{0}) break;
      for (size_t k = 0; k < leaves; ++k)
        next[k] = states.get() + half * state_bytes_ + leaf_offsets_[k];
      body_.execute(current, next, arena.get());
      current.assign(next.begin(), next.end());
      half ^= 1;
    }
    for (size_t k = 0; k < leaves; ++k)
      if (leaf_bytes_[k] > 0) std::memcpy(outputs[k], current[k], leaf_bytes_[k]);
  }

 private:
  Plan condition_, body_;
  std::vector<size_t> leaf_offsets_, leaf_bytes_;
  size_t state_bytes_ = 0;
};

class ConditionalKernel final : public Kernel {
 public:
  explicit ConditionalKernel(const Instruction& c)
      : pred_selector_(c.operand(0)->shape().type() == ir::PrimitiveType::kPred) {
    size_t leaf = 1;  // operand 0 is the selector
    for (size_t b = 0; b < c.called().size(); ++b) {
      branches_.push_back(std::make_unique<Plan>(*c.called(static_cast<int64_t>(b))));
      const size_t n = leaf_shapes(c.operand(static_cast<int64_t>(b + 1))->shape()).size();
      if (branches_.back()->argument_leaves() != n)
        fail("conditional {}: branch {} does not take operand {}", c.name(), b, b + 1);
      operand_leaf_.push_back(leaf);
      leaf += n;
      arena_bytes_ = std::max(arena_bytes_, branches_.back()->arena_bytes());
    }
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    const size_t branches = branches_.size();
    size_t branch;
    if (pred_selector_) {
      branch = *operands[0] != std::byte{0} ? 0 : 1;
    } else {
      int32_t index;
      std::memcpy(&index, operands[0], sizeof(index));
      // Out-of-range indices run the last branch (XLA semantics).
      branch = index < 0 || static_cast<size_t>(index) >= branches ? branches - 1
                                                                   : static_cast<size_t>(index);
    }
    const size_t first = operand_leaf_[branch];
    const size_t count = branches_[branch]->argument_leaves();
    AlignedBuffer arena = allocate_aligned(arena_bytes_);
    branches_[branch]->execute(operands.subspan(first, count), outputs, arena.get());
  }

 private:
  bool pred_selector_;
  std::vector<std::unique_ptr<Plan>> branches_;
  std::vector<size_t> operand_leaf_;
  size_t arena_bytes_ = 0;
};

class CallKernel final : public Kernel {
 public:
  explicit CallKernel(const Instruction& call) : callee_(*call.called(0)) {}
  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    AlignedBuffer arena = allocate_aligned(callee_.arena_bytes());
    callee_.execute(operands, outputs, arena.get());
  }

 private:
  Plan callee_;
};

}  // namespace

std::unique_ptr<Kernel> make_control_flow_kernel(const Instruction& instruction) {
  const size_t called = instruction.called().size();
  for (const ir::Computation* c : instruction.called())
    if (c == nullptr) return make_evaluator_kernel(instruction);
  if (plan_depth() >= kMaxPlanDepth) return make_evaluator_kernel(instruction);
  switch (instruction.opcode()) {
    case ir::Opcode::kWhile:
      if (called != 2 || instruction.operand_count() != 1) break;
      return std::make_unique<WhileKernel>(instruction);
    case ir::Opcode::kConditional: {
      if (called == 0 || static_cast<size_t>(instruction.operand_count()) != called + 1) break;
      const ir::PrimitiveType t = instruction.operand(0)->shape().type();
      if (!instruction.operand(0)->shape().is_scalar() ||
          (t != ir::PrimitiveType::kPred && t != ir::PrimitiveType::kS32) ||
          (t == ir::PrimitiveType::kPred && called != 2))
        break;
      return std::make_unique<ConditionalKernel>(instruction);
    }
    case ir::Opcode::kCall:
      if (called != 1) break;
      return std::make_unique<CallKernel>(instruction);
    default:
      break;
  }
  return make_evaluator_kernel(instruction);
}

}  // namespace podsim::cpu
