// Internals of autograd shared by autograd.cc (graph and engine), the op files that
// record backward nodes, and autograd_backward.cc (the derivatives that take more than
// a line). Not a public header.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/autograd/autograd.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::autograd {

// Where an input's gradient goes: the node that made it (its grad_fn when the op was
// recorded), or the input itself when it was a leaf requiring grad. Neither for inputs
// that need no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  std::weak_ptr<lazy::TensorImpl> leaf;  // weak: a dropped leaf's gradient has no reader
};

// One recorded op. Its destructor frees chains of inputs iteratively (no deep recursion).
struct Node {
  Node(const char* n, BackwardFn fn, lazy::Dims d, DType t, uint64_t s)
      : name(n), backward(std::move(fn)), dims(std::move(d)), type(t), sequence(s) {}
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* name;
  BackwardFn backward;      // empty once released (the saved tensors go with it)
  std::vector<Edge> edges;  // one per input, in record() order
  lazy::Dims dims;          // of the result
  DType type;
  uint64_t sequence;  // creation order: a node's inputs' nodes were made before it
  bool released = false;
};

// In-place ops on self (tensor.cc): fails for a leaf requiring grad while grad mode is
// on (naming op at site).
void check_inplace(const Tensor& self, const lazy::OpSite& site);
// After an in-place op made result from self's old value: self takes result's grad
// history (when it has one).
void take_history(lazy::TensorImpl& self, const Tensor& result);

// ---- Derivatives; they run with grad mode off -----------------------------------------
// An operand of an elementwise op: a tensor, or (tensor null) a C++ scalar.
struct Operand {
  const Tensor* tensor;
  Scalar scalar;
};
// The backward of add, sub, mul, div, pow, maximum and minimum (autograd_elementwise.cc);
// null for other opcodes. Snapshots only the operands some gradient reads.
BackwardFn arithmetic_backward(ir::Opcode op, const Operand& a, const Operand& b,
                               const Tensor& out);

// The rest are in autograd_backward.cc.
// torch.matmul's: gradients of a and b for the result gradient g.
std::vector<Tensor> matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b);
// x[start:end:step] along dim: g placed back into zeros of input_shape (by concatenation
// with zeros; no scatter).
Tensor slice_backward(const Tensor& g, const std::vector<int64_t>& input_shape, int64_t dim,
                      int64_t start, int64_t step);
// index_select / gather along dim: a one-hot (iota == index) contraction, no scatter.
// Indices are clamped into range as the forward ops' gathers do.
Tensor index_select_backward(const Tensor& g, const Tensor& index, int64_t dim,
                             const std::vector<int64_t>& input_shape);
Tensor gather_backward(const Tensor& g, const Tensor& index, int64_t dim,
                       const std::vector<int64_t>& input_shape);
// The gradient of a reduction over dims (sorted, non-negative; the result had keepdim's
// shape or not) broadcast back to input_shape.
Tensor expand_reduced(const Tensor& g, const std::vector<int64_t>& input_shape,
                      const std::vector<int64_t>& dims, bool keepdim);

}  // namespace podsim::autograd
