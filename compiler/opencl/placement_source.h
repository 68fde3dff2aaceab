// Internal to the OpenCL target: kernels whose results land where data says - sort,
// scatter and select-and-scatter - applying their computations in the reference
// evaluator's order. Arguments as make_kernel_source's (kernel_source.h) unless said.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir/instruction.h"
#include "compiler/opencl/kernel_source.h"

namespace podsim::opencl {

// Sort, stably: each element goes to its rank in its line (quadratic in the line length:
// nullopt for lines longer than 16384, and for comparators the emitter cannot lower).
std::optional<KernelSource> make_sort_source(const ir::Instruction& sort, const std::string& name);

// Select-and-scatter, one work-item per result element (the windows covering it, in
// source order); nullopt with dilation, reversal or negative padding.
std::optional<KernelSource> make_select_and_scatter_source(const ir::Instruction& sas,
                                                           const std::string& name);

// The update kernel of a scatter (N operands, indices, N updates): its arguments are
// the indices and updates, then the N results, which must hold the operands already (the
// caller copies them first); nullopt where the update has no OpenCL lowering, or would
// run on a single work-item (windows extending along a dimension the indices move)
// with too many updates to be worth it.
std::optional<KernelSource> make_scatter_source(const ir::Instruction& scatter,
                                                const std::string& name);

}  // namespace podsim::opencl
