// Modules and computations. A module owns its computations (exactly one is the entry);
// a computation owns its instructions, kept in definition order (operands before users).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/instruction.h"

namespace podsim::ir {

class Module;

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  bool is_entry() const { return is_entry_; }
  void set_entry(bool e) { is_entry_ = e; }
  Module* parent() const { return parent_; }
  void set_parent(Module* m) { parent_ = m; }

  // Appends an instruction; its operands must already be in this computation.
  Instruction* add(std::unique_ptr<Instruction> instruction);
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }

  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // Parameters ordered by parameter number (filled by add()).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(int64_t i) const { return parameters_.at(static_cast<size_t>(i)); }
  int64_t parameter_count() const { return static_cast<int64_t>(parameters_.size()); }

  Instruction* find(std::string_view name) const;

  // Mutation, for passes. Operand and control edges are plain pointers, so an
  // instruction may only be removed once nothing refers to it.
  // Redirects every use of old (operands, control edges, root) to replacement.
  void replace_all_uses(Instruction* old, Instruction* replacement);
  // Erases the instructions for which remove(instruction) is true; none of them may
  // be the root or still be used by an instruction that stays.
  void remove_if(const std::function<bool(const Instruction*)>& remove);
  // Reorders instructions so that operands and control predecessors come first,
  // keeping the existing order where it already is valid.
  void sort_topologically();
  // Users of every instruction, in instruction order (an instruction using the same
  // operand twice appears once).
  std::unordered_map<const Instruction*, std::vector<Instruction*>> users() const;
  // A name not used by any instruction in this computation, starting with prefix.
  std::string unique_name(std::string_view prefix);

 private:
  std::string name_;
  bool is_entry_ = false;
  Module* parent_ = nullptr;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::vector<Instruction*> parameters_;
  Instruction* root_ = nullptr;
  int64_t next_name_id_ = 0;
  // Names in use, built on the first unique_name() call and kept up to date by add().
  std::unordered_set<std::string> used_names_;
  bool used_names_valid_ = false;
};

// input_output_alias={ {0}: (1, {}, may-alias) }
struct IoAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  bool must_alias = false;
  bool operator==(const IoAlias&) const = default;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  Computation* add_computation(std::unique_ptr<Computation> c);
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  Computation* entry() const { return entry_; }
  void set_entry(Computation* c);
  Computation* find_computation(std::string_view name) const;
  // Erases computations for which remove(c) is true; none may still be called.
  void remove_computations_if(const std::function<bool(const Computation*)>& remove);
  // A computation name not used in this module, starting with prefix.
  std::string unique_computation_name(std::string_view prefix) const;
  int64_t instruction_count() const;

  // Header attributes.
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  // entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}
  std::optional<std::vector<Shape>> entry_parameter_layouts;
  std::optional<Shape> entry_result_layout;
  std::vector<IoAlias> input_output_alias;
  // Header attributes that are accepted and kept verbatim but have no meaning here
  // (is_scheduled, allow_spmd_sharding_propagation_to_output, ...), in input order.
  std::vector<std::pair<std::string, std::string>> other_header_attributes;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
};

}  // namespace podsim::ir
