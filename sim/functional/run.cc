// A plain functional run of one chip or of every chip of a pod: each core of each chip in
// turn for a fixed slice of instructions, DMAs completed lazily when a semaphore they
// signal is waited on, deadlock and runaway detection.
#include <fmt/format.h>

#include "common/error.h"
#include "sim/functional/functional_model.h"
#include "sim/functional/model_internal.h"

namespace podsim::sim {
namespace {

// Instructions a core runs before the next core's turn. Cores interact only through
// barriers and waited-for DMAs, so the slice changes no result, only the speed.
constexpr int kSlice = 1024;

// Whether transfer t, issued on chip `from`, signals semaphore q of core `core` on chip
// `device` when it completes.
bool signals(const DmaTransfer& t, int from, int device, int core, int q) {
  if (t.core != core) return false;
  return (from == device && t.semaphore == q) || (t.dst_device == device && t.dst_semaphore == q);
}

class FunctionalRun {
 public:
  FunctionalRun(std::span<FunctionalModel> chips, int64_t max_steps)
      : chips_(chips), max_steps_(max_steps) {}

  RunStats run() {
    Effect e;
    for (;;) {
      bool live = false, progress = false;
      for (int d = 0; d < static_cast<int>(chips_.size()); ++d) {
        FunctionalModel& chip = chips_[static_cast<size_t>(d)];
        for (int core = 0; core < chip.core_count(); ++core) {
          if (!chip.is_live(core)) continue;
          live = true;
          progress |= run_slice(d, core, e);
        }
      }
      if (!live) break;
      if (!progress)
        fail("deadlock: every running core{} is blocked and no DMA can release it:{}",
             chips_.size() > 1 ? " of every chip" : "", describe_all());
    }
    // Transfers that no one waited for still land.
    for (FunctionalModel& chip : chips_)
      while (!chip.dmas_in_flight().empty()) {
        chip.complete_dma(chip.dmas_in_flight().front().id);
        ++stats_.dmas;
      }
    return stats_;
  }

 private:
  // Runs up to kSlice instructions of one core; whether any executed.
  bool run_slice(int d, int core, Effect& e) {
    FunctionalModel& chip = chips_[static_cast<size_t>(d)];
    bool progress = false;
    for (int i = 0; i < kSlice; ++i) {
      chip.step(core, e);
      if (e.blocked) {
        const isa::Instruction& in = *e.instruction;
        if (in.opcode == isa::Opcode::kSemWait &&
            complete_waited(d, core, static_cast<int>(in.operands[0]), in.operands[1]))
          continue;
        break;
      }
      progress = true;
      if (++stats_.instructions > max_steps_)
        fail("the run exceeded {} instructions (an endless loop?); cores now:{}", max_steps_,
             describe_all());
      if (e.halted) break;
    }
    return progress;
  }

  // Completes in-flight transfers (of any chip) that signal the semaphore until it
  // reaches `needed`; whether any completed.
  bool complete_waited(int device, int core, int q, int64_t needed) {
    const int64_t& value =
        chips_[static_cast<size_t>(device)].state().core(core).semaphores[static_cast<size_t>(q)];
    bool completed = false;
    for (int from = 0; from < static_cast<int>(chips_.size()) && value < needed; ++from) {
      FunctionalModel& chip = chips_[static_cast<size_t>(from)];
      for (size_t i = 0; i < chip.dmas_in_flight().size() && value < needed;) {
        if (signals(chip.dmas_in_flight()[i], from, device, core, q)) {
          chip.complete_dma(chip.dmas_in_flight()[i].id);  // erases entry i
          ++stats_.dmas;
          completed = true;
        } else {
          ++i;
        }
      }
    }
    return completed;
  }

  // Every core of a single chip; on a pod, every core still running, by chip.
  std::string describe_all() const {
    std::string out;
    const bool pod = chips_.size() > 1;
    int64_t done = 0;
    for (int d = 0; d < static_cast<int>(chips_.size()); ++d) {
      const FunctionalModel& chip = chips_[static_cast<size_t>(d)];
      const ChipPlace& p = chip.place();
      for (int core = 0; core < chip.core_count(); ++core) {
        if (pod && !chip.is_live(core)) {
          done += chip.state().core(core).has_program;
          continue;
        }
        out += "\n  ";
        if (pod)
          out += fmt::format("chip {} (slice {}, x {}, y {}, z {}) ", d, p.slice, p.xyz[0],
                             p.xyz[1], p.xyz[2]);
        out += chip.describe_core(core);
      }
    }
    if (done > 0) out += fmt::format("\n  ({} core(s) of the pod have halted)", done);
    return out;
  }

  std::span<FunctionalModel> chips_;
  int64_t max_steps_;
  RunStats stats_;
};

}  // namespace

RunStats run_functional(std::span<FunctionalModel> chips, int64_t max_steps) {
  return FunctionalRun(chips, max_steps).run();
}

RunStats FunctionalModel::run_to_completion(int64_t max_steps) {
  return run_functional(std::span<FunctionalModel>(this, 1), max_steps);
}

std::string FunctionalModel::describe_core(int core) const {
  const CoreState& c = state_.core(core);
  if (!c.has_program) return fmt::format("core {}: no program", core);
  const Code& code = code_[static_cast<size_t>(core)];
  if (c.pc >= code.size)
    return fmt::format("core {}: pc {} is past the end of its program", core, c.pc);
  const isa::Instruction& in = code.instructions[c.pc];
  std::string text =
      fmt::format("core {}: pc {} {}", core, c.pc, detail::format_instruction(*executable_, in));
  if (c.halted) return text + " (halted)";
  if (in.opcode == isa::Opcode::kSemWait) {
    auto q = static_cast<size_t>(in.operands[0]);
    // Transfers in flight that signal it: this chip's, and remote ones into it.
    int64_t pending = 0;
    auto count = [&](const FunctionalModel& chip) {
      for (const DmaTransfer& t : chip.in_flight_)
        pending += signals(t, chip.place_.device, place_.device, core, static_cast<int>(q));
    };
    if (peers_.empty())
      count(*this);
    else
      for (const FunctionalModel& chip : peers_) count(chip);
    text += fmt::format(" (semaphore q{} is {}, needs {}; {} DMA(s) in flight signal it)", q,
                        c.semaphores[q], in.operands[1], pending);
  } else if (in.opcode == isa::Opcode::kBarrier && c.at_barrier) {
    text += fmt::format(" (at the barrier; {} of {} cores arrived)", state_.barrier_arrived,
                        state_.barrier_participants);
  }
  return text;
}

}  // namespace podsim::sim
