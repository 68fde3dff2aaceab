// Collective combining (XLA's AllReduceCombiner, AllGatherCombiner and
// ReduceScatterCombiner): collectives of one array each that work the same way (opcode,
// device groups, reducer, element type) and of which none needs another's result become
// one collective. One collective instead of many pays the latency and handshakes once:
// the SPMD partitioner emits them one by one (a data-parallel step's gradients, FSDP's
// weight gathers and gradient reduce-scatters), and on a pod each costs microseconds of
// ring steps whatever its size.
//
// All-reduces become one all-reduce of all their operands (a tuple), which a target may
// still split into buckets (the TPU target does, in the order its operands are
// computed). All-gathers and reduce-scatters become one of a single array: each
// member's data laid out device-major ([group size, elements]) and concatenated, so
// that the combined collective's dimension 0 is the group's; each result is sliced out
// and put back in its shape. Groups stop growing past a size where the bytes, not the
// latency, dominate.
#include <map>
#include <numeric>
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
using ir::Shape;

// Largest combined all-reduce, in bytes.
constexpr int64_t kMaxCombinedAllReduceBytes = 64 << 20;
// Largest combined all-gather or reduce-scatter (its larger side), in bytes: a combined
// one starts when its last operand is ready and ends before its first user, so beyond
// the size whose transfer outlasts a collective's latency it costs more overlap than it
// saves.
constexpr int64_t kMaxCombinedGatherBytes = 4 << 20;

// What collectives must share to be combined.
using Key = std::tuple<Opcode, std::vector<std::vector<int64_t>>, bool, bool, bool, Opcode, ir::PrimitiveType>;

std::optional<Key> key_of(const Instruction& i, Opcode opcode, const std::unordered_set<const Instruction*>& linked) {
  if (i.opcode() != opcode || i.operand_count() != 1 || !i.shape().is_array() || linked.count(&i)) return std::nullopt;
  Opcode reducer = Opcode::kParameter;  // none
  if (opcode != Opcode::kAllGather) {
    const auto r = internal::simple_reducer(*i.called(0));
    if (!r) return std::nullopt;
    reducer = *r;
  }
  const auto& a = i.attrs();
  if (opcode != Opcode::kAllReduce && (a.dimensions.size() != 1 || !a.replica_groups || a.replica_groups->groups.empty()))
    return std::nullopt;
  return Key{opcode, a.replica_groups ? a.replica_groups->groups : std::vector<std::vector<int64_t>>{},
             a.channel_id.has_value(), a.use_global_device_ids, a.constrain_layout, reducer, i.shape().type()};
}

// The collectives of `opcode` in c in groups that may be combined: same key, none
// depending on another, at most max_bytes of results (of operands, where larger).
std::vector<std::vector<Instruction*>> groups_of(ir::Computation& c, Opcode opcode, int64_t max_bytes) {
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
    if (const auto key = key_of(*i, opcode, linked)) {
      auto it = open.find(*key);
      const int64_t bytes = std::max(i->shape().byte_size(), i->operand(0)->shape().byte_size());
      if (it != open.end() && ((t >> (it->second.id % 64)) & 1 || it->second.bytes + bytes > max_bytes)) {
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
  std::erase_if(done, [](const std::vector<Instruction*>& g) { return g.size() < 2; });
  return done;
}

class Builder {
 public:
  explicit Builder(ir::Computation& c) : c_(c) {}
  Instruction* add(Opcode op, Shape shape, std::vector<Instruction*> operands, std::string_view name) {
    auto i = std::make_unique<Instruction>(c_.unique_name(name), op, std::move(shape));
    i->set_operands(std::move(operands));
    return c_.add(std::move(i));
  }
  Instruction* reshape(Instruction* x, std::vector<int64_t> dims) {
    return add(Opcode::kReshape, Shape(x->shape().type(), std::move(dims)), {x}, x->name());
  }
  Instruction* transpose(Instruction* x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(x->shape().dim(p));
    Instruction* t = add(Opcode::kTranspose, Shape(x->shape().type(), dims), {x}, x->name());
    t->attrs().dimensions = perm;
    return t;
  }
  Instruction* slice(Instruction* x, int64_t d, int64_t start, int64_t limit) {
    std::vector<int64_t> dims = x->shape().dims();
    dims[static_cast<size_t>(d)] = limit - start;
    Instruction* s = add(Opcode::kSlice, Shape(x->shape().type(), dims), {x}, x->name());
    for (int64_t k = 0; k < x->shape().rank(); ++k)
      s->attrs().slice.push_back({k == d ? start : 0, k == d ? limit : x->shape().dim(k), 1});
    return s;
  }

 private:
  ir::Computation& c_;
};

// x with its dimension d (g * p elements) cut into [g, p] and the g moved to the front,
// flattened to [g, elements / g]: block j of dimension d becomes row j.
Instruction* device_major(Builder& b, Instruction* x, int64_t d, int64_t g) {
  std::vector<int64_t> split = x->shape().dims();
  const int64_t p = split[static_cast<size_t>(d)] / g;
  split[static_cast<size_t>(d)] = p;
  split.insert(split.begin() + d, g);
  Instruction* y = b.reshape(x, split);
  if (d > 0) {
    std::vector<int64_t> perm{d};
    for (int64_t k = 0; k <= x->shape().rank(); ++k)
      if (k != d) perm.push_back(k);
    y = b.transpose(y, perm);
  }
  return b.reshape(y, {g, x->shape().num_elements() / g});
}

// The inverse: rows [g, n] of blocks back into a value of `shape` whose dimension d
// holds the g blocks in order.
Instruction* from_device_major(Builder& b, Instruction* rows, const Shape& shape, int64_t d, int64_t g) {
  std::vector<int64_t> split = shape.dims();
  split[static_cast<size_t>(d)] /= g;
  std::vector<int64_t> fronted = split;
  fronted.insert(fronted.begin(), g);
  Instruction* y = b.reshape(rows, fronted);
  if (d > 0) {
    std::vector<int64_t> perm;
    for (int64_t k = 1; k <= d; ++k) perm.push_back(k);
    perm.push_back(0);
    for (int64_t k = d + 1; k <= shape.rank(); ++k) perm.push_back(k);
    y = b.transpose(y, perm);
  }
  return b.reshape(y, shape.dims());
}

// One collective for the members of a group: see the top of the file.
void combine_group(ir::Computation& c, const std::vector<Instruction*>& members, internal::Replacements& replacements) {
  const Opcode op = members[0]->opcode();
  if (op == Opcode::kAllReduce) {
    std::vector<Instruction*> operands;
    std::vector<Shape> shapes;
    for (Instruction* m : members) {
      operands.push_back(m->operand(0));
      shapes.push_back(m->shape());
    }
    std::unique_ptr<Instruction> combined = members[0]->clone(c.unique_name("all-reduce"), operands);
    combined->mutable_shape() = Shape::tuple(shapes);
    Instruction* all = c.add(std::move(combined));
    for (size_t k = 0; k < members.size(); ++k) {
      auto element = std::make_unique<Instruction>(c.unique_name(members[k]->name()), Opcode::kGetTupleElement,
                                                   members[k]->shape());
      element->set_operands({all});
      element->attrs().tuple_index = static_cast<int64_t>(k);
      element->metadata() = members[k]->metadata();
      replacements.add(members[k], c.add(std::move(element)));
    }
    return;
  }
  const bool gather = op == Opcode::kAllGather;
  const auto g = static_cast<int64_t>(members[0]->attrs().replica_groups->groups[0].size());
  Builder b(c);
  // Each member's data as rows: [1, its piece] to gather, [g, its pieces] to scatter.
  std::vector<Instruction*> rows;
  int64_t width = 0;
  for (Instruction* m : members) {
    Instruction* x = m->operand(0);
    rows.push_back(gather ? b.reshape(x, {1, x->shape().num_elements()})
                          : device_major(b, x, m->attrs().dimensions[0], g));
    width += rows.back()->shape().dim(1);
  }
  const ir::PrimitiveType type = members[0]->shape().type();
  Instruction* cat = b.add(Opcode::kConcatenate, Shape(type, {gather ? 1 : g, width}), rows, "combined");
  cat->attrs().dimensions = {1};
  std::unique_ptr<Instruction> collective =
      members[0]->clone(c.unique_name(gather ? "all-gather" : "reduce-scatter"), {cat});
  collective->mutable_shape() = Shape(type, {gather ? g : 1, width});
  collective->attrs().dimensions = {0};
  Instruction* all = c.add(std::move(collective));
  int64_t at = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    Instruction* m = members[k];
    const int64_t n = rows[k]->shape().dim(1);
    Instruction* mine = b.slice(all, 1, at, at + n);
    at += n;
    Instruction* result = gather ? from_device_major(b, mine, m->shape(), m->attrs().dimensions[0], g)
                                 : b.reshape(mine, m->shape().dims());
    result->metadata() = m->metadata();
    replacements.add(m, result);
  }
}

class CollectiveCombiner final : public Pass {
 public:
  CollectiveCombiner(Opcode opcode, std::string_view name, int64_t max_bytes)
      : opcode_(opcode), name_(name), max_bytes_(max_bytes) {}
  std::string_view name() const override { return name_; }
  bool run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : internal::non_fusion_computations(module)) {
      const auto groups = groups_of(*c, opcode_, max_bytes_);
      if (groups.empty()) continue;
      internal::Replacements replacements;
      std::unordered_set<const Instruction*> gone;
      for (const auto& members : groups) {
        combine_group(*c, members, replacements);
        gone.insert(members.begin(), members.end());
      }
      replacements.apply(*c);
      c->remove_if([&](const Instruction* i) { return gone.count(i) != 0; });
      c->sort_topologically();
      changed = true;
    }
    return changed;
  }

 private:
  Opcode opcode_;
  std::string_view name_;
  int64_t max_bytes_;
};

}  // namespace

std::unique_ptr<Pass> make_all_reduce_combiner() {
  return std::make_unique<CollectiveCombiner>(Opcode::kAllReduce, "all-reduce-combiner", kMaxCombinedAllReduceBytes);
}
std::unique_ptr<Pass> make_all_gather_combiner() {
  return std::make_unique<CollectiveCombiner>(Opcode::kAllGather, "all-gather-combiner", kMaxCombinedGatherBytes);
}
std::unique_ptr<Pass> make_reduce_scatter_combiner() {
  return std::make_unique<CollectiveCombiner>(Opcode::kReduceScatter, "reduce-scatter-combiner",
                                              kMaxCombinedGatherBytes);
}

}  // namespace podsim::passes
