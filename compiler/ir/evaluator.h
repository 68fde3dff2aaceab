// The reference evaluator: runs any module on given inputs, one op at a time, with
// XLA's HLO semantics. It is the oracle every backend is tested against, so it is
// written to be obviously correct rather than fast. Deterministic: collectives over
// several replicas/partitions reduce in a fixed order.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"

namespace podsim::ir {

struct EvalOptions {
  int64_t replicas = 0;    // 0: the module's replica_count
  int64_t partitions = 0;  // 0: the module's num_partitions
};

// Runs the entry computation on one device (replica 0, partition 0); on a thread that
// run_devices runs as device d, as device d of that run.
Literal evaluate(const Module& module, std::span<const Literal> arguments);

// Runs the entry computation on every device of a replicas x partitions grid in one
// process; device d = replica * partitions + partition. arguments[d] are device d's
// inputs; the result is one literal per device. Collectives with mismatched
// participants are a podsim::Error, never a hang.
std::vector<Literal> evaluate_spmd(const Module& module,
                                   const std::vector<std::vector<Literal>>& arguments,
                                   EvalOptions options = {});

// evaluate_spmd's devices for other executors of a module (the CPU target's plans, which
// run most ops themselves and hand the rest to evaluate()): runs run(d) for every device
// d of a replicas x partitions grid, one thread each. While run(d) runs, evaluate() on
// its thread evaluates as device d: collectives meet the other devices' through the
// run's rendezvous (devices must evaluate the same Instruction objects), replica-id and
// partition-id are d's. Errors as evaluate_spmd reports them (a root cause before the
// collectives it left stuck; mismatched collectives are an error, never a hang).
void run_devices(int64_t replicas, int64_t partitions, const std::function<void(int64_t device)>& run);

// custom-call targets the evaluator can run. Without a handler, a custom-call is an
// error naming its target.
using CustomCallHandler =
    std::function<Literal(const Instruction& instruction, std::span<const Literal* const> operands)>;
void register_custom_call(const std::string& target, CustomCallHandler handler);

}  // namespace podsim::ir
