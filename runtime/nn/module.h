// torch.nn.Module for lazy tensors: a tree of modules owning parameters (tensors that
// require grad) and buffers (state that is saved but not trained), with torch's dotted
// names ("0.weight", "attn.out_proj.bias") in registration order, state_dict /
// load_state_dict, train / eval, moving to a device and zero_grad. Modules are used
// through std::shared_ptr and are not copyable (a copy would share nothing sensible).
//
// A module registers pointers to its own Tensor members, so that to(device) and
// load_state_dict, which replace or overwrite those members, are seen by forward().
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// What load_state_dict(strict=false) did not match (torch's _IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The forward of a module taking one tensor; modules with other inputs (attention,
  // losses) have their own forward overloads and reject this one.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::string& type_name() const { return type_name_; }

  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;

  // Parameters then buffers of each module, depth first, in registration order
  // (torch's order). The tensors are the module's own (not copies): read them, or
  // detach/clone before changing them.
  NamedTensors state_dict() const;
  // Copies each value into the tensor of that name in place (converted to its device).
  // strict: any missing or unexpected key is an error naming all of them. A shape or
  // dtype mismatch is always an error naming the key and both shapes.
  LoadResult load_state_dict(const NamedTensors& state, bool strict = true,
                             Loc loc = Loc::current());

  // Sets training mode on this module and every descendant.
  Module& train(bool mode = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter (keeping requires_grad, moving any grad) and buffer to the
  // device. The module's tensors are replaced by the moved ones: handles taken before
  // (an optimizer made before to()) still refer to the old tensors, so build optimizers
  // after moving the model, as torch recommends.
  Module& to(pjrt::Device& device, Loc loc = Loc::current());

  // Clears every parameter's grad (torch's set_to_none=True).
  void zero_grad();

 protected:
  // slot points to a Tensor member of the derived module (which outlives the
  // registration). The parameter is made to require grad. An undefined tensor
  // registers nothing (an optional bias that is absent).
  void register_parameter(std::string name, Tensor* slot);
  void register_buffer(std::string name, Tensor* slot);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool recurse, bool want_parameters,
               std::vector<std::pair<std::string, Tensor*>>& out) const;
  std::vector<std::pair<std::string, Tensor*>> state_slots() const;

  std::string type_name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Modules applied in order, each to the output of the previous; children are named
// "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  std::shared_ptr<Module> operator[](size_t index) const;
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace podsim::nn
