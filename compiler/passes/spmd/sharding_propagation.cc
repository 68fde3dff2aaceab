// Sharding propagation: gives every instruction of the entry computation, and of the
// computations it runs by control flow (while bodies and conditions, called
// computations, conditional branches), a sharding, from the ones the user wrote.
//
// Each array a value holds (a leaf: an array value is one, a tuple's are numbered depth
// first) gets a tiling. Tilings travel forward (operands to result) and backward
// (result to operands) along the dimension maps of dim_maps.h (through the shifts of
// slices and pads too: operand_dims_along_result), and both ways along links between
// leaves that hold the same array: a tuple and its operands, a get-tuple-element and its
// tuple, a while's operand, result, body parameter, body root and condition parameter,
// a call's operands and its callee's parameters (and the callee's root and the call), a
// conditional's branch operands, branch parameters, branch roots and result. This
// goes on until nothing changes; a proposal (merged with what the leaf has, where the two
// fit together: a batch split on one mesh axis and a column split on another) replaces
// a leaf's tiling only when it cuts the value into more pieces, so the walk ends. What
// the user wrote never changes, and entry parameters without a sharding stay replicated
// (XLA's default without allow_spmd_sharding_propagation_to_parameters). The result may
// take any sharding (as with ..._to_output). Leaves nothing reaches are replicated.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/ir/sharding.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/spmd/dim_maps.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;
using spmd::Tiling;

int64_t leaf_count(const Shape& s) {
  if (!s.is_tuple()) return 1;
  int64_t n = 0;
  for (int64_t e = 0; e < s.tuple_size(); ++e) n += leaf_count(s.element(e));
  return n;
}

// The number of the first leaf of tuple element e.
int64_t leaf_offset(const Shape& s, int64_t e) {
  int64_t n = 0;
  for (int64_t k = 0; k < e; ++k) n += leaf_count(s.element(k));
  return n;
}

// Appends the array shapes of s's leaves, with the sharding each has under `sharding`
// (a tuple sharding gives one to each element; any other applies to all leaves).
void leaves_of(const Shape& s, const ir::Sharding& sharding, std::vector<std::pair<Shape, ir::Sharding>>& out) {
  if (!s.is_tuple()) {
    out.emplace_back(s, sharding.kind == ir::Sharding::Kind::kTuple ? ir::Sharding{} : sharding);
    return;
  }
  const bool tuple = sharding.kind == ir::Sharding::Kind::kTuple;
  for (int64_t e = 0; e < s.tuple_size(); ++e)
    leaves_of(s.element(e), tuple ? sharding.tuple_elements.at(static_cast<size_t>(e)) : sharding, out);
}

// An instruction's leaf.
struct Leaf {
  const Instruction* instruction;
  int64_t index;
  bool operator==(const Leaf&) const = default;
};
struct LeafHash {
  size_t operator()(const Leaf& l) const {
    return std::hash<const void*>()(l.instruction) * 31 + std::hash<int64_t>()(l.index);
  }
};

// Leaves [a, a + n) of one instruction hold the same arrays as [b, b + n) of another.
struct Link {
  const Instruction* a;
  int64_t a_first;
  const Instruction* b;
  int64_t b_first;
  int64_t n;
};

class ShardingPropagation final : public Pass {
 public:
  std::string_view name() const override { return "sharding-propagation"; }

  bool run(ir::Module& module) override {
    devices_ = module.num_partitions;
    if (devices_ <= 1) return false;
    collect(*module.entry());
    for (const ir::Computation* c : computations_) seed(*c, c == module.entry());
    // First without carrying a broadcast operand's split forward: a broadcast is cheap to
    // compute in whatever split its users want (a bias split like its weight must not
    // split the activations it is added to that way); then with it, for what is left.
    for (bool broadcasts : {false, true}) {
      broadcast_forward_ = broadcasts;
      for (int round = 0; round < 64; ++round) {
        bool changed = false;
        for (const ir::Computation* c : computations_)
          for (const auto& i : c->instructions()) changed |= forward(*i);
        for (const Link& l : links_) changed |= follow(l);
        for (auto c = computations_.rbegin(); c != computations_.rend(); ++c)
          for (auto it = (*c)->instructions().rbegin(); it != (*c)->instructions().rend(); ++it)
            changed |= backward(**it);
        if (!changed) break;
      }
    }
    bool changed = false;
    for (const ir::Computation* c : computations_)
      for (const auto& i : c->instructions()) {
        if (i->sharding()) continue;
        i->sharding() = sharding_of(*i);
        changed = true;
      }
    return changed;
  }

 private:
  // The entry and the computations it runs by control flow, callers first, with the
  // links between their leaves.
  void collect(const ir::Computation& c) {
    if (std::find(computations_.begin(), computations_.end(), &c) != computations_.end()) return;
    computations_.push_back(&c);
    for (const auto& i : c.instructions()) {
      const Shape& s = i->shape();
      auto whole = [](const Instruction* a, const Instruction* b) {
        return Link{a, 0, b, 0, leaf_count(a->shape())};
      };
      switch (i->opcode()) {
        case Opcode::kTuple:
          for (int64_t k = 0; k < i->operand_count(); ++k)
            links_.push_back({i->operand(k), 0, i.get(), leaf_offset(s, k), leaf_count(i->operand(k)->shape())});
          break;
        case Opcode::kGetTupleElement:
          links_.push_back(
              {i->operand(0), leaf_offset(i->operand(0)->shape(), i->attrs().tuple_index), i.get(), 0, leaf_count(s)});
          break;
        case Opcode::kOptimizationBarrier: links_.push_back(whole(i->operand(0), i.get())); break;
        case Opcode::kWhile: {
          const ir::Computation& cond = *i->called(0);
          const ir::Computation& body = *i->called(1);
          links_.push_back(whole(i->operand(0), i.get()));
          links_.push_back(whole(i.get(), body.parameter(0)));
          links_.push_back(whole(body.root(), i.get()));
          links_.push_back(whole(i.get(), cond.parameter(0)));
          collect(cond);
          collect(body);
          break;
        }
        case Opcode::kCall: {
          const ir::Computation& callee = *i->called(0);
          for (int64_t k = 0; k < i->operand_count(); ++k) links_.push_back(whole(i->operand(k), callee.parameter(k)));
          links_.push_back(whole(callee.root(), i.get()));
          collect(callee);
          break;
        }
        case Opcode::kConditional:
          for (size_t b = 0; b < i->called().size(); ++b) {
            const ir::Computation& branch = *i->called()[b];
            links_.push_back(whole(i->operand(static_cast<int64_t>(b) + 1), branch.parameter(0)));
            links_.push_back(whole(branch.root(), i.get()));
            collect(branch);
          }
          break;
        default: break;
      }
    }
  }

  void seed(const ir::Computation& c, bool entry) {
    for (const auto& i : c.instructions()) {
      if (i->sharding() && i->sharding()->kind == ir::Sharding::Kind::kManual) {
        manual_.insert(i.get());
        continue;
      }
      const bool user = i->sharding().has_value();
      if (!user && !(entry && i->opcode() == Opcode::kParameter)) continue;
      std::vector<std::pair<Shape, ir::Sharding>> leaves;
      leaves_of(i->shape(), i->sharding().value_or(ir::Sharding{}), leaves);
      for (size_t k = 0; k < leaves.size(); ++k) {
        const Leaf leaf{i.get(), static_cast<int64_t>(k)};
        fixed_.insert(leaf);
        if (leaves[k].first.is_array())
          tilings_.insert_or_assign(leaf, Tiling::of(leaves[k].second, leaves[k].first.rank(), devices_));
      }
    }
  }

  const Tiling* tiling(const Instruction& i, int64_t leaf = 0) const {
    auto it = tilings_.find(Leaf{&i, leaf});
    return it == tilings_.end() ? nullptr : &it->second;
  }

  // Sets the leaf's tiling to `proposal`, or to the two merged (a batch split from one
  // operand, a column split from another), where that cuts it into more pieces.
  bool offer(const Instruction& instruction, int64_t index, const Tiling& proposal) {
    const Leaf leaf{&instruction, index};
    if (fixed_.count(leaf) || manual_.count(&instruction)) return false;
    auto it = tilings_.find(leaf);
    std::optional<Tiling> best = proposal;
    if (it != tilings_.end()) {
      std::optional<Tiling> merged = it->second.merge(proposal);
      if (merged && merged->pieces() > proposal.pieces()) best = merged;
    }
    if (it != tilings_.end() && it->second.pieces() >= best->pieces()) return false;
    tilings_.insert_or_assign(leaf, *best);
    return true;
  }

  // Both ways along a link.
  bool follow(const Link& l) {
    bool changed = false;
    for (int64_t k = 0; k < l.n; ++k) {
      if (const Tiling* t = tiling(*l.a, l.a_first + k)) changed |= offer(*l.b, l.b_first + k, Tiling(*t));
      if (const Tiling* t = tiling(*l.b, l.b_first + k)) changed |= offer(*l.a, l.a_first + k, Tiling(*t));
    }
    return changed;
  }

  bool forward(const Instruction& i) {
    // Inside a manual region (shard_map: between SPMDFullToShardShape and
    // SPMDShardToFullShape) everything is per-device code: manual too.
    if (!i.sharding() && !manual_.count(&i))
      for (const Instruction* o : i.operands())
        if (manual_.count(o)) {
          manual_.insert(&i);
          for (int64_t k = 0; k < leaf_count(i.shape()); ++k) tilings_.erase(Leaf{&i, k});
          return true;
        }
    if (manual_.count(&i) || !i.shape().is_array()) return false;
    if (i.opcode() == Opcode::kBroadcast && !broadcast_forward_) return false;
    // The largest operand first: where two splits conflict, the result follows the
    // bigger operand (a dot of batch-split activations and a split weight keeps the batch
    // split, and the weight is the one gathered).
    std::vector<int64_t> order(static_cast<size_t>(i.operand_count()));
    for (int64_t k = 0; k < i.operand_count(); ++k) order[static_cast<size_t>(k)] = k;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return i.operand(a)->shape().byte_size() > i.operand(b)->shape().byte_size();
    });
    bool changed = false;
    for (int64_t k : order) {
      const Tiling* t = i.operand(k)->shape().is_array() ? tiling(*i.operand(k)) : nullptr;
      if (!t) continue;
      const auto map = spmd::operand_dims_along_result(i, k);
      if (map) changed |= offer(i, 0, t->remap(spmd::invert(*map, i.shape().rank())));
    }
    return changed;
  }

  bool backward(const Instruction& i) {
    if (manual_.count(&i) || !i.shape().is_array()) return false;
    const Tiling* t = tiling(i);
    if (!t) return false;
    const Tiling result = *t;  // offer() may rehash the map
    bool changed = false;
    for (int64_t k = 0; k < i.operand_count(); ++k) {
      const Instruction& operand = *i.operand(k);
      if (!operand.shape().is_array()) continue;
      const auto map = spmd::operand_dims_along_result(i, k);
      if (map) changed |= offer(operand, 0, result.remap(*map));
    }
    return changed;
  }

  // The sharding of the leaves from `first` on that shape s holds.
  ir::Sharding sharding_of(const Instruction& i, const Shape& s, int64_t first) const {
    if (s.is_array()) {
      const Tiling* t = tiling(i, first);
      return t ? t->sharding() : ir::Sharding{};
    }
    ir::Sharding tuple;
    tuple.kind = ir::Sharding::Kind::kTuple;
    for (int64_t e = 0; e < s.tuple_size(); ++e)
      tuple.tuple_elements.push_back(sharding_of(i, s.element(e), first + leaf_offset(s, e)));
    return tuple;
  }

  ir::Sharding sharding_of(const Instruction& i) const {
    if (manual_.count(&i)) {
      ir::Sharding manual;
      manual.kind = ir::Sharding::Kind::kManual;
      return manual;
    }
    return sharding_of(i, i.shape(), 0);
  }

  int64_t devices_ = 1;
  bool broadcast_forward_ = true;
  std::vector<const ir::Computation*> computations_;
  std::vector<Link> links_;
  std::unordered_map<Leaf, Tiling, LeafHash> tilings_;
  std::unordered_set<Leaf, LeafHash> fixed_;
  std::unordered_set<const Instruction*> manual_;
};

}  // namespace

std::unique_ptr<Pass> make_sharding_propagation() { return std::make_unique<ShardingPropagation>(); }

}  // namespace podsim::passes
