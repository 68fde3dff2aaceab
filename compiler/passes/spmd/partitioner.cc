// The SPMD partitioner (GSPMD's scheme, XLA's SpmdPartitioner in spirit): rewrites the
// entry computation of a module whose instructions carry shardings (sharding
// propagation gives them all one) into the program every partition runs on its pieces.
//
// Each value of the original program is held as pieces under a tiling (tiling.h). An
// instruction runs on pieces where its dimension maps allow (dim_maps.h): its operands
// are first resharded to the tilings its result's tiling implies. Where there are ways
// to choose from, the one whose collectives and copies take least on the pod wins (its
// cost model, cost_model.h). A dot chooses between operands tiled like its result and
// partial products over split contracting dimensions summed by an all-reduce (a
// reduce-scatter where the result is to be split over the same devices); a reduce over
// a split dimension reduces its pieces and sums them the same way (when the init value
// is the reducer's identity) (partial_sums.cc). A slice, pad or concatenate that shifts
// a split dimension, and a convolution or reduce-window split along a window dimension,
// take the windows of their operands they need from the devices holding them (halos.h:
// neighbours' edges, or parts of farther pieces) where that costs less than gathering
// (windowed_ops.cc); lookups and scatters into a table split by rows use local indices
// (row_tables.cc). While loops, calls and conditionals run on pieces: their
// computations are partitioned for the layouts of the values they take (a loop's state
// keeps one layout all round). Everything else runs on whole operands and is cut to its
// sharding.
//
// Resharding (reshard_plan.h) takes the least costly of: a collective-permute where
// only the devices holding the pieces change; one all-to-all where a split moves from
// one dimension to another over the same devices; all-gathers of the split dimensions
// that stop a device's new piece from lying inside its current one, then a slice, with
// each device's offsets read from a table indexed by partition-id.
// Collectives carry a channel_id and global device ids, as XLA's do (emitter.h).
//
// The entry's parameters and result keep their shardings, so that callers know which
// piece each device passes and returns (ir::shard_literal / unshard_literal). A split
// that does not divide a dimension gives every device ceil(n / k) elements, the last
// pieces padded, as XLA does: gathers cut the padding off, slices pad their source,
// partial sums first set the padding to the reducer's identity (zeros for a dot), and
// reshapes, which would move padding among real values, run on even splits only (the
// values are gathered first).
#include "compiler/passes/spmd/partitioner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "common/error.h"
#include "compiler/ir/shape_inference.h"
#include "compiler/ir/sharding.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"
#include "compiler/passes/spmd/dim_maps.h"

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

namespace {

bool is_manual(const std::optional<ir::Sharding>& s) { return s && s->kind == ir::Sharding::Kind::kManual; }

Layout layout_of(const ir::Sharding& s, const Shape& shape, int64_t devices) {
  Layout l;
  if (s.kind == ir::Sharding::Kind::kManual) {
    l.manual = true;
    return l;
  }
  if (shape.is_array()) {
    l.array = Tiling::of(s.kind == ir::Sharding::Kind::kTuple ? ir::Sharding{} : s, shape.rank(), devices);
    return l;
  }
  for (int64_t e = 0; e < shape.tuple_size(); ++e)
    l.elements.push_back(layout_of(s.kind == ir::Sharding::Kind::kTuple ? s.tuple_elements.at(static_cast<size_t>(e)) : s,
                                   shape.element(e), devices));
  return l;
}

Layout replicated_layout(const Shape& shape, int64_t devices) { return layout_of(ir::Sharding{}, shape, devices); }

bool is_replicated(const Layout& l) {
  if (l.manual) return false;
  if (l.array) return l.array->is_replicated();
  return std::all_of(l.elements.begin(), l.elements.end(), [](const Layout& e) { return is_replicated(e); });
}

Shape piece_shape(const Shape& whole, const Layout& l) {
  if (l.manual) return whole;  // per-device values already
  if (l.array) return ir::shard_shape(whole, l.array->sharding());
  std::vector<Shape> elements;
  for (int64_t e = 0; e < whole.tuple_size(); ++e)
    elements.push_back(piece_shape(whole.element(e), l.elements[static_cast<size_t>(e)]));
  return Shape::tuple(std::move(elements));
}

}  // namespace

void Partitioner::run() {
  ir::Computation& old = *module_.entry();
  std::vector<Layout> params;
  for (const Instruction* p : old.parameters())
    params.push_back(layout_of(p->sharding().value_or(ir::Sharding{}), p->shape(), devices_));
  const Instruction& root = *old.root();
  const Layout want = layout_of(root.sharding().value_or(ir::Sharding{}), root.shape(), devices_);
  ir::Computation* entry = partition_computation(old, params, want, true);
  entry->root()->sharding() = root.sharding().value_or(ir::Sharding{});
  module_.set_entry(entry);
  internal::remove_unreachable_computations(module_);  // the old entry and what only it ran
  module_.entry_parameter_layouts.reset();
  module_.entry_result_layout.reset();
  std::erase_if(module_.input_output_alias, [&](const ir::IoAlias& a) {
    const Shape* out = subshape(entry->root()->shape(), a.output_index);
    const Shape* in = a.parameter_number < entry->parameter_count()
                          ? subshape(entry->parameter(a.parameter_number)->shape(), a.parameter_index)
                          : nullptr;
    return !out || !in || !out->compatible(*in);
  });
}

const Shape* Partitioner::subshape(const Shape& s, const std::vector<int64_t>& index) {
  const Shape* at = &s;
  for (int64_t i : index) {
    if (!at->is_tuple() || i >= at->tuple_size()) return nullptr;
    at = &at->element(i);
  }
  return at;
}

Instruction* Partitioner::all_gather(Instruction* x, const Tiling& t, int64_t d) {
  Shape shape = x->shape();
  shape.mutable_dims()[static_cast<size_t>(d)] *= t.tiles(d);
  Instruction* g = add(Opcode::kAllGather, std::move(shape), {x}, "all-gather");
  g->attrs().dimensions = {d};
  collective_attrs(g, t.groups_along({d}));
  return g;
}

Instruction* Partitioner::all_reduce(Instruction* x, std::vector<std::vector<int64_t>> g, ir::Computation* reducer) {
  Instruction* r = add(Opcode::kAllReduce, x->shape(), {x}, "all-reduce");
  r->add_called(reducer);
  collective_attrs(r, std::move(g));
  return r;
}

ir::Computation* Partitioner::adder(ir::PrimitiveType type) {
  auto it = adders_.find(type);
  if (it != adders_.end()) return it->second;
  return adders_[type] = internal::add_scalar_adder(module_, type, "spmd.add");
}

Held Partitioner::reshard(const Held& v, const Tiling& to, const Shape& whole) {
  if (v.layout.manual)
    fail("{} (line {}): a value of a manual region is used outside it (pass it through SPMDShardToFullShape)",
         current_->name(), current_->pos().line);
  const Tiling& from = *v.layout.array;
  if (from == to) return v;
  const ReshardPlan plan = plan_reshard(from, to, whole, costs_);
  if (!plan.permute.empty()) {
    // Devices that hold their new piece already keep it (a permute gives them zeros).
    std::vector<bool> moved(static_cast<size_t>(devices_), false);
    for (const auto& [source, target] : plan.permute) moved[static_cast<size_t>(target)] = true;
    return Held{choose(moved, permute(v.hlo, plan.permute), v.hlo), Layout{to, {}}};
  }
  if (plan.all_to_all)
    return Held{all_to_all(v.hlo, from, plan.all_to_all->first, plan.all_to_all->second, to, whole), Layout{to, {}}};
  Instruction* x = v.hlo;
  Tiling cur = from;
  for (int64_t d : plan.gathers) {
    x = all_gather(x, cur, d);
    cur = cur.unsplit(d);
    if (x->shape().dim(d) != whole.dim(d)) x = cut(x, d, whole.dim(d));  // the padding of an uneven split
  }
  if (plan.slice) x = local_slice(x, cur, to, whole);
  return Held{x, Layout{to, {}}};
}

Instruction* Partitioner::cut(Instruction* x, int64_t d, int64_t size) {
  Shape shape = x->shape();
  shape.mutable_dims()[static_cast<size_t>(d)] = size;
  Instruction* s = add(Opcode::kSlice, shape, {x}, x->name());
  for (int64_t k = 0; k < shape.rank(); ++k)
    s->attrs().slice.push_back({0, k == d ? size : x->shape().dim(k), 1});
  return s;
}

Instruction* Partitioner::all_to_all(Instruction* x, const Tiling& from, int64_t a, int64_t b, const Tiling& to,
                                     const Shape& whole) {
  const int64_t k = from.tiles(a), rank = whole.rank();
  const Shape piece = x->shape();
  // [.., k, B/k, ..] with the k blocks of dimension b, then the blocks first.
  Shape split = piece;
  split.clear_layout();
  split.mutable_dims()[static_cast<size_t>(b)] /= k;
  split.mutable_dims().insert(split.mutable_dims().begin() + b, k);
  Instruction* blocks = add(Opcode::kReshape, split, {x}, x->name());
  std::vector<int64_t> front{b};
  for (int64_t d = 0; d <= rank; ++d)
    if (d != b) front.push_back(d);
  Shape fronted = split;
  for (size_t d = 0; d < front.size(); ++d) fronted.mutable_dims()[d] = split.dim(front[d]);
  Instruction* t = add(Opcode::kTranspose, fronted, {blocks}, x->name());
  t->attrs().dimensions = front;
  Instruction* exchanged = add(Opcode::kAllToAll, fronted, {t}, "all-to-all");
  exchanged->attrs().dimensions = {0};
  collective_attrs(exchanged, from.groups_along({a}));
  // The received blocks (block j: the j-th piece along a) just before dimension a,
  // then merged with it.
  std::vector<int64_t> back;
  for (int64_t d = 1; d <= a; ++d) back.push_back(d);
  back.push_back(0);
  for (int64_t d = a + 1; d <= rank; ++d) back.push_back(d);
  Shape placed = fronted;
  for (size_t d = 0; d < back.size(); ++d) placed.mutable_dims()[d] = fronted.dim(back[d]);
  Instruction* p = add(Opcode::kTranspose, placed, {exchanged}, x->name());
  p->attrs().dimensions = back;
  return add(Opcode::kReshape, ir::shard_shape(whole, to.sharding()), {p}, x->name());
}

Instruction* Partitioner::local_slice(Instruction* x, const Tiling& from, const Tiling& to, const Shape& whole) {
  const Shape piece = ir::shard_shape(whole, to.sharding());
  std::vector<Instruction*> operands{nullptr};
  std::vector<ir::PadDim> padding(static_cast<size_t>(whole.rank()));
  bool pad = false;
  for (int64_t d = 0; d < whole.rank(); ++d) {
    std::vector<int64_t> offsets;
    int64_t reach = 0;
    for (int64_t p = 0; p < devices_; ++p) {
      offsets.push_back(interval(to, p, d, whole.dim(d)).begin - interval(from, p, d, whole.dim(d)).begin);
      reach = std::max(reach, offsets.back() + piece.dim(d));
    }
    padding[static_cast<size_t>(d)].high = std::max<int64_t>(0, reach - x->shape().dim(d));
    pad = pad || padding[static_cast<size_t>(d)].high > 0;
    operands.push_back(per_partition(offsets));
  }
  if (pad) {
    Shape padded = x->shape();
    for (int64_t d = 0; d < whole.rank(); ++d)
      padded.mutable_dims()[static_cast<size_t>(d)] += padding[static_cast<size_t>(d)].high;
    Instruction* zero = constant(ir::Literal(Shape::scalar(whole.type())), "zero");
    x = add(Opcode::kPad, padded, {x, zero}, x->name());
    x->attrs().padding = padding;
  }
  operands[0] = x;
  Instruction* s = add(Opcode::kDynamicSlice, piece, std::move(operands), x->name());
  s->attrs().dynamic_slice_sizes = piece.dims();
  return s;
}

Held Partitioner::to_layout(const Held& v, const Layout& want, const Shape& whole) {
  if (whole.is_array()) return reshard(v, *want.array, whole);
  std::vector<Instruction*> parts;
  Layout got;
  bool same = true;
  for (int64_t e = 0; e < whole.tuple_size(); ++e) {
    const Layout& have = v.layout.elements[static_cast<size_t>(e)];
    Instruction* element = add(Opcode::kGetTupleElement, v.hlo->shape().element(e), {v.hlo}, "element");
    element->attrs().tuple_index = e;
    Held part = to_layout(Held{element, have}, want.elements[static_cast<size_t>(e)], whole.element(e));
    same = same && part.hlo == element;
    parts.push_back(part.hlo);
    got.elements.push_back(part.layout);
  }
  if (same) return v;
  std::vector<Shape> shapes;
  for (Instruction* p : parts) shapes.push_back(p->shape());
  return Held{add(Opcode::kTuple, Shape::tuple(std::move(shapes)), std::move(parts), v.hlo->name()), got};
}

Held Partitioner::replicate(const Instruction& original) {
  const Held& v = held_.at(&original);
  if (is_replicated(v.layout)) return v;
  return to_layout(v, replicated_layout(original.shape(), devices_), original.shape());
}

Tiling Partitioner::target_of(const Instruction& i) const {
  const auto& s = i.sharding();
  return Tiling::of(s && s->kind != ir::Sharding::Kind::kTuple ? *s : ir::Sharding{}, i.shape().rank(), devices_);
}

Instruction* Partitioner::clone(const Instruction& i, Shape shape, std::vector<Instruction*> operands) {
  std::unique_ptr<Instruction> c = i.clone(out_->unique_name(i.name()), std::move(operands));
  c->mutable_shape() = std::move(shape);
  c->sharding().reset();
  c->mutable_control_predecessors().clear();
  return out_->add(std::move(c));
}

ir::Computation* Partitioner::partition_computation(const ir::Computation& c, const std::vector<Layout>& params,
                                                    const Layout& root, bool entry) {
  ir::Computation* saved_out = out_;
  auto saved_held = std::move(held_);
  Instruction* saved_partition = partition_;
  const Instruction* saved_current = current_;
  out_ = module_.add_computation(
      std::make_unique<ir::Computation>(module_.unique_computation_name(c.name() + ".spmd")));
  held_.clear();
  partition_ = nullptr;
  for (const auto& i : c.instructions()) {
    if (i->opcode() != Opcode::kParameter) {
      partition(*i);
      continue;
    }
    current_ = i.get();
    const Layout& l = params.at(static_cast<size_t>(i->attrs().parameter_number));
    Instruction* p = clone(*i, piece_shape(i->shape(), l), {});
    if (entry) p->sharding() = i->sharding();
    held_[i.get()] = Held{p, l};
  }
  current_ = c.root();
  out_->set_root(to_layout(held_.at(c.root()), root, c.root()->shape()).hlo);
  ir::Computation* result = out_;
  out_ = saved_out;
  held_ = std::move(saved_held);
  partition_ = saved_partition;
  current_ = saved_current;
  return result;
}

Held Partitioner::partition_control_flow(const Instruction& i) {
  const Layout want = layout_of(i.sharding().value_or(ir::Sharding{}), i.shape(), devices_);
  std::vector<Instruction*> operands;
  std::vector<ir::Computation*> called;
  switch (i.opcode()) {
    case Opcode::kWhile: {
      const Instruction& init = *i.operand(0);
      operands.push_back(to_layout(held_.at(&init), want, init.shape()).hlo);
      const Layout pred = replicated_layout(i.called(0)->root()->shape(), devices_);
      called.push_back(partition_computation(*i.called(0), {want}, pred, false));
      called.push_back(partition_computation(*i.called(1), {want}, want, false));
      break;
    }
    case Opcode::kCall: {
      std::vector<Layout> params;
      for (const Instruction* o : i.operands()) {
        operands.push_back(held_.at(o).hlo);
        params.push_back(held_.at(o).layout);
      }
      called.push_back(partition_computation(*i.called(0), params, want, false));
      break;
    }
    default: {  // kConditional: the branch index or predicate whole
      operands.push_back(replicate(*i.operand(0)).hlo);
      for (size_t b = 0; b < i.called().size(); ++b) {
        const Held& o = held_.at(i.operand(static_cast<int64_t>(b) + 1));
        operands.push_back(o.hlo);
        called.push_back(partition_computation(*i.called()[b], {o.layout}, want, false));
      }
      break;
    }
  }
  Instruction* c = clone(i, piece_shape(i.shape(), want), std::move(operands));
  c->set_called(std::move(called));
  return Held{c, want};
}

void Partitioner::partition(const Instruction& i) {
  current_ = &i;
  switch (i.opcode()) {
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kConditional:
      if (is_manual(i.sharding())) break;
      held_[&i] = partition_control_flow(i);
      return;
    case Opcode::kTuple: {
      std::vector<Instruction*> parts;
      Layout l;
      std::vector<Shape> shapes;
      for (const Instruction* o : i.operands()) {
        const Held& h = held_.at(o);
        parts.push_back(h.hlo);
        shapes.push_back(h.hlo->shape());
        l.elements.push_back(h.layout);
      }
      held_[&i] = Held{clone(i, Shape::tuple(std::move(shapes)), std::move(parts)), l};
      return;
    }
    case Opcode::kGetTupleElement: {
      const Held& t = held_.at(i.operand(0));
      const int64_t e = i.attrs().tuple_index;
      held_[&i] = Held{clone(i, t.hlo->shape().element(e), {t.hlo}), t.layout.elements.at(static_cast<size_t>(e))};
      return;
    }
    default:
      break;
  }
  if (partition_manual(i)) return;
  if (i.shape().is_array()) {
    const Tiling want = target_of(i);
    if (i.opcode() == Opcode::kCustomCall && i.attrs().custom_call_target == "Sharding") {
      held_[&i] = reshard(held_.at(i.operand(0)), want, i.shape());
      return;
    }
    std::optional<Held> h;
    if (i.opcode() == Opcode::kDot) h = partition_dot(i, want);
    if (!h && i.opcode() == Opcode::kReduce) h = partition_reduce(i, want);
    if (!h && i.opcode() == Opcode::kGather) h = partition_row_gather(i);
    if (!h && i.opcode() == Opcode::kScatter) h = partition_row_scatter(i);
    if (!h) h = partition_shift(i, want);
    if (!h) h = partition_windowed(i, want);
    if (!h && i.opcode() == Opcode::kConcatenate) h = partition_concatenate(i, want);
    if (!h) h = partition_on_pieces(i, want);
    if (h) {
      held_[&i] = reshard(*h, want, i.shape());
      return;
    }
  }
  // Whole operands, whole result, then this device's piece.
  std::vector<Instruction*> operands;
  for (const Instruction* o : i.operands()) operands.push_back(replicate(*o).hlo);
  Held whole{clone(i, i.shape(), std::move(operands)), replicated_layout(i.shape(), devices_)};
  held_[&i] = i.shape().is_array() ? reshard(whole, target_of(i), i.shape()) : whole;
}

bool Partitioner::partition_manual(const Instruction& i) {
  const std::string& target = i.opcode() == Opcode::kCustomCall ? i.attrs().custom_call_target : std::string();
  if (target == "SPMDFullToShardShape") {
    const Instruction& o = *i.operand(0);
    const Held piece = reshard(held_.at(&o), target_of(o), o.shape());
    if (!piece.hlo->shape().compatible(i.shape()))
      fail("{} (line {}): SPMDFullToShardShape gives {}, but the pieces of {} under {} are {}", i.name(),
           i.pos().line, i.shape().to_string(false), o.shape().to_string(false),
           o.sharding().value_or(ir::Sharding{}).to_string(), piece.hlo->shape().to_string(false));
    held_[&i] = Held{piece.hlo, Layout{std::nullopt, {}, true}};
    return true;
  }
  if (target == "SPMDShardToFullShape") {
    const Held& piece = held_.at(i.operand(0));
    const Tiling t = target_of(i);
    if (!piece.hlo->shape().compatible(ir::shard_shape(i.shape(), t.sharding())))
      fail("{} (line {}): SPMDShardToFullShape takes pieces {} of {} under {}, got {}", i.name(), i.pos().line,
           ir::shard_shape(i.shape(), t.sharding()).to_string(false), i.shape().to_string(false),
           t.sharding().to_string(), piece.hlo->shape().to_string(false));
    held_[&i] = Held{piece.hlo, Layout{t, {}, false}};
    return true;
  }
  if (!is_manual(i.sharding())) return false;
  std::vector<Instruction*> operands;
  for (const Instruction* o : i.operands()) {
    const Held& h = held_.at(o);
    operands.push_back(h.layout.manual ? h.hlo : replicate(*o).hlo);  // values from outside: whole
  }
  held_[&i] = Held{clone(i, i.shape(), std::move(operands)), Layout{std::nullopt, {}, true}};
  return true;
}

std::optional<Held> Partitioner::partition_on_pieces(const Instruction& i, const Tiling& want) {
  if (i.operand_count() == 0) return std::nullopt;
  std::vector<std::vector<int64_t>> maps;
  for (int64_t k = 0; k < i.operand_count(); ++k) {
    auto map = operand_dims_in_result(i, k);
    if (!map) return std::nullopt;
    maps.push_back(std::move(*map));
  }
  // Pieces of uneven splits carry padding at the end, which a reshape would move into
  // the middle: it runs on even splits only.
  const bool even_only = i.opcode() == Opcode::kReshape;
  Tiling run = want;
  for (int64_t d = 0; d < i.shape().rank(); ++d) {
    if (run.tiles(d) == 1) continue;
    if (even_only && i.shape().dim(d) % run.tiles(d) != 0) {
      run = run.unsplit(d);
      continue;
    }
    for (int64_t k = 0; k < i.operand_count(); ++k) {
      const auto& map = maps[static_cast<size_t>(k)];
      if (!operand_ignores_result_dim(i, k, d) && std::find(map.begin(), map.end(), d) == map.end()) {
        run = run.unsplit(d);
        break;
      }
    }
  }
  std::vector<Instruction*> operands;
  for (int64_t k = 0; k < i.operand_count(); ++k) {
    const Instruction& o = *i.operand(k);
    const Tiling t = run.remap(maps[static_cast<size_t>(k)]);
    if (even_only && !t.divides(o.shape())) return std::nullopt;
    operands.push_back(reshard(held_.at(&o), t, o.shape()).hlo);
  }
  const Shape piece = ir::shard_shape(i.shape(), run.sharding());
  Instruction* c = clone(i, piece, std::move(operands));
  if (i.opcode() == Opcode::kSlice)
    for (int64_t d = 0; d < piece.rank(); ++d)
      if (run.tiles(d) > 1) c->attrs().slice[static_cast<size_t>(d)].limit = piece.dim(d);
  if (i.opcode() == Opcode::kDynamicSlice) c->attrs().dynamic_slice_sizes = piece.dims();
  if (i.opcode() == Opcode::kGather) {  // slices of the operand's split dimensions: its pieces
    const Shape table = c->operand(0)->shape();
    for (int64_t d = 0; d < table.rank(); ++d)
      if (run.remap(maps[0]).tiles(d) > 1) c->attrs().gather_slice_sizes[static_cast<size_t>(d)] = table.dim(d);
  }
  return Held{c, Layout{run, {}}};
}

double Partitioner::plan_cost(const ReshardPlan& plan, const Tiling& from, const Shape& whole) const {
  return plan_ns(plan, from, whole, costs_);
}

double Partitioner::cost(const Instruction& o, const Tiling& to) const {
  const Tiling& from = *held_.at(&o).layout.array;
  return plan_cost(plan_reshard(from, to, o.shape(), costs_), from, o.shape());
}

}  // namespace podsim::passes::spmd

namespace podsim::passes {
namespace {

class SpmdPartitioner final : public Pass {
 public:
  explicit SpmdPartitioner(const topology::PodConfig* pod) : costs_(pod) {}
  std::string_view name() const override { return "spmd-partitioner"; }
  bool run(ir::Module& module) override {
    if (module.num_partitions <= 1) return false;
    spmd::Partitioner(module, module.num_partitions, costs_).run();
    return true;
  }

 private:
  spmd::CostModel costs_;
};

}  // namespace

std::unique_ptr<Pass> make_spmd_partitioner(const topology::PodConfig* pod) {
  return std::make_unique<SpmdPartitioner>(pod);
}

void spmd_partition(ir::Module& module, int64_t partitions, const topology::PodConfig* pod) {
  if (partitions > 0) module.num_partitions = partitions;
  if (module.num_partitions <= 1) {
    for (const auto& c : module.computations())
      for (const auto& i : c->instructions()) i->sharding().reset();
    return;
  }
  Pipeline pipeline;
  pipeline.add(make_sharding_propagation())
      .add(make_spmd_partitioner(pod))
      .add(make_all_reduce_combiner())
      .add(make_all_gather_combiner())
      .add(make_reduce_scatter_combiner())
      .add(make_dce())
      .verify_each(true);
  pipeline.run(module);
}

}  // namespace podsim::passes
