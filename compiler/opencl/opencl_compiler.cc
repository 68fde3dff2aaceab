// The OpenCL target's driver: optimizes a copy of the module and turns its entry
// computation into steps (see opencl_compiler.h).
#include "compiler/opencl/opencl_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <numeric>
#include <unordered_map>

#include "common/error.h"
#include "compiler/cpu/kernel.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/opencl/kernel_source.h"
#include "compiler/opencl/placement_source.h"
#include "compiler/passes/pass.h"

namespace podsim::opencl {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

bool gemm_type(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || t == PrimitiveType::kBF16 ||
         t == PrimitiveType::kF16;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The dimensions of a dot operand that are neither batch nor contracting, ascending.
std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      out.push_back(d);
  return out;
}

int64_t product(const ir::Shape& shape, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= shape.dim(d);
  return p;
}

bool identity(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// What the plans of one program share while they are built.
struct Shared {
  std::deque<Plan>& plans;
  std::vector<const ir::Literal*>& constants;
  std::string& source;  // the kernels so far
  bool& fp64;
  ProgramStats& stats;
  int kernels = 0;  // names kernels uniquely across plans
};

// Builds the steps of one plan.
class Builder {
 public:
  Builder(Plan& plan, Shared& shared)
      : steps_(plan.steps),
        temps_(plan.temps),
        source_(shared.source),
        fp64_(shared.fp64),
        stats_(shared.stats),
        kernels_(shared.kernels) {}

  BufferRef new_temp(const ir::Shape& shape) {
    temps_.push_back(shape);
    return {BufferRef::Kind::kTemp, static_cast<int32_t>(temps_.size() - 1)};
  }

  std::string kernel_name(const Instruction& i) {
    std::string clean;
    for (char ch : i.name()) clean += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    return fmt::format("k{}_{}", kernels_++, clean.substr(0, 40));
  }

  void add_kernel(const KernelSource& k, const Instruction& i, std::vector<BufferRef> inputs,
                  std::vector<BufferRef> outputs) {
    source_ += k.source;
    fp64_ = fp64_ || k.uses_fp64;
    Step s;
    s.kind = Step::Kind::kKernel;
    s.instruction = &i;
    s.launch.name = k.name;
    s.launch.global = k.global_size;
    s.launch.local = k.local_size;
    s.inputs = std::move(inputs);
    s.outputs = std::move(outputs);
    steps_.push_back(std::move(s));
    ++stats_.kernels;
  }

  void add_step(Step s) { steps_.push_back(std::move(s)); }

  // A dot as a GEMM step (after transposes of its operands where needed); false when
  // the types or dimension numbers do not fit.
  bool add_gemm(const Instruction& dot, BufferRef lhs, BufferRef rhs, BufferRef out) {
    const ir::Shape& ls = dot.operand(0)->shape();
    const ir::Shape& rs = dot.operand(1)->shape();
    const ir::DotDimNumbers& dn = dot.attrs().dot_dims;
    if (!gemm_type(ls.type()) || !gemm_type(rs.type()) || !gemm_type(dot.shape().type()))
      return false;
    if (dn.lhs_batch.size() != dn.rhs_batch.size() ||
        dn.lhs_contracting.size() != dn.rhs_contracting.size())
      return false;
    const std::vector<int64_t> lf = free_dims(ls.rank(), dn.lhs_batch, dn.lhs_contracting);
    const std::vector<int64_t> rf = free_dims(rs.rank(), dn.rhs_batch, dn.rhs_contracting);
    GemmShape g;
    g.batch = product(ls, dn.lhs_batch);
    g.m = product(ls, lf);
    g.n = product(rs, rf);
    g.k = product(ls, dn.lhs_contracting);
    g.a_type = ls.type();
    g.b_type = rs.type();
    g.c_type = dot.shape().type();
    if (g.k == 0) return false;
    lhs = oriented(dot, lhs, ls, concat(concat(dn.lhs_batch, lf), dn.lhs_contracting),
                   concat(concat(dn.lhs_batch, dn.lhs_contracting), lf), g.trans_a);
    rhs = oriented(dot, rhs, rs, concat(concat(dn.rhs_batch, dn.rhs_contracting), rf),
                   concat(concat(dn.rhs_batch, rf), dn.rhs_contracting), g.trans_b);
    Step s;
    s.kind = Step::Kind::kGemm;
    s.instruction = &dot;
    s.gemm = g;
    const int untimed = g.flops() < kTimedGemmFlops ? default_gemm_tiling(g) : -1;
    for (size_t t = 0; t < kGemmTilings.size(); ++t) {
      s.gemm_kernels.emplace_back();
      if ((untimed >= 0 && static_cast<int>(t) != untimed) || !gemm_tiling_fits(g, kGemmTilings[t]))
        continue;
      s.gemm_kernels.back() = fmt::format("g{}_{}", kernels_++, t);
      source_ += gemm_source(g, kGemmTilings[t], s.gemm_kernels.back());
    }
    fp64_ = fp64_ || ls.type() == PrimitiveType::kF64 || rs.type() == PrimitiveType::kF64 ||
            dot.shape().type() == PrimitiveType::kF64;
    s.inputs = {lhs, rhs};
    s.outputs = {out};
    steps_.push_back(std::move(s));
    ++stats_.gemms;
    return true;
  }

 private:
  // operand in the `plain` dimension order (not transposed) or the `transposed` one;
  // anything else is transposed into the plain order by a kernel first.
  BufferRef oriented(const Instruction& dot, BufferRef operand, const ir::Shape& shape,
                     const std::vector<int64_t>& plain, const std::vector<int64_t>& transposed,
                     bool& trans) {
    trans = false;
    if (identity(plain)) return operand;
    if (identity(transposed)) {
      trans = true;
      return operand;
    }
    KernelSource k = make_transpose_source(shape, plain, kernel_name(dot) + "_t");
    std::vector<int64_t> dims;
    for (int64_t d : plain) dims.push_back(shape.dim(d));
    BufferRef out = new_temp(ir::Shape(shape.type(), dims));
    add_kernel(k, dot, {operand}, {out});
    return out;
  }

  std::vector<Step>& steps_;
  std::vector<ir::Shape>& temps_;
  std::string& source_;
  bool& fp64_;
  ProgramStats& stats_;
  int& kernels_;
};

bool empty_arrays(const ir::Shape& shape) {
  for (const ir::Shape& leaf : cpu::leaf_shapes(shape))
    if (leaf.num_elements() != 0) return false;
  return true;
}

void assign_slots(Plan& plan);

// Builds the plan of computation (and those of the computations it calls) into
// shared.plans; returns its index. Control flow nested deeper than kMaxPlanDepth runs on
// the host (a computation that calls itself).
constexpr int kMaxPlanDepth = 32;

int build_plan(const ir::Computation& computation, Shared& shared, int depth) {
  const int index = static_cast<int>(shared.plans.size());
  Plan& plan = shared.plans.emplace_back();  // a deque: stays put while callees are added
  plan.computation = computation.name();
  std::unordered_map<const Instruction*, std::vector<BufferRef>> values;
  for (const Instruction* p : computation.parameters()) {
    std::vector<BufferRef>& leaves = values[p];
    for (const ir::Shape& leaf : cpu::leaf_shapes(p->shape())) {
      leaves.push_back({BufferRef::Kind::kArgument, static_cast<int32_t>(plan.arguments.size())});
      plan.arguments.push_back(leaf);
    }
  }
  Builder b(plan, shared);
  auto leaves_of = [&](const Instruction* i) -> const std::vector<BufferRef>& {
    auto it = values.find(i);
    if (it == values.end())
      fail("computation {}: {} is used before it is defined", computation.name(), i->name());
    return it->second;
  };
  for (const auto& owned : computation.instructions()) {
    const Instruction& i = *owned;
    std::vector<BufferRef> out;
    switch (i.opcode()) {
      case Opcode::kParameter:
        continue;
      case Opcode::kConstant:
        if (!i.shape().is_array()) break;  // a tuple constant: evaluated on the host below
        shared.constants.push_back(&*i.attrs().literal);
        values[&i] = {
            {BufferRef::Kind::kConstant, static_cast<int32_t>(shared.constants.size() - 1)}};
        continue;
      case Opcode::kTuple:
        for (const Instruction* o : i.operands())
          for (const BufferRef& r : leaves_of(o)) out.push_back(r);
        values[&i] = std::move(out);
        continue;
      case Opcode::kGetTupleElement: {
        const ir::Shape& tuple = i.operand(0)->shape();
        size_t first = 0;
        for (int64_t e = 0; e < i.attrs().tuple_index; ++e)
          first += cpu::leaf_shapes(tuple.element(e)).size();
        const std::vector<BufferRef>& all = leaves_of(i.operand(0));
        const size_t n = cpu::leaf_shapes(i.shape()).size();
        values[&i] = std::vector<BufferRef>(all.begin() + static_cast<std::ptrdiff_t>(first),
                                            all.begin() + static_cast<std::ptrdiff_t>(first + n));
        continue;
      }
      default:
        if (cpu::is_byte_alias(i)) {
          values[&i] = leaves_of(i.operand(0));
          continue;
        }
        break;
    }
    std::vector<BufferRef> inputs;
    for (const Instruction* o : i.operands())
      for (const BufferRef& r : leaves_of(o)) inputs.push_back(r);
    for (const ir::Shape& leaf : cpu::leaf_shapes(i.shape())) out.push_back(b.new_temp(leaf));
    values[&i] = out;
    if (empty_arrays(i.shape())) continue;  // nothing to compute
    if (i.opcode() == Opcode::kDot && b.add_gemm(i, inputs[0], inputs[1], out[0])) continue;
    Step s;
    s.instruction = &i;
    s.inputs = std::move(inputs);
    s.outputs = std::move(out);
    const bool control = i.opcode() == Opcode::kWhile || i.opcode() == Opcode::kConditional ||
                         i.opcode() == Opcode::kCall;
    if (control && depth < kMaxPlanDepth) {
      s.kind = i.opcode() == Opcode::kWhile         ? Step::Kind::kWhile
               : i.opcode() == Opcode::kConditional ? Step::Kind::kConditional
                                                    : Step::Kind::kCall;
      for (const ir::Computation* c : i.called())
        s.plans.push_back(build_plan(*c, shared, depth + 1));
      b.add_step(std::move(s));
      ++shared.stats.control_steps;
      continue;
    }
    if (i.opcode() == Opcode::kScatter) {
      if (std::optional<KernelSource> k = make_scatter_source(i, b.kernel_name(i))) {
        // The results start as copies of the operands; the kernel updates them in place.
        const int64_t n = i.operand_count() / 2;
        for (int64_t o = 0; o < n; ++o) {
          const ir::Shape& shape = i.operand(o)->shape();
          std::vector<int64_t> identity(static_cast<size_t>(shape.rank()));
          std::iota(identity.begin(), identity.end(), int64_t{0});
          const KernelSource copy = make_transpose_source(shape, identity, b.kernel_name(i));
          b.add_kernel(copy, i, {leaves_of(i.operand(o)).at(0)},
                       {s.outputs[static_cast<size_t>(o)]});
        }
        std::vector<BufferRef> args;
        for (const Instruction* o : k->inputs) args.push_back(leaves_of(o).at(0));
        b.add_kernel(*k, i, std::move(args), std::move(s.outputs));
        continue;
      }
    }
    if (i.opcode() != Opcode::kConstant && i.opcode() != Opcode::kDot && !control) {
      const std::string name = b.kernel_name(i);
      std::optional<KernelSource> k = i.opcode() == Opcode::kSort ? make_sort_source(i, name)
                                      : i.opcode() == Opcode::kSelectAndScatter
                                          ? make_select_and_scatter_source(i, name)
                                          : make_kernel_source(i, name);
      if (k) {
        std::vector<BufferRef> args;
        for (const Instruction* o : k->inputs) args.push_back(leaves_of(o).at(0));
        b.add_kernel(*k, i, std::move(args), std::move(s.outputs));
        continue;
      }
    }
    s.kind = Step::Kind::kHost;
    s.host = i.opcode() == Opcode::kConstant ? cpu::make_evaluator_kernel(i) : cpu::make_kernel(i);
    b.add_step(std::move(s));
    ++shared.stats.host_steps;
  }
  const Instruction* root = computation.root();
  if (root == nullptr) fail("computation {} has no root instruction", computation.name());
  plan.results = leaves_of(root);
  assign_slots(plan);
  return index;
}

void assign_slots(Plan& plan) {
  constexpr size_t kNever = SIZE_MAX;
  const std::vector<Step>& steps = plan.steps;
  const std::vector<ir::Shape>& temps = plan.temps;
  std::vector<int32_t>& temp_slots = plan.temp_slots;
  std::vector<int64_t>& slot_bytes = plan.slot_bytes;
  const size_t n = temps.size();
  std::vector<size_t> last_use(n, 0);
  std::vector<bool> result(n, false);
  for (const BufferRef& r : plan.results)
    if (r.kind == BufferRef::Kind::kTemp) result[static_cast<size_t>(r.index)] = true;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const BufferRef& r : steps[i].outputs) last_use[static_cast<size_t>(r.index)] = i;
    for (const BufferRef& r : steps[i].inputs)
      if (r.kind == BufferRef::Kind::kTemp) last_use[static_cast<size_t>(r.index)] = i;
  }
  temp_slots.assign(n, -1);
  std::vector<size_t> free;  // slots free for the next step's outputs
  auto take = [&](int64_t bytes) {
    // Best fit among the free slots, else the largest free one grows, else a new slot.
    size_t best = kNever;
    bool fits = false;
    for (size_t k = 0; k < free.size(); ++k) {
      const int64_t have = slot_bytes[free[k]];
      if (have >= bytes) {
        if (!fits || have < slot_bytes[free[best]]) best = k;
        fits = true;
      } else if (!fits && (best == kNever || have > slot_bytes[free[best]])) {
        best = k;
      }
    }
    if (best == kNever) {
      slot_bytes.push_back(bytes);
      return static_cast<int32_t>(slot_bytes.size() - 1);
    }
    const size_t slot = free[best];
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(best));
    slot_bytes[slot] = std::max(slot_bytes[slot], bytes);
    return static_cast<int32_t>(slot);
  };
  // Temporaries no step writes (outputs of instructions without work) still get memory.
  for (size_t i = 0; i <= steps.size(); ++i) {
    const std::vector<BufferRef> none;
    const std::vector<BufferRef>& outputs = i < steps.size() ? steps[i].outputs : none;
    for (const BufferRef& r : outputs)
      temp_slots[static_cast<size_t>(r.index)] =
          take(temps[static_cast<size_t>(r.index)].byte_size());
    if (i == steps.size()) break;
    std::vector<int32_t> done;
    for (const auto* list : {&steps[i].inputs, &steps[i].outputs})
      for (const BufferRef& r : *list)
        if (r.kind == BufferRef::Kind::kTemp && last_use[static_cast<size_t>(r.index)] == i &&
            !result[static_cast<size_t>(r.index)])
          done.push_back(temp_slots[static_cast<size_t>(r.index)]);
    std::sort(done.begin(), done.end());
    done.erase(std::unique(done.begin(), done.end()), done.end());
    for (int32_t slot : done) free.push_back(static_cast<size_t>(slot));
  }
  for (size_t t = 0; t < n; ++t)
    if (temp_slots[t] < 0) temp_slots[t] = take(temps[t].byte_size());
}

}  // namespace

const ir::Shape& Plan::shape(const BufferRef& r,
                             std::span<const ir::Literal* const> constants) const {
  switch (r.kind) {
    case BufferRef::Kind::kArgument:
      return arguments[static_cast<size_t>(r.index)];
    case BufferRef::Kind::kConstant:
      return constants[static_cast<size_t>(r.index)]->shape();
    case BufferRef::Kind::kTemp:
      break;
  }
  return temps[static_cast<size_t>(r.index)];
}

Program::Program(std::unique_ptr<ir::Module> module) : module_(std::move(module)) {
  const ir::Computation* entry = module_->entry();
  if (entry == nullptr) fail("module {} has no entry computation", module_->name());
  std::string kernels;
  Shared shared{plans_, constants_, kernels, uses_fp64_, stats_};
  build_plan(*entry, shared, 0);
  const Instruction* root = entry->root();
  if (root->shape().is_tuple()) {
    result_shapes_ = root->shape().elements();
  } else {
    result_shapes_.push_back(root->shape());
  }
  source_ = prelude_source(uses_fp64_) + kernels;
}

Program::~Program() = default;

void run_host_step(const Step& step, std::span<const std::byte* const> inputs,
                   std::span<std::byte* const> outputs) {
  if (step.kind != Step::Kind::kHost || !step.host)
    fail("internal: run_host_step on a device step");
  step.host->run(inputs, outputs);
}

std::string Program::serialize() const { return ir::print_module(*module_); }

std::unique_ptr<Program> compile(const ir::Module& module, CompileOptions options) {
  ir::verify_module(module);
  std::unique_ptr<ir::Module> copy =
      ir::parse_module(ir::print_module(module), "<opencl compile: " + module.name() + ">");
  passes::expand_composite_ops(*copy);
  passes::make_async_collectives_to_sync()->run(*copy);
  if (options.run_passes) {
    passes::default_pipeline().run(*copy);
    ir::verify_module(*copy, "<opencl compile: after the default pipeline>");
  }
  return std::make_unique<Program>(std::move(copy));
}

std::unique_ptr<Program> compile_serialized(std::string_view serialized) {
  std::unique_ptr<ir::Module> module =
      ir::parse_module(serialized, "<serialized opencl executable>");
  ir::verify_module(*module, "<serialized opencl executable>");
  return std::make_unique<Program>(std::move(module));
}

}  // namespace podsim::opencl
