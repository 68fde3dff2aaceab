// Instruction attributes of the HLO text parser: which attribute names exist, which
// opcodes take them, which are required, and reading each into Attributes.
#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "compiler/ir/parser/internal.h"

namespace podsim::ir::parser {
namespace {

const std::unordered_map<std::string_view, Attr>& attribute_table() {
  static const std::unordered_map<std::string_view, Attr> table = {
      {"dimensions", Attr::kDimensions},
      {"iota_dimension", Attr::kIotaDimension},
      {"index", Attr::kIndex},
      {"slice", Attr::kSlice},
      {"dynamic_slice_sizes", Attr::kDynamicSliceSizes},
      {"padding", Attr::kPadding},
      {"window", Attr::kWindow},
      {"dim_labels", Attr::kDimLabels},
      {"feature_group_count", Attr::kFeatureGroupCount},
      {"batch_group_count", Attr::kBatchGroupCount},
      {"lhs_batch_dims", Attr::kLhsBatchDims},
      {"lhs_contracting_dims", Attr::kLhsContractingDims},
      {"rhs_batch_dims", Attr::kRhsBatchDims},
      {"rhs_contracting_dims", Attr::kRhsContractingDims},
      {"operand_precision", Attr::kOperandPrecision},
      {"precision_config", Attr::kOperandPrecision},
      {"offset_dims", Attr::kOffsetDims},
      {"collapsed_slice_dims", Attr::kCollapsedSliceDims},
      {"start_index_map", Attr::kStartIndexMap},
      {"operand_batching_dims", Attr::kOperandBatchingDims},
      {"start_indices_batching_dims", Attr::kStartIndicesBatchingDims},
      {"index_vector_dim", Attr::kIndexVectorDim},
      {"slice_sizes", Attr::kSliceSizes},
      {"indices_are_sorted", Attr::kIndicesAreSorted},
      {"update_window_dims", Attr::kUpdateWindowDims},
      {"inserted_window_dims", Attr::kInsertedWindowDims},
      {"scatter_dims_to_operand_dims", Attr::kScatterDimsToOperandDims},
      {"input_batching_dims", Attr::kInputBatchingDims},
      {"scatter_indices_batching_dims", Attr::kScatterIndicesBatchingDims},
      {"unique_indices", Attr::kUniqueIndices},
      {"to_apply", Attr::kToApply},
      {"direction", Attr::kDirection},
      {"type", Attr::kType},
      {"is_stable", Attr::kIsStable},
      {"epsilon", Attr::kEpsilon},
      {"feature_index", Attr::kFeatureIndex},
      {"k", Attr::kK},
      {"largest", Attr::kLargest},
      {"cross_program_prefetch_index", Attr::kCrossProgramPrefetchIndex},
      {"exponent_bits", Attr::kExponentBits},
      {"mantissa_bits", Attr::kMantissaBits},
      {"domain", Attr::kDomain},
      {"select", Attr::kSelect},
      {"scatter", Attr::kScatter},
      {"condition", Attr::kCondition},
      {"body", Attr::kBody},
      {"true_computation", Attr::kTrueComputation},
      {"false_computation", Attr::kFalseComputation},
      {"branch_computations", Attr::kBranchComputations},
      {"kind", Attr::kKind},
      {"calls", Attr::kCalls},
      {"custom_call_target", Attr::kCustomCallTarget},
      {"api_version", Attr::kApiVersion},
      {"custom_call_has_side_effect", Attr::kCustomCallHasSideEffect},
      {"called_computations", Attr::kCalledComputations},
      {"algorithm", Attr::kAlgorithm},
      {"replica_groups", Attr::kReplicaGroups},
      {"channel_id", Attr::kChannelId},
      {"use_global_device_ids", Attr::kUseGlobalDeviceIds},
      {"constrain_layout", Attr::kConstrainLayout},
      {"source_target_pairs", Attr::kSourceTargetPairs},
      {"sharding", Attr::kSharding},
      {"metadata", Attr::kMetadata},
      {"frontend_attributes", Attr::kFrontendAttributes},
      {"backend_config", Attr::kBackendConfig},
      {"control-predecessors", Attr::kControlPredecessors},
      {"async_execution_thread", Attr::kAsyncExecutionThread},
  };
  return table;
}

bool one_of(Opcode op, std::initializer_list<Opcode> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

bool applies(Attr a, Opcode op) {
  using O = Opcode;
  switch (a) {
    case Attr::kDimensions:
      return one_of(op, {O::kBroadcast, O::kTranspose, O::kReduce, O::kReverse, O::kConcatenate,
                         O::kSort, O::kMap, O::kAllGather, O::kReduceScatter, O::kAllToAll});
    case Attr::kIotaDimension:
      return op == O::kIota;
    case Attr::kIndex:
      return op == O::kGetTupleElement;
    case Attr::kSlice:
      return op == O::kSlice;
    case Attr::kDynamicSliceSizes:
      return op == O::kDynamicSlice;
    case Attr::kPadding:
      return op == O::kPad;
    case Attr::kWindow:
      return one_of(op, {O::kReduceWindow, O::kSelectAndScatter, O::kConvolution});
    case Attr::kDimLabels:
    case Attr::kFeatureGroupCount:
    case Attr::kBatchGroupCount:
      return op == O::kConvolution;
    case Attr::kLhsBatchDims:
    case Attr::kLhsContractingDims:
    case Attr::kRhsBatchDims:
    case Attr::kRhsContractingDims:
      return op == O::kDot;
    case Attr::kOperandPrecision:
      return op == O::kDot || op == O::kConvolution;
    case Attr::kOffsetDims:
    case Attr::kCollapsedSliceDims:
    case Attr::kStartIndexMap:
    case Attr::kOperandBatchingDims:
    case Attr::kStartIndicesBatchingDims:
    case Attr::kSliceSizes:
      return op == O::kGather;
    case Attr::kIndexVectorDim:
    case Attr::kIndicesAreSorted:
      return op == O::kGather || op == O::kScatter;
    case Attr::kUpdateWindowDims:
    case Attr::kInsertedWindowDims:
    case Attr::kScatterDimsToOperandDims:
    case Attr::kInputBatchingDims:
    case Attr::kScatterIndicesBatchingDims:
    case Attr::kUniqueIndices:
      return op == O::kScatter;
    case Attr::kToApply:
      return one_of(op, {O::kReduce, O::kReduceWindow, O::kScatter, O::kSort, O::kMap,
                         O::kAllReduce, O::kReduceScatter, O::kCall, O::kCustomCall});
    case Attr::kDirection:
    case Attr::kType:
      return op == O::kCompare;
    case Attr::kIsStable:
      return op == O::kSort;
    case Attr::kEpsilon:
    case Attr::kFeatureIndex:
      return one_of(op, {O::kBatchNormTraining, O::kBatchNormInference, O::kBatchNormGrad});
    case Attr::kK:
    case Attr::kLargest:
      return op == O::kTopK;
    case Attr::kCrossProgramPrefetchIndex:
      return op == O::kCopyStart;
    case Attr::kExponentBits:
    case Attr::kMantissaBits:
      return op == O::kReducePrecision;
    case Attr::kDomain:
      return op == O::kDomain;
    case Attr::kSelect:
    case Attr::kScatter:
      return op == O::kSelectAndScatter;
    case Attr::kCondition:
    case Attr::kBody:
      return op == O::kWhile;
    case Attr::kTrueComputation:
    case Attr::kFalseComputation:
    case Attr::kBranchComputations:
      return op == O::kConditional;
    case Attr::kKind:
      return op == O::kFusion;
    case Attr::kCalls:
      return one_of(op, {O::kFusion, O::kAsyncStart, O::kAsyncUpdate, O::kAsyncDone});
    case Attr::kAsyncExecutionThread:
      return one_of(op, {O::kAsyncStart, O::kAsyncUpdate, O::kAsyncDone});
    case Attr::kCustomCallTarget:
    case Attr::kApiVersion:
    case Attr::kCustomCallHasSideEffect:
    case Attr::kCalledComputations:
      return op == O::kCustomCall;
    case Attr::kAlgorithm:
      return op == O::kRngBitGenerator;
    case Attr::kReplicaGroups:
      return one_of(op, {O::kAllReduce, O::kAllGather, O::kReduceScatter, O::kAllToAll,
                         O::kCollectiveBroadcast});
    case Attr::kUseGlobalDeviceIds:
    case Attr::kConstrainLayout:
      return one_of(op, {O::kAllReduce, O::kAllGather, O::kReduceScatter, O::kAllToAll});
    case Attr::kChannelId:
      return is_collective(op);
    case Attr::kSourceTargetPairs:
      return op == O::kCollectivePermute;
    case Attr::kSharding:
    case Attr::kMetadata:
    case Attr::kFrontendAttributes:
    case Attr::kBackendConfig:
    case Attr::kControlPredecessors:
      return true;
    case Attr::kCount:
      break;
  }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

void Parser::parse_attribute(InstrState& st) {
  Instruction& in = *st.instr;
  Attributes& a = in.attrs();
  const Opcode op = in.opcode();
  Token key = expect_name("an attribute name");
  auto it = attribute_table().find(key.text);
  if (it == attribute_table().end() || key.percent) {
    if (key.text == "statistics") failf(key.offset, "attribute 'statistics' is not supported");
    failf(key.offset, "unknown attribute '{}' for {}", key.text, opcode_name(op));
  }
  const Attr attr = it->second;
  if (!applies(attr, collective_kind(op)))
    failf(key.offset, "attribute '{}' does not apply to {}", key.text, opcode_name(op));
  if (st.has(attr)) failf(key.offset, "duplicate attribute '{}'", key.text);
  st.seen.set(static_cast<size_t>(attr));
  expect(TokenKind::kEqual, "'=' after attribute '", key.text, "'");
  const std::string_view what = key.text;

  auto comp_ref = [&] {
    Token t = expect_name("a computation name for '", what, "'");
    return CompRef{t.text, t.offset};
  };
  auto enum_value = [&](auto from_name, std::string_view choices) {
    Token t = expect_name(what);
    auto v = from_name(t.text);
    if (!v) failf(t.offset, "unknown {} '{}' (expected {})", what, t.text, choices);
    return *v;
  };

  switch (attr) {
    case Attr::kDimensions:
      a.dimensions = parse_int_list(what);
      break;
    case Attr::kIotaDimension:
      a.iota_dimension = expect_int(what);
      break;
    case Attr::kIndex:
      a.tuple_index = expect_int(what);
      break;
    case Attr::kSlice:
      a.slice = parse_slice();
      break;
    case Attr::kDynamicSliceSizes:
      a.dynamic_slice_sizes = parse_int_list(what);
      break;
    case Attr::kPadding:
      a.padding = parse_padding();
      break;
    case Attr::kWindow:
      a.window = parse_window();
      break;
    case Attr::kDimLabels:
      a.conv_dims = parse_dim_labels();
      break;
    case Attr::kFeatureGroupCount:
      a.feature_group_count = expect_int(what);
      break;
    case Attr::kBatchGroupCount:
      a.batch_group_count = expect_int(what);
      break;
    case Attr::kLhsBatchDims:
      a.dot_dims.lhs_batch = parse_int_list(what);
      break;
    case Attr::kLhsContractingDims:
      a.dot_dims.lhs_contracting = parse_int_list(what);
      break;
    case Attr::kRhsBatchDims:
      a.dot_dims.rhs_batch = parse_int_list(what);
      break;
    case Attr::kRhsContractingDims:
      a.dot_dims.rhs_contracting = parse_int_list(what);
      break;
    case Attr::kOperandPrecision: {
      expect(TokenKind::kLBrace, "'{' to start ", what);
      if (accept(TokenKind::kRBrace)) break;
      do {
        Token t = expect_name("a precision (default, high or highest)");
        auto p = precision_from_name(t.text);
        if (!p) p = precision_from_name(lower(t.text));
        if (!p)
          failf(t.offset, "unknown precision '{}' (expected default, high or highest)", t.text);
        a.operand_precision.push_back(*p);
      } while (accept(TokenKind::kComma));
      expect(TokenKind::kRBrace, "',' or '}' in ", what);
      break;
    }
    case Attr::kOffsetDims:
      a.gather_dims.offset_dims = parse_int_list(what);
      break;
    case Attr::kCollapsedSliceDims:
      a.gather_dims.collapsed_slice_dims = parse_int_list(what);
      break;
    case Attr::kStartIndexMap:
      a.gather_dims.start_index_map = parse_int_list(what);
      break;
    case Attr::kOperandBatchingDims:
      a.gather_dims.operand_batching_dims = parse_int_list(what);
      break;
    case Attr::kStartIndicesBatchingDims:
      a.gather_dims.start_indices_batching_dims = parse_int_list(what);
      break;
    case Attr::kIndexVectorDim: {
      int64_t v = expect_int(what);
      (op == Opcode::kGather ? a.gather_dims.index_vector_dim : a.scatter_dims.index_vector_dim) =
          v;
      break;
    }
    case Attr::kSliceSizes:
      a.gather_slice_sizes = parse_int_list(what);
      break;
    case Attr::kIndicesAreSorted:
      a.indices_are_sorted = expect_bool(what);
      break;
    case Attr::kUpdateWindowDims:
      a.scatter_dims.update_window_dims = parse_int_list(what);
      break;
    case Attr::kInsertedWindowDims:
      a.scatter_dims.inserted_window_dims = parse_int_list(what);
      break;
    case Attr::kScatterDimsToOperandDims:
      a.scatter_dims.scatter_dims_to_operand_dims = parse_int_list(what);
      break;
    case Attr::kInputBatchingDims:
      a.scatter_dims.input_batching_dims = parse_int_list(what);
      break;
    case Attr::kScatterIndicesBatchingDims:
      a.scatter_dims.scatter_indices_batching_dims = parse_int_list(what);
      break;
    case Attr::kUniqueIndices:
      a.unique_indices = expect_bool(what);
      break;
    case Attr::kToApply:
      st.to_apply = comp_ref();
      break;
    case Attr::kDirection:
      a.direction = enum_value(direction_from_name, "EQ, NE, LT, LE, GT or GE");
      break;
    case Attr::kType:
      a.comparison_type =
          enum_value(comparison_type_from_name, "FLOAT, TOTALORDER, SIGNED or UNSIGNED");
      break;
    case Attr::kIsStable:
      a.is_stable = expect_bool(what);
      break;
    case Attr::kEpsilon:
      a.epsilon = expect_float(what);
      break;
    case Attr::kFeatureIndex:
      a.feature_index = expect_int(what);
      break;
    case Attr::kK:
      a.k = expect_int(what);
      break;
    case Attr::kLargest:
      a.largest = expect_bool(what);
      break;
    case Attr::kCrossProgramPrefetchIndex:
      a.cross_program_prefetch_index = expect_int(what);
      break;
    case Attr::kExponentBits:
      a.exponent_bits = expect_int(what);
      break;
    case Attr::kMantissaBits:
      a.mantissa_bits = expect_int(what);
      break;
    case Attr::kDomain:
      a.domain = parse_opaque_value(what);
      break;
    case Attr::kSelect:
      st.select = comp_ref();
      break;
    case Attr::kScatter:
      st.scatter = comp_ref();
      break;
    case Attr::kCondition:
      st.condition = comp_ref();
      break;
    case Attr::kBody:
      st.body = comp_ref();
      break;
    case Attr::kTrueComputation:
      st.true_computation = comp_ref();
      break;
    case Attr::kFalseComputation:
      st.false_computation = comp_ref();
      break;
    case Attr::kBranchComputations:
      st.branch_computations = parse_name_list(what);
      break;
    case Attr::kKind:
      a.fusion_kind = enum_value(fusion_kind_from_name, "kLoop, kInput, kOutput or kCustom");
      break;
    case Attr::kCalls:
      st.calls = comp_ref();
      break;
    case Attr::kAsyncExecutionThread:
      a.async_execution_thread = string_value(expect(TokenKind::kString, "a quoted async_execution_thread"));
      break;
    case Attr::kCustomCallTarget:
      a.custom_call_target =
          string_value(expect(TokenKind::kString, "a quoted custom_call_target"));
      break;
    case Attr::kApiVersion: {
      Token t = expect_name(what);
      auto v = custom_call_api_version_from_name(t.text);
      if (!v)
        failf(t.offset,
              "unknown api_version '{}' (expected API_VERSION_ORIGINAL, "
              "API_VERSION_STATUS_RETURNING, API_VERSION_STATUS_RETURNING_UNIFIED, "
              "API_VERSION_TYPED_FFI or API_VERSION_UNSPECIFIED)",
              t.text);
      a.api_version = *v;
      a.api_version_text = std::string(t.text);
      break;
    }
    case Attr::kCustomCallHasSideEffect:
      a.custom_call_has_side_effect = expect_bool(what);
      break;
    case Attr::kCalledComputations:
      st.called_computations = parse_name_list(what);
      break;
    case Attr::kAlgorithm:
      a.rng_algorithm =
          enum_value(rng_algorithm_from_name, "rng_default, rng_three_fry or rng_philox");
      break;
    case Attr::kReplicaGroups:
      a.replica_groups = parse_replica_groups();
      break;
    case Attr::kChannelId:
      a.channel_id = expect_int(what);
      break;
    case Attr::kUseGlobalDeviceIds:
      a.use_global_device_ids = expect_bool(what);
      break;
    case Attr::kConstrainLayout:
      a.constrain_layout = expect_bool(what);
      break;
    case Attr::kSourceTargetPairs:
      a.source_target_pairs = parse_source_target_pairs();
      break;
    case Attr::kSharding:
      in.sharding() = parse_sharding(0);
      break;
    case Attr::kMetadata:
      in.metadata() = parse_metadata();
      break;
    case Attr::kFrontendAttributes:
      a.frontend_attributes = parse_frontend_attributes();
      break;
    case Attr::kBackendConfig:
      a.backend_config = parse_opaque_value(what);
      break;
    case Attr::kControlPredecessors: {
      expect(TokenKind::kLBrace, "'{' to start control-predecessors");
      if (accept(TokenKind::kRBrace)) break;
      do
        in.add_control_predecessor(
            lookup_instruction(expect_name("a control predecessor"), "control predecessor"));
      while (accept(TokenKind::kComma));
      expect(TokenKind::kRBrace, "',' or '}' in control-predecessors");
      break;
    }
    case Attr::kCount:
      break;
  }
}

void Parser::check_required(const InstrState& st) {
  const Opcode op = collective_kind(st.instr->opcode());
  auto need = [&](Attr a, std::string_view name) {
    if (!st.has(a)) failf(st.opcode_offset, "{} needs attribute '{}'", opcode_name(op), name);
  };
  using O = Opcode;
  switch (op) {
    case O::kBroadcast:
    case O::kTranspose:
    case O::kReverse:
    case O::kConcatenate:
    case O::kAllGather:
      need(Attr::kDimensions, "dimensions");
      break;
    case O::kReduce:
    case O::kReduceScatter:
    case O::kSort:
    case O::kMap:
      need(Attr::kDimensions, "dimensions");
      need(Attr::kToApply, "to_apply");
      break;
    case O::kIota:
      need(Attr::kIotaDimension, "iota_dimension");
      break;
    case O::kGetTupleElement:
      need(Attr::kIndex, "index");
      break;
    case O::kSlice:
      need(Attr::kSlice, "slice");
      break;
    case O::kDynamicSlice:
      need(Attr::kDynamicSliceSizes, "dynamic_slice_sizes");
      break;
    case O::kPad:
      need(Attr::kPadding, "padding");
      break;
    case O::kReduceWindow:
      need(Attr::kWindow, "window");
      need(Attr::kToApply, "to_apply");
      break;
    case O::kSelectAndScatter:
      need(Attr::kWindow, "window");
      need(Attr::kSelect, "select");
      need(Attr::kScatter, "scatter");
      break;
    case O::kConvolution:
      need(Attr::kDimLabels, "dim_labels");
      break;
    case O::kGather:
      need(Attr::kOffsetDims, "offset_dims");
      need(Attr::kCollapsedSliceDims, "collapsed_slice_dims");
      need(Attr::kStartIndexMap, "start_index_map");
      need(Attr::kIndexVectorDim, "index_vector_dim");
      need(Attr::kSliceSizes, "slice_sizes");
      break;
    case O::kScatter:
      need(Attr::kUpdateWindowDims, "update_window_dims");
      need(Attr::kInsertedWindowDims, "inserted_window_dims");
      need(Attr::kScatterDimsToOperandDims, "scatter_dims_to_operand_dims");
      need(Attr::kIndexVectorDim, "index_vector_dim");
      need(Attr::kToApply, "to_apply");
      break;
    case O::kCompare:
      need(Attr::kDirection, "direction");
      break;
    case O::kCall:
    case O::kAllReduce:
      need(Attr::kToApply, "to_apply");
      break;
    case O::kWhile:
      need(Attr::kCondition, "condition");
      need(Attr::kBody, "body");
      break;
    case O::kConditional: {
      const bool branches = st.has(Attr::kBranchComputations);
      const bool t = st.has(Attr::kTrueComputation);
      const bool f = st.has(Attr::kFalseComputation);
      if (branches && (t || f))
        failf(st.opcode_offset,
              "conditional takes either branch_computations or "
              "true_computation/false_computation, not both");
      if (!branches && !(t && f))
        failf(st.opcode_offset,
              "conditional needs branch_computations={{...}} or both "
              "true_computation and false_computation");
      st.instr->pred_conditional_syntax = t;
      break;
    }
    case O::kFusion:
      need(Attr::kKind, "kind");
      need(Attr::kCalls, "calls");
      break;
    case O::kAsyncStart:
      need(Attr::kCalls, "calls");
      break;
    case O::kCustomCall:
      need(Attr::kCustomCallTarget, "custom_call_target");
      break;
    case O::kRngBitGenerator:
      need(Attr::kAlgorithm, "algorithm");
      break;
    case O::kBatchNormTraining:
    case O::kBatchNormInference:
    case O::kBatchNormGrad:
      need(Attr::kEpsilon, "epsilon");
      need(Attr::kFeatureIndex, "feature_index");
      break;
    case O::kTopK:
      need(Attr::kK, "k");
      break;
    case O::kReducePrecision:
      need(Attr::kExponentBits, "exponent_bits");
      need(Attr::kMantissaBits, "mantissa_bits");
      break;
    case O::kCollectivePermute:
      need(Attr::kSourceTargetPairs, "source_target_pairs");
      break;
    default:
      break;
  }
}

std::vector<CompRef> Parser::ordered_calls(const InstrState& st) {
  using O = Opcode;
  switch (collective_kind(st.instr->opcode())) {
    case O::kReduce:
    case O::kReduceWindow:
    case O::kScatter:
    case O::kSort:
    case O::kMap:
    case O::kAllReduce:
    case O::kReduceScatter:
    case O::kCall:
      return {*st.to_apply};
    case O::kSelectAndScatter:
      return {*st.select, *st.scatter};
    case O::kWhile:
      return {*st.condition, *st.body};
    case O::kFusion:
      return {*st.calls};
    case O::kAsyncStart:
    case O::kAsyncUpdate:
    case O::kAsyncDone:  // an update's and a done's are their start's when not written
      if (st.calls) return {*st.calls};
      return {};
    case O::kCustomCall:  // XLA writes a single one as to_apply=
      if (st.to_apply) {
        std::vector<CompRef> calls = st.called_computations;
        calls.insert(calls.begin(), *st.to_apply);
        return calls;
      }
      return st.called_computations;
    case O::kConditional:
      if (st.instr->pred_conditional_syntax) return {*st.true_computation, *st.false_computation};
      return st.branch_computations;
    default:
      return {};
  }
}

}  // namespace podsim::ir::parser
