// The hazard checker: finds accesses to VMEM or HBM that race with a DMA because no
// synchronisation orders them. The timed chip feeds it every memory access, DMA issue
// and completion, satisfied sem.wait and barrier, as they happen.
//
// The ordering rules it checks against (the contract compiled code must meet):
// - Within one core, program order orders every instruction's memory accesses except a
//   DMA's: the timing model interlocks a unit access (and a DMA's issue) behind earlier
//   unit writes to the same bytes, as an in-order core with a memory scoreboard does. So
//   a DMA reading bytes that an earlier mpop or vst wrote needs no synchronisation.
// - A DMA is ordered after everything its core did before issuing it, and before what
//   its core does after a sem.wait on its semaphore that returns at or after the DMA's
//   completion (the wait observed the completion).
// - A barrier orders everything every core did before it (including the DMAs they had
//   observed complete) before everything after it.
// Any conflicting pair (overlapping bytes, at least one write) of a DMA and another
// access (an instruction's, or another DMA's) not ordered by these rules is a hazard:
// read-after-write (something reads what a DMA writes), write-after-read (something
// writes what a DMA reads) or write-after-write. Accesses to the collectives' flags
// (isa::kFlagsRegion), which chips poll by design, are none.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"
#include "sim/timing/timed_chip.h"

namespace podsim::sim::timing {

// The bytes an access touches, for exact overlap tests where hulls overlap: `rows` runs
// of row_bytes at base + r * stride (a vector tile, MXU rows), or a DMA descriptor's
// elements from base (element (0, ..., 0)); hull bounds them.
struct Footprint {
  MemoryRange hull;
  int64_t base = 0;
  int64_t rows = 1;
  int64_t row_bytes = 0;  // 0: the hull is exact
  int64_t stride = 0;
  const isa::DmaDescriptor* descriptor = nullptr;
  bool dma_source = false;  // use the descriptor's source strides
};

// Sorted, disjoint [begin, end) runs of a footprint's bytes; false when there would be
// more than a limit (the hull stands for them then).
bool footprint_runs(const Footprint& f, std::vector<std::pair<int64_t, int64_t>>& runs);

class HazardChecker {
 public:
  // base: the run's first cycle (reports are relative to it); device: the chip checked
  // (a remote transfer is fed to the checkers of both its chips, outgoing_view() and
  // incoming_view() in chip/chip_run.h).
  HazardChecker(const isa::Executable& executable, uint64_t base, int device = 0);

  void dma_issued(const DmaTransfer& dma, uint64_t cycle, int32_t source_op);
  void dma_completed(uint64_t id, uint64_t cycle);
  void sem_wait_returned(int core, int semaphore, uint64_t cycle);
  void barrier_passed(int core);
  void core_halted(int core);
  void access(int core, int pc, const isa::Instruction& instruction, uint64_t cycle,
              const Footprint& footprint, bool write);

  std::vector<Hazard> take() { return std::move(hazards_); }

 private:
  struct Side {
    HazardAccess access;
    Footprint footprint;
    mutable std::vector<std::pair<int64_t, int64_t>> runs;  // computed on first need
    mutable int runs_state = 0;                             // 0 unknown, 1 runs, 2 too many
  };
  struct LiveDma {
    Side src, dst;  // the two sides of the transfer
    uint64_t id = 0;
    int semaphore = 0;
    bool completed = false;
    bool acquired = false;
    int acquire_generation = 0;
  };
  bool ordered_before(const LiveDma& dma, int core) const;
  static bool touches(const Side& a, const Side& b);
  bool in_flags(const MemoryRange& range) const;
  void check_pair(const Side& dma_side, const Side& other);
  void prune();

  const isa::Executable& executable_;
  uint64_t base_;
  int device_;
  int programs_ = 0;
  std::vector<int> generation_;  // barriers each core passed
  std::vector<bool> halted_;
  std::vector<LiveDma> live_;
  std::vector<std::vector<Side>> recent_;  // per core, this generation (multi-core runs)
  std::vector<Hazard> hazards_;
  std::vector<MemoryRange> flags_;  // the flags region, in this chip's memory
  std::set<std::tuple<int, int, int, int, int>> reported_;
};

}  // namespace podsim::sim::timing
