#include "compiler/ir/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

#include "compiler/ir/lexer.h"

namespace podsim::ir {
namespace {

using O = Opcode;

std::string int_list(const std::vector<int64_t>& v) {
  return fmt::format("{{{}}}", fmt::join(v, ","));
}

std::string name_ref(const std::string& name) { return "%" + name; }

std::string computation_ref(const Computation* c) { return c ? name_ref(c->name()) : "%<null>"; }

bool one_of(Opcode op, std::initializer_list<Opcode> ops) {
  for (Opcode o : ops)
    if (o == op) return true;
  return false;
}

std::string window_text(const Window& w) {
  if (w.dims.empty()) return "{}";
  auto field = [&](auto get) {
    std::vector<std::string> parts;
    for (const WindowDim& d : w.dims) parts.push_back(get(d));
    return fmt::format("{}", fmt::join(parts, "x"));
  };
  auto any = [&](auto pred) {
    for (const WindowDim& d : w.dims)
      if (pred(d)) return true;
    return false;
  };
  std::string out = "{size=" + field([](const WindowDim& d) { return std::to_string(d.size); });
  if (any([](const WindowDim& d) { return d.stride != 1; }))
    out += " stride=" + field([](const WindowDim& d) { return std::to_string(d.stride); });
  if (any([](const WindowDim& d) { return d.pad_low != 0 || d.pad_high != 0; }))
    out += " pad=" +
           field([](const WindowDim& d) { return fmt::format("{}_{}", d.pad_low, d.pad_high); });
  if (any([](const WindowDim& d) { return d.lhs_dilation != 1; }))
    out +=
        " lhs_dilate=" + field([](const WindowDim& d) { return std::to_string(d.lhs_dilation); });
  if (any([](const WindowDim& d) { return d.rhs_dilation != 1; }))
    out +=
        " rhs_dilate=" + field([](const WindowDim& d) { return std::to_string(d.rhs_dilation); });
  if (any([](const WindowDim& d) { return d.reversal; }))
    out += " rhs_reversal=" +
           field([](const WindowDim& d) { return std::string(d.reversal ? "1" : "0"); });
  return out + "}";
}

std::string padding_text(const std::vector<PadDim>& dims) {
  bool interior = false;
  for (const PadDim& d : dims) interior |= d.interior != 0;
  std::vector<std::string> parts;
  for (const PadDim& d : dims)
    parts.push_back(interior ? fmt::format("{}_{}_{}", d.low, d.high, d.interior)
                             : fmt::format("{}_{}", d.low, d.high));
  return fmt::format("{}", fmt::join(parts, "x"));
}

// One dim_labels part: letters at their positions, spatial digits at theirs.
std::string labels(int64_t first_pos, char first, int64_t second_pos, char second,
                   const std::vector<int64_t>& spatial) {
  std::string s(spatial.size() + 2, '?');
  auto put = [&](int64_t pos, char c) {
    if (pos >= 0 && pos < static_cast<int64_t>(s.size())) s[static_cast<size_t>(pos)] = c;
  };
  put(first_pos, first);
  put(second_pos, second);
  for (size_t i = 0; i < spatial.size(); ++i) put(spatial[i], static_cast<char>('0' + i % 10));
  return s;
}

std::string dim_labels_text(const ConvDimNumbers& d) {
  return labels(d.input_batch, 'b', d.input_feature, 'f', d.input_spatial) + "_" +
         labels(d.kernel_input_feature, 'i', d.kernel_output_feature, 'o', d.kernel_spatial) +
         "->" + labels(d.output_batch, 'b', d.output_feature, 'f', d.output_spatial);
}

std::string replica_groups_text(const ReplicaGroups& g) {
  if (g.iota) return g.iota->to_string();
  std::vector<std::string> groups;
  for (const auto& group : g.groups) groups.push_back(int_list(group));
  return fmt::format("{{{}}}", fmt::join(groups, ","));
}

std::string metadata_text(const Metadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type.empty()) parts.push_back("op_type=" + quote_string(m.op_type));
  if (!m.op_name.empty()) parts.push_back("op_name=" + quote_string(m.op_name));
  if (!m.source_file.empty()) parts.push_back("source_file=" + quote_string(m.source_file));
  if (m.source_line != 0) parts.push_back(fmt::format("source_line={}", m.source_line));
  return fmt::format("{{{}}}", fmt::join(parts, " "));
}

std::string frontend_attributes_text(const std::map<std::string, std::string>& attrs) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : attrs)
    parts.push_back((is_plain_name(key) ? key : quote_string(key)) + "=" + quote_string(value));
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

void append_called(const Instruction& in, std::string& out) {
  const auto& called = in.called();
  auto at = [&](size_t i) { return i < called.size() ? computation_ref(called[i]) : "%<missing>"; };
  auto list = [&] {
    std::vector<std::string> names;
    for (const Computation* c : called) names.push_back(computation_ref(c));
    return fmt::format("{{{}}}", fmt::join(names, ", "));
  };
  switch (collective_kind(in.opcode())) {
    case O::kReduce:
    case O::kReduceWindow:
    case O::kScatter:
    case O::kSort:
    case O::kMap:
    case O::kAllReduce:
    case O::kReduceScatter:
    case O::kCall:
      out += ", to_apply=" + at(0);
      break;
    case O::kSelectAndScatter:
      out += ", select=" + at(0) + ", scatter=" + at(1);
      break;
    case O::kWhile:
      out += ", condition=" + at(0) + ", body=" + at(1);
      break;
    case O::kFusion:
    case O::kAsyncStart:
    case O::kAsyncUpdate:
    case O::kAsyncDone:
      out += ", calls=" + at(0);
      break;
    case O::kCustomCall:
      if (!called.empty()) out += ", called_computations=" + list();
      break;
    case O::kConditional:
      if (in.pred_conditional_syntax && called.size() == 2)
        out += ", true_computation=" + at(0) + ", false_computation=" + at(1);
      else
        out += ", branch_computations=" + list();
      break;
    default:
      break;
  }
}

void append_attributes(const Instruction& in, std::string& out) {
  const Attributes& a = in.attrs();
  const Opcode op = collective_kind(in.opcode());
  auto add = [&](std::string_view key, const std::string& value) {
    out += ", ";
    out += key;
    out += '=';
    out += value;
  };

  if (one_of(op, {O::kBroadcast, O::kTranspose, O::kReduce, O::kReverse, O::kConcatenate, O::kSort,
                  O::kMap, O::kAllGather, O::kReduceScatter}) ||
      (op == O::kAllToAll && !a.dimensions.empty()))
    add("dimensions", int_list(a.dimensions));
  if (op == O::kIota) add("iota_dimension", std::to_string(a.iota_dimension));
  if (op == O::kGetTupleElement) add("index", std::to_string(a.tuple_index));
  if (op == O::kSlice) {
    std::vector<std::string> dims;
    for (const SliceDim& d : a.slice)
      dims.push_back(d.stride == 1 ? fmt::format("[{}:{}]", d.start, d.limit)
                                   : fmt::format("[{}:{}:{}]", d.start, d.limit, d.stride));
    add("slice", fmt::format("{{{}}}", fmt::join(dims, ", ")));
  }
  if (op == O::kDynamicSlice) add("dynamic_slice_sizes", int_list(a.dynamic_slice_sizes));
  if (op == O::kPad) add("padding", padding_text(a.padding));
  if (one_of(op, {O::kReduceWindow, O::kSelectAndScatter, O::kConvolution}) && a.window)
    add("window", window_text(*a.window));
  if (op == O::kConvolution) {
    add("dim_labels", dim_labels_text(a.conv_dims));
    if (a.feature_group_count != 1)
      add("feature_group_count", std::to_string(a.feature_group_count));
    if (a.batch_group_count != 1) add("batch_group_count", std::to_string(a.batch_group_count));
  }
  if (op == O::kDot) {
    const DotDimNumbers& d = a.dot_dims;
    if (!d.lhs_batch.empty()) add("lhs_batch_dims", int_list(d.lhs_batch));
    if (!d.lhs_contracting.empty()) add("lhs_contracting_dims", int_list(d.lhs_contracting));
    if (!d.rhs_batch.empty()) add("rhs_batch_dims", int_list(d.rhs_batch));
    if (!d.rhs_contracting.empty()) add("rhs_contracting_dims", int_list(d.rhs_contracting));
  }
  if ((op == O::kDot || op == O::kConvolution) && !a.operand_precision.empty()) {
    std::vector<std::string_view> names;
    for (Precision p : a.operand_precision) names.push_back(precision_name(p));
    add("operand_precision", fmt::format("{{{}}}", fmt::join(names, ",")));
  }
  if (op == O::kGather) {
    const GatherDimNumbers& g = a.gather_dims;
    add("offset_dims", int_list(g.offset_dims));
    add("collapsed_slice_dims", int_list(g.collapsed_slice_dims));
    add("start_index_map", int_list(g.start_index_map));
    if (!g.operand_batching_dims.empty())
      add("operand_batching_dims", int_list(g.operand_batching_dims));
    if (!g.start_indices_batching_dims.empty())
      add("start_indices_batching_dims", int_list(g.start_indices_batching_dims));
    add("index_vector_dim", std::to_string(g.index_vector_dim));
    add("slice_sizes", int_list(a.gather_slice_sizes));
  }
  if (op == O::kScatter) {
    const ScatterDimNumbers& s = a.scatter_dims;
    add("update_window_dims", int_list(s.update_window_dims));
    add("inserted_window_dims", int_list(s.inserted_window_dims));
    add("scatter_dims_to_operand_dims", int_list(s.scatter_dims_to_operand_dims));
    if (!s.input_batching_dims.empty()) add("input_batching_dims", int_list(s.input_batching_dims));
    if (!s.scatter_indices_batching_dims.empty())
      add("scatter_indices_batching_dims", int_list(s.scatter_indices_batching_dims));
    add("index_vector_dim", std::to_string(s.index_vector_dim));
    if (a.unique_indices) add("unique_indices", "true");
  }
  if ((op == O::kGather || op == O::kScatter) && a.indices_are_sorted)
    add("indices_are_sorted", "true");
  if (op == O::kCompare) {
    add("direction", std::string(direction_name(a.direction)));
    if (a.comparison_type != ComparisonType::kDefault)
      add("type", std::string(comparison_type_name(a.comparison_type)));
  }
  if (op == O::kSort && a.is_stable) add("is_stable", "true");
  if (op == O::kReducePrecision) {
    add("exponent_bits", std::to_string(a.exponent_bits));
    add("mantissa_bits", std::to_string(a.mantissa_bits));
  }
  if (op == O::kDomain && a.domain) add("domain", *a.domain);
  if (op == O::kTopK) {
    add("k", std::to_string(a.k));
    add("largest", a.largest ? "true" : "false");
  }
  if (op == O::kCopyStart && a.cross_program_prefetch_index)
    add("cross_program_prefetch_index", std::to_string(*a.cross_program_prefetch_index));
  if (op == O::kBatchNormTraining || op == O::kBatchNormInference || op == O::kBatchNormGrad) {
    add("epsilon", fmt::format("{}", a.epsilon));
    add("feature_index", std::to_string(a.feature_index));
  }
  if (op == O::kRngBitGenerator) add("algorithm", std::string(rng_algorithm_name(a.rng_algorithm)));
  if (op == O::kFusion) add("kind", std::string(fusion_kind_name(a.fusion_kind)));
  if ((op == O::kAsyncStart || op == O::kAsyncUpdate || op == O::kAsyncDone) && !a.async_execution_thread.empty())
    add("async_execution_thread", quote_string(a.async_execution_thread));
  if (op == O::kCustomCall) {
    add("custom_call_target", quote_string(a.custom_call_target));
    if (!a.api_version_text.empty())
      add("api_version", a.api_version_text);
    else if (a.api_version && !custom_call_api_version_name(*a.api_version).empty())
      add("api_version", std::string(custom_call_api_version_name(*a.api_version)));
    if (a.custom_call_has_side_effect) add("custom_call_has_side_effect", "true");
  }
  if (is_collective(op)) {
    if (a.channel_id) add("channel_id", std::to_string(*a.channel_id));
    if (op != O::kCollectivePermute) {
      if (a.replica_groups) add("replica_groups", replica_groups_text(*a.replica_groups));
      if (a.use_global_device_ids) add("use_global_device_ids", "true");
      if (a.constrain_layout) add("constrain_layout", "true");
    } else {
      std::vector<std::string> pairs;
      for (const auto& [s, t] : a.source_target_pairs)
        pairs.push_back(fmt::format("{{{},{}}}", s, t));
      add("source_target_pairs", fmt::format("{{{}}}", fmt::join(pairs, ",")));
    }
  }
  append_called(in, out);

  if (in.sharding()) add("sharding", in.sharding()->to_string());
  if (!in.control_predecessors().empty()) {
    std::vector<std::string> names;
    for (const Instruction* p : in.control_predecessors())
      names.push_back(p ? name_ref(p->name()) : "%<null>");
    add("control-predecessors", fmt::format("{{{}}}", fmt::join(names, ", ")));
  }
  if (!in.metadata().empty()) add("metadata", metadata_text(in.metadata()));
  if (!a.frontend_attributes.empty())
    add("frontend_attributes", frontend_attributes_text(a.frontend_attributes));
  if (a.backend_config) add("backend_config", *a.backend_config);
}

// Computations with every callee before its callers: repeatedly the first computation
// in module order whose callees are all printed, or, when a call cycle (which the
// verifier rejects) leaves none, the first one not yet printed. Choosing by module order
// makes the order a fixed point: printing a re-parsed module keeps it.
std::vector<const Computation*> callees_first(const Module& module) {
  const auto& comps = module.computations();
  const size_t n = comps.size();
  std::unordered_map<const Computation*, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(comps[i].get(), i);
  std::vector<std::vector<size_t>> callers(n);
  std::vector<size_t> pending(n, 0);  // callees not yet printed
  for (size_t i = 0; i < n; ++i) {
    std::vector<size_t> callees;
    for (const auto& in : comps[i]->instructions())
      for (const Computation* c : in->called())
        if (auto it = index.find(c); it != index.end() && it->second != i)
          callees.push_back(it->second);
    std::sort(callees.begin(), callees.end());
    callees.erase(std::unique(callees.begin(), callees.end()), callees.end());
    pending[i] = callees.size();
    for (size_t callee : callees) callers[callee].push_back(i);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<bool> printed(n, false);
  std::vector<const Computation*> order;
  size_t first_unprinted = 0;
  while (order.size() < n) {
    size_t i;
    if (!ready.empty()) {
      i = ready.top();
      ready.pop();
      if (printed[i]) continue;
    } else {
      while (printed[first_unprinted]) ++first_unprinted;
      i = first_unprinted;
    }
    printed[i] = true;
    order.push_back(comps[i].get());
    for (size_t caller : callers[i])
      if (--pending[caller] == 0 && !printed[caller]) ready.push(caller);
  }
  return order;
}

}  // namespace

std::string print_instruction(const Instruction& in) {
  std::string out =
      fmt::format("%{} = {} {}(", in.name(), in.shape().to_string(), opcode_name(in.opcode()));
  if (in.opcode() == O::kParameter) {
    out += std::to_string(in.attrs().parameter_number);
  } else if (in.opcode() == O::kConstant) {
    if (in.attrs().literal) out += in.attrs().literal->to_string();
  } else {
    for (int64_t i = 0; i < in.operand_count(); ++i) {
      if (i) out += ", ";
      const Instruction* operand = in.operand(i);
      out += operand ? name_ref(operand->name()) : "%<null>";
    }
  }
  out += ')';
  append_attributes(in, out);
  return out;
}

std::string print_computation(const Computation& computation) {
  std::string out = computation.is_entry() ? "ENTRY " : "";
  out += name_ref(computation.name()) + " {\n";
  for (const auto& in : computation.instructions()) {
    out += in.get() == computation.root() ? "  ROOT " : "  ";
    out += print_instruction(*in);
    out += '\n';
  }
  return out + "}\n";
}

std::string print_module(const Module& module) {
  std::string out = "HloModule ";
  out += is_plain_name(module.name()) ? module.name() : name_ref(module.name());
  if (module.entry_parameter_layouts) {
    std::vector<std::string> params;
    for (const Shape& s : *module.entry_parameter_layouts) params.push_back(s.to_string());
    out += fmt::format(", entry_computation_layout={{({})->{}}}", fmt::join(params, ", "),
                       module.entry_result_layout ? module.entry_result_layout->to_string() : "()");
  }
  if (!module.input_output_alias.empty()) {
    std::vector<std::string> aliases;
    for (const IoAlias& a : module.input_output_alias)
      aliases.push_back(fmt::format("{}: ({}, {}, {})", int_list(a.output_index),
                                    a.parameter_number, int_list(a.parameter_index),
                                    a.must_alias ? "must-alias" : "may-alias"));
    out += fmt::format(", input_output_alias={{ {} }}", fmt::join(aliases, ", "));
  }
  for (const auto& [key, value] : module.other_header_attributes) out += ", " + key + "=" + value;
  if (module.replica_count != 1) out += fmt::format(", replica_count={}", module.replica_count);
  if (module.num_partitions != 1) out += fmt::format(", num_partitions={}", module.num_partitions);
  out += "\n";
  for (const Computation* c : callees_first(module)) out += "\n" + print_computation(*c);
  return out;
}

}  // namespace podsim::ir
