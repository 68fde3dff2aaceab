// The SystemC kernel's own thread and the public entry points. SystemC's kernel is not
// thread-safe, so it lives on one thread for the whole process, started on first use:
// it sets the time resolution (1 ns = one cycle, see unit_models.h), registers the
// built-in unit models and then runs queued runs one at a time, each ending with the
// kernel paused (sc_start() returns when no event is left) so that the next can start.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "sim/timing/pod/pod_run.h"
#include "sim/timing/timed_chip.h"
#include "sim/timing/unit_models.h"

// libsystemc.so calls sc_main from its own main() and needs the symbol to link; podsim
// programs have their own main() and never reach this.
int sc_main(int, char**) { return 1; }

namespace podsim::sim::timing {
namespace {

class Kernel {
 public:
  // Never destroyed: the thread parks on the queue until the process exits.
  static Kernel& instance() {
    static Kernel* kernel = new Kernel();
    return *kernel;
  }

  // Runs `work` on the kernel's thread; meanwhile, where there is a `poll`, calls it on
  // this thread every poll_interval_s seconds (the first after one interval).
  template <class F>
  auto run(F work, const std::function<void()>& poll = {}, double poll_interval_s = 1)
      -> decltype(work()) {
    std::packaged_task<decltype(work())()> task(std::move(work));
    auto future = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back([&task] { task(); });
    }
    ready_.notify_one();
    if (poll) {
      const auto interval = std::chrono::duration<double>(std::max(poll_interval_s, 1e-3));
      while (future.wait_for(interval) != std::future_status::ready) poll();
    }
    return future.get();
  }

 private:
  Kernel() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    sc_core::sc_set_time_resolution(1, sc_core::SC_NS);
    register_builtin_unit_models();
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
};

}  // namespace

MxuRegistry& mxu_models() {
  static MxuRegistry r("MXU");
  return r;
}
VpuRegistry& vpu_models() {
  static VpuRegistry r("VPU");
  return r;
}
DmaRegistry& dma_models() {
  static DmaRegistry r("DMA engine");
  return r;
}
HbmRegistry& hbm_models() {
  static HbmRegistry r("HBM");
  return r;
}

void register_builtin_unit_models() {
  register_systolic_mxu(mxu_models());
  register_inorder_vpu(vpu_models());
  register_burst_dma(dma_models());
  register_pipelined_dma(dma_models());
  register_channel_hbm(hbm_models());
  register_torus_interconnect(interconnect_models());
}

std::atomic<Cycle>& published_cycle() {
  static std::atomic<Cycle> cycle{0};
  return cycle;
}

PodRunResult run_timed_pod(const isa::Executable& executable,
                           const std::vector<std::vector<std::vector<uint8_t>>>& parameters,
                           const TimingOptions& options) {
  std::atomic<Cycle> first{0};  // the run's first cycle
  std::atomic<bool> started{false};
  std::function<void()> poll;
  if (options.progress)
    poll = [&] {
      if (!started.load(std::memory_order_acquire)) return;
      const Cycle now = published_cycle().load(std::memory_order_relaxed);
      const Cycle from = first.load(std::memory_order_relaxed);
      if (now >= from) options.progress(now - from);
    };
  return Kernel::instance().run(
      [&]() -> PodRunResult {
        first.store(now_cycles(), std::memory_order_relaxed);
        published_cycle().store(now_cycles(), std::memory_order_relaxed);
        started.store(true, std::memory_order_release);
        PodRun run(executable, parameters, options);
        run.start();
        sc_core::sc_start();
        return run.finish();
      },
      poll, options.progress_interval_s);
}

TimedRunResult run_timed(const isa::Executable& executable,
                         const std::vector<std::vector<uint8_t>>& parameters,
                         const TimingOptions& options) {
  if (executable.pod && executable.pod->chips() > 1)
    fail("run_timed runs one chip; this executable is for the {} chips of pod '{}' (run it with "
         "run_timed_pod)",
         executable.pod->chips(), executable.pod->name);
  std::vector<std::vector<std::vector<uint8_t>>> one;
  if (!(options.timing_only && parameters.empty())) one.push_back(parameters);
  PodRunResult pod = run_timed_pod(executable, one, options);
  TimedRunResult r = std::move(pod.chips.at(0));
  r.profile = std::move(pod.profile);
  r.hazards = std::move(pod.hazards);
  return r;
}

std::string format_pod_summary(const PodRunResult& r, const topology::ChipConfig& chip) {
  uint64_t fastest = r.chips.empty() ? 0 : UINT64_MAX, slowest = 0;
  for (const TimedRunResult& c : r.chips) {
    fastest = std::min(fastest, c.cycles);
    slowest = std::max(slowest, c.cycles);
  }
  double max_use = 0, sum_use = 0;
  const double cycles = static_cast<double>(std::max<uint64_t>(r.cycles, 1));
  for (const LinkUse& l : r.links) {
    double use = static_cast<double>(l.busy_cycles) / cycles;
    max_use = std::max(max_use, use);
    sum_use += use;
  }
  auto us = [&](uint64_t c) { return static_cast<double>(c) / chip.clock_hz * 1e6; };
  return fmt::format(
      "pod: {} chips, {} cycles ({:.3f} us at {:.3g} GHz), {} instructions, {} DMAs\n"
      "per chip: {:.3f} us fastest, {:.3f} us slowest\n"
      "ICI: {:.4g} MB moved (link-hops); DCN: {:.4g} MB\n"
      "links used: {}, utilisation max {:.1f}%, mean {:.1f}%\n",
      r.chips.size(), r.cycles, r.seconds * 1e6, chip.clock_hz / 1e9, r.instructions, r.dmas,
      us(fastest), us(slowest), r.ici_bytes / 1e6, r.dcn_bytes / 1e6, r.links.size(),
      100.0 * max_use, r.links.empty() ? 0.0 : 100.0 * sum_use / static_cast<double>(r.links.size()));
}

namespace {

template <class Registry>
void describe(const Registry& registry, std::string_view kind, const std::string& chosen,
              const topology::PodConfig& pod, std::vector<ModelInfo>& out) {
  for (const std::string& name : registry.names()) {
    const ModelDeclaration& d = registry.declaration(name);
    ModelInfo info{std::string(kind), name, name == chosen, std::string(d.summary), {}, {}};
    for (std::string_view p : d.parameters) {
      const std::optional<topology::NamedField> f = topology::find_field(pod, p);
      info.parameters.push_back({std::string(p), f ? f->text : "?",
                                 f ? std::string(f->meaning) : "(no such field)"});
    }
    for (const StatisticDeclaration& s : d.statistics)
      info.statistics.push_back({std::string(s.name), std::string(s.unit), std::string(s.meaning)});
    out.push_back(std::move(info));
  }
}

}  // namespace

std::vector<ModelInfo> describe_models(const topology::PodConfig& pod) {
  const TimingOptions defaults;
  return Kernel::instance().run([&] {
    std::vector<ModelInfo> out;
    describe(mxu_models(), "mxu", defaults.mxu_model, pod, out);
    describe(vpu_models(), "vpu", defaults.vpu_model, pod, out);
    describe(dma_models(), "dma", defaults.dma_model, pod, out);
    describe(hbm_models(), "hbm", defaults.hbm_model, pod, out);
    describe(interconnect_models(), "interconnect", defaults.interconnect_model, pod, out);
    return out;
  });
}

std::vector<std::string> registered_unit_models(std::string_view kind) {
  return Kernel::instance().run([&]() -> std::vector<std::string> {
    if (kind == "mxu") return mxu_models().names();
    if (kind == "vpu") return vpu_models().names();
    if (kind == "dma") return dma_models().names();
    if (kind == "hbm") return hbm_models().names();
    if (kind == "interconnect") return interconnect_models().names();
    fail("unknown unit kind '{}' (mxu, vpu, dma, hbm, interconnect)", kind);
  });
}

std::string format_instruction_trace(const std::vector<InstructionRecord>& trace,
                                     const isa::Executable& executable) {
  std::string out = "core,pc,instruction,unit,issue,start,end,source_op\n";
  for (const InstructionRecord& r : trace) {
    std::string op;
    if (r.source_op >= 0 && static_cast<size_t>(r.source_op) < executable.source_ops.size())
      op = executable.source_ops[static_cast<size_t>(r.source_op)].instruction;
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.core, r.pc, isa::mnemonic(r.opcode), r.unit,
                       r.issue, r.start, r.end, op);
  }
  return out;
}

std::string format_host_link(const TimedRunResult& r, const topology::ChipConfig& chip) {
  auto seconds = [&](uint64_t c) { return static_cast<double>(c) / chip.clock_hz * 1e6; };
  return fmt::format(
      "host link (apart from the program): parameters {} bytes in {} cycles ({:.3f} us), "
      "outputs {} bytes in {} cycles ({:.3f} us)\n",
      r.host_to_device_bytes, r.host_to_device_cycles, seconds(r.host_to_device_cycles),
      r.device_to_host_bytes, r.device_to_host_cycles, seconds(r.device_to_host_cycles));
}

std::string format_timing_summary(const TimedRunResult& r, const topology::ChipConfig& chip) {
  double mxu_flops = 0, hbm_bytes = 0;
  for (const traces::ChipProfile& c : r.profile.chips)
    for (const traces::Track& t : c.tracks)
      for (const traces::Span& s : t.spans) {
        if (t.category == "mxu") mxu_flops += s.flops;
        if (t.category == "hbm") hbm_bytes += s.bytes;
      }
  double cycles = static_cast<double>(std::max<uint64_t>(r.cycles, 1));
  double peak_flops = 2.0 * chip.mxu_rows * chip.mxu_cols * chip.mxus_per_core * chip.tensor_cores;
  return fmt::format(
      "cycles: {} ({:.3f} us at {:.3g} GHz), {} instructions, {} DMAs\n"
      "MXU utilisation: {:.1f}% ({:.3g} TFLOP/s)\nHBM bandwidth: {:.3g} GB/s ({:.1f}% of peak)\n"
      "{}",
      r.cycles, r.seconds * 1e6, chip.clock_hz / 1e9, r.instructions, r.dmas,
      100.0 * mxu_flops / (peak_flops * cycles), mxu_flops / std::max(r.seconds, 1e-30) / 1e12,
      hbm_bytes / std::max(r.seconds, 1e-30) / 1e9,
      100.0 * hbm_bytes / (chip.hbm_bandwidth_bytes_per_s / chip.clock_hz * cycles),
      format_host_link(r, chip));
}

}  // namespace podsim::sim::timing
