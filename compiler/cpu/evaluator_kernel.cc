// The reference evaluator as a CPU kernel: for every op without a native kernel
// (control flow, gather/scatter, sort, windows, collectives on one device, custom
// calls, integer dots, ...). The instruction is cloned into a module of its own whose
// parameters stand for its operands; its called computations stay those of the
// original module, which outlives the kernel.
#include <cstring>

#include "compiler/cpu/kernel.h"
#include "compiler/ir/evaluator.h"

namespace podsim::cpu {
namespace {

void literal_leaves(ir::Literal& literal, std::vector<ir::Literal*>& out) {
  if (literal.shape().is_tuple()) {
    for (ir::Literal& e : literal.elements()) literal_leaves(e, out);
  } else {
    out.push_back(&literal);
  }
}

class EvaluatorKernel final : public Kernel {
 public:
  explicit EvaluatorKernel(const ir::Instruction& instruction)
      : module_("cpu_evaluator_" + instruction.name()) {
    auto computation = std::make_unique<ir::Computation>("evaluate_" + instruction.name());
    std::vector<ir::Instruction*> parameters;
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      const ir::Shape& shape = instruction.operand(i)->shape();
      auto parameter = std::make_unique<ir::Instruction>("operand." + std::to_string(i),
                                                         ir::Opcode::kParameter, shape);
      parameter->attrs().parameter_number = i;
      parameters.push_back(computation->add(std::move(parameter)));
      operand_shapes_.push_back(shape);
    }
    std::unique_ptr<ir::Instruction> copy = instruction.clone(instruction.name(), parameters);
    copy->set_pos(instruction.pos());
    computation->set_root(computation->add(std::move(copy)));
    module_.set_entry(module_.add_computation(std::move(computation)));
    if (const ir::Module* original =
            instruction.parent() ? instruction.parent()->parent() : nullptr) {
      module_.replica_count = original->replica_count;
      module_.num_partitions = original->num_partitions;
    }
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    std::vector<ir::Literal> args;
    args.reserve(operand_shapes_.size());
    size_t next = 0;
    for (size_t i = 0; i < operand_shapes_.size(); ++i) {
      args.emplace_back(operand_shapes_[i]);
      std::vector<ir::Literal*> leaves;
      literal_leaves(args.back(), leaves);
      for (ir::Literal* leaf : leaves) {
        const std::byte* source = operands[next++];
        if (!leaf->bytes().empty()) std::memcpy(leaf->bytes().data(), source, leaf->bytes().size());
      }
    }
    ir::Literal result = ir::evaluate(module_, args);
    std::vector<ir::Literal*> leaves;
    literal_leaves(result, leaves);
    if (leaves.size() != outputs.size())
      fail("internal: {} produced {} arrays, expected {}", module_.entry()->root()->name(),
           leaves.size(), outputs.size());
    for (size_t k = 0; k < leaves.size(); ++k)
      if (!leaves[k]->bytes().empty())
        std::memcpy(outputs[k], leaves[k]->bytes().data(), leaves[k]->bytes().size());
  }

 private:
  ir::Module module_;
  std::vector<ir::Shape> operand_shapes_;
};

}  // namespace

std::unique_ptr<Kernel> make_evaluator_kernel(const ir::Instruction& instruction) {
  return std::make_unique<EvaluatorKernel>(instruction);
}

}  // namespace podsim::cpu
