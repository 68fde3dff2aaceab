// Internal to sim/timing: the timing of a TensorCore's VMEM, approximated. Ports: at most
// vmem_ports accesses a cycle, shared by the vector unit's loads and stores, sld/sst and
// the DMA engines' VMEM side (each access a vector register's width at most). Banks:
// VMEM is interleaved over vmem_banks banks every vmem_bank_bytes; the rows of a vld or
// vst that fall in different words of one bank are served one per cycle, so a strided
// access whose rows share a bank takes as many cycles as that bank has words to serve.
// Parameters: ChipConfig's vmem_ports, vmem_banks, vmem_bank_bytes (assumptions).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {

// Port use per cycle. Unit accesses are booked where their unit put them (they come
// first: the issuing core runs ahead of the DMA engines); DMA traffic takes the free
// port-cycles from its request on.
class VmemPorts {
 public:
  explicit VmemPorts(int64_t ports)
      : ports_(static_cast<uint8_t>(std::clamp<int64_t>(ports, 1, 255))) {}

  // n port-cycles in [t, t + n), one a cycle.
  void book(Cycle t, int64_t n);
  // n port-cycles from t on, each in the first cycle with a port free; returns the cycle
  // after the last.
  Cycle reserve(Cycle t, int64_t n);

 private:
  void prune();            // drops the cycles before SystemC time
  uint8_t& slot(Cycle t);  // cycle t's use (t >= base_ after prune)

  uint8_t ports_;
  Cycle base_ = 0;  // used_[i] is cycle base_ + i; cycles before SystemC time are dropped
  std::deque<uint8_t> used_;
};

// VMEM banks of a core, from the ChipConfig and UnitLatencies.
class VmemBanks {
 public:
  explicit VmemBanks(const UnitLatencies& latencies);
  // Cycles the banks need to serve `rows` rows of row_bytes from `base`, `stride` apart:
  // the most distinct words any one bank serves (1 for a contiguous tile).
  int64_t cycles(int64_t base, int64_t rows, int64_t row_bytes, int64_t stride) const;

 private:
  int64_t banks_, bank_bytes_;
};

// VMEM as DMA engines see it: one path moving vmem_dma_bytes_per_cycle in arrival order,
// through the ports, then the VMEM latency.
std::unique_ptr<MemoryTarget> make_vmem_dma_port(const UnitLatencies& latencies, VmemPorts& ports);

}  // namespace podsim::sim::timing
