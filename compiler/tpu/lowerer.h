// The lowering driver's state, shared by the op lowerings: HBM buffers and their
// liveness, the value of every lowered instruction, the step in progress (one op or
// fusion: its VMEM arena, its source op). Internal to compiler/tpu.
//
// Discipline every lowering follows: a step begins with begin_step(), allocates its
// VMEM from the step's arena, and waits for every DMA it issued before it ends, so
// that steps never overlap and a buffer dead after step s may be reused by step s + 1.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/tpu/program_builder.h"
#include "compiler/tpu/tpu_compiler.h"

namespace podsim::tpu {

// Semaphores of a step: one per slot of the input ring and of the output ring
// (stream.h: up to kMaxRingSlots each), and one for one-off loads.
inline constexpr int kMaxRingSlots = 12;
inline constexpr int kSemInput = 0;  // to kSemInput + kMaxRingSlots - 1
inline constexpr int kSemOutput = kSemInput + kMaxRingSlots;  // and the next slots - 1
inline constexpr int kSemOnce = kSemOutput + kMaxRingSlots;
// An operand block resident in VMEM (a dot's weights), loaded in up to kMaxBlockParts
// parts that are waited for one by one, so that work starts when the first part is in.
inline constexpr int kMaxBlockParts = 6;
inline constexpr int kSemBlock = kSemOnce + 1;  // to kSemBlock + kMaxBlockParts - 1
// The semaphores from here on belong to collectives' rings (collective_rings.cc).
inline constexpr int kSemCollectives = 32;
static_assert(kSemBlock + kMaxBlockParts <= kSemCollectives);

// An array in HBM (a buffer seen with a shape: reshapes alias their operand's buffer),
// or a tuple of values.
struct Value {
  int32_t buffer = -1;
  ir::Shape shape;
  std::vector<Value> elements;
};

enum class BufferKind { kParameter, kConstant, kTemp, kOutput };

struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::kTemp;
  int64_t bytes = 0;
  int32_t region = -1;
  int64_t first_step = 0;
  int64_t last_step = 0;
};

// The values of one computation's instructions while it is lowered. A fused scope
// (a fusion's computation) computes its instructions inside kernels; other scopes
// lower them one step each, deferring the cheap ones (constants, broadcasts, views).
struct Scope {
  const ir::Computation* computation = nullptr;
  bool fused = false;
  const ir::Instruction* origin = nullptr;  // steps of a fused scope are attributed to its fusion
  std::unordered_map<const ir::Instruction*, Value> values;
};

class Lowerer {
 public:
  Lowerer(const ir::Module& module, const Target& target, const Options& options);
  isa::Executable run();

  ProgramBuilder& pb() { return pb_; }
  const topology::ChipConfig& chip() const { return target_.chip; }
  const Target& target() const { return target_; }
  const Options& options() const { return options_; }

  // The value of i in s, lowering (and memoizing) it first where needed.
  const Value& value_of(const ir::Instruction& i, Scope& s);
  const Value* find_value(const ir::Instruction& i, const Scope& s) const;
  // Whether a kernel reading i may compute it inline rather than read its value.
  bool expandable(const ir::Instruction& i, const Scope& s) const;

  // A temporary array defined by the step in progress.
  int32_t new_buffer(std::string_view name, const ir::Shape& shape);
  // A constant array placed in HBM before the run.
  int32_t constant_buffer(std::string_view name, std::vector<uint8_t> data);
  const Buffer& buffer(int32_t b) const { return buffers_[static_cast<size_t>(b)]; }
  // VMEM for collectives' handshakes (isa::kFlagsRegion, reserved at the top of the
  // main core's VMEM for the whole run of a pod executable), two sets of words: each a
  // word per device, where the chip of that device id writes its flags on the others,
  // then the word flags are sent from, then the chip's count of handshakes. The first
  // set is the handshakes' before data moves (collective_flags), the second the
  // mailbox's credits (mailbox_flags).
  struct Flags {
    int32_t region = -1;
    int64_t words = 0;    // byte offset of the device words
    int64_t out = 0;      // byte offset of the word flags are sent from
    int64_t counter = 0;  // byte offset of the handshake count
  };
  Flags collective_flags();
  Flags mailbox_flags();
  // The one-shot exchanges' mailbox: VMEM reserved below the flags for the whole run,
  // where the group's arrays land without a handshake first: a chip that has read what
  // landed tells the chips of its group that its mailbox is free (a credit, counted as
  // handshakes are, mailbox_flags), and a chip sends into another's only once that chip's
  // credits count its earlier uses. Sized by the module's largest one-shot candidate
  // (all-reduces, reduce-scatters, all-gathers and all-to-alls of up to a sixteenth of VMEM) among those over the
  // device groups most of them use: credits go to the chips of the group, so only
  // collectives over those groups may use it. Returns the region, or -1 where i's groups
  // are others or `bytes` do not fit.
  int32_t mailbox(const ir::Instruction& i, int64_t bytes);
  // The same for a collective-permute's device pairs: each within a group of the mailbox's.
  int32_t mailbox_for_pairs(const ir::Instruction& i, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                            int64_t bytes);
  const std::vector<std::vector<int64_t>>& mailbox_groups() const { return mailbox_groups_; }
  // Whether a collective lowered after i (which has asked for the mailbox) may use the
  // mailbox: else i needs to give no credits (a run starts with every mailbox free).
  bool mailbox_used_later(const ir::Instruction& i) const;
  // The buffer's HBM region, recording that the step in progress uses it.
  int32_t use(int32_t buffer);

  // Starts a step lowering `i` (attributed to s.origin in a fused scope).
  void begin_step(const ir::Instruction& i, const Scope& s);
  // A VMEM region of the step in progress, in the VMEM of the core pb() emits for;
  // podsim::Error when VMEM is exhausted.
  int32_t vmem(std::string_view name, int64_t bytes);
  int64_t vmem_free() const { return vmem_limit() - vmem_used_[static_cast<size_t>(pb_.core())]; }

  // How many TensorCores the step in progress may split its work over: the chip's cores
  // from options().core up, in straight-line code (a loop or a branch runs on one core).
  int step_cores() const;
  // Splits the step over cores options().core .. + cores - 1: every one passes a barrier
  // first (so that the others see what earlier steps wrote to HBM); the kernel then
  // emits each core's part after pb().set_core(core). end_parallel() has every core wait
  // at a barrier again (so that later steps see what they wrote) and returns emission to
  // the main core. Each part must have waited for its own DMAs.
  void begin_parallel(int cores);
  void end_parallel();
  const std::string& step_name() const { return step_name_; }

  // Lowers the instructions of s's computation in order and returns its root's value.
  const Value& lower_computation(Scope& s);
  // Lowers a called computation (while condition / body, conditional branch, call) on
  // argument values.
  Value lower_called(const ir::Computation& callee, const std::vector<Value>& args);

  // Latency hiding (Options::overlap_collectives): a collective's lowering calls this
  // where transfers expected to take in_flight_ns are in flight. It lowers the next
  // instructions of the collective's overlap window (in order: not yet lowered, neither
  // depending on the collective nor needed by it, no collective or control flow
  // themselves) whose estimated times fill in_flight_ns (at least one, if any is left),
  // each as a step of its own on the VMEM above the collective's and with the steps'
  // semaphores; then the collective's step resumes, its buffers kept live through the
  // steps run meanwhile.
  void overlap_point(double in_flight_ns);

  // The step in progress.
  int64_t step() const { return step_; }
  // Steps [first, last] run repeatedly (a loop): buffers defined before them and used
  // among them stay live until the last.
  void keep_live_through_loop(int64_t first, int64_t last);

 private:
  Value lower(const ir::Instruction& i, Scope& s);
  Value lower_fusion(const ir::Instruction& i, Scope& s);
  Value lower_call(const ir::Instruction& i, const ir::Computation& callee, Scope& s, bool fused);
  void bind_outputs(const Value& root);
  // The order a scope is lowered in: the module's, with each collective that may overlap
  // moved up to just after the last of its operands.
  std::vector<const ir::Instruction*> lowering_order(const Scope& s) const;
  bool overlaps(const ir::Instruction& i, const Scope& s) const;
  Value lower_overlapped(const ir::Instruction& i, Scope& s);
  void collect_outputs(const Value& v, std::vector<const Value*>& out) const;

  const ir::Module& module_;
  Target target_;
  const topology::ChipConfig& chip_ = target_.chip;
  Options options_;
  ProgramBuilder pb_;
  std::vector<Buffer> buffers_;
  std::unordered_map<std::string, int32_t> iota_buffers_;
  // VMEM of the core pb() emits for that steps may use (all but the flags' on the main core).
  int64_t vmem_limit() const;

  // The mailbox's size and groups, from the module (see mailbox()).
  void plan_mailbox();
  bool pairs_within_mailbox_groups(const std::vector<std::pair<int64_t, int64_t>>& pairs) const;
  int32_t mailbox_region();

  Flags flags_;
  int64_t flags_bytes_ = 0;  // reserved at the top of the main core's VMEM
  int32_t mailbox_region_ = -1;
  int64_t mailbox_bytes_ = 0;  // reserved below the flags
  std::vector<std::vector<int64_t>> mailbox_groups_;
  int64_t mailbox_candidates_ = 0;  // the entry computation's collectives that may use it
  bool mailbox_in_calls_ = false;   // and whether called computations have some
  std::set<const ir::Instruction*> mailbox_asked_;
  int64_t step_ = -1;
  std::vector<int64_t> vmem_used_;  // per core
  int parallel_cores_ = 1;
  int called_depth_ = 0;  // inside a called computation (a loop, branch or call)
  // The collective in flight and the instructions that may run meanwhile, in order.
  struct Overlap {
    const ir::Instruction* collective = nullptr;
    Scope* scope = nullptr;
    std::vector<const ir::Instruction*> window;
    size_t next = 0;
    std::vector<int32_t> buffers;  // the collective's
    int64_t vmem_used = 0;         // the collective's, on the main core
    bool interleaving = false;     // a window instruction is being lowered
  };
  Overlap* overlap_ = nullptr;
  int64_t vmem_floor_ = 0;  // main-core VMEM that steps leave alone (a collective's)
  std::string step_name_;
  int depth_ = 0;
};

// Tuple all-reduces split into buckets of operands in the order they are computed, so
// that the first buckets' rings overlap the computation of the rest
// (Options::overlap_collectives; lower_overlap.cc).
void split_tuple_all_reduces(ir::Module& module);
// The tuple form of all-to-all (operand k to the group's k-th device; no dimensions), its
// operands of one shape, as the array form: the operands as the rows of one array,
// exchanged along dimension 0, the rows received as the elements of the tuple.
void split_tuple_all_to_alls(ir::Module& module);

// podsim::Error "not supported on the TPU target: <op> (line N)[: detail]".
[[noreturn]] void unsupported(const ir::Instruction& i, std::string_view detail = "");
[[noreturn]] void unsupported_what(const ir::Instruction& i, std::string_view what, std::string_view detail = "");

// The ISA type of an array element type in memory.
isa::DType memory_dtype(ir::PrimitiveType t);
// The ISA type of an element type computed on in vector lanes or the MXU; 64-bit types
// have no lane form (unsupported, naming i).
isa::DType isa_dtype(const ir::Instruction& i, ir::PrimitiveType t);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace podsim::tpu
