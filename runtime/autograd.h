// Reverse-mode automatic differentiation over lazy tensors, as torch.autograd does it.
// A floating tensor made with requires_grad_() is a leaf; every differentiable op on a
// tensor that requires grad (while grad mode is on) records a backward node whose
// function computes the input gradients with ordinary lazy tensor ops. backward()
// walks those nodes in reverse topological order and accumulates into the leaves'
// grad(). Gradients are therefore lazy IR too: forward, backward and the optimizer's
// update of one training step become one graph at mark_step().
//
// The Tensor members requires_grad_(), requires_grad(), is_leaf(), grad(), set_grad(),
// backward() and detach() are declared in runtime/tensor.h; this header has the grad
// mode switch and the functional form.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "runtime/tensor.h"

namespace podsim {

// torch.no_grad(): while one lives on this thread, ops record no backward nodes.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

bool is_grad_enabled();  // on this thread

// torch.autograd.grad: the gradients of outputs (weighted by grad_outputs; empty means
// ones for scalar outputs) with respect to inputs, without touching any grad().
// An input the outputs do not depend on gets an undefined tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, Loc loc = Loc::current());

namespace autograd {

// For op implementations (runtime/ops_*.cc, runtime/nn/): the backward of an op. Given
// the gradient of the op's result, returns one gradient per input, in the order the
// inputs were given to record(), each with that input's shape (sum_to() reduces a
// broadcast gradient); an undefined tensor for an input that gets none. It runs with
// grad mode off, using saved() snapshots, never the inputs' live handles (an in-place
// op may have changed those since).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// Whether an op on these inputs must record (grad mode on and any input requires grad).
bool needs_grad(std::initializer_list<const Tensor*> inputs);
// Makes result a non-leaf requiring grad whose grad_fn is backward, if needs_grad().
// name is the op's name for errors and debug output ("matmul").
void record(const char* name, const Tensor& result, std::initializer_list<const Tensor*> inputs,
            BackwardFn backward);
// A snapshot of t's current value that later in-place ops on t do not change.
Tensor saved(const Tensor& t);
// Sums a gradient of a broadcast result down to shape (torch's sum_to_size).
Tensor sum_to(const Tensor& gradient, const std::vector<int64_t>& shape);

}  // namespace autograd
}  // namespace podsim
