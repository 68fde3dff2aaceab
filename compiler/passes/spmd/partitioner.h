// The SPMD partitioner's state and its steps (internal to compiler/passes/spmd; the pass
// is passes::make_spmd_partitioner). partitioner.cc says how it partitions; its steps
// live by concept: partitioner.cc (resharding, control flow, the dispatch, running on
// pieces), windowed_ops.cc (slices, pads, concatenates, convolutions and reduce-windows
// whose windows reach other devices' pieces), partial_sums.cc (dots and reductions over
// split dimensions), row_tables.cc (lookups and scatters into tables split by rows).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/passes/spmd/cost_model.h"
#include "compiler/passes/spmd/emitter.h"
#include "compiler/passes/spmd/halos.h"
#include "compiler/passes/spmd/reshard_plan.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes::spmd {

// How the per-device program holds a value: an array under a tiling, a tuple, or a
// value of a manual region (per-device code the user wrote: no tiling).
struct Layout {
  std::optional<Tiling> array;
  std::vector<Layout> elements;
  bool manual = false;
};

struct Held {
  ir::Instruction* hlo = nullptr;
  Layout layout;
};

class Partitioner : public Emitter {
 public:
  Partitioner(ir::Module& module, int64_t devices, const CostModel& costs)
      : Emitter(module, devices), costs_(costs) {}

  void run();

 private:
  static const ir::Shape* subshape(const ir::Shape& s, const std::vector<int64_t>& index);
  ir::Instruction* all_gather(ir::Instruction* x, const Tiling& t, int64_t d);
  ir::Instruction* all_reduce(ir::Instruction* x, std::vector<std::vector<int64_t>> g, ir::Computation* reducer);
  ir::Computation* adder(ir::PrimitiveType type);
  Held reshard(const Held& v, const Tiling& to, const ir::Shape& whole);

  // x's first `size` elements along dimension d.
  ir::Instruction* cut(ir::Instruction* x, int64_t d, int64_t size);

  // Moves the split of dimension a (k pieces) to dimension b: each device cuts its piece
  // into k blocks along b, block j goes to the j-th device of its group along a, and the
  // blocks it receives make its piece whole along a.
  ir::Instruction* all_to_all(ir::Instruction* x, const Tiling& from, int64_t a, int64_t b, const Tiling& to,
                              const ir::Shape& whole);

  // Each device's piece under `to`, cut from its piece under `from`, which holds it. Where
  // a split is uneven, the last pieces run past the value: the source is padded (with
  // zeros) so that no device's slice is moved back by dynamic-slice's clamping.
  ir::Instruction* local_slice(ir::Instruction* x, const Tiling& from, const Tiling& to, const ir::Shape& whole);
  Held to_layout(const Held& v, const Layout& want, const ir::Shape& whole);
  Held replicate(const ir::Instruction& original);
  Tiling target_of(const ir::Instruction& i) const;
  ir::Instruction* clone(const ir::Instruction& i, ir::Shape shape, std::vector<ir::Instruction*> operands);

  // The program every partition runs for computation c, whose parameters it gets as
  // pieces under `params` and whose root it returns under `root`. The entry's parameters
  // keep their shardings (callers read them).
  ir::Computation* partition_computation(const ir::Computation& c, const std::vector<Layout>& params,
                                         const Layout& root, bool entry);

  // Control flow runs on pieces: a while carries its state under its sharding, through a
  // body and condition partitioned for that layout; a call's callee and a conditional's
  // branches are partitioned for the layouts their operands have, and return theirs
  // under the instruction's sharding.
  Held partition_control_flow(const ir::Instruction& i);
  void partition(const ir::Instruction& i);

  // Manual regions (JAX's shard_map): SPMDFullToShardShape hands each device its piece
  // of its operand (split as the operand's sharding says) to per-device code, which runs
  // as written (its collectives too); SPMDShardToFullShape takes each device's result as
  // its piece of a value split as its own sharding says. Returns whether i was one of
  // them.
  bool partition_manual(const ir::Instruction& i);

  // Runs i on pieces: its result tiled as `want` where every operand's dimension maps
  // allow (else with those dimensions whole), each operand resharded to match.
  std::optional<Held> partition_on_pieces(const ir::Instruction& i, const Tiling& want);

  // A slice (stride 1) or pad (no interior padding) that shifts a dimension split in its
  // result runs on pieces: its operand split like the result, each device takes the
  // window of the operand its piece of the result reads (halos from its neighbours; a
  // pad's value where it reads outside the operand), then slices or pads the dimensions
  // that are whole. nullopt where no split dimension shifts, or exchanging the windows
  // costs more than gathering the operand.
  std::optional<Held> partition_shift(const ir::Instruction& i, const Tiling& want);

  // A convolution or reduce-window whose result is split along window dimensions
  // (spatial partitioning) runs on pieces: each device's piece of the result reads a
  // window of the input split the same way, taken with halos from the devices that hold
  // it, zeros (the init value) where it reaches past the input (its padding), and runs
  // with no padding there. nullopt where no such dimension is split, or gathering the
  // input along them costs less.
  std::optional<Held> partition_windowed(const ir::Instruction& i, const Tiling& want);

  // A concatenate along a split dimension runs on pieces: each device's piece of the
  // result is a window of positions, which it takes from each operand split the same way
  // (halos from its neighbours; an operand whose window reaches further, a small one
  // appended, is gathered and the window cut from it) and picks by position.
  std::optional<Held> partition_concatenate(const ir::Instruction& i, const Tiling& want);

  // The cost of a choice: what its collectives take on the pod (cost_model.h). A dot over
  // a split contracting dimension whose result must be whole could gather both operands
  // (two collectives, and the whole dot on every device) or sum partial products (one
  // all-reduce, which the combiner merges with the other gradients'): the latency of
  // each collective's steps, not only its bytes, decides.
  double plan_cost(const ReshardPlan& plan, const Tiling& from, const ir::Shape& whole) const;

  // Of resharding `o` (held) to `to`.
  double cost(const ir::Instruction& o, const Tiling& to) const;

  // Of the collective-permutes forming windows (window_exchange) of x (pieces under t).
  double cost(const WindowExchange& w, const Tiling& t, int64_t d, const ir::Shape& piece) const;

  // Of copying `piece` (a slice or select along dimension d: its runs are the dimensions
  // from d on).
  double copy_cost(const ir::Shape& piece, int64_t d) const;
  std::optional<Held> partition_dot(const ir::Instruction& i, const Tiling& want);

  // Partial results (each group of devices holds parts of one piece under `result`)
  // summed: by a reduce-scatter where `want` splits one more dimension over exactly the
  // group's devices, in group order (FSDP's gradients), else by an all-reduce.
  Held sum_partials(ir::Instruction* x, const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
                    ir::Computation* reducer, const Tiling& want, const ir::Shape& whole);

  // The dimension a reduce-scatter of the partial results over `groups` would split to
  // give `want` (the one more dimension it splits, over exactly each group, in order).
  static std::optional<int64_t> scatter_dim(const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
                                            const Tiling& want, const ir::Shape& whole);

  // An embedding lookup in a table split by rows (Megatron's vocabulary-parallel
  // embedding): each device looks up the indices that fall in its rows, zeros the
  // others, and an all-reduce sums the devices' results (where that moves fewer bytes
  // than gathering the table). The simple form only: rows
  // gathered whole from a table whose first dimension alone is split, evenly; indices
  // clamped to the table first, as gather clamps them.
  std::optional<Held> partition_row_gather(const ir::Instruction& i);

  // A scatter into a table split by rows (a vocabulary-parallel embedding's gradient):
  // each device scatters into its rows with the indices made local to them; updates for
  // other devices' rows fall outside its piece, and scatter skips windows out of bounds,
  // as it skips them in the whole table. The simple form only: scalar row indices into
  // a table whose first dimension alone is split, evenly, whole rows updated.
  std::optional<Held> partition_row_scatter(const ir::Instruction& i);

  // A reduce over split dimensions: each device reduces its piece, an all-reduce with
  // the same reducer combines them (each piece starts from the init value, so it must
  // be the identity).
  std::optional<Held> partition_reduce(const ir::Instruction& i, const Tiling& want);
  const CostModel& costs_;
  std::unordered_map<const ir::Instruction*, Held> held_;
  std::map<ir::PrimitiveType, ir::Computation*> adders_;
};

}  // namespace podsim::passes::spmd
