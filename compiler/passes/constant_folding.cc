// Constant folding: an instruction whose operands are all constants becomes a constant
// holding the value the reference evaluator computes for it, so the folded module
// gives bit-identical results. Not folded:
// - anything that is not a pure function of its operands or needs a device: parameters,
//   rng-bit-generator, collectives, replica-id / partition-id, custom-calls, opt-barrier;
// - control flow and calls (while could run forever; bodies may be large): while,
//   conditional, call, fusion;
// - broadcasts: a scalar constant broadcast stays `broadcast(constant)`, which the
//   simplifier and fusion handle without materializing a large array;
// - results of more than 2^20 elements, iotas of more than 1024, and dot / convolution /
//   reduce-window / select-and-scatter whose work bound (result elements times the
//   largest operand) exceeds 2^24, and ops that call a computation per element (sort,
//   scatter, reduce without a simple reducer, ...) on more than 2^16, so that
//   compilation stays fast;
// - instructions with control edges, tuple results, and anything the evaluator rejects.
#include <algorithm>
#include <span>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;

constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;
constexpr int64_t kMaxFoldedIota = 1024;
constexpr int64_t kMaxFoldingWork = int64_t{1} << 24;
constexpr int64_t kMaxCalledElements = int64_t{1} << 16;

bool foldable_opcode(Opcode op) {
  switch (op) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kRngBitGenerator:
    case Opcode::kReplicaId:
    case Opcode::kPartitionId:
    case Opcode::kCustomCall:
    case Opcode::kOptimizationBarrier:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
    case Opcode::kFusion:
    case Opcode::kBroadcast:
    case Opcode::kTuple:
      return false;
    default:
      return !ir::is_collective(op);
  }
}

bool worth_folding(const Instruction& i) {
  if (!foldable_opcode(i.opcode()) || !i.shape().is_array()) return false;
  int64_t elements = i.shape().num_elements();
  if (elements > kMaxFoldedElements) return false;
  if (i.opcode() == Opcode::kIota) return elements <= kMaxFoldedIota;
  int64_t largest_operand = 0;
  for (const Instruction* op : i.operands()) {
    if (op->opcode() != Opcode::kConstant || !op->attrs().literal) return false;
    if (op->shape().is_array())
      largest_operand = std::max(largest_operand, op->shape().num_elements());
  }
  // Reducers and comparators run through the evaluator's general path, a call per
  // element, except the simple reductions it has a fast path for.
  bool fast_reduce = i.opcode() == Opcode::kReduce && i.called().size() == 1 &&
                     internal::simple_reducer(*i.called(0));
  if (!i.called().empty() && !fast_reduce && largest_operand > kMaxCalledElements) return false;
  switch (i.opcode()) {
    case Opcode::kDot:
    case Opcode::kConvolution:
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
      // Both factors are at most 2^20, so the product cannot overflow.
      return elements * largest_operand <= kMaxFoldingWork;
    default:
      return true;
  }
}

// i's value, computed by the evaluator on a one-instruction computation whose
// parameters receive the operands' literals; nullopt when the evaluator rejects it.
std::optional<Literal> evaluate_alone(const Instruction& i) {
  ir::Module scratch("constant_folding");
  auto body = std::make_unique<Computation>("fold");
  std::vector<Instruction*> params;
  std::vector<Literal> args;
  for (int64_t k = 0; k < i.operand_count(); ++k) {
    const Instruction& op = *i.operand(k);
    auto p = std::make_unique<Instruction>("p" + std::to_string(k), Opcode::kParameter, op.shape());
    p->attrs().parameter_number = k;
    params.push_back(body->add(std::move(p)));
    args.push_back(*op.attrs().literal);
  }
  body->set_root(body->add(i.clone("folded", params)));
  scratch.set_entry(scratch.add_computation(std::move(body)));
  try {
    return ir::evaluate(scratch, args);
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool run_on(Computation& computation, const internal::SideEffects& side_effects) {
  auto linked = internal::control_linked(computation);
  internal::Replacements replacements;
  std::vector<Instruction*> snapshot;
  for (const auto& i : computation.instructions()) snapshot.push_back(i.get());
  for (Instruction* i : snapshot) {
    replacements.resolve_operands(*i);
    if (linked.count(i) || side_effects.has(*i) || !worth_folding(*i)) continue;
    std::optional<Literal> value = evaluate_alone(*i);
    if (!value || !value->shape().compatible(i->shape())) continue;
    auto folded = std::make_unique<Instruction>(computation.unique_name("constant"),
                                                Opcode::kConstant, i->shape());
    folded->attrs().literal = std::move(*value);
    folded->metadata() = i->metadata();
    replacements.add(i, computation.add(std::move(folded)));
  }
  if (replacements.empty()) return false;
  replacements.apply(computation);
  computation.sort_topologically();  // the new constants were appended at the end
  internal::remove_dead_instructions(computation, side_effects);
  return true;
}

class ConstantFolding final : public Pass {
 public:
  std::string_view name() const override { return "constant-folding"; }

  bool run(ir::Module& module) override {
    internal::SideEffects side_effects(module);
    bool changed = false;
    for (Computation* c : internal::non_fusion_computations(module))
      changed |= run_on(*c, side_effects);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding() { return std::make_unique<ConstantFolding>(); }

}  // namespace podsim::passes
