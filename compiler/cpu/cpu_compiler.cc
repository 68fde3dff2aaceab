// The CPU target's driver: copies and optimizes the module, builds the plan of its
// entry computation, and runs it. Each run takes an arena for the plan's intermediate
// buffers from a small pool (so repeated runs do not fault in fresh pages) and writes
// the result leaves straight into the literals it returns.
#include "compiler/cpu/cpu_compiler.h"

#include <tbb/task_arena.h>

#include <mutex>

#include "common/error.h"
#include "compiler/cpu/concat_distribution.h"
#include "compiler/cpu/dot_folding.h"
#include "compiler/cpu/plan.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"

namespace podsim::cpu {
namespace {

constexpr size_t kPooledArenas = 8;
using ArenaPtr = AlignedBuffer;

void literal_leaves(ir::Literal& literal, std::vector<std::byte*>& out) {
  if (literal.shape().is_tuple()) {
    for (ir::Literal& e : literal.elements()) literal_leaves(e, out);
  } else {
    out.push_back(literal.bytes().data());
  }
}

void literal_leaves(const ir::Literal& literal, std::vector<const std::byte*>& out) {
  if (literal.shape().is_tuple()) {
    for (const ir::Literal& e : literal.elements()) literal_leaves(e, out);
  } else {
    out.push_back(literal.bytes().data());
  }
}

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(std::unique_ptr<ir::Module> module, const CompileOptions& options)
      : module_(std::move(module)) {
    if (module_->entry() == nullptr) fail("module {} has no entry computation", module_->name());
    plan_ = std::make_unique<Plan>(*module_->entry());
    if (options.threads < 0) fail("CompileOptions::threads must be >= 0, got {}", options.threads);
    if (options.threads > 0) arena_ = std::make_unique<tbb::task_arena>(options.threads);
    const ir::Computation& entry = *module_->entry();
    for (const ir::Instruction* p : entry.parameters())
      for (const ir::Shape& leaf : leaf_shapes(p->shape()))
        stats_.argument_bytes += leaf.byte_size();
    stats_.output_bytes = plan_->output_bytes();
    stats_.alias_bytes = plan_->alias_bytes();
    stats_.intermediate_bytes = static_cast<int64_t>(plan_->arena_bytes());
    stats_.fusions = plan_->fusions();
    stats_.steps = static_cast<int64_t>(plan_->steps().size());
    int64_t program = 0;
    for (const auto& c : module_->computations())
      for (const auto& i : c->instructions()) {
        program += static_cast<int64_t>(sizeof(ir::Instruction));
        if (i->attrs().literal) program += static_cast<int64_t>(i->attrs().literal->bytes().size());
      }
    for (const PlanStep& s : plan_->steps())
      program += static_cast<int64_t>(sizeof(PlanStep) +
                                      (s.operands.size() + s.outputs.size()) * sizeof(BufferRef));
    stats_.program_bytes = program;
  }

  const ir::Module& module() const override { return *module_; }
  const ExecutableStats& stats() const override { return stats_; }
  std::string serialize() const override { return ir::print_module(*module_); }

  std::vector<ir::Literal> run(std::span<const ir::Literal* const> arguments) const override {
    check_arguments(arguments);
    std::vector<ir::Literal> results;
    results.reserve(plan_->result_shapes().size());
    for (const ir::Shape& shape : plan_->result_shapes()) results.emplace_back(shape);
    execute_in_arena(arguments, results);
    return results;
  }

  std::vector<std::vector<ir::Literal>> run_devices(
      const std::vector<std::vector<const ir::Literal*>>& arguments) const override {
    const int64_t replicas = module_->replica_count, partitions = module_->num_partitions;
    if (static_cast<int64_t>(arguments.size()) != replicas * partitions)
      fail("run_devices: {} replicas x {} partitions need {} argument lists (one per device), got {}", replicas,
           partitions, replicas * partitions, arguments.size());
    for (const auto& a : arguments) check_arguments(a);
    std::vector<std::vector<ir::Literal>> results(arguments.size());
    ir::run_devices(replicas, partitions, [&](int64_t d) {
      std::vector<ir::Literal>& r = results[static_cast<size_t>(d)];
      for (const ir::Shape& shape : plan_->result_shapes()) r.emplace_back(shape);
      execute(arguments[static_cast<size_t>(d)], r);
    });
    return results;
  }

  void run_into(std::span<const ir::Literal* const> arguments,
                std::vector<ir::Literal>& results) const override {
    check_arguments(arguments);
    const std::vector<ir::Shape>& shapes = plan_->result_shapes();
    if (results.size() != shapes.size())
      fail("run_into: {} result literal(s) given, the executable returns {}", results.size(),
           shapes.size());
    for (size_t k = 0; k < shapes.size(); ++k)
      if (!results[k].shape().compatible(shapes[k]))
        fail("run_into: result {} has shape {}, the executable returns {}", k,
             results[k].shape().to_string(false), shapes[k].to_string(false));
    for (const ir::Literal& r : results)
      for (const ir::Literal* a : arguments)
        if (a == &r)
          fail("run_into: a result literal is also an argument; results must not alias arguments");
    execute_in_arena(arguments, results);
  }

 private:
  void check_arguments(std::span<const ir::Literal* const> arguments) const {
    const ir::Computation& entry = *module_->entry();
    if (static_cast<int64_t>(arguments.size()) != entry.parameter_count())
      fail("entry computation {} takes {} argument(s), got {}", entry.name(),
           entry.parameter_count(), arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) {
      const ir::Instruction* p = entry.parameter(static_cast<int64_t>(i));
      if (arguments[i] == nullptr)
        fail("argument {} of entry computation {} is null", i, entry.name());
      if (!arguments[i]->shape().compatible(p->shape()))
        fail("argument {} for parameter {} of {} has shape {}, but the parameter is {}", i,
             p->name(), entry.name(), arguments[i]->shape().to_string(false),
             p->shape().to_string(false));
    }
  }

  void execute_in_arena(std::span<const ir::Literal* const> arguments,
                        std::vector<ir::Literal>& results) const {
    if (arena_)
      arena_->execute([&] { execute(arguments, results); });
    else
      execute(arguments, results);
  }

  void execute(std::span<const ir::Literal* const> arguments,
               std::vector<ir::Literal>& results) const {
    std::vector<const std::byte*> args;
    for (const ir::Literal* a : arguments) literal_leaves(*a, args);
    std::vector<std::byte*> outputs;
    for (ir::Literal& r : results) literal_leaves(r, outputs);
    struct Lease {
      const CpuExecutable& owner;
      ArenaPtr arena;
      ~Lease() { owner.release(std::move(arena)); }
    } lease{*this, acquire()};
    plan_->execute(args, outputs, lease.arena.get());
  }

  ArenaPtr acquire() const {
    {
      std::lock_guard lock(pool_mutex_);
      if (!pool_.empty()) {
        ArenaPtr arena = std::move(pool_.back());
        pool_.pop_back();
        return arena;
      }
    }
    return allocate_aligned(plan_->arena_bytes());
  }

  void release(ArenaPtr arena) const {
    std::lock_guard lock(pool_mutex_);
    if (pool_.size() < kPooledArenas) pool_.push_back(std::move(arena));
  }

  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<Plan> plan_;
  ExecutableStats stats_;
  std::unique_ptr<tbb::task_arena> arena_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<ArenaPtr> pool_;
};

}  // namespace

void Executable::run_into(std::span<const ir::Literal* const> arguments,
                          std::vector<ir::Literal>& results) const {
  std::vector<ir::Literal> fresh = run(arguments);
  if (fresh.size() != results.size())
    fail("run_into: {} result literal(s) given, the executable returns {}", results.size(),
         fresh.size());
  for (size_t k = 0; k < fresh.size(); ++k)
    if (!results[k].shape().compatible(fresh[k].shape()))
      fail("run_into: result {} has shape {}, the executable returns {}", k,
           results[k].shape().to_string(false), fresh[k].shape().to_string(false));
  results = std::move(fresh);
}

std::unique_ptr<Executable> compile(const ir::Module& module, CompileOptions options) {
  ir::verify_module(module);
  std::unique_ptr<ir::Module> copy =
      ir::parse_module(ir::print_module(module), "<cpu compile: " + module.name() + ">");
  passes::expand_composite_ops(*copy);
  passes::make_async_collectives_to_sync()->run(*copy);  // collectives run in one piece
  if (options.run_passes) {
    passes::default_pipeline().run(*copy);
    passes::Pipeline()
        .add(make_dot_folding())
        .add(make_concat_distribution())
        .add(passes::make_dce())
        .run(*copy);
    ir::verify_module(*copy, "<cpu compile: after the default pipeline>");
  }
  return std::make_unique<CpuExecutable>(std::move(copy), options);
}

std::unique_ptr<Executable> compile_serialized(std::string_view serialized,
                                               CompileOptions options) {
  std::unique_ptr<ir::Module> module = ir::parse_module(serialized, "<serialized cpu executable>");
  ir::verify_module(*module, "<serialized cpu executable>");
  return std::make_unique<CpuExecutable>(std::move(module), options);
}

}  // namespace podsim::cpu
