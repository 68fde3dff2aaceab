#include "compiler/ir/module.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_set>

#include "common/error.h"

namespace podsim::ir {

Instruction* Computation::add(std::unique_ptr<Instruction> instruction) {
  Instruction* raw = instruction.get();
  raw->set_parent(this);
  if (raw->opcode() == Opcode::kParameter) {
    auto n = static_cast<size_t>(raw->attrs().parameter_number);
    if (parameters_.size() <= n) parameters_.resize(n + 1, nullptr);
    parameters_[n] = raw;
  }
  if (used_names_valid_) used_names_.insert(raw->name());
  instructions_.push_back(std::move(instruction));
  return raw;
}

Instruction* Computation::find(std::string_view name) const {
  for (const auto& i : instructions_)
    if (i->name() == name) return i.get();
  return nullptr;
}

void Computation::replace_all_uses(Instruction* old, Instruction* replacement) {
  for (const auto& i : instructions_) {
    if (i.get() == replacement) continue;  // replacement may use old itself
    for (int64_t k = 0; k < i->operand_count(); ++k)
      if (i->operand(k) == old) i->set_operand(k, replacement);
    for (Instruction*& p : i->mutable_control_predecessors())
      if (p == old) p = replacement;
  }
  if (root_ == old) root_ = replacement;
}

void Computation::remove_if(const std::function<bool(const Instruction*)>& remove) {
  std::unordered_set<const Instruction*> removed;
  for (const auto& i : instructions_)
    if (remove(i.get())) removed.insert(i.get());
  if (removed.empty()) return;
  if (removed.count(root_)) fail("internal: removing the root of computation '{}'", name_);
  for (const auto& i : instructions_) {
    if (removed.count(i.get())) continue;
    for (const Instruction* op : i->operands())
      if (removed.count(op))
        fail("internal: removing '{}' of computation '{}' while '{}' uses it", op->name(), name_, i->name());
    auto& preds = i->mutable_control_predecessors();
    std::erase_if(preds, [&](Instruction* p) { return removed.count(p) != 0; });
  }
  std::erase_if(parameters_, [&](Instruction* p) { return removed.count(p) != 0; });
  std::erase_if(instructions_, [&](const std::unique_ptr<Instruction>& i) { return removed.count(i.get()) != 0; });
}

void Computation::sort_topologically() {
  std::unordered_map<const Instruction*, size_t> position;
  for (size_t k = 0; k < instructions_.size(); ++k) position[instructions_[k].get()] = k;
  std::vector<std::unique_ptr<Instruction>> sorted;
  sorted.reserve(instructions_.size());
  std::vector<uint8_t> state(instructions_.size(), 0);  // 0 new, 1 in progress, 2 done
  // Iterative DFS in the existing order: each instruction is emitted after its inputs.
  for (size_t start = 0; start < instructions_.size(); ++start) {
    if (state[start]) continue;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};
    state[start] = 1;
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      const Instruction* inst = instructions_[k].get();
      size_t edges = inst->operands().size() + inst->control_predecessors().size();
      if (next < edges) {
        const Instruction* dep = next < inst->operands().size()
                                     ? inst->operands()[next]
                                     : inst->control_predecessors()[next - inst->operands().size()];
        ++next;
        auto it = position.find(dep);
        if (it == position.end()) fail("internal: '{}' uses an instruction outside computation '{}'", inst->name(), name_);
        if (state[it->second] == 1) fail("internal: cycle through '{}' in computation '{}'", dep->name(), name_);
        if (state[it->second] == 0) {
          state[it->second] = 1;
          stack.emplace_back(it->second, 0);
        }
        continue;
      }
      state[k] = 2;
      sorted.push_back(std::move(instructions_[k]));
      stack.pop_back();
    }
  }
  instructions_ = std::move(sorted);
}

std::unordered_map<const Instruction*, std::vector<Instruction*>> Computation::users() const {
  std::unordered_map<const Instruction*, std::vector<Instruction*>> out;
  for (const auto& i : instructions_) {
    for (const Instruction* op : i->operands()) {
      auto& list = out[op];
      if (list.empty() || list.back() != i.get()) list.push_back(i.get());
    }
  }
  return out;
}

std::string Computation::unique_name(std::string_view prefix) {
  if (!used_names_valid_) {
    for (const auto& i : instructions_) used_names_.insert(i->name());
    used_names_valid_ = true;
  }
  while (true) {
    std::string name = fmt::format("{}.{}", prefix, next_name_id_++);
    if (used_names_.insert(name).second) return name;
  }
}

Computation* Module::add_computation(std::unique_ptr<Computation> c) {
  Computation* raw = c.get();
  raw->set_parent(this);
  computations_.push_back(std::move(c));
  return raw;
}

void Module::set_entry(Computation* c) {
  if (entry_) entry_->set_entry(false);
  entry_ = c;
  if (c) c->set_entry(true);
}

Computation* Module::find_computation(std::string_view name) const {
  for (const auto& c : computations_)
    if (c->name() == name) return c.get();
  return nullptr;
}

void Module::remove_computations_if(const std::function<bool(const Computation*)>& remove) {
  for (const auto& c : computations_) {
    if (!remove(c.get())) continue;
    if (c.get() == entry_) fail("internal: removing the entry computation '{}'", c->name());
  }
  std::erase_if(computations_, [&](const std::unique_ptr<Computation>& c) { return remove(c.get()); });
}

std::string Module::unique_computation_name(std::string_view prefix) const {
  for (int64_t id = 0;; ++id) {
    std::string name = fmt::format("{}.{}", prefix, id);
    if (!find_computation(name)) return name;
  }
}

int64_t Module::instruction_count() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += c->instruction_count();
  return n;
}

}  // namespace podsim::ir
