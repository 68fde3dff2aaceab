// A timed run: construction of the per-run unit models, DMA completion, and how a run
// ends. The per-core issue process is in core_issue.cc.
#include "sim/timing/chip/chip_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace podsim::sim::timing {
namespace {

// A straggler's unit: the model works in the chip's own, slower cycles. Times go in
// divided by the dilation (1 / speed) and come out multiplied, from the run's first cycle;
// a result never starts before it was asked for.
class Dilation {
 public:
  Dilation(double k, Cycle base) : k_(k), base_(base) {}
  Cycle in(Cycle t) const {
    return base_ + static_cast<Cycle>(static_cast<double>(t - base_) / k_);
  }
  UnitTiming out(Cycle asked, UnitTiming u) const {
    const Cycle start = std::max(asked, scale(u.start));
    return {start, std::max(start, scale(u.busy_end)), std::max(start, scale(u.done))};
  }

 private:
  Cycle scale(Cycle t) const {
    return base_ + static_cast<Cycle>(std::ceil(static_cast<double>(t - base_) * k_ - 1e-9));
  }
  double k_;
  Cycle base_;
};

class DilatedMxu final : public MxuModel {
 public:
  DilatedMxu(std::unique_ptr<MxuModel> m, double k, Cycle base) : m_(std::move(m)), d_(k, base) {}
  UnitTiming load_weights(Cycle t, int64_t k_rows) override {
    return d_.out(t, m_->load_weights(d_.in(t), k_rows));
  }
  UnitTiming multiply(Cycle t, int64_t m_rows, bool accumulate) override {
    return d_.out(t, m_->multiply(d_.in(t), m_rows, accumulate));
  }
  UnitTiming pop(Cycle t, int64_t m_rows) override { return d_.out(t, m_->pop(d_.in(t), m_rows)); }
  bool pop_is_queued() const override { return m_->pop_is_queued(); }
  std::vector<double> statistics() const override { return m_->statistics(); }

 private:
  std::unique_ptr<MxuModel> m_;
  Dilation d_;
};

class DilatedVpu final : public VpuModel {
 public:
  DilatedVpu(std::unique_ptr<VpuModel> m, double k, Cycle base) : m_(std::move(m)), d_(k, base) {}
  UnitTiming issue(Cycle t, VectorClass kind, int64_t registers) override {
    return d_.out(t, m_->issue(d_.in(t), kind, registers));
  }
  std::vector<double> statistics() const override { return m_->statistics(); }

 private:
  std::unique_ptr<VpuModel> m_;
  Dilation d_;
};

int64_t binding_bytes(const isa::Binding& b) {
  int64_t bytes = isa::dtype_bytes(b.dtype);
  for (int64_t d : b.dims) bytes *= d;
  return bytes;
}

}  // namespace

DmaTransfer outgoing_view(const DmaTransfer& t) {
  DmaTransfer v = t;
  if (t.dst_device >= 0) v.dst.core = -1;
  return v;
}

DmaTransfer incoming_view(const DmaTransfer& t, int src_device) {
  DmaTransfer v = t;
  v.id = (uint64_t{1} << 63) | (static_cast<uint64_t>(src_device) << 40) | t.id;
  v.semaphore = t.dst_semaphore;
  v.src.core = -1;
  return v;
}

ChipRun::ChipRun(PodContext& pod, FunctionalModel& model,
                 const std::vector<std::vector<uint8_t>>& parameters, const TimingOptions& options,
                 double speed)
    : pod_(pod),
      model_(model),
      options_(options),
      latencies_(unit_latencies(model_.executable().chip)),
      dilation_(1.0 / speed),
      base_(now_cycles()),
      recorder_(model_.executable(), base_, options.profile, options.instruction_trace) {
  const isa::Executable& exe = model_.executable();
  const topology::ChipConfig& chip = exe.chip;
  // A chip past the executable's devices jumps to its halt: it needs no parameters.
  const bool idle = model_.place().device >= exe.replicas * exe.partitions;
  const bool omitted = parameters.empty() && (options.timing_only || idle);
  if (!omitted && parameters.size() != exe.parameters.size())
    fail("the executable takes {} parameter(s), {} given", exe.parameters.size(),
         parameters.size());
  model_.set_compute_data(!options.timing_only);
  for (size_t k = 0; k < parameters.size() && !omitted; ++k)
    model_.set_parameter(static_cast<int>(k), parameters[k]);  // timing-only: checked only
  if (options.check_hazards) hazards_ = std::make_unique<HazardChecker>(exe, base_, model_.place().device);
  if (options.profile_host_link) host_track_ = recorder_.add_track("Host link", "host", 0);
  host_in_ = host_transfers(exe.parameters, true, 0);
  if (options.profile_host_link) recorder_.set_profile_shift(host_in_);

  hbm_ = hbm_models().make(options.hbm_model, pod_.config(), UnitContext{});
  hbm_track_ = recorder_.add_track("HBM", "hbm", 0, true);
  hbm_->set_traffic_hook([this](Cycle s, Cycle e, double bytes) {
    if (recorder_.profiling()) recorder_.hbm_traffic(s, e, bytes);
  });
  for (int c = 0; c < chip.tensor_cores; ++c) {
    auto core = std::make_unique<Core>();
    core->index = c;
    for (const isa::Program& p : exe.programs)
      if (p.core == c) core->program = &p;
    std::string prefix = fmt::format("TensorCore {} / ", c);
    UnitContext context{c, 0};
    core->scalar_track = recorder_.add_track(prefix + "scalar issue", "scalar", 16);
    core->vpu_track = recorder_.add_track(prefix + "VPU", "vpu", 16);
    core->vpu = vpu_models().make(options.vpu_model, pod_.config(), context);
    if (dilation_ != 1) core->vpu = std::make_unique<DilatedVpu>(std::move(core->vpu), dilation_, base_);
    for (int m = 0; m < chip.mxus_per_core; ++m) {
      Mxu mxu;
      context.index = m;
      mxu.model = mxu_models().make(options.mxu_model, pod_.config(), context);
      if (dilation_ != 1)
        mxu.model = std::make_unique<DilatedMxu>(std::move(mxu.model), dilation_, base_);
      mxu.track = recorder_.add_track(fmt::format("{}MXU {}", prefix, m), "mxu", 0);
      mxu.weight_track = recorder_.add_track(fmt::format("{}MXU {} weights", prefix, m), "mxu", 0);
      mxu.result_track = recorder_.add_track(fmt::format("{}MXU {} results", prefix, m), "mxu", 0);
      core->mxus.push_back(std::move(mxu));
    }
    for (int d = 0; d < chip.dma_engines; ++d) {
      context.index = d;
      core->engines.push_back(dma_models().make(options.dma_model, pod_.config(), context, *this));
      core->dma_tracks.push_back(recorder_.add_track(fmt::format("{}DMA {}", prefix, d), "dma", 0));
    }
    core->vmem_ports = std::make_unique<VmemPorts>(latencies_.vmem_ports);
    core->vmem_banks = std::make_unique<VmemBanks>(latencies_);
    core->vmem_port = make_vmem_dma_port(latencies_, *core->vmem_ports);
    core->vreg_ready.assign(static_cast<size_t>(std::max(chip.vector_registers, 1)), 0);
    cores_.push_back(std::move(core));
  }
}

ChipRun::~ChipRun() = default;

void ChipRun::start() {
  for (auto& core : cores_) {
    for (auto& engine : core->engines) engine->start();
    if (!core->program) continue;
    ++live_cores_;
    Core* c = core.get();
    sc_core::sc_spawn([this, c] { run_core(*c); });
  }
  if (live_cores_ == 0) finishing_ = true;
}

MemoryTarget& ChipRun::memory(isa::MemorySpace space, int core) {
  if (space == isa::MemorySpace::kHbm) return *hbm_;
  return *cores_[static_cast<size_t>(core)]->vmem_port;
}

MemoryTarget& ChipRun::remote_memory(const DmaTransfer& t) {
  return pod_.chip(t.dst_device).memory(t.dst.space, t.dst.core);
}

Interconnect* ChipRun::interconnect() { return pod_.interconnect(); }

void ChipRun::remote_issued(int src_device, const DmaTransfer& t, Cycle cycle,
                            int32_t source_op) {
  if (hazards_) hazards_->dma_issued(incoming_view(t, src_device), cycle, source_op);
}

std::optional<uint64_t> ChipRun::remote_landed(int src_device, const DmaTransfer& t, Cycle first, Cycle cycle,
                                                int32_t source_op) {
  cores_[static_cast<size_t>(t.core)]->sem_event.notify();
  if (hazards_) hazards_->dma_completed(incoming_view(t, src_device).id, cycle);
  if (!recorder_.profiling()) return std::nullopt;
  // The transfer from its first burst landing here to its last, on a track of the
  // transfers coming in (and on HBM's, which takes the writes).
  const std::string name = fmt::format("dma from chip {}", src_device);
  const auto bytes = static_cast<double>(t.bytes);
  if (incoming_track_ < 0) incoming_track_ = recorder_.add_track("DMA in from other chips", "dma", 0, true);
  recorder_.span(incoming_track_, name, first, cycle, source_op, 0, bytes);
  if (t.dst.space == isa::MemorySpace::kHbm) recorder_.span(hbm_track_, name, first, cycle, source_op, 0, bytes);
  return recorder_.profile_time(first);
}

bool ChipRun::lands_after_earlier(const DmaTransfer& t) const {
  for (const DmaTransfer& e : model_.dmas_in_flight()) {  // in issue order
    if (e.id >= t.id) break;
    if (e.dst_device == t.dst_device) return true;
  }
  return false;
}

void ChipRun::dma_completed(const DmaJob& job, int engine_core, int engine,
                            const DmaTiming& timing) {
  if (job.transfer.dst_device >= 0 && lands_after_earlier(job.transfer)) {
    held_.push_back({job, engine_core, engine, timing});
    return;
  }
  land(job, engine_core, engine, timing);
  // Held transfers to that chip whose turn it now is land now.
  for (auto it = held_.begin(); it != held_.end();) {
    if (lands_after_earlier(it->job.transfer)) {
      ++it;
      continue;
    }
    HeldLanding h = std::move(*it);
    held_.erase(it);
    h.timing.end = std::max(h.timing.end, timing.end);
    land(h.job, h.engine_core, h.engine, h.timing);
    it = held_.begin();
  }
}

void ChipRun::dma_source_read(const DmaJob& job, Cycle cycle) {
  const DmaTransfer& d = job.transfer;
  model_.source_read(d.id);
  cores_[static_cast<size_t>(d.core)]->sem_event.notify();
  if (hazards_) hazards_->dma_completed(d.id, cycle);  // this chip's side: the read
}

void ChipRun::land(const DmaJob& job, int engine_core, int engine, const DmaTiming& timing) {
  const Cycle start = timing.start, end = timing.end;
  const DmaTransfer& d = job.transfer;
  model_.complete_dma(d.id);
  ++dmas_;
  last_dma_end_ = std::max(last_dma_end_, end);
  cores_[static_cast<size_t>(d.core)]->sem_event.notify();
  if (hazards_ && d.dst_device < 0) hazards_->dma_completed(d.id, end);
  std::optional<uint64_t> landing;
  if (d.dst_device >= 0)
    landing = pod_.chip(d.dst_device).remote_landed(device(), d, timing.landing_start, end, job.source_op);
  if (recorder_.profiling()) {
    auto space = [](const MemoryRange& r) {
      return r.space == isa::MemorySpace::kHbm ? "hbm" : "vmem";
    };
    std::string name = d.dst_device >= 0
                            ? fmt::format("dma {}->chip {} {}", space(d.src), d.dst_device,
                                          space(d.dst))
                            : fmt::format("dma {}->{}", space(d.src), space(d.dst));
    auto bytes = static_cast<double>(d.bytes);
    const int engine_track = cores_[static_cast<size_t>(engine_core)]->dma_tracks[static_cast<size_t>(engine)];
    recorder_.span(engine_track, name, start, timing.busy_end, job.source_op, 0, bytes);
    if (landing)  // an arrow from this engine to where the transfer landed
      pod_.add_flow({name, device(), d.dst_device, recorder_.track_name(engine_track),
                     pod_.chip(d.dst_device).recorder().track_name(pod_.chip(d.dst_device).incoming_track()),
                     recorder_.profile_time(start), *landing});
    int hbm_sides = (d.src.space == isa::MemorySpace::kHbm) +
                    (d.dst.space == isa::MemorySpace::kHbm && d.dst_device < 0);
    if (hbm_sides > 0) {
      recorder_.span(hbm_track_, name, timing.hbm_start, timing.hbm_end, job.source_op, 0,
                     bytes * hbm_sides);
      if (options_.profile_local_flows)  // an arrow from the engine to the HBM traffic it made
        pod_.add_flow({name, device(), device(), recorder_.track_name(engine_track), recorder_.track_name(hbm_track_),
                       recorder_.profile_time(start), recorder_.profile_time(timing.hbm_start)});
    }
  }
  if (recorder_.tracing()) {
    auto it = dma_trace_.find(d.id);
    if (it != dma_trace_.end()) {
      InstructionRecord& r = recorder_.traced(it->second);
      r.start = start - base_;
      r.end = end - base_;
      r.unit = fmt::format("dma{}", engine);
    }
  }
}

Cycle ChipRun::host_transfers(const std::vector<isa::Binding>& bindings, bool to_device,
                              Cycle from) {
  const isa::Executable& exe = model_.executable();
  double bytes_per_cycle = exe.chip.host_link_bandwidth_bytes_per_s / exe.chip.clock_hz;
  auto latency = static_cast<Cycle>(std::max<int64_t>(latencies_.host_link_latency, 0));
  Cycle t = from;
  for (const isa::Binding& b : bindings) {
    int64_t bytes = binding_bytes(b);
    auto transfer =
        static_cast<Cycle>(std::ceil(static_cast<double>(bytes) / bytes_per_cycle - 1e-9));
    Cycle end = t + latency + std::max<Cycle>(transfer, 1);
    if (host_track_ >= 0) {
      bool hbm = exe.regions[static_cast<size_t>(b.region)].space == isa::MemorySpace::kHbm;
      std::string memory = hbm ? "hbm" : "vmem";
      recorder_.profile_span(
          host_track_,
          fmt::format("{} {}", to_device ? "host->" + memory : memory + "->host", b.name), t, end,
          static_cast<double>(bytes));
    }
    t = end;
  }
  return t;
}

Cycle ChipRun::stretch(int64_t cycles) const {
  return static_cast<Cycle>(std::ceil(static_cast<double>(cycles) * dilation_ - 1e-9));
}

Cycle ChipRun::issue_gap(Core& core) {
  if (dilation_ == 1) return 1;
  core.issue_debt += dilation_;
  const auto gap = static_cast<Cycle>(core.issue_debt);
  core.issue_debt -= static_cast<double>(gap);
  return gap;
}

void ChipRun::notify_all() {
  for (auto& core : cores_) {
    core->sem_event.notify(sc_core::SC_ZERO_TIME);
    for (auto& engine : core->engines) engine->wake();
  }
  barrier_event_.notify(sc_core::SC_ZERO_TIME);
}

void ChipRun::fail_run(std::exception_ptr error) {
  pod_.abort(error, this);
}

void ChipRun::abort(std::exception_ptr error) {
  if (!error_) error_ = error;
  aborted_ = true;
  notify_all();
}

void ChipRun::core_done(Core& core) {
  core.done = true;
  if (--live_cores_ == 0) {
    finishing_ = true;
    for (auto& c : cores_)
      for (auto& engine : c->engines) engine->wake();
  }
}

std::string ChipRun::describe_stuck_cores(bool name_the_chip) const {
  std::string out;
  const ChipPlace& p = model_.place();
  for (int c = 0; c < model_.core_count(); ++c) {
    if (name_the_chip && !model_.is_live(c)) continue;
    out += "\n  ";
    if (name_the_chip)
      out += fmt::format("chip {} (slice {}, x {}, y {}, z {}) ", p.device, p.slice, p.xyz[0],
                         p.xyz[1], p.xyz[2]);
    out += model_.describe_core(c);
  }
  return out;
}

Cycle ChipRun::end_cycle() const {
  Cycle end = std::max(last_dma_end_, base_);
  for (auto& core : cores_) end = std::max({end, core->halt_time, core->work_end});
  return end;
}

TimedRunResult ChipRun::finish(Cycle profile_end) {
  const isa::Executable& exe = model_.executable();
  TimedRunResult r;
  const Cycle end = end_cycle();
  r.cycles = end - base_;
  r.seconds = static_cast<double>(r.cycles) / exe.chip.clock_hz;
  r.instructions = instructions_;
  r.dmas = dmas_;
  for (size_t k = 0; k < exe.outputs.size() && !options_.timing_only; ++k)
    r.outputs.push_back(model_.read_output(static_cast<int>(k)));
  r.host_memory_bytes = model_.state().memory_host_bytes();
  r.host_to_device_cycles = host_in_;
  Cycle program_end = host_track_ >= 0 ? host_in_ + r.cycles : 0;
  r.device_to_host_cycles = host_transfers(exe.outputs, false, program_end) - program_end;
  for (const isa::Binding& b : exe.parameters) r.host_to_device_bytes += binding_bytes(b);
  for (const isa::Binding& b : exe.outputs) r.device_to_host_bytes += binding_bytes(b);
  if (options_.profile)
    r.profile = recorder_.finish_profile(exe, std::max(end, profile_end),
                                         host_track_ >= 0 ? r.device_to_host_cycles : 0);
  if (options_.instruction_trace) r.trace = recorder_.finish_trace();
  // Every unit model's statistics (a straggler's MXUs and VPU count their own cycles).
  add_statistics(hbm_models(), options_.hbm_model, "HBM", hbm_->statistics(), r.statistics);
  for (const auto& core : cores_) {
    const std::string prefix = fmt::format("TensorCore {} / ", core->index);
    add_statistics(vpu_models(), options_.vpu_model, prefix + "VPU", core->vpu->statistics(),
                   r.statistics);
    for (size_t m = 0; m < core->mxus.size(); ++m)
      add_statistics(mxu_models(), options_.mxu_model, fmt::format("{}MXU {}", prefix, m),
                     core->mxus[m].model->statistics(), r.statistics);
    for (size_t d = 0; d < core->engines.size(); ++d)
      add_statistics(dma_models(), options_.dma_model, fmt::format("{}DMA {}", prefix, d),
                     core->engines[d]->statistics(), r.statistics);
  }
  if (hazards_) {
    r.hazards = hazards_->take();
    if (options_.hazards_are_errors && !r.hazards.empty()) {
      std::string text;
      for (const Hazard& h : r.hazards) text += "\n  " + h.message;
      fail("{} hazard(s) found (--check-hazards):{}", r.hazards.size(), text);
    }
  }
  return r;
}

}  // namespace podsim::sim::timing
