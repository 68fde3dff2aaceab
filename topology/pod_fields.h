// The table of PodConfig's fields (see field_table.h). Internal to topology/.
#pragma once

#include <span>

#include "topology/field_table.h"
#include "topology/pod_config.h"

namespace podsim::topology {

using PodField = Field<PodConfig>;

std::span<const PodField> pod_fields();

}  // namespace podsim::topology
