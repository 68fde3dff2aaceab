// Lowering of a captured lazy graph to an ir::Module (on a compile-cache miss, for the
// host evaluator, and for the hlo dump). Each node becomes one instruction, except
// where the IR needs more: reductions get their reducer computations and init
// constants, arg-reductions a variadic reduce over (value, iota), rng-bit-generator a
// tuple and its get-tuple-elements, rank-0 operands of elementwise nodes a broadcast.
#include <bit>
#include <cmath>
#include <limits>
#include <optional>

#include "compiler/ir/native_types.h"
#include "runtime/lazy/graph.h"

namespace podsim::lazy {
namespace {

ir::Shape node_shape(const Node& node) { return ir::Shape(node.type, node.dims.vec()); }

// The identity of a reduction.
ir::Literal reduce_init(ReduceKind kind, ir::PrimitiveType type) {
  ir::Literal init(ir::Shape::scalar(type));
  bool want_low = kind == ReduceKind::kMax;
  switch (kind) {
    case ReduceKind::kSum:
      break;
    case ReduceKind::kAnd:
      init.set_from_int64(0, 1);
      break;
    case ReduceKind::kOr:
      break;
    case ReduceKind::kMax:
    case ReduceKind::kMin:
      if (ir::is_float(type)) {
        init.set_from_double(0, want_low ? -std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::infinity());
      } else if (type == ir::PrimitiveType::kPred) {
        init.set_from_int64(0, want_low ? 0 : 1);
      } else {
        ir::visit_type(type, [&]<typename T>() {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            if constexpr (std::is_signed_v<T>)
              init.set_from_int64(
                  0, want_low ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
            else
              init.set_from_uint64(0, want_low ? 0 : std::numeric_limits<T>::max());
          }
        });
      }
      break;
  }
  return init;
}

class Lowering {
 public:
  Lowering(const Graph& graph, const std::string& name)
      : graph_(graph), module_(std::make_unique<ir::Module>(name)) {
    auto entry = std::make_unique<ir::Computation>("main");
    entry_ = module_->add_computation(std::move(entry));
    module_->set_entry(entry_);
  }

  std::unique_ptr<ir::Module> run() {
    values_.assign(graph_.post_order.size(), nullptr);
    tuples_.assign(graph_.post_order.size(), nullptr);
    parameters_.assign(graph_.parameters.size(), nullptr);
    for (size_t i = 0; i < graph_.parameters.size(); ++i) {
      const Node& leaf = *graph_.parameters[i];
      auto instruction = std::make_unique<ir::Instruction>(
          fmt::format("p{}", i), ir::Opcode::kParameter, node_shape(leaf));
      instruction->attrs().parameter_number = static_cast<int64_t>(i);
      if (leaf.data && leaf.data->buffer && leaf.data->buffer->sharding())
        set_sharding(*instruction, *leaf.data->buffer->sharding());
      set_metadata(*instruction, leaf);
      parameters_[i] = entry_->add(std::move(instruction));
    }
    for (Node* node : graph_.post_order) values_[static_cast<size_t>(node->index)] = lower(*node);
    std::vector<ir::Instruction*> outputs;
    std::vector<ir::Shape> shapes;
    for (const NodePtr& root : graph_.roots) {
      outputs.push_back(value(root.get()));
      shapes.push_back(outputs.back()->shape());
    }
    ir::Instruction* root =
        add(entry_, ir::Opcode::kTuple, ir::Shape::tuple(std::move(shapes)), std::move(outputs));
    entry_->set_root(root);
    return std::move(module_);
  }

 private:
  ir::Instruction* value(const Node* node) const {
    return values_[static_cast<size_t>(node->index)];
  }

  ir::Instruction* add(ir::Computation* computation, ir::Opcode op, ir::Shape shape,
                       std::vector<ir::Instruction*> operands) {
    auto instruction = std::make_unique<ir::Instruction>(
        fmt::format("{}.{}", ir::opcode_name(op), next_id_++), op, std::move(shape));
    instruction->set_operands(std::move(operands));
    return computation->add(std::move(instruction));
  }

  ir::Instruction* add_constant(ir::Computation* computation, ir::Literal literal) {
    ir::Instruction* c = add(computation, ir::Opcode::kConstant, literal.shape(), {});
    c->attrs().literal = std::move(literal);
    return c;
  }

  static void set_metadata(ir::Instruction& instruction, const Node& node) {
    instruction.metadata().op_type = node.site.op;
    instruction.metadata().source_file = node.site.loc.file_name();
    instruction.metadata().source_line = node.site.loc.line();
  }

  ir::Instruction* compare(ir::Computation* c, ir::Instruction* a, ir::Instruction* b,
                           ir::ComparisonDirection d) {
    std::vector<int64_t> dims = a->shape().dims();
    ir::Instruction* i =
        add(c, ir::Opcode::kCompare, ir::Shape(ir::PrimitiveType::kPred, dims), {a, b});
    i->attrs().direction = d;
    return i;
  }
  ir::Computation* scalar_reducer(ReduceKind kind, ir::PrimitiveType type) {
    auto key = std::make_pair(static_cast<int64_t>(kind), type);
    for (const auto& [k, computation] : reducers_)
      if (k == key) return computation;
    auto owned = std::make_unique<ir::Computation>(module_->unique_computation_name(
        fmt::format("reduce_{}_{}", static_cast<int>(kind), ir::type_name(type))));
    ir::Computation* c = module_->add_computation(std::move(owned));
    ir::Shape scalar = ir::Shape::scalar(type);
    ir::Instruction* a = parameter(c, 0, scalar);
    ir::Instruction* b = parameter(c, 1, scalar);
    ir::Opcode op = ir::Opcode::kAdd;
    if (kind == ReduceKind::kMax) op = ir::Opcode::kMaximum;
    if (kind == ReduceKind::kMin) op = ir::Opcode::kMinimum;
    if (kind == ReduceKind::kAnd) op = ir::Opcode::kAnd;
    if (kind == ReduceKind::kOr) op = ir::Opcode::kOr;
    c->set_root(add(c, op, scalar, {a, b}));
    reducers_.emplace_back(key, c);
    return c;
  }

  ir::Instruction* parameter(ir::Computation* c, int64_t number, ir::Shape shape) {
    auto instruction = std::make_unique<ir::Instruction>(fmt::format("x{}.{}", number, next_id_++),
                                                         ir::Opcode::kParameter, shape);
    instruction->attrs().parameter_number = number;
    return c->add(std::move(instruction));
  }

  // (value, index) pairs: the larger (smaller) value wins, NaN beats any number, and of
  // equal values the lower index wins; so the reduction finds the first extreme.
  ir::Instruction* lower_reduce(const Node& node, ir::Instruction* input) {
    auto kind = static_cast<ReduceKind>(node.attrs[0]);
    std::vector<int64_t> dims(node.attrs.begin() + 1, node.attrs.end());
    ir::PrimitiveType input_type = input->shape().type();
    ir::Instruction* init = add_constant(entry_, reduce_init(kind, input_type));
    ir::Instruction* r = add(entry_, ir::Opcode::kReduce, node_shape(node), {input, init});
    r->attrs().dimensions = dims;
    r->add_called(scalar_reducer(kind, input_type));
    return r;
  }

  ir::Instruction* lower(const Node& node) {
    if (node.op == ir::Opcode::kParameter) return parameters_[static_cast<size_t>(node.parameter)];
    std::vector<ir::Instruction*> operands;
    operands.reserve(node.operands.size());
    for (const Node* operand : node.operands) operands.push_back(value(operand));
    ir::Instruction* result = nullptr;
    switch (node.op) {
      case ir::Opcode::kConstant:
        result = add_constant(
            entry_, scalar_literal(node.type, {false, 0, std::bit_cast<double>(node.attrs[0])}));
        break;
      case ir::Opcode::kReduce:
        result = lower_reduce(node, operands.at(0));
        break;
      case ir::Opcode::kRngBitGenerator: {
        ir::Shape state = operands.at(0)->shape();
        ir::Instruction* rng = add(entry_, ir::Opcode::kRngBitGenerator,
                                   ir::Shape::tuple({state, node_shape(node)}), operands);
        rng->attrs().rng_algorithm = static_cast<ir::RngAlgorithm>(node.attrs[0]);
        set_metadata(*rng, node);
        tuples_[static_cast<size_t>(node.index)] = rng;
        result = add(entry_, ir::Opcode::kGetTupleElement, node_shape(node), {rng});
        result->attrs().tuple_index = 1;
        break;
      }
      case ir::Opcode::kConvolution:
      case ir::Opcode::kReduceWindow:
      case ir::Opcode::kSelectAndScatter:
        result = lower_windowed(node, std::move(operands));
        break;
      case ir::Opcode::kAllReduce:
      case ir::Opcode::kAllGather:
      case ir::Opcode::kReduceScatter:
      case ir::Opcode::kAllToAll:
      case ir::Opcode::kCollectivePermute:
        result = lower_collective(node, std::move(operands));
        break;
      case ir::Opcode::kCustomCall:  // mark_sharding
        result = add(entry_, ir::Opcode::kCustomCall, node_shape(node), std::move(operands));
        result->attrs().custom_call_target = "Sharding";
        set_sharding(*result, decode_sharding(node.attrs));
        break;
      case ir::Opcode::kGetTupleElement: {
        ir::Instruction* tuple = tuples_[static_cast<size_t>(node.operands[0]->index)];
        result = add(entry_, ir::Opcode::kGetTupleElement, node_shape(node), {tuple});
        result->attrs().tuple_index = node.attrs[0];
        break;
      }
      default:
        if (ir::is_elementwise(node.op)) broadcast_scalars(node, operands);
        result = add(entry_, node.op, node_shape(node), std::move(operands));
        set_attributes(node, *result);
        break;
    }
    set_metadata(*result, node);
    return result;
  }

  // SPMD data and annotations: the module spans the devices its shardings name.
  void set_sharding(ir::Instruction& instruction, ir::Sharding sharding) {
    module_->num_partitions = std::max<int64_t>(module_->num_partitions, static_cast<int64_t>(sharding.devices.size()));
    instruction.sharding() = std::move(sharding);
  }

  // The module's replica_count, from a collective; all must agree.
  void set_replicas(int64_t replicas) {
    if (replicas_ != 0 && replicas_ != replicas)
      fail("internal error: one lazy graph has collectives over {} and {} replicas", replicas_,
           replicas);
    replicas_ = replicas;
    module_->replica_count = replicas;
  }

  // Collective attributes (runtime/distributed/collectives.cc): all-reduce [ReduceKind, replicas,
  // group size, ids...], all-gather [dim, replicas, group size, ids...], reduce-scatter
  // [ReduceKind, dim, replicas, group size, ids...], all-to-all [dim, replicas, group
  // size, ids...], collective-permute [replicas, then
  // (source, target) pairs]. The module gets replica_count.
  // An all-reduce of several operands is one tuple all-reduce: the node is its first
  // result (get-tuple-element nodes take the others).
  ir::Instruction* lower_collective(const Node& node, std::vector<ir::Instruction*> inputs) {
    const std::vector<int64_t> a = node.attrs.vec();
    size_t at = 0;
    if (node.op == ir::Opcode::kCollectivePermute) {
      set_replicas(a.at(at++));
      ir::Instruction* c = add(entry_, node.op, node_shape(node), std::move(inputs));
      for (; at + 1 < a.size(); at += 2) c->attrs().source_target_pairs.emplace_back(a[at], a[at + 1]);
      return c;
    }
    std::optional<ReduceKind> kind;
    if (node.op == ir::Opcode::kAllReduce || node.op == ir::Opcode::kReduceScatter)
      kind = static_cast<ReduceKind>(a.at(at++));
    std::optional<int64_t> dim;
    if (node.op != ir::Opcode::kAllReduce) dim = a.at(at++);
    set_replicas(a.at(at++));
    const auto group_size = static_cast<size_t>(a.at(at++));
    ir::ReplicaGroups groups;
    for (; at < a.size(); at += group_size)
      groups.groups.emplace_back(a.begin() + static_cast<std::ptrdiff_t>(at),
                                 a.begin() + static_cast<std::ptrdiff_t>(at + group_size));
    std::vector<ir::Shape> shapes;
    for (const ir::Instruction* input : inputs) shapes.push_back(input->shape());
    const bool tuple = inputs.size() > 1;
    ir::Instruction* c =
        add(entry_, node.op, tuple ? ir::Shape::tuple(shapes) : node_shape(node), std::move(inputs));
    c->attrs().replica_groups = std::move(groups);
    if (dim) c->attrs().dimensions = {*dim};
    if (kind) c->add_called(scalar_reducer(*kind, node.type));
    if (!tuple) return c;
    set_metadata(*c, node);
    tuples_[static_cast<size_t>(node.index)] = c;
    ir::Instruction* first = add(entry_, ir::Opcode::kGetTupleElement, node_shape(node), {c});
    first->attrs().tuple_index = 0;
    return first;
  }

  // The nn ops' window attributes (runtime/nn/primitives.cc): convolution [#spatial, input,
  // kernel and output dim labels (batch/feature or in/out feature, then spatial), then
  // per spatial dim size stride pad_low pad_high lhs_dilation rhs_dilation];
  // reduce-window [ReduceKind, then those six per dim]; select-and-scatter [size stride
  // pad_low pad_high per dim], selecting the first maximum and adding (max-pool backward).
  ir::Instruction* lower_windowed(const Node& node, std::vector<ir::Instruction*> operands) {
    const std::vector<int64_t> a = node.attrs.vec();
    ir::Window window;
    auto read_window = [&](size_t at, size_t count, size_t fields) {
      for (size_t i = 0; i < count; ++i, at += fields) {
        ir::WindowDim w;
        w.size = a.at(at);
        w.stride = a.at(at + 1);
        w.pad_low = a.at(at + 2);
        w.pad_high = a.at(at + 3);
        if (fields == 6) {
          w.lhs_dilation = a.at(at + 4);
          w.rhs_dilation = a.at(at + 5);
        }
        window.dims.push_back(w);
      }
    };
    ir::PrimitiveType type = node.type;
    if (node.op == ir::Opcode::kConvolution) {
      auto spatial = static_cast<size_t>(a.at(0));
      size_t per = 2 + spatial;
      auto labels = [&](size_t which) {
        return std::vector<int64_t>(a.begin() + static_cast<std::ptrdiff_t>(1 + which * per),
                                    a.begin() + static_cast<std::ptrdiff_t>(1 + (which + 1) * per));
      };
      std::vector<int64_t> in = labels(0), kernel = labels(1), out = labels(2);
      read_window(1 + 3 * per, spatial, 6);
      ir::Instruction* conv = add(entry_, ir::Opcode::kConvolution, node_shape(node), operands);
      ir::ConvDimNumbers& cd = conv->attrs().conv_dims;
      cd.input_batch = in[0];
      cd.input_feature = in[1];
      cd.input_spatial.assign(in.begin() + 2, in.end());
      cd.kernel_input_feature = kernel[0];
      cd.kernel_output_feature = kernel[1];
      cd.kernel_spatial.assign(kernel.begin() + 2, kernel.end());
      cd.output_batch = out[0];
      cd.output_feature = out[1];
      cd.output_spatial.assign(out.begin() + 2, out.end());
      conv->attrs().window = std::move(window);
      return conv;
    }
    if (node.op == ir::Opcode::kReduceWindow) {
      auto kind = static_cast<ReduceKind>(a.at(0));
      read_window(1, operands.at(0)->shape().rank(), 6);
      ir::Instruction* init = add_constant(entry_, reduce_init(kind, type));
      ir::Instruction* r =
          add(entry_, ir::Opcode::kReduceWindow, node_shape(node), {operands.at(0), init});
      r->attrs().window = std::move(window);
      r->add_called(scalar_reducer(kind, type));
      return r;
    }
    read_window(0, operands.at(0)->shape().rank(), 4);
    auto select = std::make_unique<ir::Computation>(
        module_->unique_computation_name(fmt::format("select_ge_{}", ir::type_name(type))));
    ir::Computation* c = module_->add_computation(std::move(select));
    ir::Shape scalar = ir::Shape::scalar(type);
    c->set_root(
        compare(c, parameter(c, 0, scalar), parameter(c, 1, scalar), ir::ComparisonDirection::kGe));
    ir::Instruction* zero = add_constant(entry_, ir::Literal(scalar));
    ir::Instruction* r = add(entry_, ir::Opcode::kSelectAndScatter, node_shape(node),
                             {operands.at(0), operands.at(1), zero});
    r->attrs().window = std::move(window);
    r->add_called(c);
    r->add_called(scalar_reducer(ReduceKind::kSum, type));
    return r;
  }

  // Rank-0 operands of an elementwise node are broadcast to its dims.
  void broadcast_scalars(const Node& node, std::vector<ir::Instruction*>& operands) {
    if (node.dims.empty()) return;
    for (ir::Instruction*& operand : operands) {
      if (operand->shape().rank() != 0) continue;
      ir::Instruction* b = add(entry_, ir::Opcode::kBroadcast,
                               ir::Shape(operand->shape().type(), node.dims.vec()), {operand});
      set_metadata(*b, node);
      operand = b;
    }
  }

  static void set_attributes(const Node& node, ir::Instruction& instruction) {
    ir::Attributes& attrs = instruction.attrs();
    std::vector<int64_t> a = node.attrs.vec();
    switch (node.op) {
      case ir::Opcode::kBroadcast:
      case ir::Opcode::kTranspose:
      case ir::Opcode::kReverse:
        attrs.dimensions = a;
        break;
      case ir::Opcode::kPad:  // [low high interior] per dim
        for (size_t i = 0; i + 2 < a.size(); i += 3)
          attrs.padding.push_back({a[i], a[i + 1], a[i + 2]});
        break;
      case ir::Opcode::kConcatenate:
        attrs.dimensions = {a.at(0)};
        break;
      case ir::Opcode::kIota:
        attrs.iota_dimension = a.at(0);
        break;
      case ir::Opcode::kCompare:
        attrs.direction = static_cast<ir::ComparisonDirection>(a.at(0));
        break;
      case ir::Opcode::kSlice:
        for (size_t i = 0; i + 2 < a.size(); i += 3)
          attrs.slice.push_back({a[i], a[i + 1], a[i + 2]});
        break;
      case ir::Opcode::kDot: {
        // [#lhs_batch, #lhs_contracting, #rhs_batch, #rhs_contracting, lists...]
        size_t at = 4;
        auto take = [&](int64_t n) {
          std::vector<int64_t> out(
              a.begin() + static_cast<std::ptrdiff_t>(at),
              a.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(n)));
          at += static_cast<size_t>(n);
          return out;
        };
        attrs.dot_dims.lhs_batch = take(a[0]);
        attrs.dot_dims.lhs_contracting = take(a[1]);
        attrs.dot_dims.rhs_batch = take(a[2]);
        attrs.dot_dims.rhs_contracting = take(a[3]);
        break;
      }
      case ir::Opcode::kGather: {
        // [#offset_dims, offset_dims..., #collapsed, collapsed..., #start_index_map,
        //  start_index_map..., index_vector_dim, slice_sizes...]
        size_t at = 0;
        auto take_list = [&]() {
          auto n = static_cast<size_t>(a.at(at++));
          std::vector<int64_t> out(a.begin() + static_cast<std::ptrdiff_t>(at),
                                   a.begin() + static_cast<std::ptrdiff_t>(at + n));
          at += n;
          return out;
        };
        attrs.gather_dims.offset_dims = take_list();
        attrs.gather_dims.collapsed_slice_dims = take_list();
        attrs.gather_dims.start_index_map = take_list();
        attrs.gather_dims.index_vector_dim = a.at(at++);
        attrs.gather_slice_sizes.assign(a.begin() + static_cast<std::ptrdiff_t>(at), a.end());
        break;
      }
      default:
        break;
    }
  }

  const Graph& graph_;
  std::unique_ptr<ir::Module> module_;
  ir::Computation* entry_ = nullptr;
  std::vector<ir::Instruction*> values_;
  std::vector<ir::Instruction*> tuples_;  // rng-bit-generator nodes: their (state, bits)
  std::vector<ir::Instruction*> parameters_;
  int64_t replicas_ = 0;  // of the collectives lowered so far
  std::vector<std::pair<std::pair<int64_t, ir::PrimitiveType>, ir::Computation*>> reducers_;
  int64_t next_id_ = 0;
};

}  // namespace

std::unique_ptr<ir::Module> lower_graph(const Graph& graph, const std::string& name) {
  return Lowering(graph, name).run();
}

}  // namespace podsim::lazy
