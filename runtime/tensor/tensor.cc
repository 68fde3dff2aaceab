// Tensor handles: state, the live-tensor registry, creation from host data, moving and
// reading values, in-place assignment.
#include "runtime/tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "runtime/autograd/internal.h"
#include "runtime/debug/metrics.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace lazy {
namespace {

// A spin lock rather than a mutex: every tensor creation and destruction takes it for
// a few instructions, and only a sync's scan holds it longer.
struct Registry {
  SpinLock mutex;
  TensorImpl* head = nullptr;
  TensorImpl* tail = nullptr;
};

Registry& registry() {
  // Never destroyed: tensors in static storage may die after it would.
  static Registry* instance = new Registry;
  return *instance;
}

debug::Counter& create_counter() {
  static debug::Counter& c = debug::counter("CreateTensor");
  return c;
}
debug::Counter& destroy_counter() {
  static debug::Counter& c = debug::counter("DestroyTensor");
  return c;
}

}  // namespace

TensorImpl::TensorImpl(ir::PrimitiveType t, Dims d, pjrt::Device* dev)
    : type(t), dims(std::move(d)), device(dev) {
  create_counter().add();
}

TensorImpl::~TensorImpl() {
  if (registered) {
    Registry& r = registry();
    std::lock_guard guard(r.mutex);
    (prev ? prev->next : r.head) = next;
    (next ? next->prev : r.tail) = prev;
  }
  destroy_counter().add();
}

NodePtr TensorImpl::pending_node() const {
  std::lock_guard guard(lock);
  return node;
}

void TensorImpl::set_node(NodePtr value) {
  NodePtr old_leaf;  // released outside the lock
  std::lock_guard guard(lock);
  node = std::move(value);
  buffer.reset();
  literal.reset();
  old_leaf = std::move(leaf);
  pending.store(true, std::memory_order_release);
}

void TensorImpl::set_buffer(std::shared_ptr<pjrt::Buffer> value) {
  NodePtr old_node, old_leaf;
  std::lock_guard guard(lock);
  old_node = std::move(node);
  old_leaf = std::move(leaf);
  buffer = std::move(value);
  literal.reset();
  pending.store(false, std::memory_order_release);
}

void TensorImpl::set_literal(std::shared_ptr<const ir::Literal> value) {
  NodePtr old_node, old_leaf;
  std::lock_guard guard(lock);
  old_node = std::move(node);
  old_leaf = std::move(leaf);
  literal = std::move(value);
  buffer.reset();
  pending.store(false, std::memory_order_release);
}

void TensorImpl::set_value_of(const TensorImpl& other) {
  NodePtr n;
  std::shared_ptr<pjrt::Buffer> b;
  std::shared_ptr<const ir::Literal> l;
  {
    std::lock_guard guard(other.lock);
    n = other.node;
    b = other.buffer;
    l = other.literal;
  }
  if (n)
    set_node(std::move(n));
  else if (b)
    set_buffer(std::move(b));
  else
    set_literal(std::move(l));
}

void register_tensor(TensorImpl& impl) {
  Registry& r = registry();
  std::lock_guard guard(r.mutex);
  impl.prev = r.tail;
  impl.next = nullptr;
  (r.tail ? r.tail->next : r.head) = &impl;
  r.tail = &impl;
  impl.registered = true;
}

std::vector<ImplPtr> pending_tensors(pjrt::Device* device) {
  std::vector<ImplPtr> out;
  Registry& r = registry();
  std::lock_guard guard(r.mutex);
  for (TensorImpl* impl = r.head; impl != nullptr; impl = impl->next) {
    if (!impl->pending.load(std::memory_order_acquire)) continue;
    if (device != nullptr && impl->device != device) continue;
    // A tensor whose last handle is going away is skipped: its destructor waits for
    // this lock to unlink it.
    if (ImplPtr alive = impl->weak_from_this().lock()) out.push_back(std::move(alive));
  }
  return out;
}

ir::Shape impl_shape(const TensorImpl& impl) { return ir::Shape(impl.type, impl.dims.vec()); }
std::string impl_shape_string(const TensorImpl& impl) { return shape_string(impl.type, impl.dims); }
std::string device_name(const pjrt::Device* device) { return device ? device->name() : "host"; }

const TensorImpl& checked(const Tensor& t, const OpSite& site) {
  if (!t.defined()) op_fail(site, "got an undefined tensor (a default-constructed Tensor)");
  return *t.impl();
}

NodePtr value_of(const TensorImpl& impl, const OpSite& site) {
  std::lock_guard guard(impl.lock);
  if (impl.node) return impl.node;
  if (!impl.leaf)
    impl.leaf =
        impl.buffer ? make_data_leaf(site, impl.buffer) : make_literal_leaf(site, impl.literal);
  return impl.leaf;
}

NodePtr value_of(const Tensor& t, const OpSite& site) { return value_of(checked(t, site), site); }

pjrt::Device* common_device(const OpSite& site, std::initializer_list<const Tensor*> tensors) {
  const TensorImpl* first = nullptr;
  for (const Tensor* t : tensors) {
    const TensorImpl& impl = checked(*t, site);
    if (first == nullptr)
      first = &impl;
    else if (impl.device != first->device)
      op_fail(site,
              "expected all tensors on one device, but found {} ({}) and {} ({}); move them with "
              "to() or cpu()",
              device_name(first->device), impl_shape_string(*first), device_name(impl.device),
              impl_shape_string(impl));
  }
  return first ? first->device : nullptr;
}

pjrt::Device* common_device(const OpSite& site, std::span<const Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (first == nullptr) first = &t;
    common_device(site, {first, &t});
  }
  return first ? checked(*first, site).device : nullptr;
}

ImplPtr make_pending(NodePtr node, pjrt::Device* device) {
  auto impl = std::make_shared<TensorImpl>(node->type, node->dims, device);
  impl->node = std::move(node);
  impl->pending.store(true, std::memory_order_relaxed);
  if (device != nullptr) register_tensor(*impl);
  return impl;
}

Tensor make_result(NodePtr node, pjrt::Device* device, const OpSite& site) {
  ImplPtr impl = make_pending(std::move(node), device);
  if (device == nullptr || eager_mode()) {
    ImplPtr one[] = {impl};
    sync_tensors(one, SyncCause::kEager, site.loc);
  }
  return Tensor(std::move(impl));
}

Tensor share_value(const TensorImpl& impl) {
  auto copy = std::make_shared<TensorImpl>(impl.type, impl.dims, impl.device);
  copy->set_value_of(impl);
  if (impl.device != nullptr) register_tensor(*copy);
  return Tensor(std::move(copy));
}

std::shared_ptr<const ir::Literal> read_literal(const TensorImpl& impl, SyncCause cause,
                                                std::source_location loc) {
  if (impl.pending.load(std::memory_order_acquire)) {
    ImplPtr one[] = {std::const_pointer_cast<TensorImpl>(impl.shared_from_this())};
    sync_tensors(one, cause, loc);
  }
  std::shared_ptr<pjrt::Buffer> buffer;
  {
    std::lock_guard guard(impl.lock);
    if (impl.literal) return impl.literal;
    buffer = impl.buffer;
  }
  if (!buffer)
    fail("{}:{}: {}: the tensor has no value", loc.file_name(), loc.line(), sync_cause_text(cause));
  return std::make_shared<const ir::Literal>(buffer->to_literal());
}

}  // namespace lazy

using lazy::checked;
using lazy::OpSite;
using lazy::TensorImpl;

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::kBool:
      return i_ ? "true" : "false";
    case Kind::kInt:
      return fmt::format("{}", i_);
    case Kind::kFloat:
      return fmt::format("{}", f_);
  }
  return "";
}

namespace {

const TensorImpl& impl_or_fail(const Tensor& t, const char* what) {
  if (!t.defined())
    fail("Tensor::{}: the tensor is undefined (a default-constructed Tensor)", what);
  return *t.impl();
}

std::shared_ptr<pjrt::Buffer> transfer(const ir::Literal& literal, pjrt::Device& device) {
  return device.client().transfer_to_device(literal, device);
}

}  // namespace

DType Tensor::dtype() const { return impl_or_fail(*this, "dtype").type; }
std::vector<int64_t> Tensor::shape() const { return impl_or_fail(*this, "shape").dims.vec(); }
int64_t Tensor::dim() const { return static_cast<int64_t>(impl_or_fail(*this, "dim").dims.size()); }
int64_t Tensor::numel() const { return lazy::num_elements(impl_or_fail(*this, "numel").dims); }
ir::Shape Tensor::ir_shape() const { return lazy::impl_shape(impl_or_fail(*this, "ir_shape")); }
pjrt::Device* Tensor::device() const { return impl_or_fail(*this, "device").device; }
std::string Tensor::device_name() const { return lazy::device_name(device()); }
bool Tensor::is_pending() const {
  return impl_or_fail(*this, "is_pending").pending.load(std::memory_order_acquire);
}

int64_t Tensor::size(int64_t d) const {
  const TensorImpl& impl = impl_or_fail(*this, "size");
  auto rank = static_cast<int64_t>(impl.dims.size());
  if (d < -rank || d >= rank)
    fail("Tensor::size: dimension {} is out of range for a tensor of rank {} ({})", d, rank,
         lazy::impl_shape_string(impl));
  return impl.dims[static_cast<size_t>(d < 0 ? d + rank : d)];
}

Tensor Tensor::from_literal(ir::Literal literal, pjrt::Device* device, Loc loc) {
  if (literal.shape().is_tuple())
    fail("{}:{}: from_literal: a tuple literal is not a tensor; pass its elements one by one",
         loc.file_name(), loc.line());
  auto impl =
      std::make_shared<TensorImpl>(literal.type(), lazy::Dims(literal.shape().dims()), device);
  if (device == nullptr) {
    impl->literal = std::make_shared<const ir::Literal>(std::move(literal));
  } else {
    impl->buffer = transfer(literal, *device);
    lazy::register_tensor(*impl);
  }
  return Tensor(std::move(impl));
}

Tensor Tensor::from_bytes(DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes,
                          pjrt::Device* device, Loc loc) {
  int64_t count = ir::checked_num_elements(shape);
  if (count < 0)
    fail("{}:{}: from_vector: shape {} is invalid (negative or too large)", loc.file_name(),
         loc.line(), lazy::shape_string(dtype, shape));
  auto width = static_cast<size_t>(ir::type_byte_size(dtype));
  if (bytes != static_cast<size_t>(count) * width)
    fail("{}:{}: from_vector: {} values do not fill shape {} ({} elements)", loc.file_name(),
         loc.line(), bytes / width, lazy::shape_string(dtype, shape), count);
  ir::Literal literal(ir::Shape(dtype, std::move(shape)));
  if (bytes > 0) std::memcpy(literal.bytes().data(), data, bytes);
  return from_literal(std::move(literal), device, loc);
}

Tensor Tensor::to(pjrt::Device& target, Loc loc) const {
  const TensorImpl& impl = checked(*this, {"to", loc});
  if (impl.device == &target) return *this;
  auto literal = lazy::read_literal(impl, lazy::SyncCause::kToDevice, loc);
  auto moved = std::make_shared<TensorImpl>(impl.type, impl.dims, &target);
  moved->buffer = transfer(*literal, target);
  lazy::register_tensor(*moved);
  return Tensor(std::move(moved));
}

Tensor Tensor::to(DType dtype, Loc loc) const {
  OpSite site{"to", loc};
  const TensorImpl& impl = checked(*this, site);
  if (impl.type == dtype) return *this;
  Tensor out = lazy::make_result(lazy::convert(lazy::value_of(impl, site), dtype, site),
                                 impl.device, site);
  // Differentiable between floating types (record() ignores integral results).
  if (autograd::needs_grad({this}))
    autograd::record("to", out, {this}, [from = impl.type](const Tensor& g) {
      return std::vector<Tensor>{g.to(from)};
    });
  return out;
}

Tensor Tensor::cpu(Loc loc) const {
  const TensorImpl& impl = checked(*this, {"cpu", loc});
  if (impl.device == nullptr) return *this;
  auto host = std::make_shared<TensorImpl>(impl.type, impl.dims, nullptr);
  host->literal = lazy::read_literal(impl, lazy::SyncCause::kCpu, loc);
  return Tensor(std::move(host));
}

ir::Literal Tensor::to_literal(Loc loc) const {
  const TensorImpl& impl = checked(*this, {"to_literal", loc});
  return *lazy::read_literal(impl, lazy::SyncCause::kToLiteral, loc);
}

Scalar Tensor::item(Loc loc) const {
  OpSite site{"item", loc};
  const TensorImpl& impl = checked(*this, site);
  int64_t count = lazy::num_elements(impl.dims);
  if (count != 1)
    lazy::op_fail(site, "a tensor with {} elements ({}) cannot be converted to a scalar", count,
                  lazy::impl_shape_string(impl));
  auto literal = lazy::read_literal(impl, lazy::SyncCause::kItem, loc);
  if (impl.type == kBool) return Scalar(literal->get_as_int64(0) != 0);
  if (ir::is_float(impl.type)) return Scalar(literal->get_as_double(0));
  if (impl.type == DType::kU64) return Scalar(literal->get_as_uint64(0));
  return Scalar(literal->get_as_int64(0));
}

std::string Tensor::to_string(Loc loc) const {
  const TensorImpl& impl = checked(*this, {"to_string", loc});
  auto literal = lazy::read_literal(impl, lazy::SyncCause::kToLiteral, loc);
  return fmt::format("{} {} ({})", lazy::impl_shape_string(impl), literal->to_string(),
                     lazy::device_name(impl.device));
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) return out << "<undefined tensor>";
  return out << tensor.to_string();
}

namespace {

// The in-place form of an op: result replaces self's value.
Tensor& assign_result(Tensor& self, const Tensor& result, const OpSite& site) {
  checked(self, site);
  autograd::check_inplace(self, site);
  TensorImpl& target = *self.impl();
  const TensorImpl& source = checked(result, site);
  if (!(target.dims == source.dims))
    lazy::op_fail(site, "the result {} does not have the shape of the tensor written in place, {}",
                  lazy::impl_shape_string(source), lazy::impl_shape_string(target));
  if (!lazy::can_cast(source.type, target.type))
    lazy::op_fail(
        site, "the result type {} cannot be cast to the type of the tensor written in place, {}",
        ir::type_name(source.type), ir::type_name(target.type));
  Tensor value = result.to(target.type, site.loc);
  target.set_value_of(*value.impl());
  autograd::take_history(target, value);
  return self;
}

}  // namespace

Tensor& Tensor::operator+=(TensorAt other) {
  return assign_result(*this, add(*this, other.tensor, other.loc), {"add_", other.loc});
}
Tensor& Tensor::operator-=(TensorAt other) {
  return assign_result(*this, sub(*this, other.tensor, other.loc), {"sub_", other.loc});
}
Tensor& Tensor::operator*=(TensorAt other) {
  return assign_result(*this, mul(*this, other.tensor, other.loc), {"mul_", other.loc});
}
Tensor& Tensor::operator/=(TensorAt other) {
  return assign_result(*this, div(*this, other.tensor, other.loc), {"div_", other.loc});
}
Tensor& Tensor::operator+=(ScalarAt other) {
  return assign_result(*this, add(*this, other.value, other.loc), {"add_", other.loc});
}
Tensor& Tensor::operator-=(ScalarAt other) {
  return assign_result(*this, sub(*this, other.value, other.loc), {"sub_", other.loc});
}
Tensor& Tensor::operator*=(ScalarAt other) {
  return assign_result(*this, mul(*this, other.value, other.loc), {"mul_", other.loc});
}
Tensor& Tensor::operator/=(ScalarAt other) {
  return assign_result(*this, div(*this, other.value, other.loc), {"div_", other.loc});
}

Tensor& Tensor::copy_(const Tensor& source, Loc loc) {
  OpSite site{"copy_", loc};
  checked(*this, site);
  autograd::check_inplace(*this, site);
  TensorImpl& target = *impl_;
  const TensorImpl& src = checked(source, site);
  Tensor value = src.device == target.device ? source
                 : target.device == nullptr  ? source.cpu(loc)
                                             : source.to(*target.device, loc);
  value = value.to(target.type, loc);
  if (!(value.impl()->dims == target.dims)) value = podsim::expand(value, target.dims.vec(), loc);
  if (autograd::needs_grad({this, &value})) {
    // The old value gets no gradient; the source gets all of it.
    Tensor copied = lazy::share_value(*value.impl());
    autograd::record("copy_", copied, {this, &value}, [](const Tensor& g) {
      return std::vector<Tensor>{Tensor(), g};
    });
    value = copied;
  }
  target.set_value_of(*value.impl());
  autograd::take_history(target, value);
  return *this;
}

namespace {

std::atomic<int>& eager_flag() {
  static std::atomic<int> flag = [] {
    const char* value = std::getenv("PODSIM_EAGER");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0 ? 1 : 0;
  }();
  return flag;
}

}  // namespace

void set_eager_mode(bool eager) { eager_flag().store(eager ? 1 : 0, std::memory_order_relaxed); }
bool eager_mode() { return eager_flag().load(std::memory_order_relaxed) != 0; }

}  // namespace podsim
