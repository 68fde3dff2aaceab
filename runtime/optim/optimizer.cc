#include "runtime/optim/optimizer.h"

#include <charconv>

#include "common/error.h"

namespace podsim::optim {
namespace {

// A key every group may carry: the learning rate a scheduler started from (torch's).
constexpr const char* kInitialLr = "initial_lr";

Tensor host_scalar(double v) { return Tensor::from_vector(std::vector<double>{v}, {}); }
Tensor host_scalar(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, {}); }

std::string shape_text(const Tensor& t) {
  std::string out = std::string(ir::type_name(t.dtype())) + "[";
  auto shape = t.shape();
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

// "state.12.exp_avg" -> (12, "exp_avg"); "param_groups.0.lr" -> (0, "lr").
bool split_key(std::string_view key, std::string_view prefix, size_t& index, std::string& field) {
  if (key.substr(0, prefix.size()) != prefix) return false;
  key.remove_prefix(prefix.size());
  size_t dot = key.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  auto [end, err] = std::from_chars(key.data(), key.data() + dot, index);
  if (err != std::errc() || end != key.data() + dot) return false;
  field = std::string(key.substr(dot + 1));
  return !field.empty();
}

double scalar_value(const Tensor& t, const std::string& key, const std::string& who) {
  if (t.numel() != 1 || t.dim() != 0)
    fail("{}::load_state_dict: '{}' is {}, expected a scalar", who, key, shape_text(t));
  return t.item().to_double();
}

}  // namespace

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups,
                     std::map<std::string, double> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  if (groups.empty()) fail("{}: got no parameter groups", name_);
  for (ParamGroup& group : groups) add_group(std::move(group));
}

void Optimizer::check_groups() const {
  for (size_t g = 0; g < groups_.size(); ++g) check_options(groups_[g].options, g);
}

void Optimizer::add_param_group(ParamGroup group) {
  std::map<std::string, double> options = group.options;
  for (const auto& [key, value] : defaults_) options.try_emplace(key, value);
  check_options(options, groups_.size());
  add_group(std::move(group));
}

void Optimizer::add_group(ParamGroup group) {
  size_t index = groups_.size();
  if (group.params.empty()) fail("{}: parameter group {} has no parameters", name_, index);
  for (const auto& [key, value] : group.options)
    if (!defaults_.contains(key) && key != kInitialLr)
      fail("{}: parameter group {} has option '{}', which {} does not have", name_, index, key,
           name_);
  for (const auto& [key, value] : defaults_) group.options.try_emplace(key, value);
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    if (!p.defined()) fail("{}: parameter {} of group {} is undefined", name_, i, index);
    if (!ir::is_float(p.dtype()))
      fail("{}: parameter {} of group {} is {}; only floating tensors can be optimized", name_, i,
           index, shape_text(p));
    if (!p.is_leaf())
      fail(
          "{}: parameter {} of group {} is not a leaf (it was computed from other tensors); "
          "optimize the leaf tensors, e.g. a module's parameters()",
          name_, i, index);
    for (const ParamGroup& other : groups_)
      for (const Tensor& q : other.params)
        if (q.is_same(p))
          fail(
              "{}: parameter {} of group {} is also in another group; a parameter may be in "
              "one group only",
              name_, i, index);
    for (size_t j = 0; j < i; ++j)
      if (group.params[j].is_same(p))
        fail("{}: parameter {} of group {} appears twice in it", name_, i, index);
  }
  state_.resize(state_.size() + group.params.size());
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& group : groups_)
    for (Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none)
        p.set_grad(Tensor());
      else
        g.copy_(zeros(g.shape(), {g.dtype(), g.device()}));
    }
}

double Optimizer::lr(size_t group) const {
  if (group >= groups_.size())
    fail("{}::lr: group {} does not exist ({} groups)", name_, group, groups_.size());
  return groups_[group].options.at("lr");
}

void Optimizer::set_lr(double lr) {
  for (ParamGroup& group : groups_) group.options["lr"] = lr;
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [key, value] : groups_[g].options)
      out.emplace_back(prefix + key, host_scalar(value));
    std::vector<int64_t> indices;
    for (size_t i = 0; i < groups_[g].params.size(); ++i)
      indices.push_back(static_cast<int64_t>(index++));
    auto n = static_cast<int64_t>(indices.size());
    out.emplace_back(prefix + "params", Tensor::from_vector(indices, {n}));
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    std::string prefix = "state." + std::to_string(i) + ".";
    if (state_[i].step) out.emplace_back(prefix + "step", host_scalar(*state_[i].step));
    for (const auto& [key, tensor] : state_[i].tensors) out.emplace_back(prefix + key, tensor);
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::vector<std::map<std::string, double>> options(groups_.size());
  std::vector<const Tensor*> params_of(groups_.size(), nullptr);
  std::vector<ParamState> new_state(state_.size());
  std::vector<Tensor*> params;
  for (ParamGroup& group : groups_)
    for (Tensor& p : group.params) params.push_back(&p);
  for (const auto& [key, tensor] : state) {
    size_t index = 0;
    std::string field;
    if (!tensor.defined()) fail("{}::load_state_dict: '{}' is undefined", name_, key);
    if (split_key(key, "param_groups.", index, field)) {
      if (index >= groups_.size())
        fail("{}::load_state_dict: '{}' is for group {}, but this optimizer has {} groups", name_,
             key, index, groups_.size());
      if (field == "params")
        params_of[index] = &tensor;
      else if (!defaults_.contains(field) && field != kInitialLr)
        fail("{}::load_state_dict: '{}' is not an option of {}", name_, key, name_);
      else
        options[index][field] = scalar_value(tensor, key, name_);
    } else if (split_key(key, "state.", index, field)) {
      if (index >= params.size())
        fail("{}::load_state_dict: '{}' is for parameter {}, but this optimizer has {}", name_, key,
             index, params.size());
      const Tensor& p = *params[index];
      if (field == "step") {
        new_state[index].step = static_cast<int64_t>(scalar_value(tensor, key, name_));
        continue;
      }
      if (tensor.shape() != p.shape())
        fail("{}::load_state_dict: '{}' is {} but parameter {} is {}", name_, key,
             shape_text(tensor), index, shape_text(p));
      Tensor value = p.device() ? tensor.to(*p.device()) : tensor.cpu();
      new_state[index].tensors[field] = value.to(p.dtype());
    } else {
      fail(
          "{}::load_state_dict: unexpected key '{}' (expected param_groups.<g>.<option> or "
          "state.<i>.<name>)",
          name_, key);
    }
  }
  size_t first = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const auto& [key, value] : defaults_)
      if (!options[g].contains(key))
        fail("{}::load_state_dict: option '{}' of group {} is missing", name_, key, g);
    size_t count = groups_[g].params.size();
    if (params_of[g] == nullptr)
      fail("{}::load_state_dict: 'param_groups.{}.params' is missing", name_, g);
    std::vector<int64_t> indices = params_of[g]->to_vector<int64_t>();
    if (indices.size() != count)
      fail("{}::load_state_dict: group {} has {} parameters in the state but {} here", name_, g,
           indices.size(), count);
    for (size_t i = 0; i < count; ++i)
      if (indices[i] != static_cast<int64_t>(first + i))
        fail("{}::load_state_dict: group {} lists parameter {} at position {}, expected {}", name_,
             g, indices[i], i, first + i);
    first += count;
    check_options(options[g], g);
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = std::move(options[g]);
  state_ = std::move(new_state);
}

}  // namespace podsim::optim
