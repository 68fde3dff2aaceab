// The lazy graph: compact IR nodes recorded by tensor ops, graph capture at sync time
// (post-order, canonical parameter numbering, structural hash) and lowering of a
// captured graph to an ir::Module, which happens only on a compile-cache miss.
//
// A node is one HLO-like operation (an ir::Opcode with its attributes packed as
// integers) whose result shape is known when it is recorded. Elementwise nodes (add ...
// select) may take rank-0 operands, which lowering broadcasts: a scalar costs one node. Nodes are
// reference counted and immutable once made; each carries a 128-bit hash of its opcode, type, dims,
// attributes and operand hashes, computed at creation, so hashing a whole graph at sync costs one
// step per parameter and per shared node rather than per node.
//
// Leaves are parameters: device data (a buffer, or a host literal for host tensors) and
// scalars that ops took as C++ values. Neither contributes its value to any hash, so a
// changing learning rate reuses the compiled graph (a sharded buffer's sharding does:
// the partitioned program depends on it). Constants (kConstant) are only made
// by ops for values their semantics fix (0 for relu, the -inf of a max reduction, the
// 0.5 of gelu, ...); they are hashed by value.
//
// Internal header of the runtime (not for users: they include runtime/tensor/tensor.h).
#pragma once

#include <fmt/core.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"
#include "compiler/ir/opcode.h"
#include "compiler/ir/types.h"
#include "runtime/pjrt/device.h"
#include "runtime/pjrt/hash.h"

namespace podsim::lazy {

// A vector of trivially copyable values with N elements of inline storage: node dims,
// attributes and operands rarely need the heap.
template <typename T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVec() = default;
  SmallVec(std::initializer_list<T> values) { assign(values.begin(), values.size()); }
  explicit SmallVec(std::span<const T> values) { assign(values.data(), values.size()); }
  SmallVec(const std::vector<T>& values) {
    assign(values.data(), values.size());
  }  // NOLINT: implicit by design
  SmallVec(size_t count, T value) {
    reserve(count);
    for (size_t i = 0; i < count; ++i) data_[i] = value;
    size_ = count;
  }
  SmallVec(const SmallVec& other) { copy_from(other); }
  SmallVec& operator=(const SmallVec& other) {
    if (this != &other) {
      size_ = 0;
      copy_from(other);
    }
    return *this;
  }
  SmallVec(SmallVec&& other) noexcept { take(other); }
  SmallVec& operator=(SmallVec&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  operator std::span<const T>() const { return {data_, size_}; }  // NOLINT: implicit by design
  std::span<const T> span() const { return {data_, size_}; }
  std::vector<T> vec() const { return {data_, data_ + size_}; }

  void push_back(T value) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data_[size_++] = value;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t count, T value = T()) {
    reserve(count);
    for (size_t i = size_; i < count; ++i) data_[i] = value;
    size_ = count;
  }
  void insert(size_t position, T value) {
    push_back(value);
    std::memmove(data_ + position + 1, data_ + position, (size_ - 1 - position) * sizeof(T));
    data_[position] = value;
  }
  void erase(size_t position) {
    std::memmove(data_ + position, data_ + position + 1, (size_ - 1 - position) * sizeof(T));
    --size_;
  }
  void reserve(size_t count) {
    if (count <= capacity_) return;
    T* grown = new T[count];
    if (size_ > 0) std::memcpy(static_cast<void*>(grown), data_, size_ * sizeof(T));
    release();
    data_ = grown;
    capacity_ = count;
  }

  bool operator==(const SmallVec& other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == other.data_[i])) return false;
    return true;
  }

 private:
  void assign(const T* values, size_t count) {
    reserve(count);
    if (count > 0) std::memcpy(static_cast<void*>(data_), values, count * sizeof(T));
    size_ = count;
  }
  // Inline contents copy as one fixed-size block (no call for the common case).
  void copy_from(const SmallVec& other) {
    if (other.size_ <= N) {
      std::memcpy(static_cast<void*>(inline_), other.data_, sizeof(inline_));
      size_ = other.size_;
    } else {
      assign(other.data_, other.size_);
    }
  }
  void release() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
    capacity_ = N;
  }
  void take(SmallVec& other) {
    if (other.data_ == other.inline_) {
      data_ = inline_;
      capacity_ = N;
      std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    } else {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = N;
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  T inline_[N] = {};
  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
};

using Dims = SmallVec<int64_t, 6>;

// "f32[2,3]"
std::string shape_string(ir::PrimitiveType type, std::span<const int64_t> dims);
int64_t num_elements(std::span<const int64_t> dims);

// Where an op was called, for errors and IR metadata. op is a string literal.
struct OpSite {
  const char* op;
  std::source_location loc;
};

// "FILE:LINE: OP: message"
template <typename... Args>
[[noreturn]] void op_fail(const OpSite& site, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format("{}:{}: {}: {}", site.loc.file_name(), site.loc.line(), site.op,
                          fmt::format(format, std::forward<Args>(args)...)));
}

// What a kReduce node reduces with. Argmax/argmin nodes give s64 indices.
enum class ReduceKind : int64_t { kSum, kMax, kMin, kAnd, kOr };

// Leaves (opcode kParameter).
enum class LeafKind : uint8_t {
  kNone,    // not a leaf
  kData,    // a device buffer or a host literal
  kScalar,  // a C++ scalar an op took; becomes a device scalar at sync
};

// A C++ scalar as an op received it (before conversion to the node's type).
struct ScalarValue {
  bool is_integral = false;
  int64_t i = 0;
  double f = 0;
};

// What a leaf stands for.
struct LeafData {
  std::shared_ptr<pjrt::Buffer> buffer;     // device data
  std::shared_ptr<const ir::Literal> literal;  // host data
  ScalarValue scalar;                          // LeafKind::kScalar
};

struct Node {
  // Nodes are made and freed at the rate ops are traced: a per-thread free list keeps
  // that off the general-purpose allocator.
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size) noexcept;

  ir::Opcode op = ir::Opcode::kParameter;
  ir::PrimitiveType type = ir::PrimitiveType::kF32;
  LeafKind leaf = LeafKind::kNone;
  std::atomic<int32_t> refs{0};
  Dims dims;
  // Per-opcode attributes, all hashed (their layout per opcode: Lowering::set_attributes
  // in lowering.cc; kReduce: [ReduceKind, dims...]; kConstant: [double bits]).
  SmallVec<int64_t, 4> attrs;
  SmallVec<Node*, 3> operands;  // each holds a reference
  pjrt::Hash128 hash;
  OpSite site;  // the user-level op that recorded it, for IR metadata

  std::unique_ptr<LeafData> data;  // leaves only

  // Scratch of graph capture; only touched under the sync lock.
  uint64_t epoch = 0;
  int64_t index = -1;      // position in the captured post-order
  int64_t parameter = -1;  // parameter number (leaves)
};

void release_node(Node* node) noexcept;

// An owning pointer to a node (intrusive reference count). Destruction of long chains
// is iterative, so no graph depth can overflow the stack.
class NodePtr {
 public:
  NodePtr() = default;
  explicit NodePtr(Node* node) : node_(node) {
    if (node_ != nullptr) node_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  NodePtr(const NodePtr& other) : NodePtr(other.node_) {}
  NodePtr(NodePtr&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  NodePtr& operator=(NodePtr other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~NodePtr() {
    if (node_ != nullptr) release_node(node_);
  }
  Node* get() const { return node_; }
  Node* operator->() const { return node_; }
  Node& operator*() const { return *node_; }
  explicit operator bool() const { return node_ != nullptr; }
  bool operator==(const NodePtr& other) const { return node_ == other.node_; }

 private:
  Node* node_ = nullptr;
};

// Records a node; its hash is computed here.
NodePtr make_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                  std::initializer_list<Node*> operands, std::initializer_list<int64_t> attrs = {});
NodePtr make_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                  std::span<Node* const> operands, std::span<const int64_t> attrs);
NodePtr make_data_leaf(const OpSite& site, std::shared_ptr<pjrt::Buffer> buffer);
NodePtr make_literal_leaf(const OpSite& site, std::shared_ptr<const ir::Literal> literal);
NodePtr make_scalar_leaf(const OpSite& site, ir::PrimitiveType type, ScalarValue value);
// mark_sharding's annotation of a pending value: a kCustomCall node (lowered to XLA's
// custom-call "Sharding") whose attributes are the sharding, encoded as
// [tiled, rank of the tile assignment, its dims..., last_tile_dim_replicate, devices...].
std::vector<int64_t> encode_sharding(const ir::Sharding& sharding);
ir::Sharding decode_sharding(std::span<const int64_t> attrs);
// A scalar constant fixed by an op's semantics (hashed by value).
NodePtr make_constant(const OpSite& site, ir::PrimitiveType type, double value);

// The scalar value converted to type, as a literal.
ir::Literal scalar_literal(ir::PrimitiveType type, const ScalarValue& value);

// A captured graph: unique roots in order, every reachable node in post-order,
// parameters in canonical order (first appearance in the post-order traversal; leaves
// holding the same buffer or literal share one parameter) and the structural hash.
struct Graph {
  std::vector<NodePtr> roots;
  std::vector<Node*> post_order;
  std::vector<Node*> parameters;
  pjrt::Hash128 hash;
};

// roots must be unique. Call under the sync lock (it writes the nodes' scratch fields).
Graph capture_graph(std::vector<NodePtr> roots);

// The graph as a module: parameters numbered as in graph.parameters, root a tuple of
// the roots in order. Node sites become instruction metadata.
std::unique_ptr<ir::Module> lower_graph(const Graph& graph, const std::string& name);

// Debug forms of a captured graph (PODSIM_SAVE_TENSORS_FMT=text|dot).
std::string graph_text(const Graph& graph);
std::string graph_dot(const Graph& graph);

}  // namespace podsim::lazy
