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
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"
#include "isa/isa.h"
#include "topology/chip_config.h"
#include "topology/pod_config.h"

namespace podsim::tpu {

// Bumped whenever generated executables could change: part of every compile-cache key.
inline constexpr std::string_view kCompilerVersion = "podsim-tpu-4";

// What a module is compiled for: one chip, or every chip of a pod running the same
// program (SPMD), each chip one device (device = replica * partitions + partition).
struct Target {
  topology::ChipConfig chip;
  std::optional<topology::PodConfig> pod;  // collectives run on its torus
  int64_t replicas = 1;
  int64_t partitions = 1;

  Target(topology::ChipConfig chip) : chip(std::move(chip)) {}  // NOLINT: a chip is a target
  // Every chip of the pod a device: `replicas` of them (the pod's chip count when 0),
  // the rest partitions.
  explicit Target(topology::PodConfig pod, int64_t replicas = 0);
  // replicas x partitions devices on the first chips in device order (as XLA's default
  // device assignment places them); the other chips stay idle. podsim::Error when the
  // pod has fewer chips than that.
  Target(topology::PodConfig pod, int64_t replicas, int64_t partitions);
  int64_t devices() const { return replicas * partitions; }
};

struct Options {
  int core = 0;                // the main TensorCore; steps may also use the cores after it
  int max_tile_vregs = 16;     // vector registers per streamed tile (elementwise, reduce)
  int64_t hbm_alignment = 512; // bytes; every HBM buffer starts on this boundary
  // Run the pass pipeline first: 64-bit types narrowed to 32 (the chip has no 64-bit
  // lanes; callers narrow arguments and widen results, passes/pass.h), then the default
  // pipeline (simplification, fusion). false lowers the module as it is (tests of one
  // lowering, `podsim compile --no-passes`); a 64-bit type is then an error.
  bool passes = true;
  // How all-reduces, reduce-scatters and all-gathers move data: chosen per instruction by
  // the pod's cost model (kAuto), or forced (tests and benchmarks of each algorithm).
  // kRing: over rings on the torus (an all-reduce as reduce-scatter then all-gather);
  // kOneShot: every chip sends its array (a reduce-scatter: each chunk) to every other
  // chip of its group at once (the latency-bound choice), an all-reduce then reducing
  // them all where the group's arrays fit in half the chip's VMEM (else the rings);
  // kTwoShot: an all-reduce as a one-shot reduce-scatter then a one-shot all-gather
  // (G times less over the links than kOneShot, twice its latency); others as kOneShot.
  enum class AllReduce { kAuto, kRing, kOneShot, kTwoShot };
  AllReduce all_reduce = AllReduce::kAuto;
  // Latency hiding: each ring collective is lowered as soon as its operands are (not
  // where the module places it), and the steps of instructions independent of it run
  // between its ring steps, while its transfers are in flight (Lowerer::overlap_point).
  // false: every collective runs alone, where the module places it.
  bool overlap_collectives = true;
};

// The one compile driver: the passes (options.passes) on a copy of the verified module,
// then its entry computation lowered. The executable has a program for options.core
// (first) and, where steps were split over cores, one for each further core; the
// module's entry parameters as its parameters and the root (a tuple's elements,
// flattened) as outputs out0, out1, ...; for a pod target, the pod, replicas and
// partitions, and collectives lowered to remote DMAs over the torus.
isa::Executable compile(const ir::Module& module, const Target& target, const Options& options = {});

// Host side of an executable compiled with options.passes: an argument's bytes as the
// executable takes it (64-bit types narrowed), and output k's bytes, as a run returns
// them, as a literal of the module's shape (widened back; podsim::Error naming `run` and
// k when the size is wrong).
std::vector<uint8_t> parameter_bytes(const ir::Literal& argument);
ir::Literal output_literal(std::span<const uint8_t> bytes, const ir::Shape& shape, size_t k,
                           std::string_view run);

}  // namespace podsim::tpu
