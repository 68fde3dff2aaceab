#include "compiler/ir/instruction.h"

namespace podsim::ir {

std::unique_ptr<Instruction> Instruction::clone(std::string name, std::vector<Instruction*> operands) const {
  auto copy = std::make_unique<Instruction>(std::move(name), opcode_, shape_);
  copy->operands_ = std::move(operands);
  copy->called_ = called_;
  copy->pred_conditional_syntax = pred_conditional_syntax;
  copy->attrs_ = attrs_;
  copy->metadata_ = metadata_;
  copy->sharding_ = sharding_;
  return copy;
}

}  // namespace podsim::ir
