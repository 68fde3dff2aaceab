// A timed run of a pod: construction of its chips and interconnect, and how the run ends.
#include "sim/timing/pod/pod_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace podsim::sim::timing {

PodRun::PodRun(const isa::Executable& executable,
               const std::vector<std::vector<std::vector<uint8_t>>>& parameters,
               const TimingOptions& options)
    : config_(executable.pod.value_or(topology::PodConfig{})), models_(executable) {
  if (!executable.pod) config_.chip = executable.chip;
  const int n = models_.chips();
  pod_ = n > 1;
  // Every chip's parameters, or only the devices' (the chips past them idle).
  const auto given = static_cast<int>(parameters.size());
  const int devices = executable.replicas * executable.partitions;
  if (!(options.timing_only && given == 0) && given != n && given != devices)
    fail("the executable runs on {} chip(s) ({} device(s), the others idle); parameters for {} "
         "given",
         n, devices, given);
  const std::vector<std::vector<uint8_t>> none;
  const std::vector<double> speeds =
      executable.pod ? executable.pod->chip_speeds() : std::vector<double>{1.0};
  chips_.reserve(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d)
    chips_.push_back(std::make_unique<ChipRun>(
        *this, models_.chip(d), d < given ? parameters[static_cast<size_t>(d)] : none,
        options, speeds[static_cast<size_t>(d)]));
  if (executable.pod) {
    torus_.emplace(*executable.pod);
    InterconnectContext context{*executable.pod, *torus_, {}, {}, {}};
    for (auto& chip : chips_) context.recorders.push_back(&chip->recorder());
    context.aborted = [this] { return chips_.front()->aborted(); };
    context.fail = [this](std::exception_ptr error) { abort(error, chips_.front().get()); };
    net_ = interconnect_models().make(options.interconnect_model, config_, context);
    interconnect_model_ = options.interconnect_model;
  }
}

PodRun::~PodRun() = default;

void PodRun::start() {
  for (auto& chip : chips_) chip->start();
  if (net_) net_->start();
}

void PodRun::abort(std::exception_ptr error, ChipRun* from) {
  for (auto& chip : chips_) chip->abort(chip.get() == from ? error : nullptr);
  if (net_) net_->wake();
}

PodRunResult PodRun::finish() {
  if (net_) {
    net_->stop();
    sc_core::sc_start();  // its process ends (it had nothing left to do)
  }
  const bool stuck = std::any_of(chips_.begin(), chips_.end(), [](auto& c) { return c->stuck(); });
  const bool failed = std::any_of(chips_.begin(), chips_.end(), [](auto& c) { return c->error(); });
  if (stuck && !failed) {
    // Nothing left to happen, yet some core has not halted: it waits for a semaphore no
    // DMA will signal, or for a barrier a halted core never reaches.
    std::string where;
    for (auto& chip : chips_)
      if (chip->stuck()) where += chip->describe_stuck_cores(pod_);
    std::exception_ptr error;
    try {
      fail("deadlock at cycle {}: every running core{} is blocked and no DMA is in flight to "
           "release it:{}",
           now_cycles() - chips_.front()->recorder().base(), pod_ ? " of every chip" : "", where);
    } catch (...) {
      error = std::current_exception();
    }
    abort(error, chips_.front().get());
    sc_core::sc_start();  // let the stuck processes see the abort and end
  }
  for (size_t d = 0; d < chips_.size(); ++d) {
    std::exception_ptr error = chips_[d]->error();
    if (!error) continue;
    if (!pod_ || stuck) std::rethrow_exception(error);
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      fail("chip {}: {}", d, e.what());
    }
  }

  PodRunResult r;
  const topology::ChipConfig& chip = models_.chip(0).executable().chip;
  Cycle pod_end = 0;
  for (auto& chip : chips_) pod_end = std::max(pod_end, chip->end_cycle());
  for (size_t d = 0; d < chips_.size(); ++d) {
    TimedRunResult c = chips_[d]->finish(pod_end);
    r.cycles = std::max(r.cycles, c.cycles);
    r.instructions += c.instructions;
    r.dmas += c.dmas;
    r.host_memory_bytes += c.host_memory_bytes;
    for (Hazard& h : c.hazards) {
      if (pod_) h.message = fmt::format("chip {}: {}", d, h.message);
      r.hazards.push_back(std::move(h));
    }
    if (d == 0) {
      r.profile.program = c.profile.program;
      r.profile.source_ops = c.profile.source_ops;
    }
    for (traces::ChipProfile& p : c.profile.chips) {
      if (pod_) {
        const ChipPlace& place = models_.chip(static_cast<int>(d)).place();
        p.name = fmt::format("chip {} ({},{},{}{}) ({})", d, place.xyz[0], place.xyz[1],
                             place.xyz[2], place.slice ? fmt::format(" slice {}", place.slice) : "",
                             chip.name);
      }
      r.profile.chips.push_back(std::move(p));
    }
    c.profile = {};
    for (const StatisticValue& v : c.statistics) {
      r.statistics.push_back(v);
      if (pod_) r.statistics.back().component = fmt::format("chip {} / {}", d, v.component);
    }
    r.chips.push_back(std::move(c));
  }
  // Flows between tracks that made it into the profile (a track without spans is left out).
  for (PendingFlow& f : flows_) {
    auto end = [&](int device, const std::string& track, uint64_t cycle) -> std::optional<traces::FlowEnd> {
      if (static_cast<size_t>(device) >= r.profile.chips.size()) return std::nullopt;
      const std::vector<traces::Track>& tracks = r.profile.chips[static_cast<size_t>(device)].tracks;
      const auto it = std::find_if(tracks.begin(), tracks.end(), [&](const traces::Track& t) { return t.name == track; });
      if (it == tracks.end()) return std::nullopt;
      return traces::FlowEnd{device, static_cast<int32_t>(it - tracks.begin()), cycle};
    };
    const auto from = end(f.from_chip, f.from_track, f.from_cycle), to = end(f.to_chip, f.to_track, f.to_cycle);
    if (from && to) r.profile.flows.push_back({std::move(f.name), *from, *to});
  }
  flows_.clear();
  r.seconds = static_cast<double>(r.cycles) / chip.clock_hz;
  if (net_) {
    for (const LinkState& l : net_->links()) {
      if (l.bytes == 0) continue;
      r.links.push_back({l.name, l.category, l.bytes, l.busy});
      (l.category == "ici" ? r.ici_bytes : r.dcn_bytes) += l.bytes;
    }
    add_statistics(interconnect_models(), interconnect_model_, "interconnect",
                   net_->statistics(), r.statistics);
  }
  return r;
}

}  // namespace podsim::sim::timing
