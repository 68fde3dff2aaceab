// The host-CPU target: compiles an IR module into an executable plan. Each fusion runs
// as one vectorized, TBB-parallel pass over memory without per-op intermediate
// buffers; dot and convolution call OpenBLAS (16-bit floats converted in tiles), which
// reads transposed or batch-broadcast dot operands in place (dot_folding.h);
// while / conditional / call bodies run as nested plans; intermediate buffers are
// reused by liveness. Every other op runs through the reference evaluator's
// implementation, so the CPU target runs every op the evaluator runs. Computes in f32
// for f32 (no bf16 rounding of dots).
//
// Numerics: elementwise ops give the evaluator's bits; reductions and dots may differ
// by reassociation (compiler/cpu/reduce_kernel.h documents the order; dots accumulate
// in the GEMM type). Fusion and reduce results never depend on the thread count.
// Threads: TBB runs the fusions and reductions (CompileOptions::threads bounds it);
// OpenBLAS runs single-threaded inside TBB tasks (large products split into panels).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::cpu {

// Bumped whenever generated plans could change: part of every compile-cache key.
inline constexpr std::string_view kCompilerVersion = "podsim-cpu-2";

struct CompileOptions {
  bool run_passes = true;  // the default pipeline of compiler/passes, then the CPU's own
  int threads = 0;         // 0: TBB's default
};

struct ExecutableStats {
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;
  int64_t alias_bytes = 0;         // outputs that share a buffer with an argument
  int64_t intermediate_bytes = 0;  // peak bytes of intermediate buffers after reuse
  int64_t program_bytes = 0;       // size of the plan (instructions, constants)
  int64_t fusions = 0;
  int64_t steps = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // The optimized module the plan was built from.
  virtual const ir::Module& module() const = 0;
  virtual const ExecutableStats& stats() const = 0;
  // Runs the plan; safe to call from several threads at once (each run has its own
  // buffers). Arguments are checked against the entry's parameter shapes. A tuple root
  // gives one literal per tuple element (nested tuples stay tuples); any other root
  // gives one literal.
  virtual std::vector<ir::Literal> run(std::span<const ir::Literal* const> arguments) const = 0;
  // Runs the plan as every device of the module's replicas x partitions in process, one
  // thread each (ir::run_devices): collectives, replica-id and partition-id are computed
  // by the reference evaluator (exact, deterministic collectives; mismatched ones an
  // error, never a hang), everything else by the plan. arguments[d] are device d's; the
  // result is run()'s for each device. Device threads run outside the thread-count
  // arena (one blocked in a collective must not hold a slot the others need).
  virtual std::vector<std::vector<ir::Literal>> run_devices(
      const std::vector<std::vector<const ir::Literal*>>& arguments) const = 0;
  // run() into `results` as an earlier run() returned them (same shapes): reuses their
  // memory instead of allocating and zero-filling new literals, which matters for
  // large results run in a loop. Throws podsim::Error if the shapes differ or a result
  // is also one of the arguments.
  virtual void run_into(std::span<const ir::Literal* const> arguments,
                        std::vector<ir::Literal>& results) const;
  // A form that compile_serialized() turns back into an equivalent executable (the
  // optimized module's HLO text), for the persistent compile cache.
  virtual std::string serialize() const = 0;
};

std::unique_ptr<Executable> compile(const ir::Module& module, CompileOptions options = {});
// Rebuilds an executable from serialize()'s output without running the passes again.
std::unique_ptr<Executable> compile_serialized(std::string_view serialized,
                                               CompileOptions options = {});

}  // namespace podsim::cpu
