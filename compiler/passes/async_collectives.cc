// Async collectives and copies to synchronous ones: each start and its done become the
// collective itself (for a generic async-start, the instruction it wraps; its updates and
// its computation go; for a copy-start, a copy), for targets that run a collective in one piece
// (the CPU backend, and the TPU lowering, which overlaps collectives with independent steps
// itself). The collective takes the start's operands, attributes and called computations; whatever
// used the done uses it; a start's other users (rare: XLA's async tuples also hold the
// operands) get the tuple the start would have produced.
#include <unordered_set>
#include <vector>

#include "compiler/passes/pass.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;

class AsyncCollectivesToSync final : public Pass {
 public:
  std::string_view name() const override { return "async-collectives-to-sync"; }

  bool run(ir::Module& module) override {
    bool changed = false;
    std::unordered_set<const ir::Computation*> wrapped;  // by the generic starts converted
    for (const auto& c : module.computations()) changed |= run(*c, wrapped);
    if (wrapped.empty()) return changed;
    // Their computations go with them, unless something else calls them too.
    for (const auto& c : module.computations())
      for (const auto& i : c->instructions())
        for (const ir::Computation* callee : i->called()) wrapped.erase(callee);
    module.remove_computations_if([&](const ir::Computation* c) { return wrapped.count(c) > 0; });
    return true;
  }

 private:
  // copy-start / copy-done: a copy; a start's other users get (copy, source, 0).
  static bool copies(ir::Computation& c) {
    std::vector<Instruction*> starts;
    for (const auto& i : c.instructions())
      if (i->opcode() == Opcode::kCopyStart) starts.push_back(i.get());
    if (starts.empty()) return false;
    auto users = c.users();
    std::unordered_set<const Instruction*> gone;
    for (Instruction* start : starts) {
      Instruction* copy = c.add(std::make_unique<Instruction>(
          c.unique_name(start->name() + ".sync"), Opcode::kCopy, start->shape().element(0)));
      copy->set_operands(start->operands());
      copy->metadata() = start->metadata();
      copy->set_pos(start->pos());
      for (Instruction* p : start->control_predecessors()) copy->add_control_predecessor(p);
      bool other_users = c.root() == start;
      for (Instruction* user : users[start]) {
        if (user->opcode() != Opcode::kCopyDone) {
          other_users = true;
          continue;
        }
        c.replace_all_uses(user, copy);
        gone.insert(user);
      }
      Instruction* value = copy;
      if (other_users) {
        auto context = std::make_unique<Instruction>(c.unique_name(start->name() + ".context"),
                                                     Opcode::kConstant, start->shape().element(2));
        context->attrs().literal = ir::Literal(start->shape().element(2));
        value = c.add(std::make_unique<Instruction>(c.unique_name(start->name() + ".value"),
                                                    Opcode::kTuple, start->shape()));
        value->set_operands({copy, start->operand(0), c.add(std::move(context))});
      }
      c.replace_all_uses(start, value);
      gone.insert(start);
    }
    c.remove_if([&](const Instruction* i) { return gone.count(i) > 0; });
    c.sort_topologically();
    return true;
  }

  static bool run(ir::Computation& c, std::unordered_set<const ir::Computation*>& wrapped) {
    const bool copied = copies(c);
    std::vector<Instruction*> starts;
    std::unordered_set<const Instruction*> gone;
    for (const auto& i : c.instructions()) {
      if (ir::collective_kind(i->opcode()) != i->opcode() || i->opcode() == Opcode::kAsyncStart)
        starts.push_back(i.get());
      if (i->opcode() == Opcode::kAsyncUpdate) gone.insert(i.get());
    }
    if (starts.empty()) return copied;
    // An async update passes its start's value on (in order: a chain ends at the start).
    for (const auto& i : c.instructions())
      if (i->opcode() == Opcode::kAsyncUpdate) c.replace_all_uses(i.get(), i->operand(0));
    auto users = c.users();
    for (Instruction* start : starts) {
      // The start's shape, verified, holds its collective's (after the operands); a
      // generic start runs the root of its computation on the start's operands.
      const bool generic = start->opcode() == Opcode::kAsyncStart;
      std::unique_ptr<Instruction> sync;
      if (generic) {
        wrapped.insert(start->called().at(0));
        sync = start->called().at(0)->root()->clone(c.unique_name(start->name() + ".sync"), start->operands());
      } else {
        const ir::Shape& result =
            start->opcode() == Opcode::kAllReduceStart ? start->shape() : start->shape().element(1);
        sync = std::make_unique<Instruction>(c.unique_name(start->name() + ".sync"),
                                             ir::collective_kind(start->opcode()), result);
        sync->set_operands(start->operands());
        sync->set_called(start->called());
        sync->attrs() = start->attrs();
        sync->metadata() = start->metadata();
      }
      sync->set_pos(start->pos());
      for (Instruction* p : start->control_predecessors()) sync->add_control_predecessor(p);
      Instruction* collective = c.add(std::move(sync));
      // Dones become the collective.
      bool other_users = false;
      for (Instruction* user : users[start]) {
        if (!ir::is_async_done(user->opcode())) {
          other_users = true;
          continue;
        }
        c.replace_all_uses(user, collective);
        gone.insert(user);
      }
      gone.insert(start);
      // An all-reduce-start's value is its result; the others' (operands, result[,
      // context words]) is rebuilt where something reads it.
      if (!other_users || start->opcode() == Opcode::kAllReduceStart) {
        c.replace_all_uses(start, collective);  // control edges and a start at the root
        continue;
      }
      const ir::Shape& shape = start->shape();
      auto tuple = std::make_unique<Instruction>(c.unique_name(start->name() + ".value"),
                                                 Opcode::kTuple, shape);
      if (start->operand_count() == 1 && !generic) {
        tuple->add_operand(start->operand(0));
      } else {
        auto operands = std::make_unique<Instruction>(c.unique_name(start->name() + ".operands"),
                                                      Opcode::kTuple, shape.element(0));
        operands->set_operands(start->operands());
        tuple->add_operand(c.add(std::move(operands)));
      }
      tuple->add_operand(collective);
      for (int64_t k = 2; k < shape.tuple_size(); ++k) {
        auto zero = std::make_unique<Instruction>(c.unique_name(start->name() + ".context"),
                                                  Opcode::kConstant, shape.element(k));
        zero->attrs().literal = ir::Literal(shape.element(k));
        tuple->add_operand(c.add(std::move(zero)));
      }
      c.replace_all_uses(start, c.add(std::move(tuple)));
    }
    c.remove_if([&](const Instruction* i) { return gone.count(i) > 0; });
    c.sort_topologically();
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_async_collectives_to_sync() {
  return std::make_unique<AsyncCollectivesToSync>();
}

}  // namespace podsim::passes
