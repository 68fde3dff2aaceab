#include "sim/functional/pod_model.h"

#include <memory>

#include "topology/torus.h"

namespace podsim::sim {
namespace {

// Where each chip of the executable's pod sits, by device id (one chip without a pod).
std::vector<ChipPlace> chip_places(const isa::Executable& executable) {
  if (!executable.pod) return {ChipPlace{}};
  const topology::Torus torus(*executable.pod);
  std::vector<ChipPlace> places;
  places.reserve(static_cast<size_t>(torus.chips()));
  for (int d = 0; d < torus.chips(); ++d) {
    topology::ChipCoord c = torus.coord(d);
    places.push_back(ChipPlace{d, {c.xyz[0], c.xyz[1], c.xyz[2]}, c.slice, torus.chips()});
  }
  return places;
}

}  // namespace

PodFunctionalModel::PodFunctionalModel(isa::Executable executable) {
  auto shared = std::make_shared<const isa::Executable>(std::move(executable));
  const std::vector<ChipPlace> places = chip_places(*shared);
  // The chips refer to each other through this buffer: reserve it once, never grow it.
  chips_.reserve(places.size());
  std::span<FunctionalModel> peers(chips_.data(), places.size());
  for (const ChipPlace& place : places) chips_.emplace_back(shared, place, peers);
}

void PodFunctionalModel::set_compute_data(bool on) {
  for (FunctionalModel& chip : chips_) chip.set_compute_data(on);
}

int64_t PodFunctionalModel::memory_host_bytes() const {
  int64_t bytes = 0;
  for (const FunctionalModel& chip : chips_) bytes += chip.state().memory_host_bytes();
  return bytes;
}

}  // namespace podsim::sim
