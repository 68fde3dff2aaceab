// All-reduce combining (XLA's AllReduceCombiner): all-reduces of one array each that
// reduce the same way (reducer, element type) over the same devices, and of which none
// needs another's result, become one all-reduce of all their operands (a tuple), placed
// where the last of them was; their users read its elements. One collective instead of
// many pays the latency and handshakes once (data-parallel gradients, which the SPMD
// partitioner reduces one by one), and a target may still split it into buckets (the
// TPU target does, in the order its operands are computed).
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;

// Largest combined all-reduce, in bytes.
constexpr int64_t kMaxCombinedBytes = 64 << 20;

// What all-reduces must share to be combined.
using Key = std::tuple<std::vector<std::vector<int64_t>>, bool, bool, bool, Opcode, ir::PrimitiveType>;

std::optional<Key> key_of(const Instruction& i, const std::unordered_set<const Instruction*>& linked) {
  if (i.opcode() != Opcode::kAllReduce || i.operand_count() != 1 || !i.shape().is_array() || linked.count(&i))
    return std::nullopt;
  const auto reducer = internal::simple_reducer(*i.called(0));
  if (!reducer) return std::nullopt;
  const auto& a = i.attrs();
  return Key{a.replica_groups ? a.replica_groups->groups : std::vector<std::vector<int64_t>>{},
             a.channel_id.has_value(), a.use_global_device_ids, a.constrain_layout, *reducer, i.shape().type()};
}

bool combine(ir::Computation& c) {
  const auto linked = internal::control_linked(c);
  // Groups being filled, by key; taint[i] has bit (id % 64) of every group i depends on.
  struct Group {
    int64_t id;
    int64_t bytes = 0;
    std::vector<Instruction*> members;
  };
  std::map<Key, Group> open;
  std::vector<std::vector<Instruction*>> done;
  std::unordered_map<const Instruction*, uint64_t> taint;
  int64_t next_id = 0;
  for (const auto& owned : c.instructions()) {
    Instruction* i = owned.get();
    uint64_t t = 0;
    for (const Instruction* o : i->operands()) t |= taint[o];
    for (const Instruction* o : i->control_predecessors()) t |= taint[o];
    if (const auto key = key_of(*i, linked)) {
      auto it = open.find(*key);
      const int64_t bytes = i->shape().byte_size();
      if (it != open.end() && ((t >> (it->second.id % 64)) & 1 || it->second.bytes + bytes > kMaxCombinedBytes)) {
        done.push_back(std::move(it->second.members));
        open.erase(it);
        it = open.end();
      }
      if (it == open.end()) it = open.emplace(*key, Group{next_id++, 0, {}}).first;
      it->second.members.push_back(i);
      it->second.bytes += bytes;
      t |= uint64_t{1} << (it->second.id % 64);
    }
    taint[i] = t;
  }
  for (auto& [key, group] : open) done.push_back(std::move(group.members));

  internal::Replacements replacements;
  std::unordered_set<const Instruction*> gone;
  for (const std::vector<Instruction*>& members : done) {
    if (members.size() < 2) continue;
    std::vector<Instruction*> operands;
    std::vector<ir::Shape> shapes;
    for (Instruction* m : members) {
      operands.push_back(m->operand(0));
      shapes.push_back(m->shape());
    }
    std::unique_ptr<Instruction> combined = members[0]->clone(c.unique_name("all-reduce"), operands);
    combined->mutable_shape() = ir::Shape::tuple(shapes);
    Instruction* all = c.add(std::move(combined));
    for (size_t k = 0; k < members.size(); ++k) {
      auto element = std::make_unique<Instruction>(c.unique_name(members[k]->name()), Opcode::kGetTupleElement,
                                                   members[k]->shape());
      element->set_operands({all});
      element->attrs().tuple_index = static_cast<int64_t>(k);
      element->metadata() = members[k]->metadata();
      replacements.add(members[k], c.add(std::move(element)));
      gone.insert(members[k]);
    }
  }
  if (gone.empty()) return false;
  replacements.apply(c);
  c.remove_if([&](const Instruction* i) { return gone.count(i) != 0; });
  c.sort_topologically();
  return true;
}

class AllReduceCombiner final : public Pass {
 public:
  std::string_view name() const override { return "all-reduce-combiner"; }
  bool run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : internal::non_fusion_computations(module)) changed |= combine(*c);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_all_reduce_combiner() { return std::make_unique<AllReduceCombiner>(); }

}  // namespace podsim::passes
