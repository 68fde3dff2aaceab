// Latency hiding on the TPU target (tpu::Options::overlap_collectives): the order a
// scope is lowered in (collectives as early as their operands allow), the window of
// independent instructions a collective in flight lets run between its ring steps, and
// the split of tuple all-reduces into buckets that become ready one after another.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/tpu/lowerer.h"
#include "compiler/tpu/lowerings.h"

namespace podsim::tpu {

using ir::Instruction;
using ir::Opcode;

namespace {

bool is_ring_collective(Opcode op) {
  return op == Opcode::kAllReduce || op == Opcode::kReduceScatter || op == Opcode::kAllGather;
}

// What may run while a collective is in flight: no collective or handshake, no control
// flow (its steps are loops), nothing with side effects.
bool may_interleave(const Instruction& i) {
  switch (i.opcode()) {
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
    case Opcode::kCustomCall:
    case Opcode::kParameter:
      return false;
    default:
      return !ir::is_collective(i.opcode()) && !ir::is_async_done(i.opcode());
  }
}

}  // namespace

bool Lowerer::overlaps(const Instruction& i, const Scope& s) const {
  return options_.overlap_collectives && target_.pod && !s.fused && called_depth_ == 0 && !overlap_ &&
         is_ring_collective(i.opcode());
}

std::vector<const Instruction*> Lowerer::lowering_order(const Scope& s) const {
  const auto& instructions = s.computation->instructions();
  std::vector<const Instruction*> order;
  for (const auto& i : instructions) order.push_back(i.get());
  if (std::none_of(order.begin(), order.end(), [&](const Instruction* i) { return overlaps(*i, s); }))
    return order;
  // Hoisted: the collectives that overlap and what only they (and what is hoisted) use,
  // such as the concatenation of the gradients they reduce.
  std::unordered_set<const Instruction*> hoisted;
  const auto users = s.computation->users();
  for (size_t k = instructions.size(); k-- > 0;) {
    const Instruction* i = instructions[k].get();
    if (overlaps(*i, s)) {
      hoisted.insert(i);
      continue;
    }
    auto it = users.find(i);
    if (i->opcode() == Opcode::kParameter || i == s.computation->root() || it == users.end() ||
        it->second.empty() || !i->control_predecessors().empty())
      continue;
    bool only_hoisted = true;
    for (const Instruction* u : it->second) only_hoisted = only_hoisted && hoisted.count(u) > 0;
    if (only_hoisted) hoisted.insert(i);
  }
  // Sort keys: k for instruction k; a hoisted one goes just after the last of its
  // operands (in its original order among those hoisted after the same instruction).
  std::unordered_map<const Instruction*, double> key;
  std::vector<std::pair<double, const Instruction*>> keyed;
  for (size_t k = 0; k < instructions.size(); ++k) {
    const Instruction* i = instructions[k].get();
    double at = static_cast<double>(k);
    if (hoisted.count(i)) {
      at = -1;
      for (const Instruction* op : i->operands()) at = std::max(at, key.at(op));
      for (const Instruction* op : i->control_predecessors()) at = std::max(at, key.at(op));
      at += 1e-6 * static_cast<double>(k + 1) / static_cast<double>(instructions.size() + 1);
    }
    key.emplace(i, at);
    keyed.emplace_back(at, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  order.clear();
  for (const auto& [at, i] : keyed) order.push_back(i);
  return order;
}

// The window: the scope's instructions after i in lowering order, not yet lowered,
// that may interleave and do not depend on i or on an instruction that may not.
Value Lowerer::lower_overlapped(const Instruction& i, Scope& s) {
  Overlap overlap;
  overlap.collective = &i;
  overlap.scope = &s;
  std::unordered_set<const Instruction*> excluded = {&i};
  bool after = false;
  for (const Instruction* x : lowering_order(s)) {
    if (x == &i) {
      after = true;
      continue;
    }
    if (!after || find_value(*x, s)) continue;
    bool needs_excluded = false;
    for (const Instruction* op : x->operands()) needs_excluded = needs_excluded || excluded.count(op) > 0;
    if (needs_excluded || !may_interleave(*x)) {
      excluded.insert(x);
      continue;
    }
    if (x->opcode() == Opcode::kTuple || x->opcode() == Opcode::kGetTupleElement || expandable(*x, s)) continue;
    overlap.window.push_back(x);
  }
  overlap_ = &overlap;
  struct Clear {
    Lowerer& l;
    ~Clear() {
      l.overlap_ = nullptr;
      l.vmem_floor_ = 0;
    }
  } clear{*this};
  switch (i.opcode()) {
    case Opcode::kAllReduce: return lower_all_reduce(*this, i, s);
    case Opcode::kReduceScatter: return lower_reduce_scatter(*this, i, s);
    default: return lower_all_gather(*this, i, s);
  }
}

namespace {

// A roofline estimate of an instruction's step: its operands and result through HBM, or
// a dot's (a fusion's dots') multiply-adds on the MXUs, whichever takes longer, plus an
// HBM latency.
double estimated_ns(const Instruction& x, const topology::ChipConfig& chip) {
  double bytes = static_cast<double>(x.shape().is_array() ? x.shape().byte_size() : 0);
  for (const Instruction* op : x.operands())
    if (op->shape().is_array()) bytes += static_cast<double>(op->shape().byte_size());
  double flops = 0;
  auto dot_flops = [](const Instruction& d) {
    double k = 1;
    for (int64_t c : d.attrs().dot_dims.lhs_contracting) k *= static_cast<double>(d.operand(0)->shape().dim(c));
    return 2.0 * k * static_cast<double>(d.shape().num_elements());
  };
  if (x.opcode() == Opcode::kDot) flops = dot_flops(x);
  if (x.opcode() == Opcode::kFusion)
    for (const auto& f : x.called(0)->instructions())
      if (f->opcode() == Opcode::kDot) flops += dot_flops(*f);
  const double peak = 2.0 * chip.tensor_cores * chip.mxus_per_core * chip.mxu_rows * chip.mxu_cols * chip.clock_hz;
  return std::max(bytes / chip.hbm_bandwidth_bytes_per_s, flops / peak) * 1e9 + chip.hbm_latency_ns;
}

}  // namespace

void Lowerer::overlap_point(double in_flight_ns) {
  Overlap* o = overlap_;
  if (!o || o->interleaving || pb_.core() != options_.core) return;
  // The collective's VMEM stays put; the window's steps start above it.
  o->vmem_used = vmem_used_[static_cast<size_t>(options_.core)];
  const std::string name = step_name_;
  // Every chip runs the same steps here, so a step longer than the transfers holds up
  // the ring no longer than it would run after it: at least one step goes.
  for (double budget = in_flight_ns; budget > 0;) {
    while (o->next < o->window.size() && find_value(*o->window[o->next], *o->scope)) ++o->next;
    if (o->next == o->window.size()) break;
    const Instruction& x = *o->window[o->next++];
    budget -= estimated_ns(x, chip_);
    vmem_floor_ = o->vmem_used;
    o->interleaving = true;
    value_of(x, *o->scope);
    o->interleaving = false;
  }
  vmem_floor_ = 0;
  // The collective's step resumes.
  std::fill(vmem_used_.begin(), vmem_used_.end(), 0);
  vmem_used_[static_cast<size_t>(options_.core)] = o->vmem_used;
  step_name_ = name;
  pb_.set_source(*o->collective);
  for (int32_t b : o->buffers) {
    Buffer& buffer = buffers_[static_cast<size_t>(b)];
    buffer.last_step = std::max(buffer.last_step, step_);
  }
}

// A tuple all-reduce (PyTorch/XLA's all-reduce of a list of gradients) becomes buckets
// of operands in the order they are computed, each closed at kBucketBytes; users read
// the buckets' results through a tuple.
constexpr int64_t kBucketBytes = 256 << 10;

void split_tuple_all_reduces(ir::Module& module) {
  for (const auto& c : module.computations()) {
    std::unordered_map<const Instruction*, size_t> at;
    for (size_t k = 0; k < c->instructions().size(); ++k) at.emplace(c->instructions()[k].get(), k);
    std::vector<Instruction*> splits;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kAllReduce && i->operand_count() > 1 && i->control_predecessors().empty())
        splits.push_back(i.get());
    for (Instruction* i : splits) {
      std::vector<int64_t> by_readiness(static_cast<size_t>(i->operand_count()));
      for (int64_t k = 0; k < i->operand_count(); ++k) by_readiness[static_cast<size_t>(k)] = k;
      std::stable_sort(by_readiness.begin(), by_readiness.end(),
                       [&](int64_t a, int64_t b) { return at.at(i->operand(a)) < at.at(i->operand(b)); });
      std::vector<std::vector<int64_t>> buckets(1);
      int64_t bytes = 0;
      for (int64_t k : by_readiness) {
        if (bytes >= kBucketBytes) buckets.emplace_back(), bytes = 0;
        buckets.back().push_back(k);
        bytes += i->operand(k)->shape().byte_size();
      }
      if (buckets.size() == 1) continue;
      std::vector<Instruction*> results(static_cast<size_t>(i->operand_count()));
      for (const std::vector<int64_t>& bucket : buckets) {
        std::vector<ir::Shape> shapes;
        std::vector<Instruction*> operands;
        for (int64_t k : bucket) {
          shapes.push_back(i->shape().element(k));
          operands.push_back(i->operand(k));
        }
        auto part = i->clone(c->unique_name(i->name() + ".bucket"), std::move(operands));
        part->mutable_shape() = bucket.size() == 1 ? shapes[0] : ir::Shape::tuple(shapes);
        part->sharding().reset();  // the whole tuple's, if any
        part->set_pos(i->pos());
        Instruction* added = c->add(std::move(part));
        for (size_t e = 0; e < bucket.size(); ++e) {
          if (bucket.size() == 1) {
            results[static_cast<size_t>(bucket[e])] = added;
            continue;
          }
          auto gte = std::make_unique<Instruction>(c->unique_name(i->name() + ".element"),
                                                   Opcode::kGetTupleElement, shapes[e]);
          gte->add_operand(added);
          gte->attrs().tuple_index = static_cast<int64_t>(e);
          results[static_cast<size_t>(bucket[e])] = c->add(std::move(gte));
        }
      }
      auto tuple = std::make_unique<Instruction>(c->unique_name(i->name() + ".buckets"), Opcode::kTuple,
                                                 i->shape());
      tuple->set_operands(std::move(results));
      c->replace_all_uses(i, c->add(std::move(tuple)));
      c->remove_if([&](const Instruction* x) { return x == i; });
    }
    if (!splits.empty()) c->sort_topologically();
  }
}

}  // namespace podsim::tpu
