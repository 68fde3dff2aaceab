// The partitioner's sums over split dimensions (partitioner.h): dots and reductions
// whose pieces are partial results, summed by all-reduce or reduce-scatter.
#include "compiler/passes/spmd/partitioner.h"

#include <algorithm>

#include "compiler/passes/pass_util.h"
#include "compiler/ir/sharding.h"
#include "compiler/passes/spmd/dim_maps.h"

namespace podsim::passes::spmd {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

std::optional<Held> Partitioner::partition_dot(const Instruction& i, const Tiling& want) {
  const Instruction& lhs = *i.operand(0);
  const Instruction& rhs = *i.operand(1);
  const std::vector<int64_t> lmap = *operand_dims_in_result(i, 0);
  const std::vector<int64_t> rmap = *operand_dims_in_result(i, 1);
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
    const Tiling result = t.remap(invert(side == 0 ? lmap : rmap, i.shape().rank()));
    std::vector<std::vector<int64_t>> groups = t.groups_along(split);
    const auto piece = static_cast<double>(ir::shard_shape(i.shape(), result.sharding()).byte_size());
    const bool scatter = scatter_dim(result, groups, want, i.shape()).has_value();
    const double sum = scatter ? costs_.reduce_scatter(groups, piece) : costs_.all_reduce(groups, piece);
    const double after = scatter ? 0 : plan_cost(plan_reshard(result, want, i.shape(), costs_), result, i.shape());
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
    l = mask_padding(*this, l, best.lhs, lhs.shape(), dn.lhs_contracting, zero(lhs));
    r = mask_padding(*this, r, best.rhs, rhs.shape(), dn.rhs_contracting, zero(rhs));
  }
  Instruction* dot = clone(i, ir::shard_shape(i.shape(), best.result.sharding()), {l, r});
  if (best.partial.empty()) return Held{dot, Layout{best.result, {}}};
  return sum_partials(dot, best.result, best.partial, adder(i.shape().type()), want, i.shape());
}

Held Partitioner::sum_partials(Instruction* x, const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
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

std::optional<int64_t> Partitioner::scatter_dim(const Tiling& result, const std::vector<std::vector<int64_t>>& groups,
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

std::optional<Held> Partitioner::partition_reduce(const Instruction& i, const Tiling& want) {
  if (i.operand_count() != 2) return std::nullopt;
  const Instruction& operand = *i.operand(0);
  const Tiling& t = *held_.at(&operand).layout.array;
  const std::vector<int64_t> map = *operand_dims_in_result(i, 0);
  std::vector<int64_t> split;
  for (int64_t d = 0; d < operand.shape().rank(); ++d)
    if (t.tiles(d) > 1 && map[static_cast<size_t>(d)] < 0) split.push_back(d);
  if (split.empty() || !internal::is_reducer_identity(*i.operand(1), *i.called(0))) return std::nullopt;
  const Tiling result = t.remap(invert(map, i.shape().rank()));
  Instruction* init = replicate(*i.operand(1)).hlo;
  // The padding of uneven pieces must not join the sums: it becomes the identity.
  Instruction* piece = mask_padding(*this, held_.at(&operand).hlo, t, operand.shape(), split, init);
  Instruction* r = clone(i, ir::shard_shape(i.shape(), result.sharding()), {piece, init});
  return sum_partials(r, result, t.groups_along(split), i.called(0), want, i.shape());
}

}  // namespace podsim::passes::spmd
