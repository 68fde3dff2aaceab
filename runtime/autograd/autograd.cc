// Autograd: grad mode, recording of backward nodes, the Tensor autograd members, and
// the engine that runs the nodes in reverse topological order.
#include "runtime/autograd/autograd.h"

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "runtime/autograd/internal.h"

namespace podsim {
namespace {

using autograd::Edge;
using autograd::Node;
using lazy::Dims;
using lazy::OpSite;
using lazy::TensorImpl;

thread_local bool grad_enabled = true;

std::atomic<uint64_t> next_sequence{0};

lazy::AutogradMeta& meta_of(TensorImpl& impl) {
  if (!impl.autograd) impl.autograd = std::make_unique<lazy::AutogradMeta>();
  return *impl.autograd;
}

const lazy::AutogradMeta* meta_if(const Tensor& t) {
  return t.defined() ? t.impl()->autograd.get() : nullptr;
}

bool wants_grad(const Tensor* t) {
  if (t == nullptr) return false;
  const lazy::AutogradMeta* m = meta_if(*t);
  return m != nullptr && m->requires_grad;
}

Edge edge_of(const Tensor* t) {
  Edge e;
  if (t == nullptr || !t->defined()) return e;
  const lazy::AutogradMeta* m = t->impl()->autograd.get();
  if (m == nullptr) return e;
  if (m->grad_fn)
    e.fn = m->grad_fn;
  else if (m->requires_grad)
    e.leaf = t->impl();
  return e;
}

template <typename Inputs>
void record_node(const char* name, const Tensor& result, const Inputs& inputs,
                 autograd::BackwardFn backward) {
  if (!result.defined()) return;
  TensorImpl& r = *result.impl();
  if (!ir::is_float(r.type)) return;  // integral and bool results never require grad
  auto node = std::make_shared<Node>(name, std::move(backward), r.dims, r.type,
                                     next_sequence.fetch_add(1, std::memory_order_relaxed));
  node->edges.reserve(inputs.size());
  for (const auto& input : inputs) {
    const Tensor* t;
    if constexpr (std::is_pointer_v<std::decay_t<decltype(input)>>)
      t = input;
    else
      t = &input;
    // An op returning its input's own tensor keeps that tensor's history.
    if (t != nullptr && t->is_same(result)) return;
    node->edges.push_back(edge_of(t));
  }
  lazy::AutogradMeta& m = meta_of(r);
  m.requires_grad = true;
  m.grad_fn = std::move(node);
}

std::string shape_text(const Dims& dims, DType type) { return lazy::shape_string(type, dims); }

// A gradient fitted to the shape and type its receiver expects.
Tensor fit(const Tensor& g, const Dims& dims, DType type, const Node& node, size_t input) {
  Tensor out = g;
  const TensorImpl& impl = *g.impl();
  if (!(impl.dims == dims)) {
    bool reducible = impl.dims.size() >= dims.size();
    size_t lead = reducible ? impl.dims.size() - dims.size() : 0;
    for (size_t i = 0; reducible && i < dims.size(); ++i)
      reducible = dims[i] == 1 || dims[i] == impl.dims[lead + i];
    if (!reducible)
      fail("autograd: the backward of {} gave input {} a gradient of shape {}, expected {}",
           node.name, input, lazy::impl_shape_string(impl), shape_text(dims, type));
    out = autograd::sum_to(out, dims.vec());
  }
  if (out.dtype() != type) out = out.to(type);
  return out;
}

Tensor accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

// A fresh handle with g's value, so that in-place changes to a stored gradient never
// reach other tensors sharing g.
Tensor own(const Tensor& g) { return lazy::share_value(*g.impl()); }

struct Roots {
  std::vector<Tensor> tensors;
  std::vector<Tensor> grads;
};

Roots checked_roots(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grads,
                    const OpSite& site) {
  if (tensors.empty()) lazy::op_fail(site, "no tensors to differentiate");
  if (!grads.empty() && grads.size() != tensors.size())
    lazy::op_fail(site, "{} gradients given for {} tensors", grads.size(), tensors.size());
  Roots roots;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorImpl& impl = lazy::checked(tensors[i], site);
    if (!wants_grad(&tensors[i]))
      lazy::op_fail(site,
                    "element {} of tensors does not require grad and does not have a grad_fn "
                    "({}); call requires_grad_() on the leaves first, outside NoGradGuard",
                    i, lazy::impl_shape_string(impl));
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      if (lazy::num_elements(impl.dims) != 1)
        lazy::op_fail(site,
                      "grad can be implicitly created only for scalar outputs, but element {} "
                      "is {}; pass a gradient",
                      i, lazy::impl_shape_string(impl));
      g = ones(impl.dims.vec(), {impl.type, impl.device}, site.loc);
    } else {
      const TensorImpl& gi = *g.impl();
      if (!(gi.dims == impl.dims) || !ir::is_float(gi.type))
        lazy::op_fail(site, "mismatch: gradient {} is {} but element {} of tensors is {}", i,
                      lazy::impl_shape_string(gi), i, lazy::impl_shape_string(impl));
      if (gi.device != impl.device)
        lazy::op_fail(site, "gradient {} is on {} but element {} of tensors is on {}", i,
                      lazy::device_name(gi.device), i, lazy::device_name(impl.device));
      if (gi.type != impl.type) g = g.to(impl.type, site.loc);
    }
    roots.tensors.push_back(tensors[i]);
    roots.grads.push_back(std::move(g));
  }
  return roots;
}

// One backward pass. With inputs null, gradients accumulate into the leaves' grad();
// otherwise they are returned for inputs (and nothing else is run or touched).
std::vector<Tensor> run_backward(const Roots& roots, const std::vector<Tensor>* inputs,
                                 bool retain_graph, const OpSite& site) {
  NoGradGuard no_grad;
  std::unordered_map<const TensorImpl*, size_t> input_leaves;
  std::unordered_map<const Node*, size_t> input_nodes;
  std::vector<Tensor> results;
  if (inputs != nullptr) {
    results.resize(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) {
      const Tensor& t = (*inputs)[i];
      lazy::checked(t, site);
      if (!wants_grad(&t))
        lazy::op_fail(site, "input {} ({}) does not require grad", i,
                      lazy::impl_shape_string(*t.impl()));
      if (const auto& fn = t.impl()->autograd->grad_fn)
        input_nodes.emplace(fn.get(), i);
      else
        input_leaves.emplace(t.impl().get(), i);
    }
  }

  // Every node reachable from the roots, in reverse creation order, which is a
  // topological order (a node's inputs' nodes are older than it).
  std::vector<Node*> nodes;
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  for (const Tensor& t : roots.tensors)
    if (Node* fn = t.impl()->autograd->grad_fn.get(); fn != nullptr && seen.insert(fn).second)
      stack.push_back(fn);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    nodes.push_back(n);
    for (const Edge& e : n->edges)
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const Node* a, const Node* b) { return a->sequence > b->sequence; });

  // With inputs, only nodes on a path to one of them run.
  std::unordered_set<const Node*> run;
  if (inputs != nullptr) {
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      for (const Edge& e : (*it)->edges) {
        bool leads = false;
        if (e.fn)
          leads = input_nodes.count(e.fn.get()) > 0 || run.count(e.fn.get()) > 0;
        else if (auto leaf = e.leaf.lock())
          leads = input_leaves.count(leaf.get()) > 0;
        if (leads) {
          run.insert(*it);
          break;
        }
      }
    }
  }
  auto runs = [&](const Node* n) { return inputs == nullptr || run.count(n) > 0; };
  auto wanted = [&](const Node* n) { return runs(n) || input_nodes.count(n) > 0; };

  std::unordered_map<const Node*, Tensor> grads;
  std::unordered_map<TensorImpl*, Tensor> leaf_grads;
  std::vector<std::shared_ptr<TensorImpl>> leaf_order;  // deterministic delivery
  auto to_leaf = [&](const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
    if (inputs != nullptr && input_leaves.count(leaf.get()) == 0) return;
    Tensor& slot = leaf_grads[leaf.get()];
    if (!slot.defined()) leaf_order.push_back(leaf);
    slot = accumulate(slot, g);
  };
  for (size_t i = 0; i < roots.tensors.size(); ++i) {
    const std::shared_ptr<TensorImpl>& impl = roots.tensors[i].impl();
    if (const auto& fn = impl->autograd->grad_fn) {
      if (wanted(fn.get())) grads[fn.get()] = accumulate(grads[fn.get()], roots.grads[i]);
    } else {
      to_leaf(impl, roots.grads[i]);
    }
  }

  for (Node* n : nodes) {
    auto found = grads.find(n);
    Tensor g;
    if (found != grads.end()) {
      g = std::move(found->second);
      grads.erase(found);
    }
    if (auto in = input_nodes.find(n); in != input_nodes.end()) results[in->second] = g;
    if (!runs(n)) continue;
    if (n->released)
      lazy::op_fail(site,
                    "Trying to backward through the graph a second time (or directly access "
                    "saved tensors after they have already been freed): the {} node's saved "
                    "tensors were freed by an earlier backward; pass retain_graph=true to the "
                    "first one (autograd::backward / grad) if you need to backward twice",
                    n->name);
    if (g.defined()) {
      std::vector<Tensor> input_grads = n->backward(g);
      if (input_grads.size() != n->edges.size())
        fail("autograd: the backward of {} gave {} gradients for {} inputs", n->name,
             input_grads.size(), n->edges.size());
      for (size_t k = 0; k < n->edges.size(); ++k) {
        const Edge& e = n->edges[k];
        if (!input_grads[k].defined()) continue;
        if (e.fn) {
          if (!wanted(e.fn.get())) continue;
          Tensor fitted = fit(input_grads[k], e.fn->dims, e.fn->type, *n, k);
          Tensor& slot = grads[e.fn.get()];
          slot = accumulate(slot, fitted);
        } else if (auto leaf = e.leaf.lock()) {
          to_leaf(leaf, fit(input_grads[k], leaf->dims, leaf->type, *n, k));
        }
      }
    }
    if (!retain_graph) {
      n->backward = nullptr;
      n->released = true;
    }
  }

  for (const auto& leaf : leaf_order) {
    Tensor& g = leaf_grads[leaf.get()];
    if (inputs != nullptr) {
      results[input_leaves.at(leaf.get())] = g;
      continue;
    }
    lazy::AutogradMeta& m = meta_of(*leaf);
    if (!m.grad.defined())
      m.grad = own(g);
    else  // in place, as torch accumulates: handles to grad() see the sum
      m.grad.impl()->set_value_of(*add(m.grad, g).impl());
  }
  return results;
}

}  // namespace

// A node whose last reference goes while another is being freed waits in a queue, so
// that freeing a long chain takes a loop, not a recursion per node. (No weak_ptr to a
// node exists: a use count of 1 means this edge holds the last reference.)
autograd::Node::~Node() {
  thread_local bool draining = false;
  thread_local std::vector<std::shared_ptr<Node>> queue;
  for (Edge& e : edges)
    if (e.fn && e.fn.use_count() == 1) queue.push_back(std::move(e.fn));
  if (draining) return;
  draining = true;
  while (!queue.empty()) {
    std::shared_ptr<Node> next = std::move(queue.back());
    queue.pop_back();
  }
  draining = false;
}

// ---- Grad mode ---------------------------------------------------------------------
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }
bool is_grad_enabled() { return grad_enabled; }

// ---- Recording ---------------------------------------------------------------------
namespace autograd {

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (wants_grad(t)) return true;
  return false;
}

bool needs_grad(std::span<const Tensor> inputs) {
  if (!grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (wants_grad(&t)) return true;
  return false;
}

void record(const char* name, const Tensor& result, std::initializer_list<const Tensor*> inputs,
            BackwardFn backward) {
  if (needs_grad(inputs)) record_node(name, result, inputs, std::move(backward));
}

void record(const char* name, const Tensor& result, std::span<const Tensor> inputs,
            BackwardFn backward) {
  if (needs_grad(inputs)) record_node(name, result, inputs, std::move(backward));
}

Tensor saved(const Tensor& t) { return t.defined() ? lazy::share_value(*t.impl()) : Tensor(); }

Tensor sum_to(const Tensor& gradient, const std::vector<int64_t>& shape) {
  std::vector<int64_t> g = gradient.shape();
  if (g == shape) return gradient;
  if (g.size() < shape.size())
    fail("autograd::sum_to: cannot reduce a gradient of shape {} to the larger rank of {}",
         lazy::shape_string(gradient.dtype(), g), lazy::shape_string(gradient.dtype(), shape));
  size_t lead = g.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < g.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  Tensor out = dims.empty() ? gradient : sum(gradient, dims, true);
  return out.reshape(shape);
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              bool retain_graph, Loc loc) {
  OpSite site{"backward", loc};
  run_backward(checked_roots(tensors, grad_tensors, site), nullptr, retain_graph, site);
}

void check_inplace(const Tensor& self, const OpSite& site) {
  if (!grad_enabled) return;
  const lazy::AutogradMeta* m = meta_if(self);
  if (m != nullptr && m->requires_grad && !m->grad_fn)
    lazy::op_fail(site,
                  "a leaf Variable that requires grad is being used in an in-place operation "
                  "({}); update parameters under NoGradGuard, or work on detach()",
                  lazy::impl_shape_string(*self.impl()));
}

void take_history(TensorImpl& self, const Tensor& result) {
  const lazy::AutogradMeta* m = meta_if(result);
  if (m == nullptr || !m->grad_fn) return;
  lazy::AutogradMeta& sm = meta_of(self);
  sm.requires_grad = true;
  sm.grad_fn = m->grad_fn;
}

}  // namespace autograd

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, Loc loc) {
  return grad(outputs, inputs, grad_outputs, false, loc);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, Loc loc) {
  OpSite site{"autograd::grad", loc};
  Roots roots = checked_roots(outputs, grad_outputs, site);
  if (inputs.empty()) lazy::op_fail(site, "no inputs to differentiate with respect to");
  return run_backward(roots, &inputs, retain_graph, site);
}

// ---- Tensor members ----------------------------------------------------------------
Tensor& Tensor::requires_grad_(bool requires_grad, Loc loc) {
  OpSite site{"requires_grad_", loc};
  TensorImpl& impl = const_cast<TensorImpl&>(lazy::checked(*this, site));
  if (requires_grad && !ir::is_float(impl.type))
    lazy::op_fail(site, "only floating-point tensors can require gradients, got {}",
                  lazy::impl_shape_string(impl));
  if (impl.autograd && impl.autograd->grad_fn) {
    if (!requires_grad)
      lazy::op_fail(site,
                    "you can only change requires_grad flags of leaf tensors; this one was made "
                    "by {}: use detach() for a tensor without grad history",
                    impl.autograd->grad_fn->name);
    return *this;
  }
  if (requires_grad || impl.autograd) meta_of(impl).requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const { return wants_grad(this); }

bool Tensor::is_leaf() const {
  const lazy::AutogradMeta* m = meta_if(*this);
  return m == nullptr || !m->grad_fn;
}

Tensor Tensor::grad() const {
  const lazy::AutogradMeta* m = meta_if(*this);
  return m == nullptr ? Tensor() : m->grad;
}

void Tensor::set_grad(const Tensor& g) {
  OpSite site{"set_grad", Loc::current()};
  TensorImpl& impl = const_cast<TensorImpl&>(lazy::checked(*this, site));
  if (!g.defined()) {
    if (impl.autograd) impl.autograd->grad = Tensor();
    return;
  }
  const TensorImpl& gi = *g.impl();
  if (!(gi.dims == impl.dims) || gi.type != impl.type || gi.device != impl.device)
    lazy::op_fail(site, "the gradient {} on {} does not match the tensor {} on {}",
                  lazy::impl_shape_string(gi), lazy::device_name(gi.device),
                  lazy::impl_shape_string(impl), lazy::device_name(impl.device));
  meta_of(impl).grad = g;
}

void Tensor::backward(const Tensor& gradient, Loc loc) const {
  autograd::backward({*this}, {gradient}, false, loc);
}

Tensor Tensor::detach() const {
  return lazy::share_value(lazy::checked(*this, {"detach", Loc::current()}));
}

}  // namespace podsim
