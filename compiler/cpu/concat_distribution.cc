#include "compiler/cpu/concat_distribution.h"

#include <algorithm>
#include <set>
#include <vector>

#include "compiler/cpu/kernel.h"
#include "compiler/passes/pass_util.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// Guards against pathological growth: the pieces a rewrite may create.
constexpr size_t kMaxSegments = 64;

bool is_concat(const Instruction& i) {
  return i.opcode() == Opcode::kConcatenate && i.attrs().dimensions.size() == 1 &&
         i.shape().is_array() && is_row_major(i.shape());
}

// Start offsets of the pieces of a concatenate along its dimension, and the end.
std::vector<int64_t> bounds(const Instruction& concat) {
  const int64_t dim = concat.attrs().dimensions[0];
  std::vector<int64_t> result{0};
  for (const Instruction* piece : concat.operands())
    result.push_back(result.back() + piece->shape().dim(dim));
  return result;
}

class ConcatDistribution final : public passes::Pass {
 public:
  std::string_view name() const override { return "cpu-concat-distribution"; }

  bool run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : fusion_bodies(module)) changed |= run_on(*c);
    return changed;
  }

 private:
  static std::vector<ir::Computation*> fusion_bodies(ir::Module& module) {
    const auto bodies = passes::internal::fusion_computations(module);
    std::vector<ir::Computation*> result;
    for (const auto& c : module.computations())
      if (bodies.count(c.get())) result.push_back(c.get());
    return result;
  }

  static bool run_on(ir::Computation& c) {
    std::vector<Instruction*> snapshot;
    for (const auto& i : c.instructions()) snapshot.push_back(i.get());
    bool changed = false;
    for (Instruction* op : snapshot) {
      if (!ir::is_elementwise(op->opcode()) || op->operand_count() != 2 ||
          !op->shape().is_array() || !is_row_major(op->shape()))
        continue;
      const Instruction* a = op->operand(0);
      const Instruction* b = op->operand(1);
      if (!is_concat(*a) || !is_concat(*b) || a->attrs().dimensions[0] != b->attrs().dimensions[0])
        continue;
      if (Instruction* result = distribute(c, *op)) {
        c.replace_all_uses(op, result);
        changed = true;
      }
    }
    if (changed) c.sort_topologically();  // the replaced ops are left to DCE
    return changed;
  }

  static Instruction* distribute(ir::Computation& c, const Instruction& op) {
    const Instruction& a = *op.operand(0);
    const Instruction& b = *op.operand(1);
    const int64_t dim = a.attrs().dimensions[0];
    const std::vector<int64_t> ba = bounds(a), bb = bounds(b);
    std::set<int64_t> cuts(ba.begin(), ba.end());
    cuts.insert(bb.begin(), bb.end());
    if (cuts.size() - 1 > kMaxSegments) return nullptr;
    const std::vector<int64_t> segments(cuts.begin(), cuts.end());
    auto concat = std::make_unique<Instruction>(c.unique_name("concatenate"), Opcode::kConcatenate,
                                                op.shape());
    concat->attrs().dimensions = {dim};
    concat->metadata() = op.metadata();
    for (size_t s = 0; s + 1 < segments.size(); ++s) {
      const int64_t begin = segments[s], end = segments[s + 1];
      if (begin == end) continue;
      std::vector<int64_t> dims = op.shape().dims();
      dims[static_cast<size_t>(dim)] = end - begin;
      auto piece =
          std::make_unique<Instruction>(c.unique_name(std::string(ir::opcode_name(op.opcode()))),
                                        op.opcode(), ir::Shape(op.shape().type(), dims));
      piece->attrs() = op.attrs();
      piece->metadata() = op.metadata();
      piece->add_operand(segment_of(c, a, ba, begin, end));
      piece->add_operand(segment_of(c, b, bb, begin, end));
      concat->add_operand(c.add(std::move(piece)));
    }
    return c.add(std::move(concat));
  }

  // [begin, end) of a concatenate along its dimension: one of its pieces, or a new
  // broadcast / slice of the piece holding it.
  static Instruction* segment_of(ir::Computation& c, const Instruction& concat,
                                 const std::vector<int64_t>& starts, int64_t begin, int64_t end) {
    const int64_t dim = concat.attrs().dimensions[0];
    const size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), begin) -
                                         starts.begin() - 1);
    Instruction* piece = concat.operand(static_cast<int64_t>(k));
    if (starts[k] == begin && starts[k + 1] == end) return piece;
    std::vector<int64_t> dims = piece->shape().dims();
    dims[static_cast<size_t>(dim)] = end - begin;
    const ir::Shape shape(piece->shape().type(), dims);
    std::unique_ptr<Instruction> made;
    if (piece->opcode() == Opcode::kBroadcast && piece->operand_count() == 1 &&
        piece->operand(0)->shape().is_array() && piece->operand(0)->shape().rank() == 0) {
      made = std::make_unique<Instruction>(c.unique_name("broadcast"), Opcode::kBroadcast, shape);
      made->add_operand(piece->operand(0));
    } else {
      made = std::make_unique<Instruction>(c.unique_name("slice"), Opcode::kSlice, shape);
      for (int64_t d = 0; d < piece->shape().rank(); ++d) {
        if (d == dim)
          made->attrs().slice.push_back({begin - starts[k], end - starts[k], 1});
        else
          made->attrs().slice.push_back({0, piece->shape().dim(d), 1});
      }
      made->add_operand(piece);
    }
    made->metadata() = piece->metadata();
    return c.add(std::move(made));
  }
};

}  // namespace

std::unique_ptr<passes::Pass> make_concat_distribution() {
  return std::make_unique<ConcatDistribution>();
}

}  // namespace podsim::cpu
