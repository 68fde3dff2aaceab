// VMEM ports and banks (vmem.h), and the DMA engines' path into VMEM.
#include "sim/timing/memory/vmem.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "sim/timing/memory/bookings.h"

namespace podsim::sim::timing {

void VmemPorts::prune() {
  // Nothing is booked before SystemC time: a core's issue time and a DMA request are
  // never behind it.
  Cycle now = now_cycles();
  if (now <= base_) return;
  Cycle drop = std::min<Cycle>(now - base_, used_.size());
  used_.erase(used_.begin(), used_.begin() + static_cast<std::ptrdiff_t>(drop));
  base_ = now;
}

uint8_t& VmemPorts::slot(Cycle t) {
  auto index = static_cast<size_t>(std::max(t, base_) - base_);
  // Grow by more than one cycle at a time: bookings run forward a cycle after another.
  if (index >= used_.size()) used_.resize(index + 64, 0);
  return used_[index];
}

void VmemPorts::book(Cycle t, int64_t n) {
  prune();
  for (int64_t i = 0; i < n; ++i) {
    uint8_t& u = slot(t + static_cast<Cycle>(i));
    if (u < 255) ++u;
  }
}

Cycle VmemPorts::reserve(Cycle t, int64_t n) {
  prune();
  Cycle c = std::max(t, base_), last = c;
  for (int64_t left = std::max<int64_t>(n, 1); left > 0; ++c) {
    uint8_t& u = slot(c);
    if (u < ports_) {
      ++u;
      --left;
      last = c;
    }
  }
  return last + 1;
}

VmemBanks::VmemBanks(const UnitLatencies& l)
    : banks_(std::max<int64_t>(l.vmem_banks, 1)), bank_bytes_(std::max<int64_t>(l.vmem_bank_bytes, 1)) {}

int64_t VmemBanks::cycles(int64_t base, int64_t rows, int64_t row_bytes, int64_t stride) const {
  if (rows <= 1 || row_bytes <= 0) return 1;
  auto word = [this](int64_t address) {  // floor division: addresses are never negative
    return address / bank_bytes_;
  };
  // A contiguous run over at most `banks` words (a whole tile) meets every bank once.
  if (stride == row_bytes && word(base + rows * row_bytes - 1) - word(base) < banks_) return 1;
  // The distinct words the rows touch; each bank serves one of its words a cycle. Loads
  // and stores move a few rows: a small array on the stack holds them.
  constexpr size_t kSmall = 64;
  std::array<int64_t, kSmall> small;
  std::vector<int64_t> large;
  int64_t* words = small.data();
  size_t n = 0, capacity = kSmall;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t begin = base + r * stride;
    for (int64_t w = word(begin); w <= word(begin + row_bytes - 1); ++w) {
      if (n == capacity) {
        if (large.empty()) large.assign(words, words + n);
        large.resize(n * 2);
        words = large.data();
        capacity = large.size();
      }
      words[n++] = w;
    }
  }
  std::sort(words, words + n);
  n = static_cast<size_t>(std::unique(words, words + n) - words);
  // Now the banks of those words: the longest run of one bank is the answer.
  for (size_t i = 0; i < n; ++i) words[i] %= banks_;
  std::sort(words, words + n);
  int64_t most = 1, run = 1;
  for (size_t i = 1; i < n; ++i) {
    run = words[i] == words[i - 1] ? run + 1 : 1;
    most = std::max(most, run);
  }
  return most;
}

namespace {

class VmemDmaPort final : public MemoryTarget {
 public:
  VmemDmaPort(double bytes_per_cycle, Cycle latency, VmemPorts& ports)
      : cycles_per_byte_(1.0 / bytes_per_cycle), latency_(latency), ports_(ports) {}

  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) override {
    Cycle now = now_cycles();
    unsigned length = p.get_data_length();
    if (length != last_length_) {
      last_length_ = length;
      last_service_ =
          std::max<Cycle>(static_cast<Cycle>(std::ceil(length * cycles_per_byte_ - 1e-9)), 1);
    }
    // The path serves by request time (a burst from another chip goes between those a
    // local transfer booked ahead), then the bytes take their port-cycles.
    const Cycle start = path_.book(now, now + delay.value(), last_service_, 0);
    const Cycle end = ports_.reserve(start, static_cast<int64_t>(last_service_));
    if (on_traffic_) on_traffic_(start, end, static_cast<double>(length));
    delay = cycles(end + latency_ - now);
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }

 private:
  double cycles_per_byte_;
  Cycle latency_;
  VmemPorts& ports_;
  Bookings path_{0, true};
  unsigned last_length_ = 0;
  Cycle last_service_ = 1;
};

}  // namespace

std::unique_ptr<MemoryTarget> make_vmem_dma_port(const UnitLatencies& l, VmemPorts& ports) {
  return std::make_unique<VmemDmaPort>(static_cast<double>(l.vmem_dma_bytes_per_cycle),
                                       static_cast<Cycle>(std::max<int64_t>(l.vmem, 0)), ports);
}

}  // namespace podsim::sim::timing
