// Internal to the OpenCL target: OpenCL C source for one instruction (a fusion, or an
// unfused elementwise, index-remapping, gather, dynamic-slice, dynamic-update-slice,
// reduce, reduce-window, floating-point convolution, map or rng-bit-generator op; sort and
// select-and-scatter come from placement_source.h), as one kernel whose arguments are the
// buffers of the instruction's array operands (each distinct operand once, in first-use
// order) followed by the result buffers (one per leaf). Shapes are baked into the source
// as constants, so a kernel is specific to its instruction's shapes.
//
// Layout of the work: an elementwise kernel computes one result element per work-item
// (index math folds broadcasts, transposes, reshapes, slices, pads, concatenations,
// reverses, gathers and dynamic slices into the loads); a reduce computes one result
// element per work-group with a tree reduction in local memory when the reduced extent
// is large, else one per work-item with a loop; a convolution computes one result element
// per work-item, directly (window positions, then input features of the group); a map
// applies its computation per element; rng-bit-generator runs Threefry or Philox per
// output pair or block.
//
// Numerics follow the reference evaluator: 16-bit floats are stored as 16 bits and
// computed in f32, rounded back after every op; f32 division and square root are
// correctly rounded (the program is built with -cl-fp32-correctly-rounded-divide-sqrt)
// and nothing outside GEMMs is contracted into FMAs, so elementwise ops on + - * / sqrt and tanh
// give the evaluator's bits; transcendental functions are within the OpenCL C's ulp bounds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/instruction.h"

namespace podsim::opencl {

struct KernelSource {
  std::string name;
  std::string source;                          // one __kernel, plus its helpers
  std::vector<const ir::Instruction*> inputs;  // the operands bound to the buffer arguments
  int64_t global_size = 0;                     // work-items, a multiple of local_size
  int64_t local_size = 0;
  bool uses_fp64 = false;
};

// The kernel for instruction, or nullopt when something in it has no OpenCL lowering
// (the caller then runs the instruction on the host). `name` must be a unique C name.
std::optional<KernelSource> make_kernel_source(const ir::Instruction& instruction,
                                               const std::string& name);

// A kernel copying an array of shape `from` (row-major) into the transposed array whose
// dimension i is from's dimension permutation[i].
KernelSource make_transpose_source(const ir::Shape& from, const std::vector<int64_t>& permutation,
                                   const std::string& name);

// What the kernel generators share: work-group size of one-dimensional launches; the map
// from each distinct source instruction to its buffer argument number, in first-use order
// (the fused computation's parameters by number, or a stand-alone instruction's operands),
// filling `inputs`; whether an instruction computes anything in f64.
inline constexpr int64_t kWorkGroup = 256;
std::map<const ir::Instruction*, int> bind_inputs(const ir::Instruction& instruction,
                                                  std::vector<const ir::Instruction*>& inputs);
bool needs_fp64(const ir::Instruction& instruction);

// The helper functions every program's source starts with (bf16/f16 conversions, tanh,
// float min/max with NaN propagation).
std::string prelude_source(bool fp64);

}  // namespace podsim::opencl
