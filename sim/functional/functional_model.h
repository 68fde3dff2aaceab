// The functional model of one chip: what each ISA instruction does to the chip's state,
// in plain C++ (no SystemC). The timing model drives it one instruction at a time with
// step() and decides when each DMA lands with complete_dma(); run_to_completion() is a
// plain functional run for tests and for the timing-free backend.
//
// Semantics this model fixes where isa/isa.h leaves room (the contract for compilers):
// - Loading runs isa::validate() and then checks what this model adds (the dtypes each
//   opcode takes, vxpose's register block): podsim::Error naming core, instruction
//   index and mnemonic. Accesses are checked against their region when they run.
// - sld/sst, vld/vst, mldw/mmul/mpop address VMEM regions of the executing core only
//   (as validate() requires); HBM and other cores' VMEM are reached by DMA.
// - Scalars wrap (INT64_MIN / -1 is INT64_MIN); sdiv/srem by zero is a run-time error.
// - vld/vst move sublanes rows of lanes elements; row r is at offset + r * stride (any
//   stride, 0 and negative included). Memory types map to lanes as lanes.h describes
//   (bf16/f16 widen exactly and store rounded to nearest even; narrow ints extend and
//   wrap; pred is 0/1). Vector arithmetic with dtype f32/s32/u32 works on the lanes as
//   they are; bf16/f16 compute in f32 and round the result, s8/s16/u8/u16 compute in 32
//   bits and wrap. Integer division by zero gives all ones and INT_MIN / -1 gives
//   INT_MIN; pow, max and min follow XLA (NaN wins). vcmp writes all ones or zero; vsel
//   picks va where the mask lane is nonzero; vcvt converts as XLA (float -> int
//   truncates and saturates, NaN -> 0; int -> float rounds once). vredl/vreds reduce in
//   index order. vxpose moves lanes / sublanes registers (a lanes x lanes block whose
//   row i is register i / sublanes, sublane i % sublanes) and may overlap its source.
// - MXU: mldw loads K x mxu_cols weights (1 <= K <= mxu_rows; rows past K are zero),
//   rounding to bf16. mmul streams M = mxu_rows LHS rows of K elements (K of the last
//   mldw), rounded to bf16; each output adds its K products in f32, in k order, onto 0
//   (imm 0) or onto the accumulator (imm 1, which needs an earlier mmul). mpop writes
//   the M x mxu_cols accumulator as f32, bf16 or f16 and leaves it as it is.
// - DMA: issue checks both ranges and returns a pending DmaTransfer; the copy happens
//   when complete_dma() runs (reading the source then), and adds 1 to the issuing
//   core's semaphore. Source and destination of one transfer may not overlap.
// - Pods (PodFunctionalModel, pod_model.h): every chip is a FunctionalModel sharing one
//   executable, told where it sits (ChipPlace, read by sdev). dma.remote resolves its
//   source here and its destination in the same region of chip sc (0 <= sc < chips, else
//   a run-time error); it is pending like any DMA and completes at once: the copy, +1 on
//   the issuing core's semaphore qa, and +1 on semaphore qb of the same TensorCore of the
//   destination chip (a timed model may run the first two earlier, once the source has
//   been read: source_read()). Transfers from one chip to another land in the order they were
//   issued (completing one completes the earlier ones first), as on the links: counting
//   landings on one semaphore tells which have landed. A model that is no chip of a pod
//   fails on dma.remote.
// - Timing-only (set_compute_data(false)): vector, MXU and DMA instructions resolve and
//   check their ranges, keep the MXU's weight / accumulator row counts and signal
//   semaphores exactly, but move and compute no data, except DMAs out of the executable's
//   constants (small tables that control code reads, as collectives' ring tables); scalars, sld/sst, control flow,
//   semaphores and barriers execute as always; set_parameter checks the size and writes
//   nothing. Memory and vector registers keep what they held (zeros, constants), and
//   control flow that depends on computed data (a while loop's condition, an index read
//   with sld) follows that.
// - sem.wait blocks (the core does not advance) until the semaphore reaches imm, then
//   subtracts it. barrier blocks until every core with a program has arrived; a halted
//   core never arrives.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/chip_state.h"

namespace podsim::sim {

// Bytes [begin, end) of one memory: HBM, or the VMEM of `core`. Addresses are absolute
// in that memory (region offset included), so ranges of different regions compare.
struct MemoryRange {
  isa::MemorySpace space = isa::MemorySpace::kHbm;
  int32_t core = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// A DMA issued and not yet completed. src/dst are the hulls of the bytes it reads and
// writes (strided transfers touch a subset).
struct DmaTransfer {
  uint64_t id = 0;   // issue order, unique within a model
  int32_t core = 0;  // the issuing core: its semaphore is signalled
  // dma.remote: the destination chip (device id) and the semaphore signalled there, on
  // TensorCore `core`; -1 for a DMA within the chip. dst is in that chip's memories.
  int32_t dst_device = -1;
  int32_t dst_semaphore = 0;
  int32_t src_device = 0;  // the issuing chip
  int32_t pc = 0;
  int32_t descriptor = 0;
  int32_t semaphore = 0;
  int64_t src_address = 0;  // element (0, ..., 0) in the source / destination memory
  int64_t dst_address = 0;
  int64_t bytes = 0;
  MemoryRange src;
  MemoryRange dst;
  bool source_read = false;  // dma.remote: source_read() ran (copy and qa done)
};

// What one step did. A blocked step changed nothing; the caller retries later.
struct Effect {
  int32_t core = 0;
  int32_t pc = 0;
  int32_t next_pc = 0;
  const isa::Instruction* instruction = nullptr;
  isa::Unit unit = isa::Unit::kScalar;
  bool blocked = false;
  bool halted = false;  // this step was the core's halt
  bool has_read = false;
  bool has_write = false;
  bool has_dma = false;
  MemoryRange read;   // hull of memory read (sld, vld, mldw, mmul)
  MemoryRange write;  // hull of memory written (sst, vst, mpop)
  int64_t rows = 0;   // MXU rows streamed: K for mldw, M for mmul and mpop
  DmaTransfer dma;    // the transfer issued by dma (has_dma)
};

struct RunStats {
  int64_t instructions = 0;  // steps that executed (blocked retries not counted)
  int64_t dmas = 0;          // transfers completed
};

// Where a chip sits in its pod (what sdev reads): one chip alone by default.
struct ChipPlace {
  int32_t device = 0;
  std::array<int32_t, 3> xyz{};
  int32_t slice = 0;
  int32_t chips = 1;
};

class FunctionalModel {
 public:
  // Checks the executable (see above) and places its constants.
  explicit FunctionalModel(isa::Executable executable);
  // One chip of a pod: the executable is shared with the other chips; `peers` are every
  // chip of the pod by device id (this one included), which dma.remote writes into. The
  // span must outlive the model (PodFunctionalModel owns both).
  FunctionalModel(std::shared_ptr<const isa::Executable> executable, ChipPlace place,
                  std::span<FunctionalModel> peers);
  // Effects point into the model's own executable: moving keeps them valid, copying
  // would not.
  FunctionalModel(const FunctionalModel&) = delete;
  FunctionalModel& operator=(const FunctionalModel&) = delete;
  FunctionalModel(FunctionalModel&&) = default;
  FunctionalModel& operator=(FunctionalModel&&) = default;

  const isa::Executable& executable() const { return *executable_; }
  const ChipPlace& place() const { return place_; }
  ChipState& state() { return state_; }
  const ChipState& state() const { return state_; }

  // Host transfers: a parameter's bytes (exactly its binding's size) go to the start of
  // its region; an output's bytes are read from the start of its region.
  void set_parameter(int index, std::span<const uint8_t> bytes);
  std::vector<uint8_t> read_output(int index) const;
  std::vector<uint8_t> read_region(int region, int64_t offset, int64_t bytes) const;
  void write_region(int region, int64_t offset, std::span<const uint8_t> bytes);

  // On by default; off gives the timing-only semantics above (see the header comment).
  void set_compute_data(bool on) { compute_data_ = on; }
  bool computes_data() const { return compute_data_; }

  int core_count() const { return static_cast<int>(state_.cores().size()); }
  // A core with a program that has not halted.
  bool is_live(int core) const;
  bool all_halted() const;

  // Executes the instruction at core's pc (or finds it blocked). podsim::Error for a
  // run-time fault (access outside its region, division by zero, ...), naming core, pc
  // and instruction, and for stepping a core that is halted or has no program.
  Effect step(int core);
  void step(int core, Effect& effect);  // the same, reusing the caller's record

  // Transfers issued and not completed, in issue order.
  const std::vector<DmaTransfer>& dmas_in_flight() const { return in_flight_; }
  // Performs the copy of an in-flight transfer and signals its semaphore.
  void complete_dma(uint64_t id);
  // dma.remote, before it lands (a timed model, when the transfer's source has been read):
  // reads the source (keeping its bytes) and signals the issuing core's semaphore;
  // complete_dma() then writes the bytes and signals the destination's semaphore.
  void source_read(uint64_t id);

  // Runs every core until all have halted: run_functional() on this chip alone.
  RunStats run_to_completion(int64_t max_steps);

  // "core 1: pc 4 sem.wait q2, 1 (semaphore q2 is 0, needs 1)", "core 0: pc 9 halt
  // (halted)" and the like.
  std::string describe_core(int core) const;

 private:
  struct Code {
    const isa::Instruction* instructions = nullptr;
    int32_t size = 0;
  };

  [[noreturn]] void fail_at(int core, const isa::Instruction& in, const std::string& message) const;
  // The hull of a strided access in `region` from `offset`: element (i...) at offset +
  // sum(i_k * strides[k]), element_bytes each; fails unless inside the region.
  MemoryRange resolve(int core, const isa::Instruction& in, int32_t region, int64_t offset,
                      std::span<const int64_t> sizes, std::span<const int64_t> strides,
                      int64_t element_bytes, const char* role) const;

  void execute_vector(int core, const isa::Instruction& in, Effect& effect);
  void vector_load(int core, const isa::Instruction& in, Effect& effect);
  void vector_store(int core, const isa::Instruction& in, Effect& effect);
  void execute_mxu(int core, const isa::Instruction& in, Effect& effect);
  void issue_dma(int core, const isa::Instruction& in, Effect& effect);
  template <class Fn>
  void for_each_run(const DmaTransfer& transfer, Fn fn) const;  // fn(src, dst, bytes) per run
  SparseMemory& destination(const DmaTransfer& transfer);
  bool copied(const DmaTransfer& transfer) const;  // its data moves (with data, or always copied)
  void copy_dma(const DmaTransfer& transfer);
  void stage_dma(const DmaTransfer& transfer);    // source_read: the source's bytes, kept
  void unstage_dma(const DmaTransfer& transfer);  // complete_dma: ... written
  void read_source(const DmaTransfer& transfer);  // the copy, and +1 on the issuing core's semaphore
  static void signal(int64_t& semaphore, const DmaTransfer& transfer);

  std::shared_ptr<const isa::Executable> executable_;
  ChipPlace place_;
  std::span<FunctionalModel> peers_;  // the pod's chips by device id; empty alone
  ChipState state_;
  std::vector<Code> code_;
  std::vector<DmaTransfer> in_flight_;
  uint64_t next_dma_id_ = 0;
  bool compute_data_ = true;
  // By region: DMAs from it copy data even when no data is computed (a constant of the
  // executable, or the collectives' flags).
  std::vector<bool> always_copied_;
  static constexpr int64_t kDmaChunkBytes = int64_t{1} << 20;
  std::vector<uint8_t> row_buffer_;    // one tile or MXU row in memory form
  std::vector<uint32_t> lane_buffer_;  // the same in lane form; the vxpose block
  std::vector<uint8_t> dma_buffer_;    // DMA copies go through it, a chunk at a time
  std::unordered_map<uint64_t, std::vector<uint8_t>> staged_;  // source_read() bytes, by DMA id
  std::vector<float> lhs_row_;         // one mmul LHS row, rounded to bf16
};

// Runs every core of every chip until all have halted, chip by chip and core by core in
// fixed slices of instructions: deterministic, and the same result for any slice, since
// cores and chips interact only through barriers and waited-for semaphores. A DMA
// completes lazily: when a core waits on a semaphore that it signals and the wait cannot
// be satisfied otherwise (so code that reads a DMA's destination without waiting sees the
// old data), and at the end of the run. podsim::Error on deadlock (every live core of
// every chip blocked: lists each blocked core with its chip, pc, instruction and what it
// waits for) and when more than max_steps instructions run in all.
RunStats run_functional(std::span<FunctionalModel> chips, int64_t max_steps);

}  // namespace podsim::sim
