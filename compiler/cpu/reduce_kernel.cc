#include "compiler/cpu/reduce_kernel.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "common/error.h"
#include "compiler/cpu/simd.h"
#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

namespace {

constexpr int64_t kLanes = 16;
// Reduced elements per group at least, and the number of tasks worth splitting for.
constexpr int64_t kMinGroup = 16384;
constexpr int64_t kTargetTasks = 32;

enum class FastOp : uint8_t { kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr };

// `ROOT r = op(p0, p1)` (either operand order) on scalars of type t.
std::optional<FastOp> match_simple(const ir::Computation& c, PrimitiveType t) {
  if (c.parameter_count() != 2 || c.instruction_count() != 3 || c.root() == nullptr)
    return std::nullopt;
  const Instruction& root = *c.root();
  if (root.operand_count() != 2) return std::nullopt;
  const bool direct = root.operand(0) == c.parameter(0) && root.operand(1) == c.parameter(1);
  const bool swapped = root.operand(0) == c.parameter(1) && root.operand(1) == c.parameter(0);
  if (!direct && !swapped) return std::nullopt;
  const ir::Shape scalar = ir::Shape::scalar(t);
  if (!root.shape().compatible(scalar) || !c.parameter(0)->shape().compatible(scalar) ||
      !c.parameter(1)->shape().compatible(scalar))
    return std::nullopt;
  const bool pred = t == PrimitiveType::kPred, floating = ir::is_float(t);
  switch (root.opcode()) {
    case Opcode::kAdd:
      return pred ? std::nullopt : std::optional(FastOp::kAdd);
    case Opcode::kMultiply:
      return pred ? std::nullopt : std::optional(FastOp::kMultiply);
    case Opcode::kMaximum:
      return pred ? std::nullopt : std::optional(FastOp::kMaximum);
    case Opcode::kMinimum:
      return pred ? std::nullopt : std::optional(FastOp::kMinimum);
    case Opcode::kAnd:
      return floating ? std::nullopt : std::optional(FastOp::kAnd);
    case Opcode::kOr:
      return floating ? std::nullopt : std::optional(FastOp::kOr);
    default:
      return std::nullopt;
  }
}

template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// apply(acc, x) as the evaluator's fast path computes it, and the op's identity.
template <typename T, FastOp kOp>
struct Op {
  static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
      return kOp == FastOp::kAnd ? (a && b) : (a || b);
    } else if constexpr (ir::is_float_v<T>) {
      const ir::compute_t<T> x = ir::widen(a), y = ir::widen(b);
      if constexpr (kOp == FastOp::kAdd)
        return ir::narrow<T>(x + y);
      else if constexpr (kOp == FastOp::kMultiply)
        return ir::narrow<T>(x * y);
      else if constexpr (kOp == FastOp::kMaximum)
        return ir::narrow<T>(ir::eval::float_max(x, y));
      else
        return ir::narrow<T>(ir::eval::float_min(x, y));
    } else {
      using U = wrap_t<T>;
      if constexpr (kOp == FastOp::kAdd)
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      else if constexpr (kOp == FastOp::kMultiply)
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      else if constexpr (kOp == FastOp::kMaximum)
        return a > b ? a : b;
      else if constexpr (kOp == FastOp::kMinimum)
        return a < b ? a : b;
      else if constexpr (kOp == FastOp::kAnd)
        return static_cast<T>(a & b);
      else
        return static_cast<T>(a | b);
    }
  }
  static T identity() {
    if constexpr (std::is_same_v<T, bool>) {
      return kOp == FastOp::kAnd;
    } else if constexpr (ir::is_float_v<T>) {
      using C = ir::compute_t<T>;
      if constexpr (kOp == FastOp::kAdd)
        return ir::narrow<T>(C(-0.0));
      else if constexpr (kOp == FastOp::kMultiply)
        return ir::narrow<T>(C(1));
      else if constexpr (kOp == FastOp::kMaximum)
        return ir::narrow<T>(-std::numeric_limits<C>::infinity());
      else
        return ir::narrow<T>(std::numeric_limits<C>::infinity());
    } else {
      if constexpr (kOp == FastOp::kAdd || kOp == FastOp::kOr)
        return T(0);
      else if constexpr (kOp == FastOp::kMultiply)
        return T(1);
      else if constexpr (kOp == FastOp::kMaximum)
        return std::numeric_limits<T>::lowest();
      else if constexpr (kOp == FastOp::kMinimum)
        return std::numeric_limits<T>::max();
      else
        return static_cast<T>(~T(0));
    }
  }
};

}  // namespace

// Typed loops, reached through function pointers so that the driver is not templated.
struct ReduceKernel::Ops {
  void (*lanes)(const std::byte* values, int64_t n, std::byte* lanes);  // lane k % kLanes
  void (*fold)(const std::byte* values, int64_t n, std::byte* acc);     // in order
  void (*finish_lanes)(std::byte* lanes, std::byte* acc);               // acc = acc op tree(lanes)
  void (*columns)(const std::byte* values, int64_t nb, int64_t nr, std::byte* acc);
  // acc[j] = acc[j] op tree(lanes of row j) for nb rows of r values: identity, lanes and
  // finish_lanes per row, in one call.
  void (*rows)(const std::byte* values, int64_t nb, int64_t r, std::byte* acc);
  void (*combine)(std::byte* acc, const std::byte* part, int64_t n);
  void (*identity)(std::byte* out, int64_t n);
};

namespace {

template <typename T, typename O>
PODSIM_CPU_SIMD void lanes_loop(const T* __restrict v, int64_t n, T* __restrict lanes_out) {
  T lanes[kLanes];
  std::memcpy(lanes, lanes_out, sizeof(lanes));
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = O::apply(lanes[l], v[k + l]);
  for (int64_t l = 0; k + l < n; ++l) lanes[l] = O::apply(lanes[l], v[k + l]);
  std::memcpy(lanes_out, lanes, sizeof(lanes));
}

template <typename T, typename O>
PODSIM_CPU_SIMD void columns_loop(const T* __restrict v, int64_t nb, int64_t nr,
                                  T* __restrict acc) {
  for (int64_t k = 0; k < nr; ++k)
    for (int64_t j = 0; j < nb; ++j) acc[j] = O::apply(acc[j], v[k * nb + j]);
}

template <typename T, typename O>
PODSIM_CPU_SIMD void rows_loop(const T* __restrict v, int64_t nb, int64_t r, T* __restrict acc) {
  for (int64_t j = 0; j < nb; ++j) {
    const T* row = v + j * r;
    T lanes[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = O::identity();
    int64_t k = 0;
    for (; k + kLanes <= r; k += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] = O::apply(lanes[l], row[k + l]);
    for (int64_t l = 0; k + l < r; ++l) lanes[l] = O::apply(lanes[l], row[k + l]);
    for (int64_t w = kLanes / 2; w >= 1; w /= 2)
      for (int64_t l = 0; l < w; ++l) lanes[l] = O::apply(lanes[l], lanes[l + w]);
    acc[j] = O::apply(acc[j], lanes[0]);
  }
}

template <typename T, FastOp kOp>
struct TypedOps {
  using O = Op<T, kOp>;
  static void lanes(const std::byte* values, int64_t n, std::byte* lanes_bytes) {
    lanes_loop<T, O>(reinterpret_cast<const T*>(values), n, reinterpret_cast<T*>(lanes_bytes));
  }
  static void fold(const std::byte* values, int64_t n, std::byte* acc_bytes) {
    const T* v = reinterpret_cast<const T*>(values);
    T acc;
    std::memcpy(&acc, acc_bytes, sizeof(T));
    for (int64_t k = 0; k < n; ++k) acc = O::apply(acc, v[k]);
    std::memcpy(acc_bytes, &acc, sizeof(T));
  }
  static void finish_lanes(std::byte* lanes_bytes, std::byte* acc_bytes) {
    T* lanes = reinterpret_cast<T*>(lanes_bytes);
    for (int64_t w = kLanes / 2; w >= 1; w /= 2)
      for (int64_t l = 0; l < w; ++l) lanes[l] = O::apply(lanes[l], lanes[l + w]);
    T* acc = reinterpret_cast<T*>(acc_bytes);
    *acc = O::apply(*acc, lanes[0]);
  }
  static void columns(const std::byte* values, int64_t nb, int64_t nr, std::byte* acc_bytes) {
    columns_loop<T, O>(reinterpret_cast<const T*>(values), nb, nr, reinterpret_cast<T*>(acc_bytes));
  }
  static void rows(const std::byte* values, int64_t nb, int64_t r, std::byte* acc_bytes) {
    rows_loop<T, O>(reinterpret_cast<const T*>(values), nb, r, reinterpret_cast<T*>(acc_bytes));
  }
  static void combine(std::byte* acc_bytes, const std::byte* part_bytes, int64_t n) {
    T* acc = reinterpret_cast<T*>(acc_bytes);
    const T* part = reinterpret_cast<const T*>(part_bytes);
    for (int64_t j = 0; j < n; ++j) acc[j] = O::apply(acc[j], part[j]);
  }
  static void identity(std::byte* out, int64_t n) {
    T* o = reinterpret_cast<T*>(out);
    for (int64_t j = 0; j < n; ++j) o[j] = O::identity();
  }
  static constexpr ReduceKernel::Ops kOps{&lanes, &fold,    &finish_lanes, &columns,
                                          &rows,  &combine, &identity};
};

template <typename T>
const ReduceKernel::Ops* ops_for(FastOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == FastOp::kAnd ? &TypedOps<T, FastOp::kAnd>::kOps : &TypedOps<T, FastOp::kOr>::kOps;
  } else {
    switch (op) {
      case FastOp::kAdd:
        return &TypedOps<T, FastOp::kAdd>::kOps;
      case FastOp::kMultiply:
        return &TypedOps<T, FastOp::kMultiply>::kOps;
      case FastOp::kMaximum:
        return &TypedOps<T, FastOp::kMaximum>::kOps;
      case FastOp::kMinimum:
        return &TypedOps<T, FastOp::kMinimum>::kOps;
      default:
        if constexpr (ir::is_float_v<T>)
          return nullptr;
        else
          return op == FastOp::kAnd ? &TypedOps<T, FastOp::kAnd>::kOps
                                    : &TypedOps<T, FastOp::kOr>::kOps;
    }
  }
}

std::optional<FastOp> simple_op(const Instruction& reduce) {
  if (reduce.opcode() != Opcode::kReduce || reduce.operand_count() != 2 ||
      !reduce.shape().is_array() || reduce.called().size() != 1 || reduce.called(0) == nullptr)
    return std::nullopt;
  const ir::Shape& in = reduce.operand(0)->shape();
  const ir::Shape& init = reduce.operand(1)->shape();
  if (!in.is_array() || !init.is_scalar() || init.type() != in.type() ||
      reduce.shape().type() != in.type())
    return std::nullopt;
  return match_simple(*reduce.called(0), in.type());
}

}  // namespace

bool ReduceKernel::supported(const Instruction& reduce) { return simple_op(reduce).has_value(); }

ReduceKernel::ReduceKernel(const Instruction& reduce,
                           const BlockProgram::SourceIndex& source_index) {
  const std::optional<FastOp> op = simple_op(reduce);
  if (!op) fail("internal: reduce {} has no fast kernel", reduce.name());
  const PrimitiveType type = reduce.shape().type();
  ops_ = ir::visit_type(type, [&]<typename T>() { return ops_for<T>(*op); });
  width_ = static_cast<size_t>(ir::type_byte_size(type));
  exact_ = type == PrimitiveType::kBF16 || type == PrimitiveType::kF16;
  input_ = std::make_unique<BlockProgram>(*reduce.operand(0), source_index);
  init_ = std::make_unique<BlockProgram>(*reduce.operand(1), source_index);

  const std::vector<int64_t>& dims = reduce.operand(0)->shape().dims();
  const std::vector<int64_t> strides = ir::row_major_strides(dims);
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t d : reduce.attrs().dimensions) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
  for (size_t d = 0; d < dims.size(); ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(dims[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(strides[d]);
  }
  outputs_ = ir::checked_num_elements(kept_dims);
  reduced_ = ir::checked_num_elements(reduced_dims);
  out_map_ = AffineMap(kept_dims, kept_strides, 0);
  reduced_map_ = AffineMap(reduced_dims, reduced_strides, 0);
  row_mode_ = false;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 1) continue;
    row_mode_ = reduced[d];
    break;
  }
  if (reduced_ <= kBlockElements) {
    reduced_offsets_.resize(static_cast<size_t>(reduced_));
    reduced_map_.fill(0, reduced_, reduced_offsets_.data());
  }
  if (row_mode_)
    tile_outputs_ =
        reduced_ >= kBlockElements ? 1 : kBlockElements / std::max<int64_t>(reduced_, 1);
  else
    tile_outputs_ = std::min(outputs_, kBlockElements);
  tile_outputs_ = std::max<int64_t>(tile_outputs_, 1);
  tiles_ = (outputs_ + tile_outputs_ - 1) / tile_outputs_;
  groups_ = 1;
  group_size_ = reduced_;
  if (!exact_ && tiles_ < kTargetTasks && reduced_ >= 2 * kMinGroup) {
    const int64_t wanted =
        std::min((reduced_ + kMinGroup - 1) / kMinGroup, (kTargetTasks + tiles_ - 1) / tiles_);
    group_size_ = (reduced_ + wanted - 1) / wanted;
    group_size_ = (group_size_ + kBlockElements - 1) / kBlockElements * kBlockElements;
    groups_ = (reduced_ + group_size_ - 1) / group_size_;
  }
}

ReduceKernel::~ReduceKernel() = default;

// One tile of outputs over one group of the reduced elements; dest receives the
// tile's values (start_value: init, or the identity when there are several groups).
void ReduceKernel::run_tile(int64_t task, std::span<const std::byte* const> inputs,
                            const std::byte* invariants, const std::byte* start_value,
                            std::byte* dest) const {
  const int64_t tile = task / groups_, group = task % groups_;
  const int64_t o0 = tile * tile_outputs_, nb = std::min(tile_outputs_, outputs_ - o0);
  const int64_t ga = group * group_size_, gb = std::min(reduced_, ga + group_size_);
  const size_t block = static_cast<size_t>(kBlockElements);
  std::byte* scratch = thread_scratch(input_->scratch_bytes() + block * 8 * 3 + kLanes * 8);
  auto* indices = reinterpret_cast<int64_t*>(scratch + input_->scratch_bytes());
  auto* offsets = indices + block;
  auto* bases = offsets + block;
  std::byte* lanes = reinterpret_cast<std::byte*>(bases + block);
  for (int64_t j = 0; j < nb; ++j)
    std::memcpy(dest + static_cast<size_t>(j) * width_, start_value, width_);
  const std::optional<int64_t> rstride = reduced_map_.linear_stride();
  const std::optional<int64_t> ostride = out_map_.linear_stride();

  if (row_mode_ && nb == 1) {
    // One output; its reduced elements in chunks of a block.
    const int64_t base = out_map_.at(o0);
    if (!exact_) ops_->identity(lanes, kLanes);
    for (int64_t c = ga; c < gb; c += kBlockElements) {
      const int64_t n = std::min(kBlockElements, gb - c);
      IndexSet at{base + c, nullptr, n};
      if (rstride != 1) {
        reduced_map_.fill(c, n, indices);
        for (int64_t k = 0; k < n; ++k) indices[k] += base;
        at.indices = indices;
      }
      const std::byte* values = input_->eval(inputs, invariants, at, scratch, nullptr);
      if (exact_)
        ops_->fold(values, n, dest);
      else
        ops_->lanes(values, n, lanes);
    }
    if (!exact_) ops_->finish_lanes(lanes, dest);
    return;
  }
  if (row_mode_) {
    // Several outputs, each with all of its (few) reduced elements, in one evaluation.
    const int64_t r = reduced_;
    IndexSet at{out_map_.at(o0), nullptr, nb * r};
    if (!(rstride == 1 && ostride == r)) {
      out_map_.fill(o0, nb, bases);
      for (int64_t j = 0; j < nb; ++j)
        for (int64_t k = 0; k < r; ++k)
          indices[j * r + k] = bases[j] + reduced_offsets_[static_cast<size_t>(k)];
      at.indices = indices;
    }
    const std::byte* values = input_->eval(inputs, invariants, at, scratch, nullptr);
    if (!exact_) {
      ops_->rows(values, nb, r, dest);
      return;
    }
    for (int64_t j = 0; j < nb; ++j)
      ops_->fold(values + static_cast<size_t>(j * r) * width_, r,
                 dest + static_cast<size_t>(j) * width_);
    return;
  }
  // Column mode: consecutive outputs side by side, reduced elements in order.
  const int64_t nr = std::max<int64_t>(1, kBlockElements / nb);
  const bool outputs_consecutive = ostride == 1;
  if (!outputs_consecutive) out_map_.fill(o0, nb, bases);
  for (int64_t c = ga; c < gb; c += nr) {
    const int64_t n = std::min(nr, gb - c);
    IndexSet at{out_map_.at(o0) + reduced_map_.at(c), nullptr, n * nb};
    if (!(outputs_consecutive && (n == 1 || rstride == nb))) {
      reduced_map_.fill(c, n, offsets);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < nb; ++j)
          indices[k * nb + j] = (outputs_consecutive ? out_map_.at(o0) + j : bases[j]) + offsets[k];
      at.indices = indices;
    }
    const std::byte* values = input_->eval(inputs, invariants, at, scratch, nullptr);
    ops_->columns(values, nb, n, dest);
  }
}

void ReduceKernel::run(std::span<const std::byte* const> inputs, std::byte* out) const {
  if (outputs_ == 0) return;
  std::vector<std::byte> init(width_);
  {
    const std::vector<std::byte> invariants = init_->prepare(inputs);
    std::vector<std::byte> scratch(init_->scratch_bytes());
    init_->eval(inputs, invariants.data(), IndexSet{0, nullptr, 1}, scratch.data(), init.data());
  }
  if (reduced_ == 0) {
    for (int64_t o = 0; o < outputs_; ++o)
      std::memcpy(out + static_cast<size_t>(o) * width_, init.data(), width_);
    return;
  }
  const std::vector<std::byte> invariants = input_->prepare(inputs);
  const int64_t tasks = tiles_ * groups_;
  if (groups_ == 1) {
    auto body = [&](int64_t t) {
      run_tile(t, inputs, invariants.data(), init.data(),
               out + static_cast<size_t>(t * tile_outputs_) * width_);
    };
    if (tasks == 1 || !input_->worth_parallel(outputs_ * reduced_))
      for (int64_t t = 0; t < tasks; ++t) body(t);
    else
      tbb::parallel_for(int64_t{0}, tasks, body);
    return;
  }
  // Several groups: partial results per group, then folded in group order after init.
  std::vector<std::byte> identity(width_);
  ops_->identity(identity.data(), 1);
  const size_t group_bytes = static_cast<size_t>(outputs_) * width_;
  std::vector<std::byte> partials(group_bytes * static_cast<size_t>(groups_));
  auto body = [&](int64_t t) {
    const int64_t tile = t / groups_, group = t % groups_;
    std::byte* dest = partials.data() + static_cast<size_t>(group) * group_bytes +
                      static_cast<size_t>(tile * tile_outputs_) * width_;
    run_tile(t, inputs, invariants.data(), identity.data(), dest);
  };
  if (input_->worth_parallel(outputs_ * reduced_))
    tbb::parallel_for(int64_t{0}, tasks, body);
  else
    for (int64_t t = 0; t < tasks; ++t) body(t);
  for (int64_t o = 0; o < outputs_; ++o)
    std::memcpy(out + static_cast<size_t>(o) * width_, init.data(), width_);
  for (int64_t g = 0; g < groups_; ++g)
    ops_->combine(out, partials.data() + static_cast<size_t>(g) * group_bytes, outputs_);
}

}  // namespace podsim::cpu
