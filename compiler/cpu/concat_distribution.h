// Internal to the CPU target: a pass over fusion bodies that distributes elementwise
// binary ops over concatenates: op(concatenate(a...), concatenate(b...)) along the same
// dimension becomes concatenate(op(a_i, b_i)...) over the common refinement of their
// pieces (a piece cut by the refinement is sliced; a broadcast scalar is broadcast to
// the segment). Autograd produces this form: the gradient of slicing a tensor into
// pieces (attention's q, k, v) is a sum of zero-padded concatenates, and the block
// engine would select each element from every piece of every concatenate. Exact:
// every element is the same op of the same two values.
#pragma once

#include <memory>

#include "compiler/passes/pass.h"

namespace podsim::cpu {

std::unique_ptr<passes::Pass> make_concat_distribution();

}  // namespace podsim::cpu
