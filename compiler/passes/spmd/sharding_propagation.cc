// Sharding propagation: gives every instruction of the entry computation a sharding, from
// the ones the user wrote. Shardings travel forward (operands to result) and backward
// (result to operands) along the dimension maps of dim_maps.h until nothing changes; a
// proposal (merged with what the instruction has, where the two fit together: a batch
// split on one mesh axis and a column split on another) replaces an instruction's
// sharding only when it cuts the value into more pieces, so the walk ends. What the user wrote never changes, and parameters without a
// sharding stay replicated (XLA's default without allow_spmd_sharding_propagation_to_
// parameters). The result may take any sharding (as with ..._to_output). Instructions
// nothing reaches are replicated. Called computations are left alone: the partitioner
// runs them whole.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/sharding.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/spmd/dim_maps.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using spmd::Tiling;

class ShardingPropagation final : public Pass {
 public:
  std::string_view name() const override { return "sharding-propagation"; }

  bool run(ir::Module& module) override {
    devices_ = module.num_partitions;
    if (devices_ <= 1) return false;
    ir::Computation& entry = *module.entry();
    seed(entry);
    // First without carrying a broadcast operand's split forward: a broadcast is cheap to
    // compute in whatever split its users want (a bias split like its weight must not
    // split the activations it is added to that way); then with it, for what is left.
    for (bool broadcasts : {false, true}) {
      broadcast_forward_ = broadcasts;
      for (int round = 0; round < 64; ++round) {
        bool changed = false;
        for (const auto& i : entry.instructions()) changed |= forward(*i);
        for (auto it = entry.instructions().rbegin(); it != entry.instructions().rend(); ++it)
          changed |= backward(**it);
        if (!changed) break;
      }
    }
    bool changed = false;
    for (const auto& i : entry.instructions()) {
      if (i->sharding()) continue;
      i->sharding() = sharding_of(*i);
      changed = true;
    }
    return changed;
  }

 private:
  void seed(const ir::Computation& entry) {
    for (const auto& i : entry.instructions()) {
      const bool array = i->shape().is_array();
      if (i->sharding() && i->sharding()->kind == ir::Sharding::Kind::kManual) {
        fixed_.insert(i.get());
        manual_.insert(i.get());
      } else if (i->sharding() && array) {
        tilings_.insert_or_assign(i.get(), Tiling::of(*i->sharding(), i->shape().rank(), devices_));
        fixed_.insert(i.get());
      } else if (i->sharding() || i->opcode() == ir::Opcode::kParameter) {
        fixed_.insert(i.get());
        if (array) tilings_.insert_or_assign(i.get(), Tiling::replicated(i->shape().rank(), devices_));
      }
    }
  }

  // Sets `instruction`'s tiling to `proposal`, or to the two merged (a batch split from
  // one operand, a column split from another), where that cuts it into more pieces.
  bool offer(const Instruction& instruction, const Tiling& proposal) {
    if (fixed_.count(&instruction) || manual_.count(&instruction)) return false;
    auto it = tilings_.find(&instruction);
    std::optional<Tiling> best = proposal;
    if (it != tilings_.end()) {
      std::optional<Tiling> merged = it->second.merge(proposal);
      if (merged && merged->pieces() > proposal.pieces()) best = merged;
    }
    if (it != tilings_.end() && it->second.pieces() >= best->pieces()) return false;
    tilings_.insert_or_assign(&instruction, *best);
    return true;
  }

  bool forward(const Instruction& i) {
    // Inside a manual region (shard_map: between SPMDFullToShardShape and
    // SPMDShardToFullShape) everything is per-device code: manual too.
    if (!fixed_.count(&i) && !manual_.count(&i))
      for (const Instruction* o : i.operands())
        if (manual_.count(o)) {
          manual_.insert(&i);
          tilings_.erase(&i);
          return true;
        }
    if (manual_.count(&i) || !i.shape().is_array()) return false;
    if (i.opcode() == ir::Opcode::kGetTupleElement) {
      const ir::Instruction& tuple = *i.operand(0);
      const int64_t index = i.attrs().tuple_index;
      if (tuple.opcode() == ir::Opcode::kTuple) {
        auto it = tilings_.find(tuple.operand(index));
        return it != tilings_.end() && offer(i, it->second);
      }
      const auto& s = tuple.sharding();
      if (!s || s->kind != ir::Sharding::Kind::kTuple) return false;
      return offer(i, Tiling::of(s->tuple_elements.at(static_cast<size_t>(index)), i.shape().rank(), devices_));
    }
    if (i.opcode() == ir::Opcode::kBroadcast && !broadcast_forward_) return false;
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
      auto it = tilings_.find(i.operand(k));
      if (it == tilings_.end()) continue;
      const auto map = spmd::operand_dims_in_result(i, k);
      if (map) changed |= offer(i, it->second.remap(spmd::invert(*map, i.shape().rank())));
    }
    return changed;
  }

  bool backward(const Instruction& i) {
    if (manual_.count(&i)) return false;
    auto it = tilings_.find(&i);
    if (it == tilings_.end()) return false;
    const Tiling result = it->second;  // offer() may rehash the map
    bool changed = false;
    for (int64_t k = 0; k < i.operand_count(); ++k) {
      const Instruction& operand = *i.operand(k);
      if (!operand.shape().is_array()) continue;
      const auto map = spmd::operand_dims_in_result(i, k);
      if (map) changed |= offer(operand, result.remap(*map));
    }
    return changed;
  }

  ir::Sharding sharding_of(const Instruction& i) const {
    if (manual_.count(&i)) {
      ir::Sharding manual;
      manual.kind = ir::Sharding::Kind::kManual;
      return manual;
    }
    if (i.shape().is_tuple()) {
      ir::Sharding s;
      s.kind = ir::Sharding::Kind::kTuple;
      for (int64_t e = 0; e < i.shape().tuple_size(); ++e) {
        const bool element_of_tuple = i.opcode() == ir::Opcode::kTuple;
        auto it = element_of_tuple ? tilings_.find(i.operand(e)) : tilings_.end();
        s.tuple_elements.push_back(it != tilings_.end() ? it->second.sharding() : ir::Sharding{});
      }
      return s;
    }
    auto it = tilings_.find(&i);
    return it != tilings_.end() ? it->second.sharding() : ir::Sharding{};
  }

  int64_t devices_ = 1;
  bool broadcast_forward_ = true;
  std::unordered_map<const Instruction*, Tiling> tilings_;
  std::unordered_set<const Instruction*> fixed_;
  std::unordered_set<const Instruction*> manual_;
};

}  // namespace

std::unique_ptr<Pass> make_sharding_propagation() { return std::make_unique<ShardingPropagation>(); }

}  // namespace podsim::passes
