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
// reduce-scatter where the result is to be split over the same devices); a reduce over a split dimension reduces
// its pieces and sums them the same way (when the init value is the reducer's
// identity). A slice, pad or concatenate that shifts a split dimension takes the
// windows of its operands it needs from the devices holding them (halos.h: neighbours'
// edges, or parts of farther pieces) where that costs less than gathering; lookups and scatters into a table split by rows use local indices. While
// loops, calls and conditionals run on pieces: their computations are partitioned for
// the layouts of the values they take (a loop's state keeps one layout all round).
// Everything else runs on whole operands and is cut to its sharding.
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
#include "compiler/passes/spmd/cost_model.h"
#include "compiler/passes/spmd/dim_maps.h"
#include "compiler/passes/spmd/emitter.h"
#include "compiler/passes/spmd/halos.h"
#include "compiler/passes/spmd/reshard_plan.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;
using spmd::ReshardPlan;
using spmd::Tiling;

// How the per-device program holds a value: an array under a tiling, a tuple, or a
// value of a manual region (per-device code the user wrote: no tiling).
struct Layout {
  std::optional<Tiling> array;
  std::vector<Layout> elements;
  bool manual = false;
};

bool is_manual(const std::optional<ir::Sharding>& s) { return s && s->kind == ir::Sharding::Kind::kManual; }

struct Held {
  Instruction* hlo = nullptr;
  Layout layout;
};

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

class Partitioner : public spmd::Emitter {
 public:
  Partitioner(ir::Module& module, int64_t devices, const spmd::CostModel& costs)
      : Emitter(module, devices), costs_(costs) {}

  void run() {
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

 private:
  static const Shape* subshape(const Shape& s, const std::vector<int64_t>& index) {
    const Shape* at = &s;
    for (int64_t i : index) {
      if (!at->is_tuple() || i >= at->tuple_size()) return nullptr;
      at = &at->element(i);
    }
    return at;
  }

  Instruction* all_gather(Instruction* x, const Tiling& t, int64_t d) {
    Shape shape = x->shape();
    shape.mutable_dims()[static_cast<size_t>(d)] *= t.tiles(d);
    Instruction* g = add(Opcode::kAllGather, std::move(shape), {x}, "all-gather");
    g->attrs().dimensions = {d};
    collective_attrs(g, t.groups_along({d}));
    return g;
  }

  Instruction* all_reduce(Instruction* x, std::vector<std::vector<int64_t>> g, ir::Computation* reducer) {
    Instruction* r = add(Opcode::kAllReduce, x->shape(), {x}, "all-reduce");
    r->add_called(reducer);
    collective_attrs(r, std::move(g));
    return r;
  }

  ir::Computation* adder(ir::PrimitiveType type) {
    auto it = adders_.find(type);
    if (it != adders_.end()) return it->second;
    auto c = std::make_unique<ir::Computation>(module_.unique_computation_name("spmd.add"));
    const Shape s = Shape::scalar(type);
    std::vector<Instruction*> params;
    for (int64_t k = 0; k < 2; ++k) {
      auto p = std::make_unique<Instruction>(fmt::format("x{}", k), Opcode::kParameter, s);
      p->attrs().parameter_number = k;
      params.push_back(c->add(std::move(p)));
    }
    auto sum = std::make_unique<Instruction>("sum", type == ir::PrimitiveType::kPred ? Opcode::kOr : Opcode::kAdd, s);
    sum->set_operands(params);
    c->set_root(c->add(std::move(sum)));
    return adders_[type] = module_.add_computation(std::move(c));
  }

  Held reshard(const Held& v, const Tiling& to, const Shape& whole) {
    if (v.layout.manual)
      fail("{} (line {}): a value of a manual region is used outside it (pass it through SPMDShardToFullShape)",
           current_->name(), current_->pos().line);
    const Tiling& from = *v.layout.array;
    if (from == to) return v;
    const ReshardPlan plan = spmd::plan_reshard(from, to, whole, costs_);
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

  // x's first `size` elements along dimension d.
  Instruction* cut(Instruction* x, int64_t d, int64_t size) {
    Shape shape = x->shape();
    shape.mutable_dims()[static_cast<size_t>(d)] = size;
    Instruction* s = add(Opcode::kSlice, shape, {x}, x->name());
    for (int64_t k = 0; k < shape.rank(); ++k)
      s->attrs().slice.push_back({0, k == d ? size : x->shape().dim(k), 1});
    return s;
  }

  // Moves the split of dimension a (k pieces) to dimension b: each device cuts its piece
  // into k blocks along b, block j goes to the j-th device of its group along a, and the
  // blocks it receives make its piece whole along a.
  Instruction* all_to_all(Instruction* x, const Tiling& from, int64_t a, int64_t b, const Tiling& to,
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

  // Each device's piece under `to`, cut from its piece under `from`, which holds it. Where
  // a split is uneven, the last pieces run past the value: the source is padded (with
  // zeros) so that no device's slice is moved back by dynamic-slice's clamping.
  Instruction* local_slice(Instruction* x, const Tiling& from, const Tiling& to, const Shape& whole) {
    const Shape piece = ir::shard_shape(whole, to.sharding());
    std::vector<Instruction*> operands{nullptr};
    std::vector<ir::PadDim> padding(static_cast<size_t>(whole.rank()));
    bool pad = false;
    for (int64_t d = 0; d < whole.rank(); ++d) {
      std::vector<int64_t> offsets;
      int64_t reach = 0;
      for (int64_t p = 0; p < devices_; ++p) {
        offsets.push_back(spmd::interval(to, p, d, whole.dim(d)).begin - spmd::interval(from, p, d, whole.dim(d)).begin);
        reach = std::max(reach, offsets.back() + piece.dim(d));
      }
      padding[static_cast<size_t>(d)].high = std::max<int64_t>(0, reach - x->shape().dim(d));
      pad = pad || padding[static_cast<size_t>(d)].high > 0;
      operands.push_back(per_partition(offsets));
    }
    if (pad) {
      Shape padded = x->shape();
      for (int64_t d = 0; d < whole.rank(); ++d) padded.mutable_dims()[static_cast<size_t>(d)] += padding[static_cast<size_t>(d)].high;
      Instruction* zero = constant(ir::Literal(Shape::scalar(whole.type())), "zero");
      x = add(Opcode::kPad, padded, {x, zero}, x->name());
      x->attrs().padding = padding;
    }
    operands[0] = x;
    Instruction* s = add(Opcode::kDynamicSlice, piece, std::move(operands), x->name());
    s->attrs().dynamic_slice_sizes = piece.dims();
    return s;
  }

  Held to_layout(const Held& v, const Layout& want, const Shape& whole) {
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

  Held replicate(const Instruction& original) {
    const Held& v = held_.at(&original);
    if (is_replicated(v.layout)) return v;
    return to_layout(v, replicated_layout(original.shape(), devices_), original.shape());
  }

  Tiling target_of(const Instruction& i) const {
    const auto& s = i.sharding();
    return Tiling::of(s && s->kind != ir::Sharding::Kind::kTuple ? *s : ir::Sharding{}, i.shape().rank(), devices_);
  }

  Instruction* clone(const Instruction& i, Shape shape, std::vector<Instruction*> operands) {
    std::unique_ptr<Instruction> c = i.clone(out_->unique_name(i.name()), std::move(operands));
    c->mutable_shape() = std::move(shape);
    c->sharding().reset();
    c->mutable_control_predecessors().clear();
    return out_->add(std::move(c));
  }

  // The program every partition runs for computation c, whose parameters it gets as
  // pieces under `params` and whose root it returns under `root`. The entry's parameters
  // keep their shardings (callers read them).
  ir::Computation* partition_computation(const ir::Computation& c, const std::vector<Layout>& params,
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

  // Control flow runs on pieces: a while carries its state under its sharding, through a
  // body and condition partitioned for that layout; a call's callee and a conditional's
  // branches are partitioned for the layouts their operands have, and return theirs
  // under the instruction's sharding.
  Held partition_control_flow(const Instruction& i) {
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

  void partition(const Instruction& i) {
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

  // Manual regions (JAX's shard_map): SPMDFullToShardShape hands each device its piece
  // of its operand (split as the operand's sharding says) to per-device code, which runs
  // as written (its collectives too); SPMDShardToFullShape takes each device's result as
  // its piece of a value split as its own sharding says. Returns whether i was one of
  // them.
  bool partition_manual(const Instruction& i) {
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

  // Runs i on pieces: its result tiled as `want` where every operand's dimension maps
  // allow (else with those dimensions whole), each operand resharded to match.
  std::optional<Held> partition_on_pieces(const Instruction& i, const Tiling& want) {
    if (i.operand_count() == 0) return std::nullopt;
    std::vector<std::vector<int64_t>> maps;
    for (int64_t k = 0; k < i.operand_count(); ++k) {
      auto map = spmd::operand_dims_in_result(i, k);
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
        if (!spmd::operand_ignores_result_dim(i, k, d) && std::find(map.begin(), map.end(), d) == map.end()) {
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

  // A slice (stride 1) or pad (no interior padding) that shifts a dimension split in its
  // result runs on pieces: its operand split like the result, each device takes the
  // window of the operand its piece of the result reads (halos from its neighbours; a
  // pad's value where it reads outside the operand), then slices or pads the dimensions
  // that are whole. nullopt where no split dimension shifts, or a halo would be wider than
  // a piece.
  std::optional<Held> partition_shift(const Instruction& i, const Tiling& want) {
    const bool pad = i.opcode() == Opcode::kPad;
    if (!pad && i.opcode() != Opcode::kSlice) return std::nullopt;
    const Instruction& o = *i.operand(0);
    const int64_t rank = i.shape().rank();
    std::vector<int64_t> shifted;
    for (int64_t d = 0; d < rank; ++d) {
      if (want.tiles(d) == 1) continue;
      const ir::SliceDim s = pad ? ir::SliceDim{} : i.attrs().slice[static_cast<size_t>(d)];
      const ir::PadDim p = pad ? i.attrs().padding[static_cast<size_t>(d)] : ir::PadDim{};
      if (s.stride != 1 || p.interior != 0) return std::nullopt;
      if (pad ? p.low != 0 || p.high != 0 : s.start != 0 || s.limit != o.shape().dim(d)) shifted.push_back(d);
    }
    if (shifted.empty()) return std::nullopt;
    // Each device's window of the operand along each shifted dimension, and what
    // exchanging them costs against gathering the operand.
    const Shape piece = ir::shard_shape(i.shape(), want.sharding());
    const Shape operand_piece = ir::shard_shape(o.shape(), want.sharding());
    std::vector<std::vector<int64_t>> windows;
    double ns = cost(o, want);
    for (int64_t d : shifted) {
      const int64_t m = piece.dim(d);
      const auto k = static_cast<size_t>(d);
      const int64_t shift = pad ? -i.attrs().padding[k].low : i.attrs().slice[k].start;
      std::vector<int64_t>& lo = windows.emplace_back();
      for (int64_t p = 0; p < devices_; ++p) lo.push_back(want.position(p)[k] * m + shift);
      ns += cost(spmd::window_exchange(want, d, operand_piece.dim(d), o.shape().dim(d), lo, m, devices_), want, d,
                 operand_piece);
    }
    // Else (partition_on_pieces): the operand gathered along the shifted dimensions, the op
    // on it, the result cut (a dynamic-slice and its table of offsets).
    Tiling gathered = want;
    for (int64_t d : shifted) gathered = gathered.unsplit(d);
    if (ns > cost(o, gathered) + 3 * copy_cost(piece, shifted.front())) return std::nullopt;
    Instruction* x = reshard(held_.at(&o), want, o.shape()).hlo;
    Instruction* fill = pad ? replicate(*i.operand(1)).hlo : nullptr;
    for (size_t j = 0; j < shifted.size(); ++j)
      x = spmd::window(*this, x, want, shifted[j], o.shape().dim(shifted[j]), windows[j], piece.dim(shifted[j]), fill);
    // What is left: the op on the dimensions that are whole on every device.
    bool left = false;
    for (int64_t d = 0; d < rank; ++d)
      left = left || (want.tiles(d) == 1 && (pad ? !(i.attrs().padding[static_cast<size_t>(d)] == ir::PadDim{})
                                                 : !(i.attrs().slice[static_cast<size_t>(d)] ==
                                                     ir::SliceDim{0, o.shape().dim(d), 1})));
    if (!left) return Held{x, Layout{want, {}}};
    std::vector<Instruction*> operands{x};
    if (pad) operands.push_back(fill);
    Instruction* c = clone(i, piece, std::move(operands));
    for (int64_t d = 0; d < rank; ++d) {
      if (want.tiles(d) == 1) continue;
      if (pad)
        c->attrs().padding[static_cast<size_t>(d)] = {};
      else
        c->attrs().slice[static_cast<size_t>(d)] = {0, piece.dim(d), 1};
    }
    return Held{c, Layout{want, {}}};
  }

  // A convolution or reduce-window whose result is split along window dimensions
  // (spatial partitioning) runs on pieces: each device's piece of the result reads a
  // window of the input split the same way, taken with halos from the devices that hold
  // it, zeros (the init value) where it reaches past the input (its padding), and runs
  // with no padding there. nullopt where no such dimension is split, or gathering the
  // input along them costs less.
  std::optional<Held> partition_windowed(const Instruction& i, const Tiling& want) {
    std::vector<std::pair<int64_t, int64_t>> split;  // (result, input) dimensions
    for (const auto& dims : spmd::window_dims(i))
      if (want.tiles(dims.first) > 1) split.push_back(dims);
    if (split.empty()) return std::nullopt;
    const bool conv = i.opcode() == Opcode::kConvolution;
    const Instruction& input = *i.operand(0);
    const std::vector<int64_t> map = *spmd::operand_dims_along_result(i, 0);
    // Every split dimension of the result must be one the input follows (or, for a
    // convolution, the kernel's output features).
    for (int64_t d = 0; d < i.shape().rank(); ++d)
      if (want.tiles(d) > 1 && std::find(map.begin(), map.end(), d) == map.end() &&
          !(conv && d == i.attrs().conv_dims.output_feature))
        return std::nullopt;
    const Tiling t = want.remap(map);
    const Shape piece = ir::shard_shape(i.shape(), want.sharding());
    const Shape input_piece = ir::shard_shape(input.shape(), t.sharding());
    // The window dimension (its index) along result dimension r.
    auto window_index = [&](int64_t r) {
      if (!conv) return static_cast<size_t>(r);
      const auto& spatial = i.attrs().conv_dims.output_spatial;
      return static_cast<size_t>(std::find(spatial.begin(), spatial.end(), r) - spatial.begin());
    };
    std::vector<std::vector<int64_t>> windows;
    std::vector<int64_t> widths;
    Tiling gathered = t;
    double ns = cost(input, t);
    for (const auto& [r, d] : split) {
      const ir::WindowDim& wd = i.attrs().window->dims.at(window_index(r));
      const int64_t m = piece.dim(r);
      std::vector<int64_t>& lo = windows.emplace_back();
      for (int64_t p = 0; p < devices_; ++p) lo.push_back(want.position(p)[static_cast<size_t>(r)] * m * wd.stride - wd.pad_low);
      widths.push_back((m - 1) * wd.stride + (wd.size - 1) * wd.rhs_dilation + 1);
      ns += cost(spmd::window_exchange(t, d, input_piece.dim(d), input.shape().dim(d), lo, widths.back(), devices_), t, d,
                 input_piece);
      gathered = gathered.unsplit(d);
    }
    // Else (partition_on_pieces): the input gathered along them, the result cut.
    if (ns > cost(input, gathered) + 3 * copy_cost(piece, split.front().first)) return std::nullopt;
    Instruction* x = reshard(held_.at(&input), t, input.shape()).hlo;
    Instruction* fill = conv ? constant(ir::Literal(Shape::scalar(input.shape().type())), "zero") : replicate(*i.operand(1)).hlo;
    for (size_t k = 0; k < split.size(); ++k)
      x = spmd::window(*this, x, t, split[k].second, input.shape().dim(split[k].second), windows[k], widths[k], fill);
    std::vector<Instruction*> operands{x};
    if (conv)
      operands.push_back(reshard(held_.at(i.operand(1)), want.remap(*spmd::operand_dims_in_result(i, 1)), i.operand(1)->shape()).hlo);
    else
      operands.push_back(fill);
    Instruction* c = clone(i, piece, std::move(operands));
    for (const auto& [r, d] : split) {
      ir::WindowDim& wd = c->attrs().window->dims.at(window_index(r));
      wd.pad_low = wd.pad_high = 0;
    }
    return Held{c, Layout{want, {}}};
  }

  // A concatenate along a split dimension runs on pieces: each device's piece of the
  // result is a window of positions, which it takes from each operand split the same way
  // (halos from its neighbours; an operand whose window reaches further, a small one
  // appended, is gathered and the window cut from it) and picks by position.
  std::optional<Held> partition_concatenate(const Instruction& i, const Tiling& want) {
    const int64_t d = i.attrs().dimensions.at(0);
    if (want.tiles(d) == 1) return std::nullopt;
    const Shape piece = ir::shard_shape(i.shape(), want.sharding());
    const int64_t m = piece.dim(d);
    std::vector<int64_t> start;  // of each device's piece of the result
    for (int64_t p = 0; p < devices_; ++p) start.push_back(want.position(p)[static_cast<size_t>(d)] * m);
    // Each operand's windows, and whether exchanging them costs less than gathering the
    // operand and cutting them from it (a pad and a cut with its offsets). Where none does, the operands
    // are gathered, concatenated and cut as any other op (one cut in all).
    std::vector<std::vector<int64_t>> windows;
    std::vector<bool> exchange;
    int64_t offset = 0;
    for (const Instruction* o : i.operands()) {
      const int64_t size = o->shape().dim(d);
      // Where a device's window misses this operand, any window will do: its own piece.
      const Shape operand_piece = ir::shard_shape(o->shape(), want.sharding());
      const int64_t n = operand_piece.dim(d);
      std::vector<int64_t>& lo = windows.emplace_back();
      for (int64_t p = 0; p < devices_; ++p) {
        const int64_t at = start[static_cast<size_t>(p)] - offset;
        lo.push_back(at + m <= 0 || at >= size ? want.position(p)[static_cast<size_t>(d)] * n : at);
      }
      exchange.push_back(cost(*o, want) + cost(spmd::window_exchange(want, d, n, size, lo, m, devices_), want, d, operand_piece) <=
                         cost(*o, want.unsplit(d)) + 4 * copy_cost(piece, d));
      offset += size;
    }
    if (std::find(exchange.begin(), exchange.end(), true) == exchange.end()) return std::nullopt;
    Instruction* result = nullptr;
    Instruction* where = nullptr;  // each element's position in the result, once needed
    offset = 0;
    for (size_t k = 0; k < i.operands().size(); ++k) {
      const Instruction* o = i.operand(static_cast<int64_t>(k));
      const int64_t size = o->shape().dim(d);
      Instruction* w = nullptr;
      if (exchange[k]) {
        w = spmd::window(*this, reshard(held_.at(o), want, o->shape()).hlo, want, d, size, windows[k], m, nullptr);
      } else {
        // The operand whole along d (split as the result elsewhere), m zeros either side,
        // cut at each device's window.
        Instruction* whole = reshard(held_.at(o), want.unsplit(d), o->shape()).hlo;
        Shape padded = whole->shape();
        padded.mutable_dims()[static_cast<size_t>(d)] += 2 * m;
        std::vector<ir::PadDim> padding(static_cast<size_t>(padded.rank()));
        padding[static_cast<size_t>(d)] = {m, m, 0};
        Instruction* ext = add(Opcode::kPad, padded, {whole, constant(ir::Literal(Shape::scalar(o->shape().type())), "zero")},
                               o->name());
        ext->attrs().padding = padding;
        std::vector<int64_t> at;
        for (int64_t p = 0; p < devices_; ++p)
          at.push_back(std::clamp<int64_t>(start[static_cast<size_t>(p)] - offset, -m, size) + m);
        w = dynamic_slice(ext, d, at, m);
      }
      if (result == nullptr) {
        result = w;
      } else {
        // From this operand on: positions at or past its offset.
        if (where == nullptr) where = spmd::positions(*this, piece.dims(), d, start);
        Instruction* from = splat(constant(ir::Literal::scalar(ir::PrimitiveType::kS32, offset), "offset"), where->shape());
        Instruction* mine = add(Opcode::kCompare, Shape(ir::PrimitiveType::kPred, piece.dims()), {where, from}, "mine");
        mine->attrs().direction = ir::ComparisonDirection::kGe;
        Shape values = piece;
        values.clear_layout();
        result = add(Opcode::kSelect, values, {mine, w, result}, i.name());
      }
      offset += size;
    }
    return Held{result, Layout{want, {}}};
  }

  // The cost of a choice: what its collectives take on the pod (cost_model.h). A dot over
  // a split contracting dimension whose result must be whole could gather both operands
  // (two collectives, and the whole dot on every device) or sum partial products (one
  // all-reduce, which the combiner merges with the other gradients'): the latency of
  // each collective's steps, not only its bytes, decides.
  double plan_cost(const spmd::ReshardPlan& plan, const Tiling& from, const Shape& whole) const {
    return spmd::plan_ns(plan, from, whole, costs_);
  }
  // Of resharding `o` (held) to `to`.
  double cost(const Instruction& o, const Tiling& to) const {
    const Tiling& from = *held_.at(&o).layout.array;
    return plan_cost(spmd::plan_reshard(from, to, o.shape(), costs_), from, o.shape());
  }
  // Of the collective-permutes forming windows (window_exchange) of x (pieces under t).
  double cost(const spmd::WindowExchange& w, const Tiling& t, int64_t d, const Shape& piece) const {
    const double bytes_per_element = static_cast<double>(piece.byte_size()) / static_cast<double>(std::max<int64_t>(1, piece.dim(d)));
    const std::vector<std::vector<int64_t>> groups = t.groups_along({d});
    double ns = 0;
    for (size_t s = 0; s < w.shifts.size(); ++s) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (const std::vector<int64_t>& g : groups)
        for (int64_t q = 0; q < static_cast<int64_t>(g.size()); ++q)
          if (q + w.shifts[s] >= 0 && q + w.shifts[s] < static_cast<int64_t>(g.size()))
            pairs.emplace_back(g[static_cast<size_t>(q + w.shifts[s])], g[static_cast<size_t>(q)]);
      ns += costs_.permute(pairs, bytes_per_element * static_cast<double>(w.widths[s]));
    }
    return ns + static_cast<double>(w.copies) * copy_cost(piece, d);
  }
  // Of copying `piece` (a slice or select along dimension d: its runs are the dimensions
  // from d on).
  double copy_cost(const Shape& piece, int64_t d) const {
    double run = static_cast<double>(ir::type_byte_size(piece.type()));
    for (int64_t k = d; k < piece.rank(); ++k) run *= static_cast<double>(piece.dim(k));
    return costs_.copy(static_cast<double>(piece.byte_size()), run);
  }

  std::optional<Held> partition_dot(const Instruction& i, const Tiling& want) {
    const Instruction& lhs = *i.operand(0);
    const Instruction& rhs = *i.operand(1);
    const std::vector<int64_t> lmap = *spmd::operand_dims_in_result(i, 0);
    const std::vector<int64_t> rmap = *spmd::operand_dims_in_result(i, 1);
    const ir::DotDimNumbers& dn = i.attrs().dot_dims;
    // Choice 0: operands tiled like the result.
    struct Choice {
      Tiling lhs, rhs, result;
      std::vector<std::vector<int64_t>> partial;  // all-reduce groups, empty if none
      double ns;
    };
    std::vector<Choice> choices;
    {
      const Tiling l = want.remap(lmap), r = want.remap(rmap);
      choices.push_back({l, r, want, {}, cost(lhs, l) + cost(rhs, r)});
    }
    // Choices 1, 2: one operand's split contracting dimensions kept, partial products.
    for (int side = 0; side < 2; ++side) {
      const Instruction& self = side == 0 ? lhs : rhs;
      const Instruction& other = side == 0 ? rhs : lhs;
      const Tiling& t = *held_.at(&self).layout.array;
      const auto& self_c = side == 0 ? dn.lhs_contracting : dn.rhs_contracting;
      const auto& other_c = side == 0 ? dn.rhs_contracting : dn.lhs_contracting;
      const auto& self_b = side == 0 ? dn.lhs_batch : dn.rhs_batch;
      const auto& other_b = side == 0 ? dn.rhs_batch : dn.lhs_batch;
      std::vector<int64_t> split;
      for (int64_t d : self_c)
        if (t.tiles(d) > 1) split.push_back(d);
      if (split.empty()) continue;
      std::vector<int64_t> from(static_cast<size_t>(other.shape().rank()), -1);
      for (size_t k = 0; k < self_c.size(); ++k) from[static_cast<size_t>(other_c[k])] = self_c[k];
      for (size_t k = 0; k < self_b.size(); ++k) from[static_cast<size_t>(other_b[k])] = self_b[k];
      const Tiling o = t.remap(from);
      const Tiling result = t.remap(spmd::invert(side == 0 ? lmap : rmap, i.shape().rank()));
      std::vector<std::vector<int64_t>> groups = t.groups_along(split);
      const auto piece = static_cast<double>(ir::shard_shape(i.shape(), result.sharding()).byte_size());
      const bool scatter = scatter_dim(result, groups, want, i.shape()).has_value();
      const double sum = scatter ? costs_.reduce_scatter(groups, piece) : costs_.all_reduce(groups, piece);
      const double after = scatter ? 0 : plan_cost(spmd::plan_reshard(result, want, i.shape(), costs_), result, i.shape());
      Choice c{side == 0 ? t : o, side == 0 ? o : t, result, std::move(groups), 0};
      c.ns = cost(other, o) + sum + after;
      choices.push_back(std::move(c));
    }
    const Choice& best = *std::min_element(choices.begin(), choices.end(),
                                           [](const Choice& a, const Choice& b) { return a.ns < b.ns; });
    Instruction* l = reshard(held_.at(&lhs), best.lhs, lhs.shape()).hlo;
    Instruction* r = reshard(held_.at(&rhs), best.rhs, rhs.shape()).hlo;
    if (!best.partial.empty()) {
      // The padding of uneven pieces must not join the partial products: zeros.
      auto zero = [&](const Instruction& o) { return constant(ir::Literal(Shape::scalar(o.shape().type())), "zero"); };
      l = spmd::mask_padding(*this, l, best.lhs, lhs.shape(), dn.lhs_contracting, zero(lhs));
      r = spmd::mask_padding(*this, r, best.rhs, rhs.shape(), dn.rhs_contracting, zero(rhs));
    }
    Instruction* dot = clone(i, ir::shard_shape(i.shape(), best.result.sharding()), {l, r});
    if (best.partial.empty()) return Held{dot, Layout{best.result, {}}};
    return sum_partials(dot, best.result, best.partial, adder(i.shape().type()), want, i.shape());
  }

  // Partial results (each group of devices holds parts of one piece under `result`)
  // summed: by a reduce-scatter where `want` splits one more dimension over exactly the
  // group's devices, in group order (FSDP's gradients), else by an all-reduce.
  Held sum_partials(Instruction* x, const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
                    ir::Computation* reducer, const Tiling& want, const Shape& whole) {
    if (const auto c = scatter_dim(result, groups, want, whole)) {
      Instruction* rs = add(Opcode::kReduceScatter, ir::shard_shape(whole, want.sharding()), {x}, "reduce-scatter");
      rs->attrs().dimensions = {*c};
      rs->add_called(reducer);
      collective_attrs(rs, groups);
      return Held{rs, Layout{want, {}}};
    }
    return Held{all_reduce(x, groups, reducer), Layout{result, {}}};
  }

  // The dimension a reduce-scatter of the partial results over `groups` would split to
  // give `want` (the one more dimension it splits, over exactly each group, in order).
  static std::optional<int64_t> scatter_dim(const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
                                            const Tiling& want, const Shape& whole) {
    const int64_t k = static_cast<int64_t>(groups.at(0).size());
    for (int64_t c = 0; c < result.rank(); ++c) {
      if (result.tiles(c) != 1 || want.tiles(c) != k || whole.dim(c) % k != 0 || !(want.unsplit(c) == result))
        continue;
      bool in_order = true;
      for (const std::vector<int64_t>& g : groups)
        for (int64_t j = 0; j < k; ++j)
          in_order = in_order && want.position(g[static_cast<size_t>(j)])[static_cast<size_t>(c)] == j;
      if (in_order) return c;
    }
    return std::nullopt;
  }

  // An embedding lookup in a table split by rows (Megatron's vocabulary-parallel
  // embedding): each device looks up the indices that fall in its rows, zeros the
  // others, and an all-reduce sums the devices' results (where that moves fewer bytes
  // than gathering the table). The simple form only: rows
  // gathered whole from a table whose first dimension alone is split, evenly; indices
  // clamped to the table first, as gather clamps them.
  std::optional<Held> partition_row_gather(const Instruction& i) {
    const Instruction& table = *i.operand(0);
    const Instruction& indices = *i.operand(1);
    const ir::GatherDimNumbers& g = i.attrs().gather_dims;
    const Tiling& t = *held_.at(&table).layout.array;
    const Shape& ts = table.shape();
    const Shape& is = indices.shape();
    if (t.tiles(0) == 1 || t.pieces() != t.tiles(0) || ts.dim(0) % t.tiles(0) != 0) return std::nullopt;
    if (g.collapsed_slice_dims != std::vector<int64_t>{0} || g.start_index_map != std::vector<int64_t>{0} ||
        !g.operand_batching_dims.empty() || g.index_vector_dim != is.rank() || !ir::is_integral(is.type()))
      return std::nullopt;
    for (int64_t d = 1; d < ts.rank(); ++d)
      if (i.attrs().gather_slice_sizes[static_cast<size_t>(d)] != ts.dim(d)) return std::nullopt;
    // Worth it when the all-reduce of the result moves less than gathering the table.
    const int64_t k = t.tiles(0);
    if (2 * i.shape().byte_size() >= ts.byte_size() / k * (k - 1)) return std::nullopt;
    const int64_t rows = ts.dim(0) / k;
    Instruction* piece = held_.at(&table).hlo;
    Instruction* idx = replicate(indices).hlo;
    const Shape ishape(is.type(), is.dims());
    auto bound = [&](int64_t v) { return splat(constant(ir::Literal::scalar(is.type(), v), "bound"), ishape); };
    // Global indices clamped into the table, then made local to this device's rows.
    Instruction* low = bound(0);
    Instruction* clamped = add(Opcode::kClamp, ishape, {low, idx, bound(ts.dim(0) - 1)}, "index");
    Instruction* local = add(Opcode::kSubtract, ishape, {clamped, splat(first_row(t, rows, is.type()), ishape)}, "local");
    const Shape pred(ir::PrimitiveType::kPred, is.dims());
    Instruction* above = add(Opcode::kCompare, pred, {local, low}, "mine");
    above->attrs().direction = ir::ComparisonDirection::kGe;
    Instruction* below = add(Opcode::kCompare, pred, {local, bound(rows)}, "mine");
    below->attrs().direction = ir::ComparisonDirection::kLt;
    Instruction* mine = add(Opcode::kAnd, pred, {above, below}, "mine");
    Instruction* safe = add(Opcode::kClamp, ishape, {low, local, bound(rows - 1)}, "local");
    Instruction* rows_found = clone(i, i.shape(), {piece, safe});
    // Zero where the row is another device's.
    Shape result(i.shape().type(), i.shape().dims());
    std::vector<int64_t> batch;  // the result's dimensions that are the indices'
    for (int64_t d = 0; d < result.rank(); ++d)
      if (std::find(g.offset_dims.begin(), g.offset_dims.end(), d) == g.offset_dims.end()) batch.push_back(d);
    Instruction* keep = add(Opcode::kBroadcast, Shape(ir::PrimitiveType::kPred, result.dims()), {mine}, "mine");
    keep->attrs().dimensions = batch;
    Instruction* zero = splat(constant(ir::Literal(Shape::scalar(result.type())), "zero"), result);
    Instruction* masked = add(Opcode::kSelect, result, {keep, rows_found, zero}, i.name());
    return Held{all_reduce(masked, t.groups_along({0}), adder(result.type())),
                Layout{Tiling::replicated(result.rank(), devices_), {}}};
  }

  // A scatter into a table split by rows (a vocabulary-parallel embedding's gradient):
  // each device scatters into its rows with the indices made local to them; updates for
  // other devices' rows fall outside its piece, and scatter skips windows out of bounds,
  // as it skips them in the whole table. The simple form only: scalar row indices into
  // a table whose first dimension alone is split, evenly, whole rows updated.
  std::optional<Held> partition_row_scatter(const Instruction& i) {
    if (i.operand_count() != 3) return std::nullopt;
    const Instruction& table = *i.operand(0);
    const Instruction& indices = *i.operand(1);
    const Instruction& updates = *i.operand(2);
    const ir::ScatterDimNumbers& sd = i.attrs().scatter_dims;
    const Tiling& t = *held_.at(&table).layout.array;
    const Shape& ts = table.shape();
    const Shape& is = indices.shape();
    if (t.tiles(0) == 1 || t.pieces() != t.tiles(0) || ts.dim(0) % t.tiles(0) != 0) return std::nullopt;
    const std::vector<int64_t> rows_only{0};
    if (sd.inserted_window_dims != rows_only || sd.scatter_dims_to_operand_dims != rows_only ||
        !sd.input_batching_dims.empty() || sd.index_vector_dim != is.rank() || !ir::is_integral(is.type()))
      return std::nullopt;
    for (size_t j = 0; j < sd.update_window_dims.size(); ++j)
      if (updates.shape().dim(sd.update_window_dims[j]) != ts.dim(static_cast<int64_t>(j) + 1)) return std::nullopt;
    const Shape ishape(is.type(), is.dims());
    Instruction* first = splat(first_row(t, ts.dim(0) / t.tiles(0), is.type()), ishape);
    Instruction* local = add(Opcode::kSubtract, ishape, {replicate(indices).hlo, first}, "local");
    Instruction* piece = held_.at(&table).hlo;
    Instruction* c = clone(i, piece->shape(), {piece, local, replicate(updates).hlo});
    return Held{c, Layout{t, {}}};
  }

  // A reduce over split dimensions: each device reduces its piece, an all-reduce with
  // the same reducer combines them (each piece starts from the init value, so it must
  // be the identity).
  std::optional<Held> partition_reduce(const Instruction& i, const Tiling& want) {
    if (i.operand_count() != 2) return std::nullopt;
    const Instruction& operand = *i.operand(0);
    const Tiling& t = *held_.at(&operand).layout.array;
    const std::vector<int64_t> map = *spmd::operand_dims_in_result(i, 0);
    std::vector<int64_t> split;
    for (int64_t d = 0; d < operand.shape().rank(); ++d)
      if (t.tiles(d) > 1 && map[static_cast<size_t>(d)] < 0) split.push_back(d);
    if (split.empty() || !internal::is_reducer_identity(*i.operand(1), *i.called(0))) return std::nullopt;
    const Tiling result = t.remap(spmd::invert(map, i.shape().rank()));
    Instruction* init = replicate(*i.operand(1)).hlo;
    // The padding of uneven pieces must not join the sums: it becomes the identity.
    Instruction* piece = spmd::mask_padding(*this, held_.at(&operand).hlo, t, operand.shape(), split, init);
    Instruction* r = clone(i, ir::shard_shape(i.shape(), result.sharding()), {piece, init});
    return sum_partials(r, result, t.groups_along(split), i.called(0), want, i.shape());
  }

  const spmd::CostModel& costs_;
  std::unordered_map<const Instruction*, Held> held_;
  std::map<ir::PrimitiveType, ir::Computation*> adders_;
};

class SpmdPartitioner final : public Pass {
 public:
  explicit SpmdPartitioner(const topology::PodConfig* pod) : costs_(pod) {}
  std::string_view name() const override { return "spmd-partitioner"; }
  bool run(ir::Module& module) override {
    if (module.num_partitions <= 1) return false;
    Partitioner(module, module.num_partitions, costs_).run();
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
