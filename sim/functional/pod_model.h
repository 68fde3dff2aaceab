// The functional model of a pod: one FunctionalModel per chip, all sharing the
// executable, each with its own (sparse) memories, in device order (topology/torus.h).
// dma.remote copies between them; run_to_completion() runs every chip deterministically
// and reports a deadlock across chips (a core waiting for a semaphore no chip will
// signal) with each blocked chip's device id, coordinates, pc and instruction.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"

namespace podsim::sim {

class PodFunctionalModel {
 public:
  // The chips of executable.pod (one chip when it has none); checks the executable once.
  explicit PodFunctionalModel(isa::Executable executable);

  int chips() const { return static_cast<int>(chips_.size()); }
  FunctionalModel& chip(int device) { return chips_.at(static_cast<size_t>(device)); }
  const FunctionalModel& chip(int device) const { return chips_.at(static_cast<size_t>(device)); }
  std::span<FunctionalModel> all() { return chips_; }

  void set_compute_data(bool on);
  RunStats run_to_completion(int64_t max_steps) { return run_functional(chips_, max_steps); }

  // Host bytes used by every chip's simulated memories.
  int64_t memory_host_bytes() const;

 private:
  std::vector<FunctionalModel> chips_;
};

}  // namespace podsim::sim
