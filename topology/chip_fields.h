// The table of ChipConfig's fields (see field_table.h). Internal to topology/.
#pragma once

#include <span>

#include "topology/chip_config.h"
#include "topology/field_table.h"

namespace podsim::topology {

using ChipField = Field<ChipConfig>;

std::span<const ChipField> chip_fields();

}  // namespace podsim::topology
