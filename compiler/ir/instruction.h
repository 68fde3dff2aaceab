// An IR instruction: opcode, result shape, operands, called computations and the
// attributes its opcode takes (XLA HLO semantics). Attributes live in one flat struct;
// each opcode reads the fields that apply to it (see the comments) and the verifier
// checks them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/opcode.h"
#include "compiler/ir/shape.h"

namespace podsim::ir {

class Computation;
class Instruction;

// Where an instruction came from in HLO text (1-based; 0 when built in code).
struct SourcePos {
  int line = 0;
  int column = 0;
};

struct Attributes {
  // broadcast, transpose, reduce, reverse, concatenate, sort, all-gather,
  // reduce-scatter, all-to-all: dimensions={...}
  std::vector<int64_t> dimensions;
  int64_t parameter_number = 0;          // parameter(N)
  std::optional<Literal> literal;        // constant(...)
  int64_t iota_dimension = 0;            // iota
  int64_t tuple_index = 0;               // get-tuple-element: index=N
  std::vector<SliceDim> slice;           // slice={[a:b:c], ...}
  std::vector<int64_t> dynamic_slice_sizes;
  std::vector<PadDim> padding;           // pad: padding=l_h_i x ...
  std::optional<Window> window;          // reduce-window, select-and-scatter, convolution
  ConvDimNumbers conv_dims;              // convolution dim_labels
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  DotDimNumbers dot_dims;                // dot
  std::vector<Precision> operand_precision;  // dot, convolution: operand_precision={...}
  GatherDimNumbers gather_dims;          // gather
  std::vector<int64_t> gather_slice_sizes;
  ScatterDimNumbers scatter_dims;        // scatter
  bool indices_are_sorted = false;       // gather, scatter
  bool unique_indices = false;           // scatter
  ComparisonDirection direction = ComparisonDirection::kEq;  // compare
  ComparisonType comparison_type = ComparisonType::kDefault;  // compare: type=
  bool is_stable = false;                // sort
  float epsilon = 0;                     // batch-norm-*
  int64_t feature_index = 0;             // batch-norm-*
  int64_t k = 0;                         // topk: k=N
  bool largest = true;                   // topk
  std::optional<int64_t> cross_program_prefetch_index;  // copy-start
  int64_t exponent_bits = 0, mantissa_bits = 0;         // reduce-precision
  std::optional<std::string> domain;                    // domain: kept verbatim, with its braces
  RngAlgorithm rng_algorithm = RngAlgorithm::kDefault;
  FusionKind fusion_kind = FusionKind::kLoop;
  std::optional<ReplicaGroups> replica_groups;  // collectives
  std::optional<int64_t> channel_id;
  bool use_global_device_ids = false;
  bool constrain_layout = false;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;  // collective-permute
  std::string custom_call_target;        // custom-call
  std::string async_execution_thread;    // async-start/-update/-done ("" for XLA's default)
  std::optional<int64_t> api_version;    // custom-call api_version=API_VERSION_...(N)
  std::string api_version_text;
  bool custom_call_has_side_effect = false;
  // Opaque text kept verbatim so that modules round-trip.
  std::optional<std::string> backend_config;  // including its quotes or braces
  std::map<std::string, std::string> frontend_attributes;
  // Field by field (CSE merges instructions only when every attribute matches).
  bool operator==(const Attributes&) const = default;
};

class Instruction {
 public:
  Instruction(std::string name, Opcode opcode, Shape shape)
      : name_(std::move(name)), opcode_(opcode), shape_(std::move(shape)) {}
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  Opcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }

  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t i) const { return operands_.at(static_cast<size_t>(i)); }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void add_operand(Instruction* op) { operands_.push_back(op); }
  void set_operand(int64_t i, Instruction* op) { operands_.at(static_cast<size_t>(i)) = op; }
  void set_operands(std::vector<Instruction*> ops) { operands_ = std::move(ops); }

  // Computations this instruction calls, in a fixed order per opcode:
  //   reduce, reduce-window, scatter, sort, all-reduce, reduce-scatter, call, map: {to_apply}
  //   select-and-scatter: {select, scatter}; while: {condition, body}
  //   fusion: {fused computation}; custom-call: {called computations, if any}
  //   conditional: {branch 0, branch 1, ...} (for a pred selector: {true, false})
  const std::vector<Computation*>& called() const { return called_; }
  Computation* called(int64_t i) const { return called_.at(static_cast<size_t>(i)); }
  void add_called(Computation* c) { called_.push_back(c); }
  void set_called(std::vector<Computation*> called) { called_ = std::move(called); }
  // conditional written with true_computation=/false_computation= (kept for printing).
  bool pred_conditional_syntax = false;

  const std::vector<Instruction*>& control_predecessors() const { return control_preds_; }
  void add_control_predecessor(Instruction* i) { control_preds_.push_back(i); }
  std::vector<Instruction*>& mutable_control_predecessors() { return control_preds_; }

  // A copy with another name and operands: opcode, shape, attributes, called
  // computations, metadata and sharding are kept; position and parent are not.
  std::unique_ptr<Instruction> clone(std::string name, std::vector<Instruction*> operands) const;

  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }
  Metadata& metadata() { return metadata_; }
  const Metadata& metadata() const { return metadata_; }
  std::optional<Sharding>& sharding() { return sharding_; }
  const std::optional<Sharding>& sharding() const { return sharding_; }

  SourcePos pos() const { return pos_; }
  void set_pos(SourcePos p) { pos_ = p; }

  Computation* parent() const { return parent_; }
  void set_parent(Computation* c) { parent_ = c; }

 private:
  std::string name_;
  Opcode opcode_;
  Shape shape_;
  std::vector<Instruction*> operands_;
  std::vector<Computation*> called_;
  std::vector<Instruction*> control_preds_;
  Attributes attrs_;
  Metadata metadata_;
  std::optional<Sharding> sharding_;
  SourcePos pos_;
  Computation* parent_ = nullptr;
};

}  // namespace podsim::ir
