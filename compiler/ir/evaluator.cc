// The reference evaluator's driver: evaluates a computation's instructions in order,
// keeping one value per instruction and freeing each after its last use; dispatches
// every opcode to its implementation file; runs control flow, custom calls and, in
// evaluate_spmd, one thread per device meeting at collectives (evaluator_rendezvous.cc).
#include "compiler/ir/evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "compiler/ir/eval/collectives.h"
#include "compiler/ir/eval/elementwise.h"

namespace podsim::ir {
namespace {

using eval::describe;

// Deeper nesting of call / while / conditional bodies means a computation calls itself.
constexpr int kMaxCallDepth = 256;
// One thread per device: more than this is not a simulation this evaluator can run.
constexpr int64_t kMaxDevices = 4096;

// The device a run_devices thread runs as: evaluate() there evaluates as it.
struct RunningDevice {
  eval::DeviceGrid grid;
  int64_t device;
  eval::Rendezvous* rendezvous;
};
thread_local const RunningDevice* current_device = nullptr;

std::mutex& custom_call_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, CustomCallHandler>& custom_call_handlers() {
  static std::map<std::string, CustomCallHandler> handlers;
  return handlers;
}

// Operand slots and last uses of one computation's instructions.
struct Plan {
  std::vector<std::vector<size_t>> operands;  // slot of each operand
  std::vector<std::vector<bool>> movable;     // operand dies here and is used once: may be moved from
  std::vector<std::vector<size_t>> release;   // slots whose last use is this instruction
  size_t root = 0;
};

Plan make_plan(const Computation& computation) {
  const auto& instructions = computation.instructions();
  size_t n = instructions.size();
  if (computation.root() == nullptr) fail("computation {} has no root instruction", computation.name());
  for (int64_t p = 0; p < computation.parameter_count(); ++p)
    if (computation.parameter(p) == nullptr) fail("computation {} has no parameter {}", computation.name(), p);
  Plan plan;
  plan.operands.resize(n);
  plan.movable.resize(n);
  plan.release.resize(n);
  std::unordered_map<const Instruction*, size_t> slot;
  std::vector<size_t> last_use(n);
  for (size_t i = 0; i < n; ++i) {
    const Instruction& instruction = *instructions[i];
    if (instruction.opcode() == Opcode::kParameter) {
      int64_t number = instruction.attrs().parameter_number;
      if (number < 0 || number >= computation.parameter_count() || computation.parameter(number) != &instruction)
        fail("computation {}: parameter {} has number {}, which is out of range or taken twice", computation.name(),
             describe(instruction), number);
    }
    for (const Instruction* operand : instruction.operands()) {
      auto it = slot.find(operand);
      if (it == slot.end())
        fail("computation {}: operand {} of {} is not defined before it", computation.name(),
             operand ? operand->name() : "<null>", describe(instruction));
      plan.operands[i].push_back(it->second);
      last_use[it->second] = i;
    }
    last_use[i] = i;
    slot[&instruction] = i;
  }
  auto root = slot.find(computation.root());
  if (root == slot.end()) fail("computation {}: root is not one of its instructions", computation.name());
  plan.root = root->second;
  last_use[plan.root] = n;
  for (size_t s = 0; s < n; ++s)
    if (last_use[s] < n) plan.release[last_use[s]].push_back(s);
  for (size_t i = 0; i < n; ++i) {
    const auto& ops = plan.operands[i];
    for (size_t s : ops)
      plan.movable[i].push_back(last_use[s] == i && std::count(ops.begin(), ops.end(), s) == 1);
  }
  return plan;
}

// An instruction's value: owned, or borrowed from a constant or a caller's argument.
struct Value {
  std::optional<Literal> owned;
  const Literal* borrowed = nullptr;
  const Literal& get() const { return owned ? *owned : *borrowed; }
};

// The operands of the instruction being evaluated.
class OperandValues {
 public:
  OperandValues(std::vector<Value>& values, const std::vector<size_t>& slots, const std::vector<bool>& movable)
      : values_(values), slots_(slots), movable_(movable) {
    for (size_t s : slots) pointers_.push_back(&values[s].get());
  }
  eval::Operands all() const { return pointers_; }
  size_t size() const { return pointers_.size(); }
  const Literal& get(size_t k) const { return *pointers_[k]; }
  bool movable(size_t k) const { return movable_[k] && values_[slots_[k]].owned.has_value(); }
  // The operand's value, moved out when nothing later needs it.
  Literal take(size_t k) {
    if (movable(k)) return std::move(*values_[slots_[k]].owned);
    return *pointers_[k];
  }

 private:
  std::vector<Value>& values_;
  const std::vector<size_t>& slots_;
  const std::vector<bool>& movable_;
  std::vector<const Literal*> pointers_;
};

const Computation& called(const Instruction& instruction, size_t i) {
  if (instruction.called().size() <= i || instruction.called(static_cast<int64_t>(i)) == nullptr)
    fail("{} of {} needs a called computation #{}", opcode_name(instruction.opcode()), describe(instruction), i);
  return *instruction.called(static_cast<int64_t>(i));
}

void expect_operands(const Instruction& instruction, const OperandValues& ops, size_t count) {
  if (ops.size() != count)
    fail("{} of {} takes {} operand(s), got {}", opcode_name(instruction.opcode()), describe(instruction), count,
         ops.size());
}

class DeviceEvaluator final : public eval::DeviceContext {
 public:
  DeviceEvaluator(eval::DeviceGrid grid, int64_t device, eval::Rendezvous& rendezvous)
      : grid_(grid), device_(device), rendezvous_(rendezvous) {}

  Literal call(const Computation& computation, std::vector<Literal> args) override {
    return run(computation, args, true);
  }
  int64_t replica_id() const override { return device_ / grid_.partitions; }
  int64_t partition_id() const override { return device_ % grid_.partitions; }
  const eval::DeviceGrid& grid() const override { return grid_; }
  int64_t device() const override { return device_; }
  eval::Rendezvous& rendezvous() override { return rendezvous_; }

  // Evaluates computation on args. With give_args the caller hands the (non-const)
  // arguments over and parameters may be moved from; otherwise they are borrowed.
  Literal run(const Computation& computation, std::span<const Literal> args, bool give_args);

 private:
  const Plan& plan(const Computation& computation) {
    auto it = plans_.find(&computation);
    if (it == plans_.end()) it = plans_.emplace(&computation, make_plan(computation)).first;
    return it->second;
  }
  Literal dispatch(const Instruction& instruction, OperandValues& ops);
  Literal run_while(const Instruction& instruction, OperandValues& ops);
  Literal run_conditional(const Instruction& instruction, OperandValues& ops);
  Literal run_custom_call(const Instruction& instruction, OperandValues& ops);

  eval::DeviceGrid grid_;
  int64_t device_;
  eval::Rendezvous& rendezvous_;
  std::unordered_map<const Computation*, Plan> plans_;
  int depth_ = 0;
};

Literal DeviceEvaluator::run(const Computation& computation, std::span<const Literal> args, bool give_args) {
  if (depth_ >= kMaxCallDepth)
    fail("computation {} is nested more than {} calls deep; does a computation call itself?", computation.name(),
         kMaxCallDepth);
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(++d) {}
    ~DepthGuard() { --depth; }
  } guard(depth_);
  const Plan& p = plan(computation);
  if (static_cast<int64_t>(args.size()) != computation.parameter_count())
    fail("computation {} takes {} argument(s), got {}", computation.name(), computation.parameter_count(),
         args.size());
  const auto& instructions = computation.instructions();
  std::vector<Value> values(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    Value& value = values[i];
    if (instruction.opcode() == Opcode::kParameter) {
      const Literal& arg = args[static_cast<size_t>(instruction.attrs().parameter_number)];
      if (!arg.shape().compatible(instruction.shape()))
        fail("parameter {} of computation {} has shape {} but is given {}", describe(instruction),
             computation.name(), instruction.shape().to_string(false), arg.shape().to_string(false));
      if (give_args) value.owned = std::move(const_cast<Literal&>(arg));
      else value.borrowed = &arg;
    } else if (instruction.opcode() == Opcode::kConstant) {
      const auto& literal = instruction.attrs().literal;
      if (!literal || !literal->shape().compatible(instruction.shape()))
        fail("constant {} has no value of its shape {}", describe(instruction), instruction.shape().to_string(false));
      value.borrowed = &*literal;
    } else {
      OperandValues ops(values, p.operands[i], p.movable[i]);
      try {
        value.owned = dispatch(instruction, ops);
      } catch (const eval::LocatedError&) {
        throw;
      } catch (const Error& e) {
        std::string message = e.what();
        if (message.find(describe(instruction)) != std::string::npos) throw eval::LocatedError(message);
        throw eval::LocatedError(
            fmt::format("{} (evaluating {} in computation {})", message, describe(instruction), computation.name()));
      }
      if (!value.owned->shape().compatible(instruction.shape()))
        throw eval::LocatedError(fmt::format("{} of {} evaluated to shape {} but declares {}",
                                             opcode_name(instruction.opcode()), describe(instruction),
                                             value.owned->shape().to_string(false),
                                             instruction.shape().to_string(false)));
    }
    for (size_t s : p.release[i]) values[s] = Value{};
  }
  Value& root = values[p.root];
  if (root.owned) return std::move(*root.owned);
  return *root.borrowed;
}

Literal DeviceEvaluator::dispatch(const Instruction& instruction, OperandValues& ops) {
  Opcode opcode = instruction.opcode();
  if (is_elementwise(opcode)) return eval::eval_elementwise(instruction, ops.all());
  switch (opcode) {
    case Opcode::kTuple: {
      std::vector<Literal> elements;
      for (size_t k = 0; k < ops.size(); ++k) elements.push_back(ops.take(k));
      return Literal::tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement: {
      expect_operands(instruction, ops, 1);
      int64_t index = instruction.attrs().tuple_index;
      const Literal& tuple = ops.get(0);
      if (!tuple.shape().is_tuple() || index < 0 || index >= tuple.shape().tuple_size())
        fail("get-tuple-element of {}: index {} is out of range for shape {}", describe(instruction), index,
             tuple.shape().to_string(false));
      if (ops.movable(0)) return std::move(ops.take(0).elements()[static_cast<size_t>(index)]);
      return tuple.elements()[static_cast<size_t>(index)];
    }
    case Opcode::kCall:
    case Opcode::kFusion: {
      std::vector<Literal> args;
      for (size_t k = 0; k < ops.size(); ++k) args.push_back(ops.take(k));
      return call(called(instruction, 0), std::move(args));
    }
    case Opcode::kAsyncStart: {  // runs at once: (operands, result, zero context words)
      std::vector<Literal> args, operands;
      for (size_t k = 0; k < ops.size(); ++k) {
        operands.push_back(ops.get(k));
        args.push_back(ops.take(k));
      }
      std::vector<Literal> elements;
      elements.push_back(Literal::tuple(std::move(operands)));
      elements.push_back(call(called(instruction, 0), std::move(args)));
      for (int64_t k = 2; k < instruction.shape().tuple_size(); ++k)
        elements.emplace_back(instruction.shape().element(k));
      return Literal::tuple(std::move(elements));
    }
    case Opcode::kAsyncUpdate: expect_operands(instruction, ops, 1); return ops.take(0);
    case Opcode::kAsyncDone: {
      expect_operands(instruction, ops, 1);
      const Literal& start = ops.get(0);
      if (!start.shape().is_tuple() || start.elements().size() < 2)
        fail("{}: its operand is not the value of an async start", describe(instruction));
      return start.elements()[1];
    }
    case Opcode::kWhile: return run_while(instruction, ops);
    case Opcode::kConditional: return run_conditional(instruction, ops);
    case Opcode::kCustomCall: return run_custom_call(instruction, ops);
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      expect_operands(instruction, ops, 1);
      return ops.take(0);
    case Opcode::kReducePrecision:
      expect_operands(instruction, ops, 1);
      return eval::eval_reduce_precision(instruction, *ops.all()[0]);
    case Opcode::kReplicaId: return Literal::scalar(PrimitiveType::kU32, replica_id());
    case Opcode::kPartitionId: return Literal::scalar(PrimitiveType::kU32, partition_id());
    case Opcode::kRngBitGenerator: return eval::eval_rng_bit_generator(instruction, ops.all());
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kCopy:
    case Opcode::kBitcast: return eval::eval_shape_op(instruction, ops.all());
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
    case Opcode::kMap: return eval::eval_reduction(instruction, ops.all(), *this);
    case Opcode::kDot:
    case Opcode::kConvolution: return eval::eval_linalg(instruction, ops.all());
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return eval::eval_batch_norm(instruction, ops.all());
    case Opcode::kGather:
    case Opcode::kScatter:
    case Opcode::kSort:
    case Opcode::kTopK:
      return eval::eval_indexing(instruction, ops.all(), *this);
    case Opcode::kCopyStart: {  // (destination, source, context)
      expect_operands(instruction, ops, 1);
      std::vector<Literal> parts;
      parts.push_back(*ops.all()[0]);
      parts.push_back(*ops.all()[0]);
      parts.push_back(Literal::scalar(PrimitiveType::kU32, 0));
      return Literal::tuple(std::move(parts));
    }
    case Opcode::kCopyDone:
      expect_operands(instruction, ops, 1);
      return ops.all()[0]->elements().at(0);
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kAllReduceStart:
    case Opcode::kAllGatherStart:
    case Opcode::kCollectivePermuteStart: return eval::eval_collective(instruction, ops.all(), *this);
    case Opcode::kAllReduceDone:
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
      expect_operands(instruction, ops, 1);
      return eval::eval_async_done(instruction, *ops.all()[0]);
    default: break;
  }
  fail("internal: the evaluator has no implementation of {}", opcode_name(opcode));
}

Literal DeviceEvaluator::run_while(const Instruction& instruction, OperandValues& ops) {
  expect_operands(instruction, ops, 1);
  const Computation& condition = called(instruction, 0);
  const Computation& body = called(instruction, 1);
  Literal state = ops.take(0);
  while (true) {
    Literal go = run(condition, std::span<const Literal>(&state, 1), false);
    if (!go.shape().is_scalar() || go.type() != PrimitiveType::kPred)
      fail("while {}: condition {} returned {}; it must return pred[]", describe(instruction), condition.name(),
           go.shape().to_string(false));
    if (!go.data<bool>()[0]) return state;
    std::vector<Literal> args;
    args.push_back(std::move(state));
    state = call(body, std::move(args));
  }
}

Literal DeviceEvaluator::run_conditional(const Instruction& instruction, OperandValues& ops) {
  size_t branches = instruction.called().size();
  if (branches == 0 || ops.size() != branches + 1)
    fail("conditional {}: {} branches need {} operands (selector first), got {}", describe(instruction), branches,
         branches + 1, ops.size());
  const Literal& selector = ops.get(0);
  size_t branch = 0;
  if (selector.shape().is_scalar() && selector.type() == PrimitiveType::kPred) {
    if (branches != 2)
      fail("conditional {}: a pred selector needs 2 branches, got {}", describe(instruction), branches);
    branch = selector.data<bool>()[0] ? 0 : 1;
  } else if (selector.shape().is_scalar() && selector.type() == PrimitiveType::kS32) {
    int32_t index = selector.data<int32_t>()[0];
    // Out-of-range indices run the last branch (XLA semantics).
    branch = (index < 0 || static_cast<size_t>(index) >= branches) ? branches - 1 : static_cast<size_t>(index);
  } else {
    fail("conditional {}: the selector must be pred[] or s32[], got {}", describe(instruction),
         selector.shape().to_string(false));
  }
  std::vector<Literal> args;
  args.push_back(ops.take(branch + 1));
  return call(called(instruction, branch), std::move(args));
}

Literal DeviceEvaluator::run_custom_call(const Instruction& instruction, OperandValues& ops) {
  const std::string& target = instruction.attrs().custom_call_target;
  CustomCallHandler handler;
  {
    std::lock_guard lock(custom_call_mutex());
    auto it = custom_call_handlers().find(target);
    if (it != custom_call_handlers().end()) handler = it->second;
  }
  if (!handler)
    throw eval::LocatedError(fmt::format(
        "custom-call target '{}' (line {}, instruction {}) has no definition: give its meaning as "
        "an "
        "HLO computation named after it (podsim run --custom-calls defs.hlo, or "
        "passes::define_custom_calls), or register an evaluator handler (ir::register_custom_call)",
        target, instruction.pos().line, instruction.name()));
  return handler(instruction, ops.all());
}

const Computation& entry_of(const Module& module) {
  if (module.entry() == nullptr) fail("module {} has no entry computation", module.name());
  return *module.entry();
}

void check_arguments(const Computation& entry, std::span<const Literal> arguments, const std::string& prefix) {
  if (static_cast<int64_t>(arguments.size()) != entry.parameter_count())
    fail("{}entry computation {} takes {} argument(s), got {}", prefix, entry.name(), entry.parameter_count(),
         arguments.size());
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const Instruction* parameter = entry.parameter(i);
    if (parameter == nullptr) fail("entry computation {} has no parameter {}", entry.name(), i);
    const Shape& given = arguments[static_cast<size_t>(i)].shape();
    if (!given.compatible(parameter->shape()))
      fail("{}argument {} for parameter {} of {} has shape {}, but the parameter is {}", prefix, i,
           describe(*parameter), entry.name(), given.to_string(false), parameter->shape().to_string(false));
  }
}

}  // namespace

void register_custom_call(const std::string& target, CustomCallHandler handler) {
  std::lock_guard lock(custom_call_mutex());
  custom_call_handlers()[target] = std::move(handler);
}

Literal evaluate(const Module& module, std::span<const Literal> arguments) {
  const Computation& entry = entry_of(module);
  check_arguments(entry, arguments, "");
  if (current_device != nullptr) {
    DeviceEvaluator device(current_device->grid, current_device->device, *current_device->rendezvous);
    return device.run(entry, arguments, false);
  }
  eval::Rendezvous rendezvous(1);
  DeviceEvaluator device(eval::DeviceGrid{1, 1, true}, 0, rendezvous);
  return device.run(entry, arguments, false);
}

namespace {

eval::DeviceGrid device_grid(int64_t replicas, int64_t partitions, std::string_view who) {
  eval::DeviceGrid grid;
  grid.replicas = replicas;
  grid.partitions = partitions;
  if (grid.replicas < 1 || grid.partitions < 1 || grid.replicas > kMaxDevices || grid.partitions > kMaxDevices ||
      grid.size() > kMaxDevices)
    fail("{}: {} replicas x {} partitions is not a device grid this evaluator can run (1 to {} devices)", who,
         grid.replicas, grid.partitions, kMaxDevices);
  return grid;
}

std::string device_prefix(const eval::DeviceGrid& grid, int64_t d) {
  return grid.size() == 1 ? std::string()
                          : fmt::format("device {} (replica {}, partition {}): ", d, d / grid.partitions,
                                        d % grid.partitions);
}

void run_on_devices(const eval::DeviceGrid& grid, const std::function<void(int64_t device)>& run) {
  const auto devices = static_cast<size_t>(grid.size());
  eval::Rendezvous rendezvous(grid.size());
  // What a device's error says about the run, most telling first.
  enum class Outcome { kOk, kCause, kMismatch, kConsequence };
  std::vector<Outcome> outcomes(devices, Outcome::kOk);
  std::vector<std::exception_ptr> errors(devices);
  auto run_device = [&](size_t d) {
    auto device = static_cast<int64_t>(d);
    RunningDevice running{grid, device, &rendezvous};
    current_device = &running;
    try {
      run(device);
      current_device = nullptr;
      rendezvous.finish(device);
      return;
    } catch (const eval::CollectiveAborted&) {
      outcomes[d] = Outcome::kConsequence;
      errors[d] = std::current_exception();
    } catch (const eval::CollectiveMismatch&) {
      outcomes[d] = Outcome::kMismatch;
      errors[d] = std::current_exception();
    } catch (const Error& e) {
      outcomes[d] = Outcome::kCause;
      errors[d] = std::make_exception_ptr(Error(device_prefix(grid, device) + e.what()));
    } catch (...) {
      outcomes[d] = Outcome::kCause;
      errors[d] = std::current_exception();
    }
    current_device = nullptr;
    rendezvous.abort(device);
  };
  if (devices == 1) {
    run_device(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(devices);
    try {
      for (size_t d = 0; d < devices; ++d) threads.emplace_back(run_device, d);
    } catch (...) {
      // Devices without a thread count as failed so that the others do not wait on them.
      for (size_t d = threads.size(); d < devices; ++d) rendezvous.abort(static_cast<int64_t>(d));
      for (std::thread& t : threads) t.join();
      throw;
    }
    for (std::thread& t : threads) t.join();
  }
  // Report a root cause (the first device's, for determinism) over the collectives it
  // left stuck or aborted.
  for (Outcome wanted : {Outcome::kCause, Outcome::kMismatch, Outcome::kConsequence})
    for (size_t d = 0; d < devices; ++d)
      if (outcomes[d] == wanted) std::rethrow_exception(errors[d]);
}

}  // namespace

std::vector<Literal> evaluate_spmd(const Module& module, const std::vector<std::vector<Literal>>& arguments,
                                   EvalOptions options) {
  const Computation& entry = entry_of(module);
  const eval::DeviceGrid grid =
      device_grid(options.replicas != 0 ? options.replicas : module.replica_count,
                  options.partitions != 0 ? options.partitions : module.num_partitions, "evaluate_spmd");
  const auto devices = static_cast<size_t>(grid.size());
  if (arguments.size() != devices)
    fail("evaluate_spmd: {} replicas x {} partitions need {} argument lists (one per device), got {}",
         grid.replicas, grid.partitions, devices, arguments.size());
  for (size_t d = 0; d < devices; ++d)
    check_arguments(entry, arguments[d], device_prefix(grid, static_cast<int64_t>(d)));
  std::vector<Literal> results(devices);
  run_on_devices(grid, [&](int64_t d) {
    results[static_cast<size_t>(d)] = evaluate(module, arguments[static_cast<size_t>(d)]);
  });
  return results;
}

void run_devices(int64_t replicas, int64_t partitions, const std::function<void(int64_t device)>& run) {
  run_on_devices(device_grid(replicas, partitions, "run_devices"), run);
}

}  // namespace podsim::ir
