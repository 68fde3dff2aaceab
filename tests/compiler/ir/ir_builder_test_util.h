// Builds IR modules in tests without the text parser: computations, parameters numbered
// in order, instructions named "<opcode>.<n>", and small called computations.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/module.h"
#include "compiler/ir/shape_inference.h"

namespace podsim::ir::testing {

inline constexpr PrimitiveType kPred = PrimitiveType::kPred;
inline constexpr PrimitiveType kS8 = PrimitiveType::kS8;
inline constexpr PrimitiveType kS32 = PrimitiveType::kS32;
inline constexpr PrimitiveType kU8 = PrimitiveType::kU8;
inline constexpr PrimitiveType kU32 = PrimitiveType::kU32;
inline constexpr PrimitiveType kU64 = PrimitiveType::kU64;
inline constexpr PrimitiveType kF16 = PrimitiveType::kF16;
inline constexpr PrimitiveType kBF16 = PrimitiveType::kBF16;
inline constexpr PrimitiveType kF32 = PrimitiveType::kF32;
inline constexpr PrimitiveType kF64 = PrimitiveType::kF64;

inline Shape sh(PrimitiveType t, std::vector<int64_t> dims = {}) {
  return Shape(t, std::move(dims));
}
inline Shape tup(std::vector<Shape> elements) { return Shape::tuple(std::move(elements)); }

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name = "m") : module_(std::move(name)) {
    main_ = computation("main");
    module_.set_entry(main_);
  }

  Module& module() { return module_; }
  Computation* main() { return main_; }

  Computation* computation(const std::string& name) {
    return module_.add_computation(std::make_unique<Computation>(name));
  }

  // A parameter numbered after the computation's existing ones.
  Instruction* param(Computation* c, Shape s) {
    int64_t n = 0;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kParameter) ++n;
    auto inst = std::make_unique<Instruction>(fmt::format("p{}.{}", n, ++counter_),
                                              Opcode::kParameter, std::move(s));
    inst->attrs().parameter_number = n;
    return append(c, std::move(inst));
  }
  Instruction* param(Shape s) { return param(main_, std::move(s)); }

  // Appends an instruction, which becomes the computation's root.
  Instruction* add(Computation* c, Opcode op, Shape s, std::vector<Instruction*> operands) {
    auto inst = std::make_unique<Instruction>(fmt::format("{}.{}", opcode_name(op), ++counter_), op,
                                              std::move(s));
    for (Instruction* o : operands) inst->add_operand(o);
    return append(c, std::move(inst));
  }
  Instruction* add(Opcode op, Shape s, std::vector<Instruction*> operands) {
    return add(main_, op, std::move(s), std::move(operands));
  }

  // (t[], t[]) -> result[] computing op.
  Computation* scalar_binary(Opcode op, PrimitiveType t, PrimitiveType result) {
    Computation* c =
        computation(fmt::format("{}_{}.{}", opcode_name(op), type_name(t), ++counter_));
    Instruction* x = param(c, sh(t));
    Instruction* y = param(c, sh(t));
    add(c, op, sh(result), {x, y});
    return c;
  }
  Computation* scalar_add(PrimitiveType t) { return scalar_binary(Opcode::kAdd, t, t); }

  // A computation with these parameter shapes whose root (a custom-call) has shape result.
  Computation* signature(std::vector<Shape> params, Shape result) {
    Computation* c = computation(fmt::format("sig.{}", ++counter_));
    std::vector<Instruction*> ps;
    for (Shape& s : params) ps.push_back(param(c, std::move(s)));
    add(c, Opcode::kCustomCall, std::move(result), ps);
    return c;
  }

 private:
  Instruction* append(Computation* c, std::unique_ptr<Instruction> inst) {
    Instruction* raw = c->add(std::move(inst));
    c->set_root(raw);
    return raw;
  }

  Module module_;
  Computation* main_;
  int counter_ = 0;
};

// The inferred shape as text, or "error: <message>".
inline std::string inferred(const Instruction* inst) {
  try {
    return infer_shape(*inst).to_string(false);
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

// The message infer_shape throws, or "<no error>".
inline std::string error_of(const Instruction* inst) {
  try {
    infer_shape(*inst);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace podsim::ir::testing
