// A plain functional run: every core in turn for a fixed slice of instructions, DMAs
// completed lazily when their semaphore is waited on, deadlock and runaway detection.
#include <fmt/format.h>

#include "common/error.h"
#include "sim/functional/functional_model.h"
#include "sim/functional/model_internal.h"

namespace podsim::sim {
namespace {

// Instructions a core runs before the next core's turn. Cores interact only through
// barriers and waited-for DMAs, so the slice changes no result, only the speed.
constexpr int kSlice = 1024;

}  // namespace

bool FunctionalModel::complete_waited_dmas(int core, int semaphore, int64_t needed,
                                           RunStats& stats) {
  bool completed = false;
  const int64_t& value = state_.core(core).semaphores[static_cast<size_t>(semaphore)];
  for (size_t i = 0; i < in_flight_.size() && value < needed;) {
    if (in_flight_[i].core == core && in_flight_[i].semaphore == semaphore) {
      complete_dma(in_flight_[i].id);  // erases entry i
      ++stats.dmas;
      completed = true;
    } else {
      ++i;
    }
  }
  return completed;
}

RunStats FunctionalModel::run_to_completion(int64_t max_steps) {
  RunStats stats;
  Effect e;
  for (;;) {
    bool live = false, progress = false;
    for (int core = 0; core < core_count(); ++core) {
      if (!is_live(core)) continue;
      live = true;
      for (int i = 0; i < kSlice; ++i) {
        step(core, e);
        if (e.blocked) {
          const isa::Instruction& in = *e.instruction;
          if (in.opcode == isa::Opcode::kSemWait &&
              complete_waited_dmas(core, static_cast<int>(in.operands[0]), in.operands[1], stats))
            continue;
          break;
        }
        progress = true;
        if (++stats.instructions > max_steps) {
          std::string where;
          for (int c = 0; c < core_count(); ++c) where += "\n  " + describe_core(c);
          fail("the run exceeded {} instructions (an endless loop?); cores now:{}", max_steps,
               where);
        }
        if (e.halted) break;
      }
    }
    if (!live) break;
    if (!progress) {
      std::string where;
      for (int c = 0; c < core_count(); ++c) where += "\n  " + describe_core(c);
      fail("deadlock: every running core is blocked and no DMA can release it:{}", where);
    }
  }
  // Transfers that no one waited for still land.
  while (!in_flight_.empty()) {
    complete_dma(in_flight_.front().id);
    ++stats.dmas;
  }
  return stats;
}

std::string FunctionalModel::describe_core(int core) const {
  const CoreState& c = state_.core(core);
  if (!c.has_program) return fmt::format("core {}: no program", core);
  const Code& code = code_[static_cast<size_t>(core)];
  if (c.pc >= code.size)
    return fmt::format("core {}: pc {} is past the end of its program", core, c.pc);
  const isa::Instruction& in = code.instructions[c.pc];
  std::string text =
      fmt::format("core {}: pc {} {}", core, c.pc, detail::format_instruction(executable_, in));
  if (c.halted) return text + " (halted)";
  if (in.opcode == isa::Opcode::kSemWait) {
    auto q = static_cast<size_t>(in.operands[0]);
    int64_t pending = 0;
    for (const DmaTransfer& t : in_flight_)
      pending += t.core == core && static_cast<size_t>(t.semaphore) == q;
    text += fmt::format(" (semaphore q{} is {}, needs {}; {} DMA(s) in flight signal it)", q,
                        c.semaphores[q], in.operands[1], pending);
  } else if (in.opcode == isa::Opcode::kBarrier && c.at_barrier) {
    text += fmt::format(" (at the barrier; {} of {} cores arrived)", state_.barrier_arrived,
                        state_.barrier_participants);
  }
  return text;
}

}  // namespace podsim::sim
