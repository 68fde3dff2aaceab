// Target-independent optimization passes over the IR, and the pipeline that runs them.
// Every pass keeps the module's results identical to the reference evaluator's (up to
// floating-point reassociation where a pass documents it; none of these passes
// reassociates: results are bit-identical, NaN payloads aside).
// Passes expect a module that ir::verify_module() accepts and leave one it accepts.
// They run over every computation of the module, but leave fusion bodies alone (except
// DCE), never change a computation's parameters or result shape, and never remove or
// merge instructions with side effects (side-effecting custom-calls, collectives, and
// calls of computations containing them) or instructions with control edges.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::topology {
struct PodConfig;
}

namespace podsim::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Returns whether the module changed.
  virtual bool run(ir::Module& module) = 0;
};

struct FusionOptions {
  // Largest number of instructions in one fused computation.
  int max_fused_instructions = 64;
};

// Exact local rewrites: x+(-0), x*1, x/1, integer x+0 / x*0, double negation, composed
// reshapes / transposes / broadcasts, identity data movement, ... (list and the
// floating-point rules at the top of algebraic_simplifier.cc).
std::unique_ptr<Pass> make_algebraic_simplifier();
// Replaces instructions whose operands are all constants by the constant the reference
// evaluator computes (limits on size and cost in constant_folding.cc).
std::unique_ptr<Pass> make_constant_folding();
// Merges identical instructions within each computation (linear time).
std::unique_ptr<Pass> make_cse();
// Removes unused instructions (parameters and side effects stay) and computations
// nothing reachable from the entry calls.
std::unique_ptr<Pass> make_dce();
// Groups elementwise ops, broadcasts (and other loop-compatible producers) and
// reductions of them into `fusion` instructions (kind=kLoop, or kInput for a fused
// reduction) whose fused computation a backend runs as one pass over memory. The form
// of the fusions it makes (which ops may appear inside each kind) is documented at the
// top of fusion.cc.
std::unique_ptr<Pass> make_fusion(FusionOptions options = {});

// For targets without 64-bit lanes: s64 -> s32, u64 -> u32, f64 -> f32 everywhere, as
// PyTorch/XLA computes on TPUs. Changes results (integer constants and arguments
// saturate at the 32-bit range, computed integers wrap, f64 rounds) and the entry's
// parameter and result types, so it is not in the default pipeline: callers convert
// arguments with narrow_literal() and results back with convert_literal(). Ops whose
// meaning depends on the width (bitcast-convert, rng-bit-generator) are a podsim::Error.
std::unique_ptr<Pass> make_narrow_64bit_types();
ir::Literal narrow_literal(const ir::Literal& literal);
ir::Shape narrow_64bit_shape(ir::Shape shape);
// Elementwise conversion as the IR's convert does (wrapping, rounding to nearest even).
ir::Literal convert_literal(const ir::Literal& literal, ir::PrimitiveType type);

// Convolution, reduce-window and select-and-scatter as pads, strided slices, a dot (im2col)
// and their called computations inlined over arrays, for targets that lower none of them
// (the TPU target); reduces of at most 16 elements a result along a narrow innermost
// dimension the same way, as windows. Exact with respect to the reference evaluator (convolutions: bf16
// and f16 results accumulate in f32; padding zeros meet infinite kernel values, see
// window_expander.cc). Ops it cannot write so stay as they are (window_expander.cc says
// which). Not in the default pipeline.
std::unique_ptr<Pass> make_window_expander();

// gather with batching dimensions as a gather without them (an iota index column per
// batching dimension; XLA's BatchedGatherScatterNormalizer); exact. Not in the default
// pipeline: the TPU target runs it.
std::unique_ptr<Pass> make_batched_gather_normalizer();

// map with an elementwise computation as that computation's ops over the arrays (XLA's
// MapInliner); exact. Not in the default pipeline: the TPU target runs it.
std::unique_ptr<Pass> make_map_inliner();

// Dots a bf16 matrix unit does not take as they are: integer dots as a broadcast
// multiply and a sum (exact), f32 dots at HIGH / HIGHEST precision as 3 / 6 bf16 passes
// summed in f32, as TPUs do (dot_expander.cc). Not in the default pipeline.
std::unique_ptr<Pass> make_dot_expander();

// batch-norm-training, -inference and -grad as reductions and elementwise ops (XLA's
// BatchNormExpander; 16-bit floats in f32). Within rounding of the evaluator's (which
// computes in double).
std::unique_ptr<Pass> make_batch_norm_expander();

// reduce-precision as integer ops on the float's bits, in its own width; exact.
std::unique_ptr<Pass> make_reduce_precision_expander();

// topk as a stable sort of (values, positions) and slices (XLA's TopkDecomposer); exact.
std::unique_ptr<Pass> make_topk_decomposer();

// Custom calls with a meaning (custom_calls.cc): a target defined by define_custom_calls
// becomes its computation inlined (operands as its parameters; a definition on scalars
// applied to arrays of one shape becomes a map of it); XLA's own targets whose meaning is
// public become a copy of their operand outside SPMD: Sharding, SPMDFullToShardShape,
// SPMDShardToFullShape (after partitioning, or with one partition), annotate_device_placement,
// MoveToHost, MoveToDevice; TopK (XLA's TopkRewriter's) becomes a topk; `domain` a copy.
// Other custom calls stay (the evaluator runs those with a
// handler, ir::register_custom_call). A call whose shapes its definition does not take is
// a podsim::Error naming both.
std::unique_ptr<Pass> make_custom_call_expander();
// What every compile driver (CPU, OpenCL, TPU) runs first, so that each backend runs
// these ops with what it already has: the custom-call expander, the batch-norm,
// reduce-precision and topk expanders.
void expand_composite_ops(ir::Module& module);
// Defines custom-call targets for every later compile, process-wide (as
// ir::register_custom_call): each computation of `definitions` that none of its
// computations calls defines the target of its name (characters an HLO name cannot hold,
// such as '$', written '_'); the others are its helpers (reducers, ...). A later definition
// of a target replaces an earlier one. `source` (a file name) is named in errors.
void define_custom_calls(const ir::Module& definitions, std::string_view source);
void clear_custom_call_definitions();
// Every definition made, printed: part of the runtime's compile-cache key.
std::string custom_call_definitions_key();

// Every async collective (all-reduce-start / -done, ...) becomes its synchronous
// collective, and every copy-start / -done a copy, for targets that run collectives in
// one piece. Not in the default
// pipeline: the TPU target keeps the pairs.
std::unique_ptr<Pass> make_async_collectives_to_sync();

// All-reduces of one array each with the same groups, reducer and element type, none
// needing another's result, become one all-reduce of them all (a tuple; XLA's
// AllReduceCombiner). Not in the default pipeline: spmd_partition runs it.
std::unique_ptr<Pass> make_all_reduce_combiner();
// All-gathers (and reduce-scatters) of one array each with the same groups (reducer)
// and element type, none needing another's result, become one all-gather (reduce-
// scatter) of their data laid out device-major and concatenated, up to 4 MiB (XLA's
// AllGatherCombiner, ReduceScatterCombiner). Not in the default pipeline:
// spmd_partition runs them (FSDP's weight gathers and gradient reduce-scatters).
std::unique_ptr<Pass> make_all_gather_combiner();
std::unique_ptr<Pass> make_reduce_scatter_combiner();

// SPMD (spmd/): for a module of num_partitions > 1 whose instructions may carry
// shardings. Propagation gives every entry instruction a sharding (user shardings win;
// unannotated parameters stay replicated). The partitioner rewrites the entry into the
// program each partition runs on its pieces, with the collectives resharding needs;
// parameters and result keep their shardings (ir::shard_literal says which piece a
// partition passes). podsim::Error naming the instruction for what it cannot partition.
std::unique_ptr<Pass> make_sharding_propagation();
// Where there are ways to choose from (a dot's partial products or gathered operands,
// halos or a gather), the partitioner picks the one whose collectives take least on
// `pod` (partition p on its device p; without a pod, a v5e-like network of one hop
// between any two devices).
std::unique_ptr<Pass> make_spmd_partitioner(const topology::PodConfig* pod = nullptr);
// Propagation, partitioner, all-reduce combiner and DCE, verified; `partitions` > 0
// overrides the module's num_partitions. A module of one partition runs whole: its
// shardings are dropped.
void spmd_partition(ir::Module& module, int64_t partitions = 0, const topology::PodConfig* pod = nullptr);

class Pipeline {
 public:
  Pipeline& add(std::unique_ptr<Pass> pass);
  // Verify the module on entry and after every pass (tests and debugging); off by
  // default. A failure throws podsim::Error naming the pass that broke the module.
  Pipeline& verify_each(bool on);
  // Runs the passes in order; returns whether anything changed.
  bool run(ir::Module& module);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  bool verify_each_ = false;
};

// simplify -> constant folding -> CSE -> DCE, repeated until a round changes nothing
// (at most 8 rounds), then fusion and a final DCE.
Pipeline default_pipeline(FusionOptions fusion = {});

}  // namespace podsim::passes
