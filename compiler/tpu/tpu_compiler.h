// The TPU target: lowers an IR module to a TensorCore executable (isa/isa.h) for one
// chip configuration. Every array lives in HBM (buffers reused by liveness); each op
// (or fusion) streams tiles HBM -> VMEM with DMAs that overlap the compute, runs
// elementwise work and reductions on the vector unit and dots on the MXUs, and DMAs the
// results back. In straight-line code, elementwise kernels and dots share their tiles
// out among the chip's TensorCores from options.core up (one program per core, barriers
// around the step).
//
// Numerics (DESIGN.md, "TPU numerics"): dots multiply bf16 x bf16 and accumulate in f32;
// f32 operands at DEFAULT precision are rounded to bf16 (one MXU pass, as on real TPUs).
// HIGH/HIGHEST precision on f32 operands is not supported yet (an error). Elementwise
// bf16/f16 ops compute in f32 and round each result, as the reference evaluator does;
// reductions accumulate in f32 and round once at the end.
//
// What cannot be lowered raises podsim::Error "not supported on the TPU target: <op>
// (line N)". The generated code is straight-line (every tile unrolled); README.md lists
// the supported ops.
#pragma once

#include <cstdint>
#include <string_view>

#include "compiler/ir/module.h"
#include "isa/isa.h"
#include "topology/chip_config.h"

namespace podsim::tpu {

// Bumped whenever generated executables could change: part of every compile-cache key.
inline constexpr std::string_view kCompilerVersion = "podsim-tpu-3";

struct Options {
  int core = 0;                // the main TensorCore; steps may also use the cores after it
  int max_tile_vregs = 16;     // vector registers per streamed tile (elementwise, reduce)
  int64_t hbm_alignment = 512; // bytes; every HBM buffer starts on this boundary
};

// Lowers the entry computation of a verified module (run the passes first for fused
// kernels; unfused modules work too, one kernel per op). The executable has a program
// for options.core (first) and, where steps were split over cores, one for each further
// core; the module's entry parameters as its parameters and the root (a tuple's
// elements, flattened) as outputs out0, out1, ...
isa::Executable compile(const ir::Module& module, const topology::ChipConfig& chip, const Options& options = {});

}  // namespace podsim::tpu
