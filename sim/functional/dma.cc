// DMA: issue checks a transfer and hands it back pending; completion copies the data
// (as it is then) and signals the issuing core's semaphore. Keeping the two apart lets
// the timing model decide when a transfer lands, and lets a plain run expose code that
// reads a destination before waiting for it.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "sim/functional/functional_model.h"

namespace podsim::sim {
namespace {

bool overlap(const MemoryRange& a, const MemoryRange& b) {
  return a.space == b.space && a.core == b.core && a.begin < b.end && b.begin < a.end;
}

}  // namespace

void FunctionalModel::issue_dma(int core, const isa::Instruction& in, Effect& e) {
  const auto& o = in.operands;
  const int64_t* s = state_.core(core).scalar.data();
  const auto d = static_cast<int32_t>(o[0]);
  const isa::DmaDescriptor& desc = executable_->descriptors[static_cast<size_t>(d)];
  DmaTransfer& t = e.dma;
  t.src = resolve(core, in, desc.src_region, s[o[1]], desc.sizes, desc.src_strides,
                  desc.element_bytes, "reads");
  // Regions are the same on every chip: a remote destination resolves here too.
  t.dst = resolve(core, in, desc.dst_region, s[o[2]], desc.sizes, desc.dst_strides,
                  desc.element_bytes, "writes");
  t.dst_device = -1;
  t.dst_semaphore = 0;
  t.src_device = place_.device;
  if (in.opcode == isa::Opcode::kDmaRemote) {
    const int64_t device = s[o[3]];
    if (peers_.empty())
      fail_at(core, in, "dma.remote needs a pod: this chip runs alone (no PodFunctionalModel)");
    if (device < 0 || device >= static_cast<int64_t>(peers_.size()))
      fail_at(core, in,
              fmt::format("destination device s{} = {} is not in the pod (devices 0..{})", o[3],
                          device, peers_.size() - 1));
    t.dst_device = static_cast<int32_t>(device);
    t.dst_semaphore = static_cast<int32_t>(o[5]);
  }
  if ((t.dst_device < 0 || t.dst_device == place_.device) && overlap(t.src, t.dst))
    fail_at(core, in,
            fmt::format("source bytes [{}, {}) and destination bytes [{}, {}) overlap", t.src.begin,
                        t.src.end, t.dst.begin, t.dst.end));
  t.id = next_dma_id_++;
  t.core = core;
  t.pc = state_.core(core).pc;
  t.descriptor = d;
  t.semaphore = static_cast<int32_t>(in.opcode == isa::Opcode::kDmaRemote ? o[4] : o[3]);
  t.src_address = executable_->regions[static_cast<size_t>(desc.src_region)].offset + s[o[1]];
  t.dst_address = executable_->regions[static_cast<size_t>(desc.dst_region)].offset + s[o[2]];
  t.bytes = desc.element_bytes;
  for (int64_t size : desc.sizes) t.bytes *= size;
  e.has_dma = true;
  in_flight_.push_back(t);
}

void FunctionalModel::complete_dma(uint64_t id) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [id](const DmaTransfer& t) { return t.id == id; });
  if (it == in_flight_.end())
    fail("complete_dma: DMA {} is not in flight (never issued, or completed already)", id);
  const DmaTransfer t = *it;
  // Transfers to the same chip issued before it land first (in_flight_ is in issue order;
  // the first of them has none before it, so this recurses one level only).
  if (t.dst_device >= 0)
    for (;;) {
      auto earlier = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const DmaTransfer& x) {
        return x.id < t.id && x.dst_device == t.dst_device;
      });
      if (earlier == in_flight_.end()) break;
      complete_dma(earlier->id);
    }
  in_flight_.erase(std::find_if(in_flight_.begin(), in_flight_.end(),
                                [&](const DmaTransfer& x) { return x.id == t.id; }));

  if (t.source_read)
    unstage_dma(t);
  else
    read_source(t);
  if (t.dst_device >= 0)
    signal(peers_[static_cast<size_t>(t.dst_device)]
               .state_.core(t.core)
               .semaphores[static_cast<size_t>(t.dst_semaphore)],
           t);
}

void FunctionalModel::source_read(uint64_t id) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [id](const DmaTransfer& t) { return t.id == id; });
  if (it == in_flight_.end() || it->dst_device < 0 || it->source_read)
    fail("source_read: DMA {} is no remote transfer in flight with its source unread ({})", id,
         it == in_flight_.end() ? "not in flight" : it->source_read ? "read already" : "local");
  it->source_read = true;
  if (copied(*it)) stage_dma(*it);
  signal(state_.core(it->core).semaphores[static_cast<size_t>(it->semaphore)], *it);
}

bool FunctionalModel::copied(const DmaTransfer& t) const {
  return compute_data_ ||
         always_copied_[static_cast<size_t>(executable_->descriptors[static_cast<size_t>(t.descriptor)].src_region)];
}

void FunctionalModel::read_source(const DmaTransfer& t) {
  if (copied(t)) copy_dma(t);
  signal(state_.core(t.core).semaphores[static_cast<size_t>(t.semaphore)], t);
}

void FunctionalModel::signal(int64_t& semaphore, const DmaTransfer& t) {
  if (__builtin_add_overflow(semaphore, int64_t{1}, &semaphore))
    fail("DMA issued by core {} at pc {} overflows a semaphore", t.core, t.pc);
}

template <class Fn>
void FunctionalModel::for_each_run(const DmaTransfer& t, Fn fn) const {
  const isa::DmaDescriptor& desc = executable_->descriptors[static_cast<size_t>(t.descriptor)];
  const size_t dims = desc.sizes.size();
  // Merge the innermost dimension into one run when it is contiguous on both sides.
  int64_t run = desc.element_bytes;
  size_t outer = dims;
  if (dims > 0 && desc.src_strides[dims - 1] == run && desc.dst_strides[dims - 1] == run) {
    run *= desc.sizes[dims - 1];
    outer = dims - 1;
  }
  std::array<int64_t, isa::kMaxDmaDims> index{};
  for (;;) {
    int64_t from = t.src_address, to = t.dst_address;
    for (size_t k = 0; k < outer; ++k) {
      from += index[k] * desc.src_strides[k];
      to += index[k] * desc.dst_strides[k];
    }
    fn(from, to, run);
    // Next index, last dimension fastest.
    size_t k = outer;
    while (k > 0 && ++index[k - 1] == desc.sizes[k - 1]) index[--k] = 0;
    if (k == 0) break;
  }
}

SparseMemory& FunctionalModel::destination(const DmaTransfer& t) {
  ChipState& chip = t.dst_device < 0 ? state_ : peers_[static_cast<size_t>(t.dst_device)].state_;
  return chip.memory(t.dst.space, t.dst.core);
}

void FunctionalModel::copy_dma(const DmaTransfer& t) {
  const SparseMemory& src = state_.memory(t.src.space, t.src.core);
  SparseMemory& dst = destination(t);
  if (dma_buffer_.empty()) dma_buffer_.resize(kDmaChunkBytes);
  for_each_run(t, [&](int64_t from, int64_t to, int64_t run) {
    for (int64_t done = 0; done < run;) {
      int64_t n = std::min(run - done, kDmaChunkBytes);
      src.read(from + done, dma_buffer_.data(), n);
      dst.write(to + done, dma_buffer_.data(), n);
      done += n;
    }
  });
}

void FunctionalModel::stage_dma(const DmaTransfer& t) {
  const SparseMemory& src = state_.memory(t.src.space, t.src.core);
  std::vector<uint8_t>& staged = staged_[t.id];
  staged.resize(static_cast<size_t>(t.bytes));
  int64_t at = 0;
  for_each_run(t, [&](int64_t from, int64_t, int64_t run) {
    src.read(from, staged.data() + at, run);
    at += run;
  });
}

void FunctionalModel::unstage_dma(const DmaTransfer& t) {
  auto it = staged_.find(t.id);
  if (it == staged_.end()) return;  // nothing was copied (timing only)
  SparseMemory& dst = destination(t);
  int64_t at = 0;
  for_each_run(t, [&](int64_t, int64_t to, int64_t run) {
    dst.write(to, it->second.data() + at, run);
    at += run;
  });
  staged_.erase(it);
}

}  // namespace podsim::sim
