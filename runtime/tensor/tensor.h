// Lazy tensors, the way PyTorch/XLA does them: a Tensor on a device records the ops
// applied to it as an IR graph and returns at once; mark_step() (or sync()) compiles
// the graph of every live tensor (or finds it in the compile cache by its structural
// hash), launches it asynchronously, and the tensors then hold device buffers. Reading
// a value (item(), cpu(), to_literal()) runs only the graph that value needs and waits.
//
// Ops follow PyTorch's semantics (broadcasting, type promotion, matmul rules, argument
// checks) and report misuse as podsim::Error naming the op, the shapes and the
// caller's file:line. Scalars given to ops become graph parameters, not constants, so
// a changing learning rate or seed never recompiles.
//
// A Tensor on no device (device() == nullptr, "host") holds host data; ops on host
// tensors run at once on the reference evaluator. Tensors of different devices never
// mix in one op: move them with to(device) / cpu().
//
// Environment: PODSIM_DEVICE picks the backend of podsim::device(); PODSIM_EAGER=1
// runs every op at once; PODSIM_DEBUG=1|2, PODSIM_SAVE_TENSORS_FILE (+ _FMT) and
// PODSIM_METRICS_FILE turn on the debug reports (see runtime/lazy/debug_report.h).
//
// A Tensor is a shared handle, like torch.Tensor: copies refer to the same tensor, and
// in-place ops (+=, copy_) change it for every handle. Handles may be used from several
// threads, but one tensor is not to be changed in place by two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/types.h"
#include "runtime/pjrt/device.h"

namespace podsim {

using DType = ir::PrimitiveType;
inline constexpr DType kBool = DType::kPred;
inline constexpr DType kUInt8 = DType::kU8;
inline constexpr DType kInt8 = DType::kS8;
inline constexpr DType kInt16 = DType::kS16;
inline constexpr DType kInt32 = DType::kS32;
inline constexpr DType kInt64 = DType::kS64;
inline constexpr DType kFloat16 = DType::kF16;
inline constexpr DType kBFloat16 = DType::kBF16;
inline constexpr DType kFloat32 = DType::kF32;
inline constexpr DType kFloat64 = DType::kF64;

// A C++ number given to an op (torch's Python scalar): bool, integral or floating.
class Scalar {
 public:
  enum class Kind { kBool, kInt, kFloat };
  // Exactly bool (a pointer or an enum converting to bool is not a scalar).
  template <typename T>
  requires std::is_same_v<T, bool> Scalar(T v)
      : kind_(Kind::kBool), i_(v), f_(v) {}  // NOLINT: implicit by design
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Scalar(T v)
      : kind_(Kind::kInt), i_(static_cast<int64_t>(v)), f_(static_cast<double>(v)) {}  // NOLINT
  template <typename T>
  requires std::is_floating_point_v<T> Scalar(T v)
      : kind_(Kind::kFloat), i_(static_cast<int64_t>(v)), f_(static_cast<double>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::kFloat; }
  double to_double() const { return f_; }
  int64_t to_int() const { return i_; }
  bool to_bool() const { return kind_ == Kind::kFloat ? f_ != 0 : i_ != 0; }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(f_);
    else
      return kind_ == Kind::kFloat ? static_cast<T>(f_) : static_cast<T>(i_);
  }
  std::string to_string() const;

 private:
  Kind kind_;
  int64_t i_;
  double f_;
};

// The dtype and device of a created tensor: zeros({2, 3}, device),
// zeros({2}, kInt32), zeros({2}, {kInt32, device}), zeros({2}, t.device()). Without a
// dtype, the op's default (f32 for floating values, s64 for integral ones, bool); without
// a device (or with a null one), the host.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(pjrt::Device& device) : device_(&device) {}  // NOLINT: implicit by design
  // Exactly a Device* (so that a literal 0 is not a device).
  template <typename P>
  requires std::is_same_v<P, pjrt::Device*> TensorOptions(P device)
      : device_(device) {}                       // NOLINT: implicit by design
  TensorOptions(DType dtype) : dtype_(dtype) {}  // NOLINT: implicit by design
  TensorOptions(DType dtype, pjrt::Device& device) : dtype_(dtype), device_(&device) {}
  TensorOptions(DType dtype, pjrt::Device* device) : dtype_(dtype), device_(device) {}

  std::optional<DType> dtype() const { return dtype_; }
  pjrt::Device* device() const { return device_; }

 private:
  std::optional<DType> dtype_;
  pjrt::Device* device_ = nullptr;
};

enum class GeluApproximate { kNone, kTanh };

namespace lazy {
struct TensorImpl;
}

class Tensor;

// Captures where an operator expression (a + b) was written: the location of the
// implicit conversion is the caller's.
struct TensorAt {
  TensorAt(const Tensor& t,
           std::source_location l = std::source_location::current())  // NOLINT: implicit
      : tensor(t), loc(l) {}
  const Tensor& tensor;
  std::source_location loc;
};

using Loc = std::source_location;

// The same for a scalar operand of a compound assignment (t += 0.5).
struct ScalarAt {
  template <typename T>
  requires std::is_constructible_v<Scalar, T> ScalarAt(
      T v, Loc l = Loc::current())  // NOLINT: implicit by design
      : value(v), loc(l) {}
  Scalar value;
  Loc loc;
};

class Tensor {
 public:
  Tensor() = default;  // undefined; every op rejects it
  explicit Tensor(std::shared_ptr<lazy::TensorImpl> impl) : impl_(std::move(impl)) {}

  // Host data into a tensor: on the host (device nullptr) or copied to device
  // (asynchronously; the copy is ready before any graph reads it).
  static Tensor from_literal(ir::Literal literal, pjrt::Device* device = nullptr,
                             Loc loc = Loc::current());
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, std::vector<int64_t> shape,
                            pjrt::Device* device = nullptr, Loc loc = Loc::current());

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const;
  std::vector<int64_t> shape() const;
  int64_t dim() const;              // rank
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t numel() const;
  ir::Shape ir_shape() const;
  pjrt::Device* device() const;  // nullptr: host
  std::string device_name() const;  // "host", "CPU:0"
  bool is_host() const { return device() == nullptr; }
  // Whether the value is still an unexecuted graph.
  bool is_pending() const;
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // Moving and reading. Reading a pending tensor runs its graph (only what it needs).
  Tensor to(pjrt::Device& device, Loc loc = Loc::current()) const;
  Tensor to(DType dtype, Loc loc = Loc::current()) const;
  Tensor cpu(Loc loc = Loc::current()) const;
  ir::Literal to_literal(Loc loc = Loc::current()) const;
  Scalar item(Loc loc = Loc::current()) const;
  template <typename T>
  std::vector<T> to_vector(Loc loc = Loc::current()) const;
  std::string to_string(Loc loc = Loc::current()) const;  // "f32[2] {1, 2} (CPU:0)"

  // In place (torch's add_, ...): the result replaces this tensor's value for every
  // handle; it must keep this tensor's shape and be castable to its dtype.
  Tensor& operator+=(TensorAt other);
  Tensor& operator-=(TensorAt other);
  Tensor& operator*=(TensorAt other);
  Tensor& operator/=(TensorAt other);
  Tensor& operator+=(ScalarAt other);
  Tensor& operator-=(ScalarAt other);
  Tensor& operator*=(ScalarAt other);
  Tensor& operator/=(ScalarAt other);
  Tensor& copy_(const Tensor& source, Loc loc = Loc::current());

  // Autograd (torch semantics; runtime/autograd/autograd.h has the grad mode and autograd::grad).
  // Only a floating tensor can require grad; requires_grad_ changes leaves only.
  Tensor& requires_grad_(bool requires_grad = true, Loc loc = Loc::current());
  bool requires_grad() const;
  bool is_leaf() const;  // true for tensors not made by a recorded op
  // The gradient accumulated by backward() (leaves only); undefined if none yet.
  Tensor grad() const;
  // An undefined g clears it (zero_grad with set_to_none); else g must match in shape,
  // dtype and device.
  void set_grad(const Tensor& g);
  // Accumulates d(this)/d(leaf), weighted by gradient, into every leaf's grad(); the
  // default gradient is ones for a 1-element tensor. Frees the graph it ran through.
  void backward(const Tensor& gradient = Tensor(), Loc loc = Loc::current()) const;
  // The same value with no grad history (a new tensor: later in-place changes to
  // either are not seen by the other, as podsim tensors never alias storage).
  Tensor detach() const;

  // Shape ops.
  Tensor reshape(std::vector<int64_t> shape, Loc loc = Loc::current()) const;
  Tensor view(std::vector<int64_t> shape, Loc loc = Loc::current()) const;
  Tensor permute(std::vector<int64_t> dims, Loc loc = Loc::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Loc loc = Loc::current()) const;
  Tensor t(Loc loc = Loc::current()) const;
  Tensor expand(std::vector<int64_t> sizes, Loc loc = Loc::current()) const;
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current()) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start = {}, std::optional<int64_t> end = {},
               int64_t step = 1, Loc loc = Loc::current()) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Loc loc = Loc::current()) const;
  Tensor index_select(int64_t dim, const Tensor& index, Loc loc = Loc::current()) const;
  Tensor gather(int64_t dim, const Tensor& index, Loc loc = Loc::current()) const;

  // Reductions (an empty dims list reduces over every dimension).
  Tensor sum(std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor mean(std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor max(std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor min(std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor argmax(std::optional<int64_t> dim = {}, bool keepdim = false,
                Loc loc = Loc::current()) const;
  Tensor argmin(std::optional<int64_t> dim = {}, bool keepdim = false,
                Loc loc = Loc::current()) const;
  Tensor logsumexp(std::vector<int64_t> dims, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor softmax(int64_t dim, Loc loc = Loc::current()) const;
  Tensor log_softmax(int64_t dim, Loc loc = Loc::current()) const;

  // Elementwise.
  Tensor exp(Loc loc = Loc::current()) const;
  Tensor log(Loc loc = Loc::current()) const;
  Tensor sqrt(Loc loc = Loc::current()) const;
  Tensor abs(Loc loc = Loc::current()) const;
  Tensor relu(Loc loc = Loc::current()) const;
  Tensor sigmoid(Loc loc = Loc::current()) const;
  Tensor tanh(Loc loc = Loc::current()) const;
  Tensor pow(Scalar exponent, Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max,
               Loc loc = Loc::current()) const;
  Tensor matmul(const Tensor& other, Loc loc = Loc::current()) const;

  const std::shared_ptr<lazy::TensorImpl>& impl() const { return impl_; }

 private:
  static Tensor from_bytes(DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes,
                           pjrt::Device* device, Loc loc);
  std::shared_ptr<lazy::TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// ---- Elementwise -------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor add(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor sub(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor sub(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor sub(Scalar a, const Tensor& b, Loc loc = Loc::current());
Tensor mul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor mul(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor div(const Tensor& a, const Tensor& b, Loc loc = Loc::current());  // true division
Tensor div(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor div(Scalar a, const Tensor& b, Loc loc = Loc::current());
Tensor pow(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor pow(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor pow(Scalar a, const Tensor& b, Loc loc = Loc::current());
Tensor maximum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());  // NaN-propagating
Tensor minimum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max,
             Loc loc = Loc::current());
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, Loc loc = Loc::current());

Tensor neg(const Tensor& x, Loc loc = Loc::current());
Tensor abs(const Tensor& x, Loc loc = Loc::current());
Tensor exp(const Tensor& x, Loc loc = Loc::current());
Tensor log(const Tensor& x, Loc loc = Loc::current());
Tensor sqrt(const Tensor& x, Loc loc = Loc::current());
Tensor rsqrt(const Tensor& x, Loc loc = Loc::current());
Tensor tanh(const Tensor& x, Loc loc = Loc::current());
Tensor sigmoid(const Tensor& x, Loc loc = Loc::current());
Tensor relu(const Tensor& x, Loc loc = Loc::current());
// kNone: x * Phi(x) with erf from a rational approximation (|error| < 2e-7);
// kTanh: torch's approximate="tanh".
Tensor gelu(const Tensor& x, GeluApproximate approximate = GeluApproximate::kNone,
            Loc loc = Loc::current());

// Comparisons give bool tensors.
Tensor eq(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor ne(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor lt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor le(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor gt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor ge(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor eq(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor ne(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor lt(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor le(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor gt(const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor ge(const Tensor& a, Scalar b, Loc loc = Loc::current());

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Tensor& a, Scalar b, Loc loc = Loc::current());
Tensor where(const Tensor& condition, Scalar a, const Tensor& b, Loc loc = Loc::current());

// Operators (== and != are left out: use eq / ne; a handle comparison would mislead).
Tensor operator+(TensorAt a, const Tensor& b);
Tensor operator+(TensorAt a, Scalar b);
Tensor operator+(Scalar a, TensorAt b);
Tensor operator-(TensorAt a, const Tensor& b);
Tensor operator-(TensorAt a, Scalar b);
Tensor operator-(Scalar a, TensorAt b);
Tensor operator*(TensorAt a, const Tensor& b);
Tensor operator*(TensorAt a, Scalar b);
Tensor operator*(Scalar a, TensorAt b);
Tensor operator/(TensorAt a, const Tensor& b);
Tensor operator/(TensorAt a, Scalar b);
Tensor operator/(Scalar a, TensorAt b);
Tensor operator-(TensorAt a);
Tensor operator<(TensorAt a, const Tensor& b);
Tensor operator<(TensorAt a, Scalar b);
Tensor operator<=(TensorAt a, const Tensor& b);
Tensor operator<=(TensorAt a, Scalar b);
Tensor operator>(TensorAt a, const Tensor& b);
Tensor operator>(TensorAt a, Scalar b);
Tensor operator>=(TensorAt a, const Tensor& b);
Tensor operator>=(TensorAt a, Scalar b);

// ---- Linear algebra ----------------------------------------------------------------
// torch.matmul: 1-D x 1-D dot, 2-D x 2-D matrix product, 1-D operands promoted to
// matrices and the added dimension removed, batch dimensions broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

// ---- Reductions --------------------------------------------------------------------
// Integral and bool sums give s64; 16-bit floats accumulate in f32. max/min over dims
// give the values (torch.amax / amin); NaN propagates.
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Loc loc = Loc::current());
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
            Loc loc = Loc::current());
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Loc loc = Loc::current());
Tensor min(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Loc loc = Loc::current());
// First index of the extreme (NaN counts as the extreme); no dim: of the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false,
              Loc loc = Loc::current());
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false,
              Loc loc = Loc::current());
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false,
                 Loc loc = Loc::current());
Tensor softmax(const Tensor& x, int64_t dim, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& x, int64_t dim, Loc loc = Loc::current());

// ---- Shapes and indexing -----------------------------------------------------------
// Tensors are always contiguous, so view is reshape (no aliasing of storage).
Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Loc loc = Loc::current());
Tensor permute(const Tensor& x, std::vector<int64_t> dims, Loc loc = Loc::current());
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Loc loc = Loc::current());
Tensor expand(const Tensor& x, std::vector<int64_t> sizes, Loc loc = Loc::current());
Tensor squeeze(const Tensor& x, std::optional<int64_t> dim = {}, Loc loc = Loc::current());
Tensor unsqueeze(const Tensor& x, int64_t dim, Loc loc = Loc::current());
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1,
               Loc loc = Loc::current());
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
// x[start:end:step] along dim with Python's clamping of start and end.
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start = {},
             std::optional<int64_t> end = {}, int64_t step = 1, Loc loc = Loc::current());
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length,
              Loc loc = Loc::current());
// Index values are not checked on the device (as in PyTorch/XLA): out-of-range
// indices are clamped into range, following the IR's gather semantics.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Loc loc = Loc::current());
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Loc loc = Loc::current());

// ---- Creation ----------------------------------------------------------------------
Tensor full(std::vector<int64_t> shape, Scalar value, TensorOptions options = {},
            Loc loc = Loc::current());
Tensor zeros(std::vector<int64_t> shape, TensorOptions options = {}, Loc loc = Loc::current());
Tensor ones(std::vector<int64_t> shape, TensorOptions options = {}, Loc loc = Loc::current());
// [start, end) in steps of step; the element type follows the arguments (s64 if all
// are integral) unless options say otherwise.
Tensor arange(Scalar end, TensorOptions options = {}, Loc loc = Loc::current());
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {},
              Loc loc = Loc::current());
// Uniform [0, 1) and standard normal values from the device's generator, whose state
// is a device tensor (a u64[2] graph input advanced by each use).
Tensor rand(std::vector<int64_t> shape, TensorOptions options = {}, Loc loc = Loc::current());
Tensor randn(std::vector<int64_t> shape, TensorOptions options = {}, Loc loc = Loc::current());
// Seeds the generators of every device and of the host.
void manual_seed(uint64_t seed);

// ---- Execution ---------------------------------------------------------------------
// Compiles (or finds in the cache) and launches the graph of every live pending
// tensor, one per device, and counts a step. Returns without waiting.
void mark_step(Loc loc = Loc::current());
void sync(Loc loc = Loc::current());  // the same as mark_step()
// Runs the graph of just these tensors (all on one device), without counting a step.
void sync(const std::vector<Tensor>& tensors, Loc loc = Loc::current());
// Waits until everything launched so far has finished (rethrows a failure); inside a
// launch (runtime/distributed/collectives.h), what the replica launched on its own device.
void wait_device_ops();
// PODSIM_EAGER=1 sets it at start: each op runs at once.
void set_eager_mode(bool eager);
bool eager_mode();

// ---- Templates ---------------------------------------------------------------------
namespace detail {
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return kUInt8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return kInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return kInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return kInt64;
  else if constexpr (std::is_same_v<T, float>)
    return kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return kFloat64;
  else
    static_assert(sizeof(T) == 0, "from_vector: unsupported element type");
}
}  // namespace detail

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, std::vector<int64_t> shape,
                           pjrt::Device* device, Loc loc) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_bytes(kBool, std::move(shape), bytes.data(), bytes.size(), device, loc);
  } else {
    return from_bytes(detail::dtype_of<T>(), std::move(shape), values.data(),
                      values.size() * sizeof(T), device, loc);
  }
}

template <typename T>
std::vector<T> Tensor::to_vector(Loc loc) const {
  ir::Literal literal = to_literal(loc);
  std::vector<T> out(static_cast<size_t>(literal.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      out[i] = static_cast<T>(literal.get_as_double(static_cast<int64_t>(i)));
    else if constexpr (std::is_same_v<T, bool>)
      out[i] = literal.get_as_double(static_cast<int64_t>(i)) != 0;
    else
      out[i] = static_cast<T>(ir::is_float(literal.type())
                                  ? literal.get_as_double(static_cast<int64_t>(i))
                                  : literal.get_as_int64(static_cast<int64_t>(i)));
  }
  return out;
}

}  // namespace podsim
