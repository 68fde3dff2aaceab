// Module verifier: structure (entry, definition order, parameters, call graph), shapes
// (every declared shape against infer_shape), module header attributes (entry layout,
// input/output aliases), collective device ids and shardings. It collects every problem
// and never stops at the first, so that one run shows a user everything to fix.
#include "compiler/ir/verifier.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "compiler/ir/shape_inference.h"
#include "compiler/ir/infer/internal.h"
#include "compiler/ir/sharding.h"

namespace podsim::ir {
namespace {

using infer::str;

// The subshape at a tuple index path, or null when the path leaves the shape.
const Shape* subshape(const Shape& shape, const std::vector<int64_t>& index) {
  const Shape* s = &shape;
  for (int64_t i : index) {
    if (!s->is_tuple() || i < 0 || i >= s->tuple_size()) return nullptr;
    s = &s->element(i);
  }
  return s;
}

SourcePos anchor(const Computation& c) {
  return c.instructions().empty() ? SourcePos{} : c.instructions().front()->pos();
}

class Checker {
 public:
  Checker(const Module& module, std::string_view filename) : module_(module), filename_(filename) {}

  std::vector<std::string> run() {
    for (const auto& c : module_.computations()) computations_.insert(c.get());
    check_header();
    for (const auto& c : module_.computations()) check_computation(*c);
    check_call_graph();
    if (module_.entry() && computations_.count(module_.entry())) {
      check_entry_layout(*module_.entry());
      check_aliases(*module_.entry());
    }
    return std::move(errors_);
  }

 private:
  void report(SourcePos pos, const Computation* c, const Instruction* i, const std::string& what) {
    std::string context = fmt::format("in module {}", module_.name());
    if (c && i)
      context = fmt::format("in computation {}, instruction {}", c->name(), i->name());
    else if (c)
      context = fmt::format("in computation {}", c->name());
    errors_.push_back(
        fmt::format("{}:{}:{}: {}: {}", filename_, pos.line, pos.column, context, what));
  }
  void report(const Computation& c, const Instruction& i, const std::string& what) {
    report(i.pos(), &c, &i, what);
  }
  void report(const Computation& c, const std::string& what) {
    report(anchor(c), &c, nullptr, what);
  }

  void check_header() {
    std::set<std::string> names;
    for (const auto& c : module_.computations())
      if (!names.insert(c->name()).second)
        report(*c, fmt::format("computation name {} is used twice in the module", c->name()));
    if (module_.replica_count < 1)
      report({}, nullptr, nullptr,
             fmt::format("replica_count {} must be at least 1", module_.replica_count));
    if (module_.num_partitions < 1)
      report({}, nullptr, nullptr,
             fmt::format("num_partitions {} must be at least 1", module_.num_partitions));
    const Computation* entry = module_.entry();
    if (!entry)
      report({}, nullptr, nullptr, "the module has no entry computation");
    else if (!computations_.count(entry))
      report({}, nullptr, nullptr,
             fmt::format("entry computation {} is not one of the module's computations",
                         entry->name()));
    for (const auto& c : module_.computations())
      if (c->is_entry() && c.get() != entry)
        report(*c, fmt::format("is marked as an entry computation, but the module's entry is {}",
                               entry ? entry->name() : "unset"));
  }

  void check_computation(const Computation& c) {
    std::unordered_map<const Instruction*, size_t> position;
    std::set<std::string> names;
    for (size_t k = 0; k < c.instructions().size(); ++k) {
      const Instruction& inst = *c.instructions()[k];
      position.emplace(&inst, k);
      if (!names.insert(inst.name()).second)
        report(c, inst,
               fmt::format("instruction name {} is used twice in the computation", inst.name()));
    }
    for (size_t k = 0; k < c.instructions().size(); ++k)
      check_instruction(c, *c.instructions()[k], k, position);
    if (!c.root())
      report(c, "the computation has no root instruction");
    else if (!position.count(c.root()))
      report(c, fmt::format("root {} is not an instruction of this computation", c.root()->name()));
    check_parameter_numbers(c);
    check_control_cycles(c, position);
  }

  void check_instruction(const Computation& c, const Instruction& inst, size_t k,
                         const std::unordered_map<const Instruction*, size_t>& position) {
    bool inferable = true;
    if (inst.parent() != &c)
      report(c, inst,
             fmt::format("the instruction's parent is {}, not this computation",
                         inst.parent() ? inst.parent()->name() : "unset"));
    try {
      infer::validate_shape(inst.shape(), "the result");
    } catch (const Error& e) {
      report(c, inst, e.what());
      inferable = false;
    }
    int arity = opcode_arity(inst.opcode());
    if (arity != kVariadic && inst.operand_count() != arity) {
      report(c, inst,
             fmt::format("{} expects {} operand{}, got {}", opcode_name(inst.opcode()), arity,
                         arity == 1 ? "" : "s", inst.operand_count()));
      inferable = false;
    }
    for (int64_t j = 0; j < inst.operand_count(); ++j) {
      const Instruction* op = inst.operand(j);
      auto it = op ? position.find(op) : position.end();
      if (!op) {
        report(c, inst, fmt::format("operand {} is missing", j));
      } else if (it == position.end()) {
        report(
            c, inst,
            fmt::format(
                "operand {} ({}) is not in this computation{}", j, op->name(),
                op->parent() ? " (it belongs to computation " + op->parent()->name() + ")" : ""));
      } else if (it->second >= k) {
        report(c, inst,
               fmt::format("operand {} ({}) is used before it is defined (a cycle)", j,
                           op == &inst ? "the instruction itself" : op->name()));
      } else {
        continue;
      }
      inferable = false;
    }
    for (const Instruction* pred : inst.control_predecessors()) {
      if (!pred)
        report(c, inst, "a control predecessor is missing");
      else if (!position.count(pred))
        report(c, inst,
               fmt::format("control predecessor {} is not in this computation", pred->name()));
    }
    for (size_t j = 0; j < inst.called().size(); ++j) {
      const Computation* callee = inst.called()[j];
      if (!callee) {
        report(c, inst, fmt::format("called computation {} is missing", j));
        inferable = false;
      } else if (!computations_.count(callee)) {
        report(c, inst,
               fmt::format("calls computation {}, which is not in the module", callee->name()));
      }
    }
    if (inferable) check_shape(c, inst);
    if (is_collective(inst.opcode())) check_collective_ids(c, inst);
    if (inst.sharding()) {
      // Sharding device ids are partition ids, as in XLA.
      std::string problem = sharding_problem(*inst.sharding(), inst.shape(), module_.num_partitions);
      if (!problem.empty()) report(c, inst, "sharding: " + problem);
    }
  }

  void check_shape(const Computation& c, const Instruction& inst) {
    try {
      Shape inferred = infer_shape(inst);
      if (!inferred.compatible(inst.shape()))
        report(c, inst,
               fmt::format("{}: declared shape {} does not match the inferred shape {}",
                           opcode_name(inst.opcode()), str(inst.shape()), str(inferred)));
    } catch (const Error& e) {
      report(c, inst, e.what());
    } catch (const std::exception& e) {
      // Inference validates before indexing; this keeps a missed case a report, not a crash.
      report(c, inst,
             fmt::format("{}: shape inference failed: {}", opcode_name(inst.opcode()), e.what()));
    }
  }

  void check_collective_ids(const Computation& c, const Instruction& inst) {
    GroupMode mode;
    try {
      mode = collective_group_mode(inst);
    } catch (const Error&) {
      return;  // already reported by shape inference
    }
    int64_t bound = infer::collective_id_bound(inst, mode);
    std::string what = mode == GroupMode::kCrossPartition ? "partition"
                       : mode == GroupMode::kFlattenedId  ? "device"
                                                                 : "replica";
    auto check_range = [&](int64_t id, std::string_view attr) {
      if (id < 0)
        report(c, inst, fmt::format("{} has a negative {} id {}", attr, what, id));
      else if (bound > 0 && id >= bound)
        report(
            c, inst,
            fmt::format("{} has {} id {}, but the module has {} {}s", attr, what, id, bound, what));
    };
    const auto& groups = inst.attrs().replica_groups;
    if (groups && collective_kind(inst.opcode()) != Opcode::kCollectivePermute) {
      std::set<int64_t> seen;
      for (const auto& group : groups->groups)
        for (int64_t id : group) {
          check_range(id, "replica_groups");
          if (!seen.insert(id).second)
            report(c, inst, fmt::format("replica_groups repeat {} id {}", what, id));
        }
      // As in XLA: explicit groups of replicas must cover every replica.
      if (mode == GroupMode::kCrossReplica && bound > 0 && !seen.empty() &&
          static_cast<int64_t>(seen.size()) != bound)
        report(c, inst,
               fmt::format("replica_groups cover {} replicas, but the module has {}", seen.size(),
                           bound));
    }
    for (const auto& [source, target] : inst.attrs().source_target_pairs) {
      check_range(source, "source_target_pairs");
      check_range(target, "source_target_pairs");
    }
  }

  void check_parameter_numbers(const Computation& c) {
    std::map<int64_t, const Instruction*> by_number;
    for (const auto& inst : c.instructions()) {
      if (inst->opcode() != Opcode::kParameter) continue;
      int64_t n = inst->attrs().parameter_number;
      if (n < 0) {
        report(c, *inst, fmt::format("parameter number {} is negative", n));
      } else if (auto [it, inserted] = by_number.emplace(n, inst.get()); !inserted) {
        report(c, *inst,
               fmt::format("parameter number {} is already used by {}", n, it->second->name()));
      }
    }
    int64_t expected = 0;
    for (const auto& [n, inst] : by_number) {
      if (n != expected) {
        report(c,
               fmt::format("parameter numbers must be 0..{} without gaps; parameter {} is missing",
                           by_number.size() - 1, expected));
        return;
      }
      ++expected;
    }
  }

  // Operands always point backwards (checked above), so a cycle needs a control edge;
  // Kahn's algorithm finds the instructions left on one.
  void check_control_cycles(const Computation& c,
                            const std::unordered_map<const Instruction*, size_t>& position) {
    size_t n = c.instructions().size();
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> pending(n, 0);
    bool any_control = false;
    for (size_t k = 0; k < n; ++k) {
      const Instruction& inst = *c.instructions()[k];
      auto add_edge = [&](const Instruction* from) {
        auto it = from ? position.find(from) : position.end();
        if (it == position.end()) return;
        users[it->second].push_back(k);
        ++pending[k];
      };
      for (const Instruction* op : inst.operands()) add_edge(op);
      for (const Instruction* pred : inst.control_predecessors()) {
        add_edge(pred);
        any_control = true;
      }
    }
    if (!any_control) return;
    std::vector<size_t> ready;
    for (size_t k = 0; k < n; ++k)
      if (pending[k] == 0) ready.push_back(k);
    size_t done = 0;
    while (!ready.empty()) {
      size_t k = ready.back();
      ready.pop_back();
      ++done;
      for (size_t u : users[k])
        if (--pending[u] == 0) ready.push_back(u);
    }
    if (done == n) return;
    for (size_t k = 0; k < n; ++k)
      if (pending[k] > 0) {
        report(c, *c.instructions()[k], "is on a cycle of operands and control-predecessors");
        return;
      }
  }

  // Depth-first search with an explicit stack (modules come from untrusted text).
  void check_call_graph() {
    enum class Color { kWhite, kGray, kBlack };
    std::unordered_map<const Computation*, Color> color;
    struct Frame {
      const Computation* c;
      size_t inst = 0;
      size_t call = 0;
    };
    for (const auto& root : module_.computations()) {
      if (color[root.get()] != Color::kWhite) continue;
      std::vector<Frame> stack{{root.get()}};
      color[root.get()] = Color::kGray;
      while (!stack.empty()) {
        Frame& f = stack.back();
        const auto& insts = f.c->instructions();
        if (f.inst >= insts.size()) {
          color[f.c] = Color::kBlack;
          stack.pop_back();
          continue;
        }
        const Instruction& inst = *insts[f.inst];
        if (f.call >= inst.called().size()) {
          ++f.inst;
          f.call = 0;
          continue;
        }
        const Computation* callee = inst.called()[f.call++];
        if (!callee || !computations_.count(callee)) continue;
        Color& state = color[callee];
        if (state == Color::kGray) {
          std::vector<std::string> cycle;
          bool on_cycle = false;
          for (const Frame& g : stack) {
            on_cycle = on_cycle || g.c == callee;
            if (on_cycle) cycle.push_back(g.c->name());
          }
          cycle.push_back(callee->name());
          report(inst.pos(), f.c, &inst,
                 fmt::format("call graph cycle: {}", fmt::join(cycle, " -> ")));
        } else if (state == Color::kWhite) {
          state = Color::kGray;
          stack.push_back({callee});  // invalidates f
        }
      }
    }
  }

  void check_entry_layout(const Computation& entry) {
    std::vector<Shape> params;
    try {
      params = infer::parameter_shapes(entry);
    } catch (const Error&) {
      return;  // parameter numbering is reported by check_parameter_numbers
    }
    if (const auto& layouts = module_.entry_parameter_layouts) {
      if (layouts->size() != params.size()) {
        report(entry, fmt::format("entry_computation_layout has {} parameters but the entry "
                                  "computation takes {}",
                                  layouts->size(), params.size()));
      } else {
        for (size_t i = 0; i < params.size(); ++i)
          if (!(*layouts)[i].compatible(params[i]))
            report(entry, *parameter(entry, static_cast<int64_t>(i)),
                   fmt::format("entry_computation_layout gives parameter {} the shape {}, but it "
                               "is {}",
                               i, str((*layouts)[i]), str(params[i])));
      }
    }
    if (module_.entry_result_layout && entry.root() &&
        !module_.entry_result_layout->compatible(entry.root()->shape()))
      report(
          entry, *entry.root(),
          fmt::format("entry_computation_layout gives the result the shape {}, but the root is {}",
                      str(*module_.entry_result_layout), str(entry.root()->shape())));
  }

  static const Instruction* parameter(const Computation& c, int64_t n) {
    for (const auto& inst : c.instructions())
      if (inst->opcode() == Opcode::kParameter && inst->attrs().parameter_number == n)
        return inst.get();
    return nullptr;
  }

  void check_aliases(const Computation& entry) {
    std::set<std::vector<int64_t>> outputs;
    std::set<std::pair<int64_t, std::vector<int64_t>>> inputs;
    for (const IoAlias& alias : module_.input_output_alias) {
      std::string name =
          fmt::format("input_output_alias {{{}}}: ({}, {{{}}})", fmt::join(alias.output_index, ","),
                      alias.parameter_number, fmt::join(alias.parameter_index, ","));
      const Instruction* param = parameter(entry, alias.parameter_number);
      if (!param) {
        report(entry, fmt::format("{} refers to parameter {}, which the entry computation lacks",
                                  name, alias.parameter_number));
        continue;
      }
      auto at_param = [&](const std::string& what) { report(entry, *param, name + " " + what); };
      if (!outputs.insert(alias.output_index).second) at_param("aliases an output index twice");
      if (!inputs.emplace(alias.parameter_number, alias.parameter_index).second)
        at_param("aliases a parameter buffer that another output already aliases");
      const Shape* in = subshape(param->shape(), alias.parameter_index);
      const Shape* out =
          entry.root() ? subshape(entry.root()->shape(), alias.output_index) : nullptr;
      if (!in) at_param(fmt::format("names no buffer of parameter shape {}", str(param->shape())));
      if (!out && entry.root())
        at_param(fmt::format("names no buffer of output shape {}", str(entry.root()->shape())));
      if (in && out && !in->compatible(*out))
        at_param(fmt::format("aliases the output {} with the parameter buffer {} of another shape",
                             str(*out), str(*in)));
    }
  }

  const Module& module_;
  std::string_view filename_;
  std::unordered_set<const Computation*> computations_;
  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> check_module(const Module& module, std::string_view filename) {
  return Checker(module, filename).run();
}

void verify_module(const Module& module, std::string_view filename) {
  std::vector<std::string> errors = check_module(module, filename);
  if (!errors.empty()) throw Error(fmt::format("{}", fmt::join(errors, "\n")));
}

}  // namespace podsim::ir
