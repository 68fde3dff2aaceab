// The 16-bit float storage types live in common/ so that sim/ can share them.
#pragma once

#include "common/float16.h"

namespace podsim::ir {
using podsim::BFloat16;
using podsim::Half;
}  // namespace podsim::ir
