#include "runtime/nn/module.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "runtime/autograd/autograd.h"

namespace podsim::nn {
namespace {

std::string shape_text(const Tensor& t) {
  std::string dims;
  for (int64_t d : t.shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return fmt::format("{}[{}]", ir::type_name(t.dtype()), dims);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + ("\"" + n + "\"");
  return out;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  throw Error(fmt::format(
      "{}: this module has no single-input forward(Tensor); call its own forward overload",
      type_name_));
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(fmt::format("{}: invalid name \"{}\" (names are non-empty and have no '.')",
                            type_name_, name));
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  if (taken(parameters_) || taken(buffers_) || taken(children_))
    throw Error(fmt::format("{}: \"{}\" is already registered", type_name_, name));
}

void Module::register_parameter(std::string name, Tensor* slot) {
  check_new_name(name);
  if (!slot->defined()) return;
  if (!ir::is_float(slot->dtype()))
    throw Error(fmt::format("{}: parameter \"{}\" must be floating-point, got {}", type_name_, name,
                            shape_text(*slot)));
  slot->requires_grad_(true);
  parameters_.emplace_back(std::move(name), slot);
}

void Module::register_buffer(std::string name, Tensor* slot) {
  check_new_name(name);
  if (!slot->defined()) return;
  buffers_.emplace_back(std::move(name), slot);
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name);
  if (!module) throw Error(fmt::format("{}: child \"{}\" is null", type_name_, name));
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, bool want_parameters,
                     std::vector<std::pair<std::string, Tensor*>>& out) const {
  for (const auto& [name, slot] : want_parameters ? parameters_ : buffers_)
    out.emplace_back(prefix + name, slot);
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", true, want_parameters, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", recurse, true, slots);
  NamedTensors out;
  for (auto& [name, slot] : slots) out.emplace_back(std::move(name), *slot);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", recurse, false, slots);
  NamedTensors out;
  for (auto& [name, slot] : slots) out.emplace_back(std::move(name), *slot);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

// torch's order: each module's own parameters, then its buffers, then its children.
std::vector<std::pair<std::string, Tensor*>> Module::state_slots() const {
  std::vector<std::pair<std::string, Tensor*>> out;
  struct Walk {
    static void run(const Module& m, const std::string& prefix,
                    std::vector<std::pair<std::string, Tensor*>>& out) {
      for (const auto& [name, slot] : m.parameters_) out.emplace_back(prefix + name, slot);
      for (const auto& [name, slot] : m.buffers_) out.emplace_back(prefix + name, slot);
      for (const auto& [name, child] : m.children_) run(*child, prefix + name + ".", out);
    }
  };
  Walk::run(*this, "", out);
  return out;
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (auto& [name, slot] : state_slots()) out.emplace_back(std::move(name), *slot);
  return out;
}

LoadResult Module::load_state_dict(const NamedTensors& state, bool strict, Loc loc) {
  std::vector<std::pair<std::string, Tensor*>> slots = state_slots();
  LoadResult result;
  std::set<std::string> known;
  for (const auto& [name, slot] : slots) known.insert(name);
  std::set<std::string> given;
  for (const auto& [name, value] : state) {
    if (!given.insert(name).second)
      throw Error(
          fmt::format("{}.load_state_dict: key \"{}\" appears more than once", type_name_, name));
    if (!known.contains(name)) result.unexpected_keys.push_back(name);
  }
  for (const auto& [name, slot] : slots)
    if (!given.contains(name)) result.missing_keys.push_back(name);
  if (strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty())) {
    std::string message =
        fmt::format("{}.load_state_dict: the state does not match the module", type_name_);
    if (!result.missing_keys.empty())
      message += fmt::format("; missing keys: {}", join(result.missing_keys));
    if (!result.unexpected_keys.empty())
      message += fmt::format("; unexpected keys: {}", join(result.unexpected_keys));
    throw Error(message + " (load with strict=false to skip them)");
  }
  // Check everything before changing anything, so that a failed load changes nothing.
  std::vector<std::pair<Tensor*, const Tensor*>> copies;
  for (const auto& [name, value] : state) {
    auto it =
        std::find_if(slots.begin(), slots.end(), [&](const auto& s) { return s.first == name; });
    if (it == slots.end()) continue;
    const Tensor& target = *it->second;
    if (!value.defined())
      throw Error(
          fmt::format("{}.load_state_dict: the value of \"{}\" is undefined", type_name_, name));
    if (value.shape() != target.shape() || value.dtype() != target.dtype())
      throw Error(fmt::format(
          "{}.load_state_dict: \"{}\" is {} in the state but {} in the module (shapes and "
          "dtypes must match; convert with to(dtype) first)",
          type_name_, name, shape_text(value), shape_text(target)));
    copies.emplace_back(it->second, &value);
  }
  NoGradGuard no_grad;
  for (auto [target, value] : copies) target->copy_(value->detach(), loc);
  return result;
}

Module& Module::train(bool mode) {
  training_ = mode;
  for (auto& [name, child] : children_) child->train(mode);
  return *this;
}

Module& Module::to(pjrt::Device& device, Loc loc) {
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", true, true, slots);
  for (auto& [name, slot] : slots) {
    if (slot->device() == &device) continue;
    Tensor grad = slot->grad();
    Tensor moved = slot->detach().to(device, loc);
    moved.requires_grad_(true);
    if (grad.defined()) moved.set_grad(grad.to(device, loc));
    *slot = moved;
  }
  slots.clear();
  collect("", true, false, slots);
  for (auto& [name, slot] : slots)
    if (slot->device() != &device) *slot = slot->to(device, loc);
  return *this;
}

void Module::zero_grad() {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", true, true, slots);
  for (auto& [name, slot] : slots) slot->set_grad(Tensor());
}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::shared_ptr<Module> Sequential::operator[](size_t index) const {
  if (index >= modules_.size())
    throw Error(
        fmt::format("Sequential: index {} is out of range (size {})", index, modules_.size()));
  return modules_[index];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = m->forward(x);
  return x;
}

}  // namespace podsim::nn
