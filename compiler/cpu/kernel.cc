#include "compiler/cpu/kernel.h"

#include "compiler/cpu/block_program.h"
#include "compiler/cpu/reduce_kernel.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// Sources of a stand-alone instruction: its operands, in order.
BlockProgram::SourceIndex operands_of(const Instruction& instruction) {
  return [&instruction](const Instruction* i) -> int {
    for (int64_t k = 0; k < instruction.operand_count(); ++k)
      if (instruction.operand(k) == i) return static_cast<int>(k);
    return -1;
  };
}

// An unfused elementwise or index-remapping op: a one-instruction block program.
class BlockKernel final : public Kernel {
 public:
  explicit BlockKernel(const Instruction& instruction)
      : program_(instruction, operands_of(instruction)) {}
  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    program_.run(operands, outputs[0]);
  }

 private:
  BlockProgram program_;
};

class StandaloneReduce final : public Kernel {
 public:
  explicit StandaloneReduce(const Instruction& reduce) : reduce_(reduce, operands_of(reduce)) {}
  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    reduce_.run(operands, outputs[0]);
  }

 private:
  ReduceKernel reduce_;
};

}  // namespace

void flatten_shape(const ir::Shape& shape, std::vector<ir::Shape>& leaves) {
  if (shape.is_tuple()) {
    for (const ir::Shape& e : shape.elements()) flatten_shape(e, leaves);
  } else {
    leaves.push_back(shape);
  }
}

std::vector<ir::Shape> leaf_shapes(const ir::Shape& shape) {
  std::vector<ir::Shape> leaves;
  flatten_shape(shape, leaves);
  return leaves;
}

bool is_row_major(const ir::Shape& shape) {
  if (!shape.has_layout()) return true;
  const std::vector<int64_t>& m2m = shape.layout().minor_to_major;
  for (size_t i = 0; i < m2m.size(); ++i)
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  return true;
}

bool is_byte_alias(const Instruction& instruction) {
  if (!instruction.shape().is_array() || instruction.operand_count() != 1 ||
      !instruction.operand(0)->shape().is_array())
    return false;
  const ir::Shape& in = instruction.operand(0)->shape();
  const ir::Shape& out = instruction.shape();
  switch (instruction.opcode()) {
    case Opcode::kReshape:
    case Opcode::kCopy:
    case Opcode::kOptimizationBarrier:
      return true;
    case Opcode::kBitcast:
      return is_row_major(in) && is_row_major(out) &&
             ir::type_byte_size(in.type()) == ir::type_byte_size(out.type());
    case Opcode::kBitcastConvert:
      return out.type() != ir::PrimitiveType::kPred || in.type() == ir::PrimitiveType::kPred;
    default:
      return false;
  }
}

std::unique_ptr<Kernel> make_kernel(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kFusion:
      return make_fusion_kernel(instruction);
    case Opcode::kReduce:
      if (ReduceKernel::supported(instruction))
        return std::make_unique<StandaloneReduce>(instruction);
      return make_evaluator_kernel(instruction);
    case Opcode::kDot:
      return make_dot_kernel(instruction);
    case Opcode::kConvolution:
      return make_convolution_kernel(instruction);
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
      return make_control_flow_kernel(instruction);
    default:
      break;
  }
  if (BlockProgram::block_evaluable(instruction)) {
    try {
      return std::make_unique<BlockKernel>(instruction);
    } catch (const BlockProgram::TooComplex&) {
      return make_evaluator_kernel(instruction);
    }
  }
  return make_evaluator_kernel(instruction);
}

}  // namespace podsim::cpu
