// The issue process of one TensorCore: in-order issue of its program, one instruction per
// cycle at best. Each instruction is executed by the functional model when it issues
// (step()); this file decides when: it waits for operands (a vector-register and scalar
// scoreboard), for earlier unit accesses to the same VMEM bytes (interlock), and for its
// unit (the MXU, VPU models say when they accept work). DMAs are handed to an engine and
// issue returns at once; sem.wait and barrier block in simulated time until a DMA
// completion or the last core's arrival releases them.
//
// The core runs ahead of SystemC time (temporal decoupling) by up to the quantum and
// synchronises before anything that depends on other processes: a blocked sem.wait, a
// barrier, or the quantum running out.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "sim/timing/chip/chip_run.h"

namespace podsim::sim::timing {
namespace {

using isa::Opcode;

// Which operands of an opcode are scalar / vector registers read or written.
struct OpInfo {
  uint8_t scalar_reads = 0;  // bit i: operand i
  int8_t scalar_write = -1;
  uint8_t vector_reads = 0;
  int8_t vector_write = -1;
  VectorClass vector_class = VectorClass::kSimple;
};

std::vector<OpInfo> make_op_infos() {
  std::vector<OpInfo> infos(isa::kIsaOpcodeCount);
  for (int i = 0; i < isa::kIsaOpcodeCount; ++i) {
    auto op = static_cast<Opcode>(i);
    std::string_view sig = isa::signature(op);
    OpInfo& info = infos[static_cast<size_t>(i)];
    bool writes_scalar =
        isa::unit(op) == isa::Unit::kScalar && op != Opcode::kBnz && op != Opcode::kBz;
    for (size_t k = 0; k < sig.size(); ++k) {
      if (sig[k] == 'S') {
        if (k == 0 && writes_scalar)
          info.scalar_write = 0;
        else
          info.scalar_reads |= static_cast<uint8_t>(1u << k);
      } else if (sig[k] == 'V') {
        if (k == 0)
          info.vector_write = 0;
        else
          info.vector_reads |= static_cast<uint8_t>(1u << k);
      }
    }
    switch (op) {
      case Opcode::kVld:
      case Opcode::kVst:
        info.vector_class = VectorClass::kMemory;
        break;
      case Opcode::kVexp:
      case Opcode::kVlog:
      case Opcode::kVsqrt:
      case Opcode::kVrsqrt:
      case Opcode::kVtanh:
      case Opcode::kVlogistic:
      case Opcode::kVpow:
      case Opcode::kVdiv:
        info.vector_class = VectorClass::kTranscendental;
        break;
      case Opcode::kVredl:
      case Opcode::kVreds:
      case Opcode::kVxpose:
        info.vector_class = VectorClass::kCrossLane;
        break;
      default:
        break;
    }
  }
  return infos;
}

const std::vector<OpInfo>& op_infos() {
  static const std::vector<OpInfo> infos = make_op_infos();
  return infos;
}

bool overlaps(const MemoryRange& a, const MemoryRange& b) {
  return a.space == b.space && a.core == b.core && a.begin < b.end && b.begin < a.end;
}

const char* unit_name(isa::Unit u) {
  switch (u) {
    case isa::Unit::kScalar:
      return "scalar";
    case isa::Unit::kVector:
      return "vpu";
    case isa::Unit::kMxu:
      return "mxu";
    case isa::Unit::kDma:
      return "dma";
    case isa::Unit::kSync:
      return "sync";
  }
  return "?";
}

}  // namespace

void ChipRun::sync_to(Cycle t) {
  Cycle now = now_cycles();
  published_cycle().store(now, std::memory_order_relaxed);
  if (t > now) sc_core::wait(cycles(t - now));
}

Cycle ChipRun::interlock(const Core& core, const MemoryRange& range, bool write, Cycle t) {
  Cycle ready = t;
  for (const Pending& p : core.pending)
    if ((write || p.write) && overlaps(p.range, range)) ready = std::max(ready, p.end);
  return ready;
}

Footprint ChipRun::footprint(const Core& c, const Effect& e, const MemoryRange& hull) const {
  const isa::Instruction& in = *e.instruction;
  const auto& o = in.operands;
  const topology::ChipConfig& chip = model_.executable().chip;
  const auto& s = model_.state().core(c.index).scalar;
  auto region_offset = [&](int64_t r) {
    return model_.executable().regions[static_cast<size_t>(r)].offset;
  };
  int64_t eb = isa::dtype_bytes(in.dtype);
  Footprint f;
  f.hull = hull;
  switch (in.opcode) {
    case Opcode::kVld:
      f = {hull, region_offset(o[1]) + s[o[2]], chip.vpu_sublanes, chip.vpu_lanes * eb, s[o[3]]};
      break;
    case Opcode::kVst:
      f = {hull, region_offset(o[0]) + s[o[1]], chip.vpu_sublanes, chip.vpu_lanes * eb, s[o[2]]};
      break;
    case Opcode::kMldw:
    case Opcode::kMpop:
      f = {hull, region_offset(o[1]) + s[o[2]], e.rows, chip.mxu_cols * eb, s[o[3]]};
      break;
    case Opcode::kMmul:
      f = {hull, region_offset(o[1]) + s[o[2]], e.rows, c.mxus[static_cast<size_t>(o[0])].k * eb,
           s[o[3]]};
      break;
    default:
      break;
  }
  return f;
}

void ChipRun::run_core(Core& core) {
  try {
    issue_loop(core);
  } catch (...) {
    fail_run(std::current_exception());
  }
  core_done(core);
}

void ChipRun::issue_loop(Core& c) {
  const std::vector<OpInfo>& infos = op_infos();
  const topology::ChipConfig& chip = model_.executable().chip;
  const UnitLatencies& lat = latencies_;
  const int64_t xpose_registers = std::max(1, chip.vpu_lanes / std::max(chip.vpu_sublanes, 1));
  const isa::Program& program = *c.program;
  const auto vregs = static_cast<int64_t>(c.vreg_ready.size());
  Cycle t = now_cycles();
  // SystemC time only moves while this process waits: `now` is refreshed after each wait.
  Cycle now = t;
  Effect e;
  for (;;) {
    if (aborted_) return;
    if (t > now + options_.quantum_cycles) {
      sync_to(t);
      now = now_cycles();
      if (aborted_) return;
    }
    Cycle issue = t;
    int32_t pc = model_.state().core(c.index).pc;
    if (pc >= 0 && pc < static_cast<int32_t>(program.instructions.size()) &&
        program.instructions[static_cast<size_t>(pc)].opcode == Opcode::kBarrier) {
      sync_to(t);  // arrive at the barrier in simulated time, so the last arrival is the latest
      now = now_cycles();
      if (aborted_) return;
    }
    model_.step(c.index, e);
    bool was_blocked = e.blocked;
    if (e.blocked) {
      sync_to(t);
      for (;;) {
        if (aborted_) return;
        model_.step(c.index, e);
        if (!e.blocked) break;
        sc_core::wait(e.instruction->opcode == Opcode::kBarrier ? barrier_event_ : c.sem_event);
      }
      now = now_cycles();
      t = std::max(t, now);
    }
    const isa::Instruction& in = *e.instruction;
    const OpInfo& info = infos[static_cast<size_t>(in.opcode)];
    const auto& o = in.operands;

    Cycle ready = t;
    for (size_t k = 0; k < isa::kMaxOperands; ++k)
      if (info.scalar_reads & (1u << k))
        ready = std::max(ready, c.sreg_ready[static_cast<size_t>(o[k])]);
    auto vreg_block = [&](int64_t first) {
      int64_t n = in.opcode == Opcode::kVxpose ? xpose_registers : 1;
      return std::pair<int64_t, int64_t>{first, std::min(first + n, vregs)};
    };
    for (size_t k = 0; k < isa::kMaxOperands; ++k)
      if (info.vector_reads & (1u << k)) {
        auto [lo, hi] = vreg_block(o[k]);
        for (int64_t r = lo; r < hi; ++r)
          ready = std::max(ready, c.vreg_ready[static_cast<size_t>(r)]);
      }
    // Unit accesses that ended by the time this one could start order nothing any more.
    if (!c.pending.empty())
      std::erase_if(c.pending, [ready](const Pending& p) { return p.end <= ready; });
    if (e.has_read) ready = interlock(c, e.read, false, ready);
    if (e.has_write) ready = interlock(c, e.write, true, ready);

    UnitTiming u{ready, ready + 1, ready + 1};
    int track = c.scalar_track;
    double flops = 0;
    std::string trace_unit;
    bool queued = false;  // handed to a unit's queue: issue goes on at once
    switch (e.unit) {
      case isa::Unit::kScalar: {
        bool memory = e.has_read || e.has_write;
        u.done = ready + stretch(std::max<int64_t>(memory ? lat.vmem : lat.scalar, 1));
        if (memory) c.vmem_ports->book(ready, 1);
        break;
      }
      case isa::Unit::kVector: {
        int64_t registers = in.opcode == Opcode::kVxpose ? xpose_registers : 1;
        bool memory = info.vector_class == VectorClass::kMemory;
        if (memory) {
          Footprint f = footprint(c, e, e.has_read ? e.read : e.write);
          registers = c.vmem_banks->cycles(f.base, f.rows, f.row_bytes, f.stride);
        }
        u = c.vpu->issue(ready, info.vector_class, registers);
        if (memory) c.vmem_ports->book(u.start, registers);
        track = c.vpu_track;
        break;
      }
      case isa::Unit::kMxu: {
        Mxu& mxu = c.mxus[static_cast<size_t>(o[0])];
        if (in.opcode == Opcode::kMldw) {
          u = mxu.model->load_weights(ready, e.rows);
          mxu.k = e.rows;
          track = mxu.weight_track;
        } else if (in.opcode == Opcode::kMmul) {
          u = mxu.model->multiply(ready, e.rows, o[4] != 0);
          flops = 2.0 * static_cast<double>(e.rows) * static_cast<double>(mxu.k) * chip.mxu_cols;
          track = mxu.track;
          if (recorder_.profiling()) recorder_.mxu_work(u.start, u.busy_end, flops);
        } else {
          u = mxu.model->pop(ready, e.rows);
          track = mxu.result_track;
          queued = mxu.model->pop_is_queued();
        }
        if (recorder_.tracing()) trace_unit = fmt::format("mxu{}", o[0]);
        break;
      }
      case isa::Unit::kDma: {
        // Issue waits for earlier unit accesses to the bytes the transfer touches in this
        // core's VMEM; then the engine has it and the core goes on.
        const bool remote = e.dma.dst_device >= 0;
        ready = interlock(c, e.dma.src, false, ready);
        if (!remote) ready = interlock(c, e.dma.dst, true, ready);
        DmaJob job{e.dma, ready, ready + static_cast<Cycle>(std::max<int64_t>(lat.dma_setup, 0)),
                   in.source_op};
        // The engine with the fewest transfers waiting, the next in turn among equals.
        size_t pick = c.next_engine;
        for (size_t k = 1; k < c.engines.size(); ++k) {
          const size_t e = (c.next_engine + k) % c.engines.size();
          if (c.engines[e]->queued() < c.engines[pick]->queued()) pick = e;
        }
        c.engines[pick]->submit(std::move(job));
        c.next_engine = (pick + 1) % c.engines.size();
        if (hazards_) hazards_->dma_issued(outgoing_view(e.dma), ready, in.source_op);
        if (remote) pod_.chip(e.dma.dst_device).remote_issued(device(), e.dma, ready, in.source_op);
        u = {ready, ready + 1, ready + 1};
        break;
      }
      case isa::Unit::kSync:
        if (in.opcode == Opcode::kBarrier) {
          u.busy_end = u.done = ready + stretch(std::max<int64_t>(lat.barrier, 1));
          if (hazards_) hazards_->barrier_passed(c.index);
          // The last core to arrive passes at once and releases the others.
          if (!was_blocked) barrier_event_.notify();
        } else if (in.opcode == Opcode::kSemWait && hazards_) {
          hazards_->sem_wait_returned(c.index, static_cast<int>(o[0]), ready);
        }
        break;
    }

    c.work_end = std::max({c.work_end, u.done, u.busy_end});
    if (info.scalar_write >= 0) c.sreg_ready[static_cast<size_t>(o[0])] = u.done;
    if (info.vector_write >= 0) {
      auto [lo, hi] = vreg_block(o[0]);
      for (int64_t r = lo; r < hi; ++r) c.vreg_ready[static_cast<size_t>(r)] = u.done;
    }
    if (e.unit != isa::Unit::kDma) {
      if (e.has_read)
        c.pending.push_back({e.read, e.unit == isa::Unit::kMxu ? u.busy_end : u.start + 1, false});
      if (e.has_write) c.pending.push_back({e.write, u.done, true});
      if (hazards_) {
        if (e.has_read)
          hazards_->access(c.index, e.pc, in, u.start, footprint(c, e, e.read), false);
        if (e.has_write)
          hazards_->access(c.index, e.pc, in, u.start, footprint(c, e, e.write), true);
      }
    }
    if (recorder_.profiling()) {
      // A blocked sem.wait or barrier shows from when it reached the head of issue.
      Cycle span_start = e.unit == isa::Unit::kSync ? issue : u.start;
      recorder_.span(track, isa::mnemonic(in.opcode), span_start,
                     std::max(u.busy_end, span_start + 1), in.source_op, flops);
    }
    if (recorder_.tracing()) {
      if (trace_unit.empty()) trace_unit = unit_name(e.unit);
      size_t index = recorder_.trace_instruction(c.index, e.pc, in.opcode, std::move(trace_unit),
                                                 issue, u.start, u.done, in.source_op);
      if (e.unit == isa::Unit::kDma) dma_trace_[e.dma.id] = index;
    }
    // In-order issue: the next instruction issues the cycle after this one started (after
    // it was handed over, for a queued mpop); a barrier holds issue until it has passed.
    t = in.opcode == Opcode::kBarrier ? u.done : (queued ? ready : u.start) + issue_gap(c);
    if (++instructions_ > options_.max_instructions)
      fail("the run exceeded {} instructions (an endless loop?); core {} is at pc {}",
           options_.max_instructions, c.index, e.pc);
    if (e.halted) {
      c.halt_time = t;
      if (hazards_) hazards_->core_halted(c.index);
      return;
    }
  }
}

}  // namespace podsim::sim::timing
