// Internals of lazy tensors shared by tensor.cc, ops*.cc, random.cc and sync.cc: the
// tensor state, the registry of live device tensors, and the helpers every op uses to
// read its operands and make its result. Not a public header.
#pragma once

#include <atomic>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/lazy/graph.h"
#include "runtime/tensor/tensor.h"

namespace podsim::autograd {
struct Node;
}

namespace podsim::lazy {

// Autograd state of a tensor (most tensors have none: TensorImpl::autograd is null).
// Changed only by the thread that owns the tensor, like its value.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  Tensor grad;                              // leaves: the accumulated gradient
};

// Guards a tensor's value; held for a few instructions at a time. Waiters sleep
// (atomic wait) and are only woken when there are any.
class SpinLock {
 public:
  void lock() {
    int expected = kFree;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) return;
    while (state_.exchange(kContended, std::memory_order_acquire) != kFree)
      state_.wait(kContended, std::memory_order_relaxed);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) state_.notify_one();
  }

 private:
  static constexpr int kFree = 0, kLocked = 1, kContended = 2;
  std::atomic<int> state_{kFree};
};

// A tensor: shape and device fixed at creation; its value is exactly one of pending
// IR (node), device data (buffer) or host data (literal).
struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
  TensorImpl(ir::PrimitiveType type, Dims dims, pjrt::Device* device);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  const ir::PrimitiveType type;
  const Dims dims;
  pjrt::Device* const device;  // nullptr: host

  // The value; read and written under lock (the setters below take it).
  mutable SpinLock lock;
  NodePtr node;
  std::shared_ptr<pjrt::Buffer> buffer;
  std::shared_ptr<const ir::Literal> literal;
  // The leaf standing for buffer / literal, made by the first op reading them and
  // shared by the next ones (so that x + x has one parameter).
  mutable NodePtr leaf;
  // Whether node is set, readable without the lock (the registry scan skips tensors
  // holding data cheaply).
  std::atomic<bool> pending{false};

  NodePtr pending_node() const;
  void set_node(NodePtr value);
  void set_buffer(std::shared_ptr<pjrt::Buffer> value);
  void set_literal(std::shared_ptr<const ir::Literal> value);
  // Takes other's value (pending node, buffer or literal).
  void set_value_of(const TensorImpl& other);

  // Autograd state (runtime/autograd/autograd.cc); null while the tensor has none.
  std::unique_ptr<AutogradMeta> autograd;

  // Registry links (device tensors only), under the registry lock.
  TensorImpl* prev = nullptr;
  TensorImpl* next = nullptr;
  bool registered = false;
};

using ImplPtr = std::shared_ptr<TensorImpl>;

// Adds a device tensor to the live registry (in creation order).
void register_tensor(TensorImpl& impl);
// Live tensors with pending IR, in creation order; only device's when device is set.
std::vector<ImplPtr> pending_tensors(pjrt::Device* device = nullptr);

ir::Shape impl_shape(const TensorImpl& impl);
std::string impl_shape_string(const TensorImpl& impl);
std::string device_name(const pjrt::Device* device);  // "host" for nullptr

// ---- Reading operands --------------------------------------------------------------
const TensorImpl& checked(const Tensor& t, const OpSite& site);
// The IR value of a tensor: its pending node, or the leaf of its data.
NodePtr value_of(const TensorImpl& impl, const OpSite& site);
NodePtr value_of(const Tensor& t, const OpSite& site);
// The one device of the operands; mixing devices is an error naming both.
pjrt::Device* common_device(const OpSite& site, std::initializer_list<const Tensor*> tensors);
pjrt::Device* common_device(const OpSite& site, std::span<const Tensor> tensors);

// ---- Making results ----------------------------------------------------------------
// A new tensor holding node. Host tensors and eager mode execute it at once.
Tensor make_result(NodePtr node, pjrt::Device* device, const OpSite& site);
// Without executing (for ops that make several pending tensors, then run them).
ImplPtr make_pending(NodePtr node, pjrt::Device* device);
// A new tensor with the same value (for ops that change nothing).
Tensor share_value(const TensorImpl& impl);

// ---- Graph building helpers --------------------------------------------------------
// A node with one operand and attributes.
NodePtr unary_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                   const NodePtr& x, std::span<const int64_t> attrs = {});
// These return x itself when there is nothing to do.
NodePtr convert(NodePtr x, ir::PrimitiveType type, const OpSite& site);
NodePtr reshape_node(NodePtr x, const Dims& dims, const OpSite& site);
// Broadcasts x (torch rules: trailing alignment, size-1 dims stretch) to dims.
NodePtr broadcast_to(NodePtr x, const Dims& dims, const OpSite& site);
// The torch broadcast of two shapes; errors show both (with their types).
Dims broadcast_dims(const OpSite& site, ir::PrimitiveType a_type, std::span<const int64_t> a,
                    ir::PrimitiveType b_type, std::span<const int64_t> b);
// A scalar op argument as a rank-0 graph parameter of type: an operand of elementwise
// nodes, which broadcast it.
NodePtr scalar_operand(Scalar s, ir::PrimitiveType type, const OpSite& site);
// A rank-0 constant fixed by an op's semantics, for elementwise nodes.
NodePtr constant_operand(double v, ir::PrimitiveType type, const OpSite& site);
// Elementwise nodes; the result has the dims of the highest-rank operand (the others
// have those dims or rank 0).
NodePtr elementwise(ir::Opcode op, const NodePtr& a, const NodePtr& b, const OpSite& site);
NodePtr elementwise(ir::Opcode op, const NodePtr& a, const OpSite& site);
NodePtr compare_nodes(ir::ComparisonDirection d, const NodePtr& a, const NodePtr& b,
                      const OpSite& site);
NodePtr select_nodes(const NodePtr& pred, const NodePtr& a, const NodePtr& b, const OpSite& site);
NodePtr reduce_node(ReduceKind kind, const NodePtr& x, const Dims& dims, const OpSite& site);

// A dimension index in [-rank, rank) made non-negative; errors name the op.
int64_t wrap_dim(int64_t dim, int64_t rank, const OpSite& site);

// ---- Type promotion (torch's result_type for the common cases) ---------------------
DType promote_types(DType a, DType b);
// Operands of an op: dimensioned tensors win over 0-dim tensors, which win over C++
// scalars, except that a higher category (bool < integral < floating) always wins.
struct TypeOperand {
  DType type;
  enum class Rank { kDimensioned, kZeroDim, kScalar } rank;
};
DType result_type(std::span<const TypeOperand> operands);
TypeOperand type_operand(const TensorImpl& impl);
TypeOperand type_operand(Scalar s);
bool can_cast(DType from, DType to);  // torch's rule for in-place results
DType default_float();                // f32

// ---- Execution (sync.cc) -----------------------------------------------------------
enum class SyncCause { kMarkStep, kSync, kItem, kCpu, kToLiteral, kToDevice, kEager, kDataLoader };
std::string_view sync_cause_text(SyncCause cause);
// Runs the pending IR of these tensors (one device, or all host), making them hold
// data. Returns without waiting for a device.
void sync_tensors(std::span<const ImplPtr> tensors, SyncCause cause, std::source_location loc);
// mark_step() on behalf of a runtime part (the data loader), naming it as the cause in
// the debug reports.
void mark_step(SyncCause cause, std::source_location loc);
// Forgets what the runtime keeps per device (device scalars, the last launches, the
// random generator states), for when clients are destroyed (tests that reset backends).
void drop_device_state();
// For tests that change PODSIM_DEVICE and the like: drop_device_state(), then
// pjrt::internal::reset_backends_for_testing() (runtime/pjrt/internal.h).
void reset_for_testing();
void drop_generator_states();  // random.cc
// Waits for a tensor's data and copies it to the host.
std::shared_ptr<const ir::Literal> read_literal(const TensorImpl& impl, SyncCause cause,
                                                std::source_location loc);

}  // namespace podsim::lazy
