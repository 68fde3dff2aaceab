// Helpers shared by the pass implementations (not part of the pass API): which
// computations a pass may rewrite, side effects, deferred replacement of instructions,
// dead-instruction removal and recognizing constants. Every pass expects a module that
// verify_module() accepts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/passes/pass.h"

namespace podsim::passes::internal {

// The bodies of fusion instructions. Like XLA, the rewriting passes (simplifier,
// constant folding, CSE, fusion) leave them alone: a backend relies on their form.
std::unordered_set<const ir::Computation*> fusion_computations(const ir::Module& module);

// The module's computations that are not fusion bodies, in module order.
std::vector<ir::Computation*> non_fusion_computations(const ir::Module& module);

// Computations ordered so that every callee comes before its callers (iterative, so
// that deep call chains cannot overflow the stack; a call cycle, which the verifier
// rejects, is cut where it is found).
std::vector<const ir::Computation*> callees_first(const ir::Module& module);

// Erases the computations that nothing reachable from the entry calls; whether any was.
bool remove_unreachable_computations(ir::Module& module);

// Which instructions have effects beyond their result: a custom-call marked
// custom_call_has_side_effect, a collective (kept conservatively: every device must
// take part), or a call / while / conditional / fusion / ... whose called computations
// contain one. Such instructions are never removed or merged.
class SideEffects {
 public:
  explicit SideEffects(const ir::Module& module);
  bool has(const ir::Instruction& instruction) const;

 private:
  std::unordered_set<const ir::Computation*> effectful_;
};

// Instructions with a control predecessor or a control successor. The rewriting
// passes leave them in place so that the ordering they express survives.
std::unordered_set<const ir::Instruction*> control_linked(const ir::Computation& computation);

// Replacements decided while walking a computation in order, applied to every use in
// one sweep at the end (Computation::replace_all_uses per instruction would make a
// pass quadratic).
class Replacements {
 public:
  void add(ir::Instruction* old, ir::Instruction* replacement) { map_[old] = replacement; }
  bool empty() const { return map_.empty(); }
  ir::Instruction* resolve(ir::Instruction* instruction) const;
  // Points instruction's operands at their replacements.
  void resolve_operands(ir::Instruction& instruction) const;
  // Redirects every operand, control edge and the root of computation.
  void apply(ir::Computation& computation) const;

 private:
  std::unordered_map<const ir::Instruction*, ir::Instruction*> map_;
};

// Removes the instructions that neither the root, a parameter nor an instruction with
// a side effect needs. Parameters always stay (they make the signature). Returns
// whether any instruction went.
bool remove_dead_instructions(ir::Computation& computation, const SideEffects& side_effects);

// When every element of instruction's value is the same known scalar (a constant, or
// a broadcast of one), that scalar; nullopt otherwise (also for empty arrays).
std::optional<ir::Literal> uniform_value(const ir::Instruction& instruction);

// Tests on a scalar literal's value, exact in the literal's type.
bool is_zero(const ir::Literal& scalar);           // integers, pred: 0; floats: +0 or -0
bool is_positive_zero(const ir::Literal& scalar);  // floats: +0 only
bool is_negative_zero(const ir::Literal& scalar);  // floats: -0 only
bool is_one(const ir::Literal& scalar);

// A computation of two scalar parameters whose root applies one binary opcode to them,
// `ROOT r = op(p0, p1)` with nothing else in it (the form reductions take fast paths
// for); the opcode, or nullopt.
std::optional<ir::Opcode> simple_reducer(const ir::Computation& computation);

// Whether `init` is the identity of the binary reducer (simple_reducer): add / or / xor
// 0, multiply 1, and all ones, maximum the lowest value, minimum the highest.
bool is_reducer_identity(const ir::Instruction& init, const ir::Computation& reducer);

// Adds instructions for `origin` to its computation (at the end: sort the computation
// topologically afterwards), each attributed to it (its metadata; its name as op_name
// where it has none) and named after it: the rewrites that replace one instruction by
// several (the window and dot expanders).
class Builder {
 public:
  explicit Builder(ir::Instruction& origin) : origin_(origin), c_(*origin.parent()) {}

  // An instruction whose shape shape inference gives (the attributes set by `set`).
  ir::Instruction* add(ir::Opcode op, std::vector<ir::Instruction*> operands,
                       const std::function<void(ir::Attributes&)>& set = {});
  // One of `shape`, given (reshape, convert, broadcast, ...).
  ir::Instruction* add(ir::Opcode op, ir::Shape shape, std::vector<ir::Instruction*> operands);
  ir::Instruction* scalar(ir::PrimitiveType type, double value);
  ir::Instruction* pred(bool value);
  ir::Instruction* broadcast(ir::Instruction* scalar, const std::vector<int64_t>& dims);
  // x's dimensions placed at `dims` of a result of `shape` (XLA's broadcast).
  ir::Instruction* broadcast_in(ir::Instruction* x, const ir::Shape& shape, std::vector<int64_t> dims);
  // These return x itself when they would not change it.
  ir::Instruction* reshape(ir::Instruction* x, const std::vector<int64_t>& dims);
  ir::Instruction* convert(ir::Instruction* x, ir::PrimitiveType type);
  ir::Instruction* transpose(ir::Instruction* x, std::vector<int64_t> permutation);
  ir::Instruction* pad(ir::Instruction* x, ir::Instruction* value, std::vector<ir::PadDim> padding);
  ir::Instruction* concatenate(std::vector<ir::Instruction*> xs, int64_t dim);
  ir::Instruction* slice(ir::Instruction* x, std::vector<ir::SliceDim> dims);
  ir::Instruction* compare(ir::Instruction* a, ir::Instruction* b, ir::ComparisonDirection direction);
  // computation applied elementwise to arrays of `dims` (its parameters bound to args,
  // scalar constants broadcast); nullptr when an instruction in it is not elementwise.
  ir::Instruction* inline_elementwise(const ir::Computation& computation, const std::vector<ir::Instruction*>& args,
                                      const std::vector<int64_t>& dims);

 private:
  ir::Instruction* make(ir::Opcode op, ir::Shape shape, std::vector<ir::Instruction*> operands);

  ir::Instruction& origin_;
  ir::Computation& c_;
};

// Replaces, in every computation that is not a fusion body, each instruction without
// control edges for which `expand` returns another (built with a Builder) by that one,
// which takes its layout; then sorts the computation and removes what became dead.
// Whether anything was replaced.
bool expand_instructions(ir::Module& module, const std::function<ir::Instruction*(ir::Instruction&)>& expand);

// A pass named `name` that expands (expand_instructions) every instruction of one of
// `opcodes` with `expand` (which may add computations to the module it is given).
std::unique_ptr<Pass> make_opcode_expander(
    std::string_view name, std::vector<ir::Opcode> opcodes,
    std::function<ir::Instruction*(ir::Module&, ir::Instruction&)> expand);

// A new computation of the module: (a, b) -> a + b on scalars of `type` (or on pred),
// named after `prefix`.
ir::Computation* add_scalar_adder(ir::Module& module, ir::PrimitiveType type, std::string_view prefix);

// Whether Builder::inline_elementwise can inline the computation.
bool elementwise_body(const ir::Computation& computation);

}  // namespace podsim::passes::internal
