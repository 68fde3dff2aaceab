#include "compiler/ir/module.h"

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
  instructions_.push_back(std::move(instruction));
  return raw;
}

Instruction* Computation::find(std::string_view name) const {
  for (const auto& i : instructions_)
    if (i->name() == name) return i.get();
  return nullptr;
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

int64_t Module::instruction_count() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += c->instruction_count();
  return n;
}

}  // namespace podsim::ir
