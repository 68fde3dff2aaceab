// Internal to the CPU target: the block engine. A BlockProgram evaluates one array
// instruction of a computation (the root) from "sources" (instructions whose values
// are given as buffers: fusion parameters, values computed by earlier stages) through
// elementwise ops and the data-movement ops that only remap indices (broadcast,
// transpose, slice, reverse, reshape, copy, iota, constants). It never materializes
// an intermediate array: each evaluation covers at most kBlockElements indices of the
// root, and every op runs over block-sized scratch arrays in a tight loop.
//
// Index remapping: the indices a block needs are a "context". The root's context is
// the block itself; an elementwise op evaluates its operands in its own context; a
// broadcast/transpose/slice/reverse evaluates its operand in a derived context (the
// remapped indices, computed per block by an AffineMap; where only reads use them and
// the parent's indices are consecutive, the reads walk the map a row at a time
// instead); reshape and copy keep the context (row-major linear indices are
// unchanged). A value of one element is evaluated once per run and repeated where
// needed ("invariant"), over at most as many indices as the root has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "compiler/cpu/block_loops.h"
#include "compiler/cpu/elementwise_ops.h"
#include "compiler/cpu/index_map.h"
#include "compiler/ir/module.h"

namespace podsim::cpu {

// Elements per block: large enough that per-block overhead vanishes, small enough that
// the few scratch arrays an op touches stay in the L1 cache (2048 measured 1.7x faster
// than 4096 on a 10-op f32 chain held in cache).
inline constexpr int64_t kBlockElements = 2048;
inline constexpr size_t kStreamingBytes = size_t{8} << 20;
// Element-operations (indices x per-block tasks) below which a run stays on the
// calling thread.
inline constexpr int64_t kParallelWork = int64_t{1} << 17;

// The root indices of one evaluation: n consecutive indices from start, or the n
// indices listed (n <= kBlockElements).
struct IndexSet {
  int64_t start = 0;
  const int64_t* indices = nullptr;
  int64_t n = 0;
};

class BlockProgram {
 public:
  // Thrown by the constructor for computations whose evaluation would need an absurd
  // number of per-block tasks; the caller runs them another way.
  class TooComplex : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // source_index(i) >= 0: instruction i is read from inputs[source_index(i)];
  // otherwise it must satisfy block_evaluable().
  using SourceIndex = std::function<int(const ir::Instruction*)>;
  BlockProgram(const ir::Instruction& root, const SourceIndex& source_index);
  ~BlockProgram();

  // Whether the engine can compute the instruction from its operands.
  static bool block_evaluable(const ir::Instruction& instruction);

  const ir::Shape& shape() const { return root_shape_; }
  // Whether evaluating `indices` root indices is enough work to be worth handing to
  // TBB's workers: waking them costs microseconds, as much as a few small blocks.
  bool worth_parallel(int64_t indices) const;
  size_t scratch_bytes() const { return scratch_bytes_; }

  // Values that do not depend on the block, computed once per run.
  std::vector<std::byte> prepare(std::span<const std::byte* const> inputs) const;
  // Evaluates the root at the indices of `at`. Returns a pointer to at.n values: into
  // dest when dest is given (it then holds them), else into scratch, an input or the
  // invariants. scratch must hold scratch_bytes().
  const std::byte* eval(std::span<const std::byte* const> inputs, const std::byte* invariants,
                        const IndexSet& at, std::byte* scratch, std::byte* dest) const;
  // out[i] = root[i] for every index, in parallel over blocks. Results of at least
  // kStreamingBytes are written with non-temporal stores: they will not be read from the
  // cache again soon, and the stores skip reading the destination lines first.
  void run(std::span<const std::byte* const> inputs, std::byte* out) const;

 private:
  struct Task;
  struct Context;
  class Builder;

  ir::Shape root_shape_;
  int64_t block_elements_ = 1;  // the most indices one evaluation covers
  std::vector<Task> tasks_;
  std::vector<Context> contexts_;
  size_t scratch_slots_ = 0;
  size_t invariant_bytes_ = 0;
  size_t scratch_bytes_ = 0;
};

}  // namespace podsim::cpu
