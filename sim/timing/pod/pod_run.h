// Internal to sim/timing: one timed run of a pod (a single chip is a pod of one): the
// functional pod model, one ChipRun per chip, and the interconnect between them, wired
// from the executable's PodConfig. Built on the SystemC kernel thread while the kernel is
// paused, like ChipRun; start(), sc_start(), finish().
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "sim/functional/pod_model.h"
#include "sim/timing/chip/chip_run.h"
#include "sim/timing/interconnect/interconnect.h"
#include "sim/timing/timed_chip.h"
#include "topology/torus.h"

namespace podsim::sim::timing {

class PodRun final : public PodContext {
 public:
  // parameters[device]: that chip's parameters (or none at all in a timing-only run).
  PodRun(const isa::Executable& executable,
         const std::vector<std::vector<std::vector<uint8_t>>>& parameters,
         const TimingOptions& options);
  ~PodRun() override;

  void start();
  // After sc_start() returned: throws the first chip's error (naming the chip on a pod)
  // or a deadlock report over every chip, else returns the result.
  PodRunResult finish();

  int chips() const { return static_cast<int>(chips_.size()); }
  ChipRun& chip(int device) override { return *chips_.at(static_cast<size_t>(device)); }
  Interconnect* interconnect() override { return net_.get(); }
  const topology::PodConfig& config() const override { return config_; }
  void abort(std::exception_ptr error, ChipRun* from) override;
  void add_flow(PendingFlow flow) override { flows_.push_back(std::move(flow)); }

 private:
  std::vector<PendingFlow> flows_;  // tracks by name, resolved in finish()
  topology::PodConfig config_;  // the executable's pod, or a pod of its one chip
  PodFunctionalModel models_;
  std::optional<topology::Torus> torus_;
  std::vector<std::unique_ptr<ChipRun>> chips_;
  std::unique_ptr<Interconnect> net_;
  std::string interconnect_model_;  // its registered name
  bool pod_ = false;  // more than one chip: messages and profiles name the chip
};

}  // namespace podsim::sim::timing
