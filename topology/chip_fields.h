// The table of ChipConfig's fields: name, unit, valid range and meaning, with a member
// pointer. Validation, TOML reading and writing, and `podsim topology show` all derive
// from it, so a new field is one line here. Internal to topology/.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "topology/chip_config.h"

namespace podsim::topology {

enum class FieldUnit { kCount, kBytes, kHertz, kBytesPerSecond, kNanoseconds };

struct ChipField {
  std::string_view name;
  FieldUnit unit;
  std::variant<int ChipConfig::*, int64_t ChipConfig::*, double ChipConfig::*> member;
  double min;
  double max;
  std::string_view doc;
  // Optional in a TOML file without `base` (and in older executables): the default of
  // ChipConfig stands.
  bool has_default = false;

  double get(const ChipConfig& c) const;
  void set(ChipConfig& c, double value) const;  // value already range-checked
};

std::span<const ChipField> chip_fields();

}  // namespace podsim::topology
