// Internals of the HLO text parser, shared by its parts:
//   parser.cc             module header, computations, instruction lines
//   parser_literal.cc     shapes, numbers and constant literals
//   parser_attributes.cc  the attribute table and per-opcode attribute values
//   parser_values.cc      structured attribute values (window, sharding, groups, ...)
#pragma once

#include <fmt/format.h>

#include <bitset>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"

namespace podsim::ir::parser {

// Bound on every kind of nesting in the text (tuple shapes, tuple literals, tuple
// shardings) and on array rank, so that recursion depth stays small on any input.
inline constexpr int kMaxNesting = 64;
// Largest device list an iota form ([..]<=[..]) may expand to.
inline constexpr int64_t kMaxIotaDevices = int64_t{1} << 20;

enum class Attr : uint8_t {
  kDimensions,
  kIotaDimension,
  kIndex,
  kSlice,
  kDynamicSliceSizes,
  kPadding,
  kWindow,
  kDimLabels,
  kFeatureGroupCount,
  kBatchGroupCount,
  kLhsBatchDims,
  kLhsContractingDims,
  kRhsBatchDims,
  kRhsContractingDims,
  kOperandPrecision,
  kOffsetDims,
  kCollapsedSliceDims,
  kStartIndexMap,
  kOperandBatchingDims,
  kStartIndicesBatchingDims,
  kIndexVectorDim,
  kSliceSizes,
  kIndicesAreSorted,
  kUpdateWindowDims,
  kInsertedWindowDims,
  kScatterDimsToOperandDims,
  kInputBatchingDims,
  kScatterIndicesBatchingDims,
  kUniqueIndices,
  kToApply,
  kDirection,
  kType,
  kIsStable,
  kEpsilon,
  kFeatureIndex,
  kK,
  kLargest,
  kCrossProgramPrefetchIndex,
  kExponentBits,
  kMantissaBits,
  kDomain,
  kSelect,
  kScatter,
  kCondition,
  kBody,
  kTrueComputation,
  kFalseComputation,
  kBranchComputations,
  kKind,
  kCalls,
  kCustomCallTarget,
  kApiVersion,
  kCustomCallHasSideEffect,
  kCalledComputations,
  kAlgorithm,
  kReplicaGroups,
  kChannelId,
  kUseGlobalDeviceIds,
  kConstrainLayout,
  kSourceTargetPairs,
  kSharding,
  kMetadata,
  kFrontendAttributes,
  kBackendConfig,
  kControlPredecessors,
  kAsyncExecutionThread,
  kCount
};

// A computation named in an attribute; resolved once the whole file is read, because
// computations may be defined after their callers.
struct CompRef {
  std::string_view name;
  size_t offset = 0;
};

// What one instruction line has given so far.
struct InstrState {
  Instruction* instr = nullptr;
  size_t opcode_offset = 0;
  std::bitset<static_cast<size_t>(Attr::kCount)> seen;
  std::optional<CompRef> to_apply, select, scatter, condition, body, true_computation,
      false_computation, calls;
  std::vector<CompRef> branch_computations, called_computations;

  bool has(Attr a) const { return seen.test(static_cast<size_t>(a)); }
};

// Instruction names of the computation being parsed: open addressing over views into
// the text. reset() is O(1) (a generation bump), so many small computations after a
// large one stay linear, and lookups touch one flat array.
class NameTable {
 public:
  Instruction* find(std::string_view name) const;
  void insert(std::string_view name, Instruction* value);  // name must not be present
  void reset();

 private:
  struct Slot {
    std::string_view key;
    Instruction* value = nullptr;
    size_t hash = 0;
    uint32_t generation = 0;  // live when equal to generation_
  };
  void grow();

  std::vector<Slot> slots_;  // size is zero or a power of two
  size_t size_ = 0;
  uint32_t generation_ = 1;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename);

  std::unique_ptr<Module> parse_module();
  Shape parse_standalone_shape();

  // --- Tokens and small values (parser.cc) ---
  [[noreturn]] void fail_at(size_t offset, std::string_view message) {
    lex_.fail_at(offset, message);
  }
  template <typename... Args>
  [[noreturn]] void failf(size_t offset, fmt::format_string<Args...> format, Args&&... args) {
    lex_.fail_at(offset, fmt::format(format, std::forward<Args>(args)...));
  }
  // The next token, which must be of kind; otherwise an error "expected <what...>". The
  // description is given in parts so that it is only assembled when it is needed.
  template <typename... More>
  Token expect(TokenKind kind, std::string_view what, const More&... more) {
    Token t = lex_.next();
    if (t.kind != kind) {
      std::string message(what);
      (message.append(std::string_view(more)), ...);
      failf(t.offset, "expected {}, got {}", message, describe(t));
    }
    return t;
  }
  bool accept(TokenKind kind);
  bool peek_is(TokenKind kind) { return lex_.peek().kind == kind; }
  // A name token, with or without '%'.
  template <typename... More>
  Token expect_name(std::string_view what, const More&... more) {
    return expect(TokenKind::kName, what, more...);
  }
  int64_t int_value(const Token& token);
  int64_t expect_int(std::string_view what);
  bool expect_bool(std::string_view what);
  float expect_float(std::string_view what);  // an integer or a float, read as float
  // {1,2,3} (possibly empty)
  std::vector<int64_t> parse_int_list(std::string_view what);
  // [1,2,3] (possibly empty)
  std::vector<int64_t> parse_bracket_int_list(std::string_view what);
  // {%a, %b} (possibly empty)
  std::vector<CompRef> parse_name_list(std::string_view what);
  std::string string_value(const Token& t) { return lex_.string_value(t); }
  // An instruction of the current computation defined before this point.
  Instruction* lookup_instruction(const Token& name, std::string_view role);

  // --- Shapes and literals (parser_literal.cc) ---
  Shape parse_shape(int depth = 0);
  Literal parse_literal(const Shape& shape, size_t offset);

  // --- Attributes (parser_attributes.cc, parser_values.cc) ---
  void parse_attribute(InstrState& st);
  void check_required(const InstrState& st);
  std::vector<CompRef> ordered_calls(const InstrState& st);
  std::vector<SliceDim> parse_slice();
  std::vector<PadDim> parse_padding();
  Window parse_window();
  ConvDimNumbers parse_dim_labels();
  Sharding parse_sharding(int depth);
  ReplicaGroups parse_replica_groups();
  IotaList parse_iota_after_reshape(std::vector<int64_t> reshape_dims, size_t offset);
  std::vector<std::pair<int64_t, int64_t>> parse_source_target_pairs();
  Metadata parse_metadata();
  std::map<std::string, std::string> parse_frontend_attributes();
  // Token text kept verbatim: "..." or {...}.
  std::string parse_opaque_value(std::string_view what);

  Lexer& lexer() { return lex_; }

 private:
  void parse_header_attribute();
  void parse_computation();
  void parse_signature();
  void parse_instruction();
  // XLA's shorthand for generic async ops (`all-to-all-start` and the like), after the
  // shape: the opcode token names a known opcode plus -start, -update or -done.
  bool parse_async_shorthand(const Token& name, Shape& shape, const Token& op, bool is_root);
  void add_instruction(const Token& name, std::unique_ptr<Instruction> owned, const InstrState& st, bool is_root);
  void parse_operands(InstrState& st);
  void finish_computation(size_t offset);
  void resolve_calls();

  Lexer lex_;
  int64_t line_count_ = 0;
  std::unique_ptr<Module> module_;
  struct Defined {
    Computation* computation;
    size_t offset;  // of its name
  };
  std::unordered_map<std::string_view, Defined> computations_;
  std::vector<std::string_view> header_keys_;
  Computation* comp_ = nullptr;  // the computation being parsed
  NameTable instructions_;       // of comp_
  Instruction* root_ = nullptr;
  size_t root_offset_ = 0;
  Computation* entry_ = nullptr;
  std::vector<std::pair<Instruction*, std::vector<CompRef>>> pending_calls_;
};

}  // namespace podsim::ir::parser
