// Kernel expressions: what a streamed kernel computes per element of its index space,
// as a DAG of vector ops over leaves (arrays in HBM read through affine index maps, so
// that broadcasts, transposes, slices and reshapes cost nothing but DMA strides) and
// constants. Built from a fused computation or from one instruction. Internal to
// compiler/tpu.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "compiler/tpu/lowerer.h"

namespace podsim::tpu {

// An array read at buffer[offset + sum_e strides[e] * index[e]] (elements) for every
// index of the kernel's index space.
struct Leaf {
  int32_t buffer = -1;
  ir::PrimitiveType type = ir::PrimitiveType::kF32;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  bool operator==(const Leaf&) const = default;
};

struct ExprNode {
  enum class Kind : uint8_t { kLeaf, kConstant, kOp };
  Kind kind = Kind::kOp;
  ir::PrimitiveType type = ir::PrimitiveType::kF32;  // of the result
  int leaf = -1;                                     // kLeaf
  uint32_t bits = 0;                                 // kConstant: the lane bits (pred: a mask)
  ir::Opcode opcode = ir::Opcode::kAdd;              // kOp
  ir::ComparisonDirection direction = ir::ComparisonDirection::kEq;
  std::vector<int> operands;
  const ir::Instruction* origin = nullptr;  // for messages
};

// Nodes are in topological order (operands first).
struct Expr {
  std::vector<int64_t> dims;
  std::vector<Leaf> leaves;
  std::vector<ExprNode> nodes;

  int add_leaf(Leaf leaf);  // one node per distinct leaf
  int add_constant(ir::PrimitiveType type, uint32_t bits);
  int add_op(ir::Opcode op, ir::PrimitiveType type, std::vector<int> operands, const ir::Instruction* origin);
};

// Maps the kernel's index space onto an instruction's: index d of the instruction is
// base[d] + sum_e coef[d][e] * kernel_index[e].
struct View {
  std::vector<std::vector<int64_t>> coef;
  std::vector<int64_t> base;
  static View identity(int64_t rank);
  bool operator<(const View& o) const { return std::tie(coef, base) < std::tie(o.coef, o.base); }
};

// The leaf reading array value v (row-major) through view, for a kernel of the given
// rank.
Leaf leaf_of(const Value& v, const View& view, size_t kernel_rank);

// The view of an operand of a view op (broadcast, transpose, slice, reshape, bitcast)
// given the view of its result; false for a reshape that splits a dimension the view
// cannot (the caller then reads a materialized operand).
bool operand_view(const ir::Instruction& i, const View& result, View& operand, size_t kernel_rank);

// Lane bits of a scalar literal as the vector unit holds it (floats as f32, pred as a
// mask).
uint32_t lane_bits(const ir::Instruction& origin, const ir::Literal& scalar);

class ExprBuilder {
 public:
  ExprBuilder(Lowerer& lowerer, Scope& scope, Expr& expr) : l_(lowerer), s_(scope), e_(expr) {}
  // The node computing i over the kernel's index space through view. The root is
  // expanded even where its value could be read (the kernel is what computes it).
  int build(const ir::Instruction& i, const View& view, bool root = false);

 private:
  int expand(const ir::Instruction& i, const View& view);
  int elementwise(const ir::Instruction& i, const View& view);
  // bitcast-convert of f16 (lanes hold it widened to f32) to its 16 bits and back.
  int f16_bits(const ir::Instruction& i, int value);
  int f16_of_bits(const ir::Instruction& i, int bits);
  int compare(const ir::Instruction& i, ir::ComparisonDirection direction, int a, int b);
  int iota(const ir::Instruction& i, const View& view);
  // The value of i (or of what i reads), as a kernel leaf.
  int read(const ir::Instruction& i, const Value& v, const View& view);

  Lowerer& l_;
  Scope& s_;
  Expr& e_;
  std::map<std::pair<const ir::Instruction*, View>, int> memo_;
  int depth_ = 0;
};

// i (an array) as a leaf over its own dims: follows view ops down to a value and
// materializes whatever is not a view.
Leaf view_of(Lowerer& l, Scope& s, const ir::Instruction& i);

// A materialized 1-D iota constant of n elements of type t.
int32_t iota_constant(Lowerer& l, ir::PrimitiveType t, int64_t n);

}  // namespace podsim::tpu
