// A gather with batching dimensions as one without (make_batched_gather_normalizer in
// pass.h; XLA's BatchedGatherScatterNormalizer): each pair of batching dimensions becomes
// an index column, the position along the indices' batching dimension (an iota),
// appended to the index vectors, its operand dimension moved to start_index_map and
// collapsed_slice_dims (its slice size is 1 already). Exact: the iota's starts are in
// range, so no clamping moves them.
#include <algorithm>
#include <memory>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

Instruction* normalize(Instruction& gather) {
  const ir::GatherDimNumbers& g = gather.attrs().gather_dims;
  if (g.operand_batching_dims.empty()) return nullptr;
  internal::Builder b(gather);
  Instruction* indices = gather.operand(1);
  const ir::PrimitiveType type = indices->shape().type();
  // The index vectors along an explicit last dimension.
  std::vector<int64_t> dims = indices->shape().dims();
  int64_t vector_dim = g.index_vector_dim;
  if (vector_dim == static_cast<int64_t>(dims.size())) {
    dims.push_back(1);
    indices = b.reshape(indices, dims);
  } else if (vector_dim != static_cast<int64_t>(dims.size()) - 1) {
    std::vector<int64_t> order;
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
      if (d != vector_dim) order.push_back(d);
    order.push_back(vector_dim);
    indices = b.transpose(indices, order);
    dims = indices->shape().dims();
  }
  // Batching dimensions of the indices, renumbered after the move of the vector dim.
  auto moved = [&](int64_t d) { return d > g.index_vector_dim ? d - 1 : d; };
  std::vector<Instruction*> columns{indices};
  std::vector<int64_t> column_dims = dims;
  column_dims.back() = 1;
  for (int64_t d : g.start_indices_batching_dims) {
    Instruction* iota = b.add(Opcode::kIota, Shape(type, column_dims), {});
    iota->attrs().iota_dimension = moved(d);
    columns.push_back(iota);
  }
  Instruction* all = b.concatenate(std::move(columns), static_cast<int64_t>(dims.size()) - 1);

  ir::GatherDimNumbers n = g;
  n.index_vector_dim = static_cast<int64_t>(dims.size()) - 1;
  n.start_index_map.insert(n.start_index_map.end(), g.operand_batching_dims.begin(), g.operand_batching_dims.end());
  n.collapsed_slice_dims.insert(n.collapsed_slice_dims.end(), g.operand_batching_dims.begin(),
                                g.operand_batching_dims.end());
  std::sort(n.collapsed_slice_dims.begin(), n.collapsed_slice_dims.end());
  n.operand_batching_dims.clear();
  n.start_indices_batching_dims.clear();
  Instruction* out = b.add(Opcode::kGather, gather.shape(), {gather.operand(0), all});
  out->attrs().gather_dims = n;
  out->attrs().gather_slice_sizes = gather.attrs().gather_slice_sizes;
  out->attrs().indices_are_sorted = false;
  return out;
}

class BatchedGatherNormalizer final : public Pass {
 public:
  std::string_view name() const override { return "batched-gather-normalizer"; }
  bool run(ir::Module& module) override {
    return internal::expand_instructions(module, [](Instruction& i) -> Instruction* {
      return i.opcode() == Opcode::kGather ? normalize(i) : nullptr;
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_batched_gather_normalizer() { return std::make_unique<BatchedGatherNormalizer>(); }

}  // namespace podsim::passes
