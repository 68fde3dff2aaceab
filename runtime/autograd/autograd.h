// Reverse-mode automatic differentiation over lazy tensors, as torch.autograd does it.
// A floating tensor made with requires_grad_() is a leaf; every differentiable op on a
// tensor that requires grad (while grad mode is on) records a backward node whose
// function computes the input gradients with ordinary lazy tensor ops. backward()
// walks those nodes in reverse topological order and accumulates into the leaves'
// grad(). Gradients are therefore lazy IR too: forward, backward and the optimizer's
// update of one training step become one graph at mark_step().
//
// The Tensor members requires_grad_(), requires_grad(), is_leaf(), grad(), set_grad(),
// backward() and detach() are declared in runtime/tensor/tensor.h; this header has the grad
// mode switch and the functional form.
//
// Rules the implementation follows (and op writers rely on):
// - Saved values are snapshots (saved()): live lazy tensors, which every mark_step would
//   materialize; backward() frees them as it runs each node (the second backward
//   through that graph is an error unless retain_graph), so after a step's backward no
//   snapshot stays alive.
// - The engine fits each returned gradient to its input: a broadcast gradient is summed
//   down (sum_to) and a different floating dtype converted, as torch's engine does.
// - Not differentiable: to(device) / cpu() (moving data reads the host), comparisons,
//   argmax/argmin and integral results (record() ignores results that are not floating).
// - In place (+=, -=, *=, /=, copy_): a non-leaf takes the op's history; a leaf that
//   requires grad may only be changed under NoGradGuard (and stays a leaf).
#pragma once

#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "runtime/tensor/tensor.h"

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

// The same, keeping the graph for another backward when retain_graph is set.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         Loc loc = Loc::current());

namespace autograd {

// torch.autograd.backward: Tensor::backward() for several roots at once (one pass
// over their joint graph), optionally keeping the graph.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              bool retain_graph = false, Loc loc = Loc::current());

// For op implementations (runtime/tensor/, runtime/nn/): the backward of an op. Given
// the gradient of the op's result, returns one gradient per input, in the order the
// inputs were given to record(), each with that input's shape (sum_to() reduces a
// broadcast gradient); an undefined tensor for an input that gets none. It runs with
// grad mode off, using saved() snapshots, never the inputs' live handles (an in-place
// op may have changed those since).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// Whether an op on these inputs must record (grad mode on and any input requires grad).
bool needs_grad(std::initializer_list<const Tensor*> inputs);
// Makes result a non-leaf requiring grad whose grad_fn is backward, if needs_grad().
// name is the op's name for errors and debug output ("matmul"). result must be the
// op's new tensor (not one of its inputs); check needs_grad() first so that the
// snapshots and the closure are only made when they are needed.
void record(const char* name, const Tensor& result, std::initializer_list<const Tensor*> inputs,
            BackwardFn backward);
// The same for ops on a list of tensors (cat, stack). A null input pointer above (a
// C++ scalar operand, say) is allowed and gets no gradient.
bool needs_grad(std::span<const Tensor> inputs);
void record(const char* name, const Tensor& result, std::span<const Tensor> inputs,
            BackwardFn backward);
// A snapshot of t's current value that later in-place ops on t do not change.
Tensor saved(const Tensor& t);
// Sums a gradient of a broadcast result down to shape (torch's sum_to_size).
Tensor sum_to(const Tensor& gradient, const std::vector<int64_t>& shape);

}  // namespace autograd
}  // namespace podsim
