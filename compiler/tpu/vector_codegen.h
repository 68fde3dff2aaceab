// Vector-unit code for kernel expressions: one register position (a sublanes x lanes
// tile of the kernel's index space) at a time, with registers allocated over the
// expression's live ranges. Internal to compiler/tpu.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/tpu/expr.h"

namespace podsim::tpu {

// The chip's vector registers; running out is a podsim::Error naming the kernel.
class VRegs {
 public:
  VRegs(int count, std::string kernel);
  int take();
  void give(int reg);

 private:
  std::vector<bool> free_;
  std::string kernel_;
};

// Where a leaf's tile starts for one register position: region, byte offset and byte
// stride between sublane rows (0 repeats one row).
struct LeafLocation {
  int32_t region = 0;
  int64_t offset = 0;
  int64_t row_stride = 0;
};

class VectorCodegen {
 public:
  VectorCodegen(ProgramBuilder& pb, VRegs& regs, const Expr& expr, std::vector<int> roots);
  // Emits the roots' computation at one register position and returns one register per
  // root (a repeated root shares its register); give_back() frees them.
  std::vector<int> emit(const std::function<LeafLocation(int leaf)>& where);
  // The same with every leaf already in a register (leaf k in leaf_regs[k]), as when the
  // expression combines accumulators (a reducer): those registers stay the caller's, and
  // a root that is a leaf is copied, so that every returned register is fresh.
  std::vector<int> emit_on(const std::vector<int>& leaf_regs);
  void give_back(const std::vector<int>& regs);

 private:
  std::vector<int> emit_impl(const std::function<LeafLocation(int leaf)>* where, const std::vector<int>* leaf_regs);
  void emit_op(const ExprNode& n, int dst, const std::vector<int>& src);
  // Functions composed of vector instructions, in f32 lanes (vector_math.cc).
  void erf(int dst, int x);
  void atan2(int dst, int y, int x);
  // dst = fmod(x, y), exact.
  void float_remainder(int dst, int x, int y);
  // dst = sine, cosine or tangent (op).
  void trigonometric(int dst, int x, ir::Opcode op);
  isa::DType lane(const ExprNode& n, ir::PrimitiveType t) const;

  ProgramBuilder& pb_;
  VRegs& regs_;
  const Expr& e_;
  std::vector<int> roots_;
  std::vector<bool> needed_;
  std::vector<bool> is_root_;
  std::vector<size_t> last_use_;
};

// Emits dst = op(a, b) for a vector opcode with two sources.
void vop(ProgramBuilder& pb, isa::Opcode op, isa::DType t, int dst, int a, int b);
// Emits dst = op(a).
void vop(ProgramBuilder& pb, isa::Opcode op, isa::DType t, int dst, int a);

}  // namespace podsim::tpu
