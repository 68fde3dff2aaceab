#include "runtime/lazy/graph.h"

#include <bit>
#include <functional>
#include <string>
#include <unordered_map>

namespace podsim::lazy {

std::string shape_string(ir::PrimitiveType type, std::span<const int64_t> dims) {
  std::string out(ir::type_name(type));
  out += '[';
  for (size_t i = 0; i < dims.size(); ++i) out += fmt::format("{}{}", i ? "," : "", dims[i]);
  out += ']';
  return out;
}

int64_t num_elements(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

void release_node(Node* node) noexcept {
  if (node->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Nodes whose last reference went while another node is being destroyed on this
  // thread wait here, so that destroying a long chain never recurses.
  thread_local std::vector<Node*> pending;
  thread_local bool destroying = false;
  if (destroying) {
    pending.push_back(node);
    return;
  }
  destroying = true;
  Node* next = node;
  while (next != nullptr) {
    for (Node* operand : next->operands) release_node(operand);
    delete next;
    next = nullptr;
    if (!pending.empty()) {
      next = pending.back();
      pending.pop_back();
    }
  }
  destroying = false;
}

namespace {

// Freed nodes kept per thread for reuse: an intrusive list (a free block holds the next
// one), bounded; plain thread_locals so that nodes freed during thread exit are safe.
constexpr size_t kFreeListCapacity = 8192;
thread_local void* free_head = nullptr;
thread_local size_t free_count = 0;

// Empties the list when its thread exits; later frees bypass it.
struct FreeListReaper {
  ~FreeListReaper() {
    while (free_head != nullptr) {
      void* next = *static_cast<void**>(free_head);
      ::operator delete(free_head);
      free_head = next;
    }
    free_count = kFreeListCapacity;
  }
};
thread_local FreeListReaper free_list_reaper;

// The per-node hash: one 64x64->128 multiply per word on one lane and a multiply on
// the other, finalized with MurmurHash3's mixer. Cheaper than pjrt::Hasher's two
// finalizer rounds per word, which matters at one hash per traced op; the graph hash
// over node hashes uses pjrt::Hasher.
class NodeHasher {
 public:
  NodeHasher& add(uint64_t w) {
    __uint128_t p = static_cast<__uint128_t>(a_ ^ w) * 0x9e3779b97f4a7c15ull;
    a_ = static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
    b_ = (((b_ << 29) | (b_ >> 35)) ^ w) * 0xff51afd7ed558ccdull;
    ++count_;
    return *this;
  }
  NodeHasher& add(std::span<const int64_t> values) {
    add(values.size());
    for (int64_t v : values) add(static_cast<uint64_t>(v));
    return *this;
  }
  NodeHasher& add(const pjrt::Hash128& h) { return add(h.hi).add(h.lo); }
  pjrt::Hash128 finish() const { return {fmix(a_ ^ (count_ << 56)), fmix(b_ + a_ + count_)}; }

 private:
  static uint64_t fmix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
  }
  uint64_t a_ = 0x243f6a8885a308d3ull;
  uint64_t b_ = 0x13198a2e03707344ull;
  uint64_t count_ = 0;
};

uint64_t header_word(ir::Opcode op, ir::PrimitiveType type, LeafKind leaf) {
  return uint64_t{static_cast<uint8_t>(op)} | (uint64_t{static_cast<uint8_t>(type)} << 8) |
         (uint64_t{static_cast<uint8_t>(leaf)} << 16);
}

Node* new_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
               LeafKind leaf) {
  Node* node = new Node;
  node->op = op;
  node->type = type;
  node->leaf = leaf;
  node->dims = std::move(dims);
  node->site = site;
  return node;
}

// Leaves hash their type and dims (and a sharded buffer's sharding: `extra`) only:
// never their values or identity.
NodePtr finish_leaf(Node* node, uint64_t extra = 0) {
  NodeHasher h;
  h.add(header_word(node->op, node->type, node->leaf)).add(node->dims.span());
  if (extra != 0) h.add(extra);
  node->hash = h.finish();
  return NodePtr(node);
}

}  // namespace

void* Node::operator new(size_t size) {
  if (size == sizeof(Node) && free_head != nullptr) {
    void* p = free_head;
    free_head = *static_cast<void**>(p);
    --free_count;
    return p;
  }
  (void)&free_list_reaper;  // registers the thread's reaper
  return ::operator new(size);
}

void Node::operator delete(void* p, size_t size) noexcept {
  if (size == sizeof(Node) && free_count < kFreeListCapacity) {
    (void)&free_list_reaper;
    *static_cast<void**>(p) = free_head;
    free_head = p;
    ++free_count;
    return;
  }
  ::operator delete(p);
}

NodePtr make_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                  std::span<Node* const> operands, std::span<const int64_t> attrs) {
  Node* node = new_node(site, op, type, std::move(dims), LeafKind::kNone);
  node->attrs = SmallVec<int64_t, 4>(attrs);
  node->operands = SmallVec<Node*, 3>(operands);
  NodeHasher h;
  h.add(header_word(op, type, LeafKind::kNone)).add(node->dims.span()).add(attrs);
  for (Node* operand : operands) {
    operand->refs.fetch_add(1, std::memory_order_relaxed);
    h.add(operand->hash);
  }
  node->hash = h.finish();
  return NodePtr(node);
}

NodePtr make_node(const OpSite& site, ir::Opcode op, ir::PrimitiveType type, Dims dims,
                  std::initializer_list<Node*> operands, std::initializer_list<int64_t> attrs) {
  return make_node(site, op, type, std::move(dims),
                   std::span<Node* const>(operands.begin(), operands.size()),
                   std::span<const int64_t>(attrs.begin(), attrs.size()));
}

NodePtr make_data_leaf(const OpSite& site, std::shared_ptr<pjrt::Buffer> buffer) {
  const ir::Shape& shape = buffer->shape();
  Node* node =
      new_node(site, ir::Opcode::kParameter, shape.type(), Dims(shape.dims()), LeafKind::kData);
  node->data = std::make_unique<LeafData>();
  const ir::Sharding* sharding = buffer->sharding();
  const uint64_t extra = sharding != nullptr ? std::hash<std::string>{}(sharding->to_string()) | 1 : 0;
  node->data->buffer = std::move(buffer);
  return finish_leaf(node, extra);
}

NodePtr make_literal_leaf(const OpSite& site, std::shared_ptr<const ir::Literal> literal) {
  const ir::Shape& shape = literal->shape();
  Node* node =
      new_node(site, ir::Opcode::kParameter, shape.type(), Dims(shape.dims()), LeafKind::kData);
  node->data = std::make_unique<LeafData>();
  node->data->literal = std::move(literal);
  return finish_leaf(node);
}

NodePtr make_scalar_leaf(const OpSite& site, ir::PrimitiveType type, ScalarValue value) {
  Node* node = new_node(site, ir::Opcode::kParameter, type, Dims(), LeafKind::kScalar);
  node->data = std::make_unique<LeafData>();
  node->data->scalar = value;
  return finish_leaf(node);
}

std::vector<int64_t> encode_sharding(const ir::Sharding& sharding) {
  if (sharding.kind != ir::Sharding::Kind::kTiled) return {0};
  std::vector<int64_t> attrs{1, static_cast<int64_t>(sharding.tile_dims.size())};
  attrs.insert(attrs.end(), sharding.tile_dims.begin(), sharding.tile_dims.end());
  attrs.push_back(sharding.last_tile_dim_replicate ? 1 : 0);
  attrs.insert(attrs.end(), sharding.devices.begin(), sharding.devices.end());
  return attrs;
}

ir::Sharding decode_sharding(std::span<const int64_t> attrs) {
  ir::Sharding s;
  if (attrs.empty() || attrs[0] == 0) return s;
  s.kind = ir::Sharding::Kind::kTiled;
  const size_t rank = static_cast<size_t>(attrs[1]);
  s.tile_dims.assign(attrs.begin() + 2, attrs.begin() + 2 + static_cast<std::ptrdiff_t>(rank));
  s.last_tile_dim_replicate = attrs[2 + rank] != 0;
  s.devices.assign(attrs.begin() + 3 + static_cast<std::ptrdiff_t>(rank), attrs.end());
  return s;
}

NodePtr make_constant(const OpSite& site, ir::PrimitiveType type, double value) {
  return make_node(site, ir::Opcode::kConstant, type, Dims(), {}, {std::bit_cast<int64_t>(value)});
}

ir::Literal scalar_literal(ir::PrimitiveType type, const ScalarValue& value) {
  ir::Literal literal(ir::Shape::scalar(type));
  if (value.is_integral && !ir::is_float(type))
    literal.set_from_int64(0, value.i);
  else
    literal.set_from_double(0, value.is_integral ? static_cast<double>(value.i) : value.f);
  return literal;
}

Graph capture_graph(std::vector<NodePtr> roots) {
  static uint64_t epoch_counter = 0;
  const uint64_t epoch = ++epoch_counter;
  Graph graph;
  graph.roots = std::move(roots);
  // Events of the traversal that node hashes do not show: which leaves are the same
  // parameter (even words) and which nodes are shared (odd words: revisits). Two graphs with equal
  // root hashes and equal events compute the same function of their parameters.
  NodeHasher events;
  std::unordered_map<const void*, int64_t> data_parameters;
  struct Frame {
    Node* node;
    size_t next_operand;
  };
  std::vector<Frame> stack;

  auto finish = [&](Node* node) {
    node->index = static_cast<int64_t>(graph.post_order.size());
    graph.post_order.push_back(node);
    if (node->leaf == LeafKind::kNone) return;
    const void* identity = node->data->buffer ? static_cast<const void*>(node->data->buffer.get())
                                              : static_cast<const void*>(node->data->literal.get());
    if (node->leaf == LeafKind::kData) {
      auto [it, inserted] =
          data_parameters.try_emplace(identity, static_cast<int64_t>(graph.parameters.size()));
      if (inserted) graph.parameters.push_back(node);
      node->parameter = it->second;
    } else {
      node->parameter = static_cast<int64_t>(graph.parameters.size());
      graph.parameters.push_back(node);
    }
    events.add(static_cast<uint64_t>(node->parameter) << 1);
  };
  auto enter = [&](Node* node) {
    if (node->epoch == epoch) {
      events.add((static_cast<uint64_t>(node->index) << 1) | 1);
      return;
    }
    node->epoch = epoch;
    node->index = -1;
    stack.push_back({node, 0});
  };

  for (const NodePtr& root : graph.roots) {
    enter(root.get());
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_operand < top.node->operands.size()) {
        Node* operand = top.node->operands[top.next_operand++];
        enter(operand);  // may reallocate the stack: top is not used after this
      } else {
        Node* done = top.node;
        stack.pop_back();
        finish(done);
      }
    }
  }

  pjrt::Hasher h;
  h.add(graph.roots.size());
  for (const NodePtr& root : graph.roots) h.add(root->hash);
  h.add(events.finish());
  graph.hash = h.finish();
  return graph;
}

namespace {

// "add", "reduce[sum]", "constant(0.5)", "parameter" (leaves show their number as operand).
std::string node_label(const Node& node) {
  if (node.leaf != LeafKind::kNone) return "parameter";
  std::string out(ir::opcode_name(node.op));
  if (node.op == ir::Opcode::kConstant)
    return out + fmt::format("({})", std::bit_cast<double>(node.attrs[0]));
  if (node.op == ir::Opcode::kReduce) {
    static constexpr const char* kKinds[] = {"sum", "max", "min", "argmax", "argmin", "and", "or"};
    out += fmt::format("[{}]", kKinds[node.attrs[0]]);
  }
  return out;
}

std::string operands_text(const Node& node) {
  if (node.leaf != LeafKind::kNone)
    return fmt::format("({}), kind={}", node.parameter,
                       node.leaf == LeafKind::kData ? "data" : "scalar");
  if (node.op == ir::Opcode::kConstant) return "";
  std::string out;
  for (const Node* operand : node.operands)
    out += fmt::format("{}%{}", out.empty() ? "" : ", ", operand->index);
  return "(" + out + ")";
}

std::string attrs_text(const Node& node) {
  if (node.attrs.empty() || node.op == ir::Opcode::kConstant) return "";
  std::string out = ", attrs={";
  for (size_t i = 0; i < node.attrs.size(); ++i)
    out += fmt::format("{}{}", i ? "," : "", node.attrs[i]);
  return out + "}";
}

}  // namespace

std::string graph_text(const Graph& graph) {
  std::string out = fmt::format("graph {} {{\n", graph.hash.hex());
  for (const Node* node : graph.post_order)
    out += fmt::format("  %{} = {} {}{}{}, op={}, loc={}:{}\n", node->index,
                       shape_string(node->type, node->dims), node_label(*node),
                       operands_text(*node), attrs_text(*node), node->site.op,
                       node->site.loc.file_name(), node->site.loc.line());
  std::string roots;
  for (const NodePtr& root : graph.roots)
    roots += fmt::format("{}%{}", roots.empty() ? "" : ", ", root->index);
  return out + fmt::format("  ROOT ({})\n}}\n", roots);
}

std::string graph_dot(const Graph& graph) {
  std::string out = fmt::format("digraph G {{\n  label=\"graph {}\";\n", graph.hash.hex());
  for (const Node* node : graph.post_order) {
    out += fmt::format(
        "  n{} [label=\"%{}: {}{}\\n{}\\n{}\"{}];\n", node->index, node->index, node_label(*node),
        node->leaf != LeafKind::kNone ? fmt::format("({})", node->parameter) : std::string(),
        shape_string(node->type, node->dims), node->site.op,
        node->leaf != LeafKind::kNone ? ", shape=box" : "");
    for (size_t i = 0; i < node->operands.size(); ++i)
      out +=
          fmt::format("  n{} -> n{} [label=\"{}\"];\n", node->operands[i]->index, node->index, i);
  }
  for (size_t i = 0; i < graph.roots.size(); ++i)
    out += fmt::format("  root{} [label=\"ROOT {}\", shape=doublecircle];\n  n{} -> root{};\n", i,
                       i, graph.roots[i]->index, i);
  return out + "}\n";
}

}  // namespace podsim::lazy
