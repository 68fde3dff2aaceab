// Checks the promise fusion.cc makes to backends about the fusions it creates (see the
// comment at the top of fusion.cc), written out independently of the pass.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/ir/module.h"
#include "compiler/ir/printer.h"

namespace podsim::passes::testing {

inline std::string loop_op_problem(const ir::Instruction& i) {
  using ir::Opcode;
  switch (i.opcode()) {
    case Opcode::kParameter:
    case Opcode::kIota:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReverse:
    case Opcode::kConcatenate:
    case Opcode::kPad:
      return "";
    case Opcode::kConstant:
      return i.shape().is_scalar() ? "" : "non-scalar constant " + i.name();
    case Opcode::kBroadcast: {
      const ir::Instruction& op = *i.operand(0);
      bool ok = op.opcode() == Opcode::kParameter ||
                (op.opcode() == Opcode::kConstant && op.shape().is_scalar());
      return ok ? "" : "broadcast " + i.name() + " of a computed value";
    }
    default:
      if (!ir::is_elementwise(i.opcode()))
        return "op " + std::string(ir::opcode_name(i.opcode())) + " in a loop fusion";
      for (const ir::Instruction* op : i.operands())
        if (op->shape().dims() != i.shape().dims())
          return "elementwise " + i.name() + " with an operand of other dims";
      return "";
  }
}

inline bool is_simple_reducer(const ir::Computation& c, ir::PrimitiveType t) {
  using ir::Opcode;
  if (c.instruction_count() != 3 || c.parameter_count() != 2) return false;
  const ir::Instruction* r = c.root();
  if (r->operand_count() != 2 || r->operand(0) != c.parameter(0) || r->operand(1) != c.parameter(1))
    return false;
  if (!r->shape().is_scalar() || r->shape().type() != t) return false;
  switch (r->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      return t != ir::PrimitiveType::kPred;
    case Opcode::kAnd:
    case Opcode::kOr:
      return !ir::is_float(t);
    default:
      return false;
  }
}

// Problems of one fusion instruction against the contract; "" when none.
inline std::string fusion_contract_problem(const ir::Module& module, const ir::Instruction& f,
                                           int max_instructions) {
  using ir::Opcode;
  if (f.called().size() != 1) return "fusion without exactly one fused computation";
  const ir::Computation& body = *f.called(0);
  int callers = 0;
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      for (const ir::Computation* callee : i->called()) callers += callee == &body;
  if (callers != 1)
    return "fused computation " + body.name() + " is called " + std::to_string(callers) + " times";
  if (f.operand_count() != body.parameter_count())
    return "operand count differs from parameter count";
  for (int64_t k = 0; k < f.operand_count(); ++k) {
    if (!f.operand(k)->shape().is_array()) return "tuple operand";
    if (!f.operand(k)->shape().compatible(body.parameter(k)->shape()))
      return "operand shape differs from parameter";
  }
  const ir::Instruction& root = *body.root();
  if (!root.shape().is_array()) return "tuple root";
  if (root.opcode() == Opcode::kParameter || root.opcode() == Opcode::kConstant)
    return "trivial root";
  if (body.instruction_count() - body.parameter_count() > max_instructions)
    return "too many fused instructions";
  for (const auto& i : body.instructions()) {
    if (f.attrs().fusion_kind == ir::FusionKind::kInput && i.get() == &root) {
      if (root.opcode() != Opcode::kReduce || root.operand_count() != 2)
        return "kInput root is not a one-input reduce";
      if (!is_simple_reducer(*root.called(0), root.operand(0)->shape().type()))
        return "kInput reducer is not simple";
      const ir::Instruction& init = *root.operand(1);
      if (init.opcode() != Opcode::kParameter && init.opcode() != Opcode::kConstant)
        return "kInput init is computed";
      continue;
    }
    std::string p = loop_op_problem(*i);
    if (!p.empty()) return p;
  }
  if (f.attrs().fusion_kind != ir::FusionKind::kLoop &&
      f.attrs().fusion_kind != ir::FusionKind::kInput)
    return "fusion kind other than kLoop / kInput";
  return "";
}

// Every fusion in the module whose fused computation is not among `preexisting`
// follows the contract.
inline void expect_fusion_contract(const ir::Module& module, int max_instructions = 64,
                                   const std::set<std::string>& preexisting = {}) {
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions()) {
      if (i->opcode() != ir::Opcode::kFusion || preexisting.count(i->called(0)->name())) continue;
      EXPECT_EQ(fusion_contract_problem(module, *i, max_instructions), "")
          << i->name() << " in\n"
          << ir::print_module(module);
    }
}

}  // namespace podsim::passes::testing
