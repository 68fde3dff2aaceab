#include "sim/timing/hazard_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace podsim::sim::timing {
namespace {

constexpr int64_t kMaxRuns = int64_t{1} << 16;

// A side on another chip (core -1: outgoing_view / incoming_view) overlaps nothing here.
bool hulls_overlap(const MemoryRange& a, const MemoryRange& b) {
  return a.core >= 0 && b.core >= 0 && a.space == b.space &&
         (a.space == isa::MemorySpace::kHbm || a.core == b.core) && a.begin < b.end &&
         b.begin < a.end;
}

std::string describe_range(const MemoryRange& r) {
  if (r.space == isa::MemorySpace::kHbm) return fmt::format("HBM bytes [{}, {})", r.begin, r.end);
  return fmt::format("VMEM of core {} bytes [{}, {})", r.core, r.begin, r.end);
}

void sort_and_merge(std::vector<std::pair<int64_t, int64_t>>& runs) {
  std::sort(runs.begin(), runs.end());
  size_t out = 0;
  for (const auto& r : runs) {
    if (out > 0 && r.first <= runs[out - 1].second)
      runs[out - 1].second = std::max(runs[out - 1].second, r.second);
    else
      runs[out++] = r;
  }
  runs.resize(out);
}

}  // namespace

bool footprint_runs(const Footprint& f, std::vector<std::pair<int64_t, int64_t>>& runs) {
  runs.clear();
  if (f.descriptor) {
    const isa::DmaDescriptor& d = *f.descriptor;
    const std::vector<int64_t>& strides = f.dma_source ? d.src_strides : d.dst_strides;
    size_t n = d.sizes.size();
    if (n == 0) {
      runs.push_back({f.base, f.base + d.element_bytes});
      return true;
    }
    bool contiguous = strides[n - 1] == d.element_bytes;
    int64_t count = contiguous ? 1 : d.sizes[n - 1];
    for (size_t k = 0; k + 1 < n; ++k) {
      count *= d.sizes[k];
      if (count > kMaxRuns) return false;
    }
    if (count > kMaxRuns) return false;
    std::vector<int64_t> index(n, 0);
    size_t outer = contiguous ? n - 1 : n;  // dimensions enumerated one by one
    int64_t run = contiguous ? d.sizes[n - 1] * d.element_bytes : d.element_bytes;
    for (;;) {
      int64_t at = f.base;
      for (size_t k = 0; k < outer; ++k) at += index[k] * strides[k];
      runs.push_back({at, at + run});
      size_t k = outer;
      while (k > 0 && ++index[k - 1] == d.sizes[k - 1]) index[--k] = 0;
      if (k == 0) break;
    }
  } else if (f.row_bytes > 0) {
    if (f.rows > kMaxRuns) return false;
    for (int64_t r = 0; r < f.rows; ++r)
      runs.push_back({f.base + r * f.stride, f.base + r * f.stride + f.row_bytes});
  } else {
    runs.push_back({f.hull.begin, f.hull.end});
  }
  sort_and_merge(runs);
  return true;
}

HazardChecker::HazardChecker(const isa::Executable& executable, uint64_t base, int device)
    : executable_(executable), base_(base), device_(device) {
  size_t cores = static_cast<size_t>(std::max(executable.chip.tensor_cores, 1));
  generation_.assign(cores, 0);
  halted_.assign(cores, false);
  recent_.resize(cores);
  programs_ = static_cast<int>(executable.programs.size());
  for (const isa::Region& r : executable.regions)
    if (r.name == isa::kFlagsRegion)
      flags_.push_back(MemoryRange{r.space, r.core, r.offset, r.offset + r.size});
}

bool HazardChecker::in_flags(const MemoryRange& range) const {
  for (const MemoryRange& f : flags_)
    if (range.space == f.space && range.core == f.core && range.begin >= f.begin && range.end <= f.end)
      return true;
  return false;
}

bool HazardChecker::touches(const Side& a, const Side& b) {
  if (!hulls_overlap(a.footprint.hull, b.footprint.hull)) return false;
  for (const Side* s : {&a, &b})
    if (s->runs_state == 0) s->runs_state = footprint_runs(s->footprint, s->runs) ? 1 : 2;
  if (a.runs_state == 2 || b.runs_state == 2) return true;  // too many runs: the hulls decide
  size_t i = 0, j = 0;
  while (i < a.runs.size() && j < b.runs.size()) {
    if (a.runs[i].first < b.runs[j].second && b.runs[j].first < a.runs[i].second) return true;
    if (a.runs[i].second <= b.runs[j].second)
      ++i;
    else
      ++j;
  }
  return false;
}

bool HazardChecker::ordered_before(const LiveDma& d, int core) const {
  if (!d.acquired) return false;
  return core == d.src.access.core || generation_[static_cast<size_t>(core)] > d.acquire_generation;
}

void HazardChecker::check_pair(const Side& dma, const Side& other) {
  const HazardAccess& a = dma.access;
  const HazardAccess& b = other.access;
  if ((!a.write && !b.write) || in_flags(a.range) || in_flags(b.range)) return;
  std::string kind =
      a.write ? (b.write ? "write-after-write" : "read-after-write") : "write-after-read";
  auto key = std::make_tuple(a.core, a.pc, b.core, b.pc, static_cast<int>(kind[0]));
  if (hazards_.size() >= kMaxHazards || reported_.count(key) || !touches(dma, other)) return;
  reported_.insert(key);
  auto source = [&](int32_t op) {
    if (op < 0 || static_cast<size_t>(op) >= executable_.source_ops.size())
      return std::string("no source op");
    return fmt::format("source op '{}'",
                       executable_.source_ops[static_cast<size_t>(op)].instruction);
  };
  auto when = [](const HazardAccess& x) {
    if (!x.is_dma) return fmt::format("at cycle {}", x.start);
    if (x.end == UINT64_MAX) return fmt::format("issued at cycle {}, not landed yet,", x.start);
    return fmt::format("in flight cycles {}-{}", x.start, x.end);
  };
  MemoryRange common = a.range;
  common.begin = std::max(a.range.begin, b.range.begin);
  common.end = std::min(a.range.end, b.range.end);
  Hazard h;
  h.kind = kind;
  h.first = a;
  h.second = b;
  h.message = fmt::format(
      "{} hazard on {}: {} (core {}, pc {}, {}) {} {} them; {} (core {}, pc {}, {}) {} {} them; no "
      "sem.wait or "
      "barrier orders the two",
      kind, describe_range(common), a.instruction, a.core, a.pc, source(a.source_op), when(a),
      a.write ? "writes" : "reads", b.instruction, b.core, b.pc, source(b.source_op), when(b),
      b.write ? "writes" : "reads");
  hazards_.push_back(std::move(h));
}

void HazardChecker::dma_issued(const DmaTransfer& d, uint64_t cycle, int32_t source_op) {
  LiveDma live;
  live.id = d.id;
  live.semaphore = d.semaphore;
  HazardAccess side;
  side.core = d.core;
  side.pc = d.pc;
  if (d.dst_device < 0)
    side.instruction = fmt::format("dma d{}", d.descriptor);
  else if (d.src_device == device_)
    side.instruction = fmt::format("dma.remote d{} to chip {}", d.descriptor, d.dst_device);
  else
    side.instruction = fmt::format("dma.remote d{} from chip {}", d.descriptor, d.src_device);
  side.is_dma = true;
  side.start = cycle - base_;
  side.end = UINT64_MAX;
  side.source_op = source_op;
  const isa::DmaDescriptor* descriptor =
      &executable_.descriptors[static_cast<size_t>(d.descriptor)];
  live.src.access = side;
  live.src.access.range = d.src;
  live.src.footprint = {d.src, d.src_address, 1, 0, 0, descriptor, true};
  live.dst.access = side;
  live.dst.access.range = d.dst;
  live.dst.access.write = true;
  live.dst.footprint = {d.dst, d.dst_address, 1, 0, 0, descriptor, false};
  // Against transfers still unordered with this core, both ways.
  for (const LiveDma& other : live_) {
    if (ordered_before(other, d.core)) continue;
    check_pair(other.dst, live.src);
    check_pair(other.dst, live.dst);
    check_pair(other.src, live.dst);
  }
  // Against other cores' accesses since the last barrier (concurrent with this issue).
  for (size_t c = 0; c < recent_.size(); ++c) {
    if (static_cast<int>(c) == d.core) continue;
    for (const Side& a : recent_[c]) {
      check_pair(live.dst, a);
      check_pair(live.src, a);
    }
  }
  live_.push_back(std::move(live));
}

void HazardChecker::dma_completed(uint64_t id, uint64_t cycle) {
  for (LiveDma& d : live_)
    if (d.id == id) {
      d.completed = true;
      d.src.access.end = d.dst.access.end = cycle - base_;
    }
}

void HazardChecker::sem_wait_returned(int core, int semaphore, uint64_t cycle) {
  for (LiveDma& d : live_)
    if (d.src.access.core == core && d.semaphore == semaphore && d.completed &&
        d.src.access.end <= cycle - base_ && !d.acquired) {
      d.acquired = true;
      d.acquire_generation = generation_[static_cast<size_t>(core)];
    }
  prune();
}

void HazardChecker::barrier_passed(int core) {
  ++generation_[static_cast<size_t>(core)];
  recent_[static_cast<size_t>(core)].clear();
  prune();
}

void HazardChecker::core_halted(int core) {
  halted_[static_cast<size_t>(core)] = true;
  prune();
}

void HazardChecker::prune() {
  int lowest = INT_MAX;
  for (size_t c = 0; c < generation_.size(); ++c)
    if (!halted_[c]) lowest = std::min(lowest, generation_[c]);
  std::erase_if(live_, [&](const LiveDma& d) {
    return d.acquired && (programs_ <= 1 || lowest > d.acquire_generation);
  });
}

void HazardChecker::access(int core, int pc, const isa::Instruction& in, uint64_t cycle,
                           const Footprint& footprint, bool write) {
  const MemoryRange& range = footprint.hull;
  bool suspect = programs_ > 1;
  for (const LiveDma& d : live_)
    suspect = suspect ||
              (!ordered_before(d, core) && (hulls_overlap(d.dst.footprint.hull, range) ||
                                            (write && hulls_overlap(d.src.footprint.hull, range))));
  if (!suspect) return;
  Side a;
  a.access.core = core;
  a.access.pc = pc;
  a.access.instruction = std::string(isa::mnemonic(in.opcode));
  a.access.write = write;
  a.access.start = a.access.end = cycle - base_;
  a.access.source_op = in.source_op;
  a.access.range = range;
  a.footprint = footprint;
  for (const LiveDma& d : live_) {
    if (ordered_before(d, core)) continue;
    check_pair(d.dst, a);
    check_pair(d.src, a);
  }
  if (programs_ <= 1) return;
  // Bounded so that a long generation cannot grow without limit; past it, later
  // accesses of this generation are checked only against DMAs already issued.
  std::vector<Side>& recent = recent_[static_cast<size_t>(core)];
  if (recent.size() < kMaxRuns) recent.push_back(std::move(a));
}

}  // namespace podsim::sim::timing
