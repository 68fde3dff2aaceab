// Optimizers over lazy tensors, after torch.optim (1.13 semantics): an Optimizer holds
// parameter groups (parameters plus named hyper-parameters, like torch's param_groups
// dicts) and per-parameter state (momentum buffers, Adam moments) on each parameter's
// device. step() records the update as lazy ops under NoGradGuard and writes it into
// the parameters in place, so forward, backward and update of a training step make
// one graph at mark_step().
//
// Hyper-parameters and step-dependent factors (Adam's bias corrections) reach the
// graph as C++ scalars, which are graph parameters: changing the learning rate every
// step (a schedule) reuses the compiled graph. Only a structural change (a weight decay
// switched on, a first step that creates a momentum buffer) makes a new graph, as it
// makes a different computation.
//
// state_dict() flattens everything into named tensors for checkpoints:
//   "param_groups.<g>.<option>"  f64[]  (lr, momentum, betas as beta1/beta2, ...)
//   "param_groups.<g>.params"    s64[n] the global indices of the group's parameters
//   "state.<i>.<name>"           the state tensors of parameter i (global index)
//   "state.<i>.step"             s64[]  the step count where the optimizer keeps one
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::optim {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Parameters sharing hyper-parameters. Options not given take the optimizer's defaults;
// options the optimizer does not know are an error. Booleans are 0 / 1.
struct ParamGroup {
  std::vector<Tensor> params;
  std::map<std::string, double> options;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Records one update of every parameter that has a grad (others are skipped, as in
  // torch). Nothing runs until mark_step().
  virtual void step(Loc loc = Loc::current()) = 0;
  // set_to_none: grads become undefined (torch's default from 2.0 and torch_xla's
  // advice); otherwise they are overwritten with zeros.
  void zero_grad(bool set_to_none = true);

  const std::string& name() const { return name_; }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Adds a group (its parameters must not be in another group); options are checked.
  void add_param_group(ParamGroup group);
  // The learning rate of a group; set_lr sets every group's.
  double lr(size_t group = 0) const;
  void set_lr(double lr);

  NamedTensors state_dict() const;
  // Accepts a state_dict() of an optimizer of the same kind over parameters of the same
  // shapes in the same groups; state tensors move to each parameter's device and dtype.
  void load_state_dict(const NamedTensors& state);

 protected:
  struct ParamState {
    std::map<std::string, Tensor> tensors;
    std::optional<int64_t> step;
  };

  // Fills each group's missing options from defaults. The derived constructor then
  // calls check_groups() (the virtual check_options cannot run from here).
  Optimizer(std::string name, std::vector<ParamGroup> groups,
            std::map<std::string, double> defaults);
  // Checks one group's options (ranges, combinations); podsim::Error naming the group.
  virtual void check_options(const std::map<std::string, double>& options, size_t group) const = 0;
  void check_groups() const;
  // The state of the index-th parameter of all groups in order (torch's numbering).
  ParamState& state(size_t index) { return state_[index]; }

 private:
  void add_group(ParamGroup group);  // without check_options

  std::string name_;
  std::map<std::string, double> defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<ParamState> state_;
};

}  // namespace podsim::optim
