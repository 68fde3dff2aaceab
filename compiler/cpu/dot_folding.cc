#include "compiler/cpu/dot_folding.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "compiler/cpu/kernel.h"
#include "compiler/passes/pass_util.h"

namespace podsim::cpu {

std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> result;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      result.push_back(d);
  return result;
}

namespace {

using ir::Instruction;
using ir::Opcode;

constexpr int kMaxRewritesPerDot = 16;

bool plain_array(const Instruction& i) { return i.shape().is_array() && is_row_major(i.shape()); }

bool plain_dot(const Instruction& dot) {
  return dot.opcode() == Opcode::kDot && dot.operand_count() == 2 && plain_array(dot) &&
         plain_array(*dot.operand(0)) && plain_array(*dot.operand(1));
}

class DotFolding final : public passes::Pass {
 public:
  std::string_view name() const override { return "cpu-dot-folding"; }

  bool run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : passes::internal::non_fusion_computations(module))
      changed |= run_on(*c);
    return changed;
  }

 private:
  bool run_on(ir::Computation& c) {
    const std::unordered_set<const Instruction*> linked = passes::internal::control_linked(c);
    bool added = false, changed = false;
    std::vector<Instruction*> snapshot;
    for (const auto& i : c.instructions()) snapshot.push_back(i.get());

    const auto users = c.users();
    for (Instruction* t : snapshot) {
      if (t->opcode() != Opcode::kTranspose || t->operand_count() != 1 || linked.count(t)) continue;
      Instruction* dot = t->operand(0);
      auto it = users.find(dot);
      if (!plain_dot(*dot) || !plain_array(*t) || linked.count(dot) || dot == c.root() ||
          it == users.end() || it->second.size() != 1)
        continue;
      if (Instruction* swapped = swap_operands(c, *dot, *t)) {
        c.replace_all_uses(t, swapped);
        snapshot.push_back(swapped);
        added = changed = true;
      }
    }

    for (Instruction* dot : snapshot) {
      if (!plain_dot(*dot) || linked.count(dot)) continue;
      for (int round = 0; round < kMaxRewritesPerDot; ++round) {
        bool step = false;
        for (int64_t k = 0; k < 2 && !step; ++k) {
          if (unfuse_relayout(c, *dot, k)) {
            step = added = true;
          } else {
            step = fold_transpose(*dot, k);
          }
        }
        if (!step) step = fold_rhs_broadcast(*dot);
        if (!step) break;
        changed = true;
      }
    }
    if (added) c.sort_topologically();
    return changed;
  }

  // dot(b, a) for transpose(dot(a, b)) when the permutation only moves the rhs free
  // dimensions in front of the lhs ones; nullptr otherwise.
  static Instruction* swap_operands(ir::Computation& c, const Instruction& dot,
                                    const Instruction& transpose) {
    const ir::DotDimNumbers& dn = dot.attrs().dot_dims;
    const auto nb = static_cast<int64_t>(dn.lhs_batch.size());
    const auto nl = static_cast<int64_t>(
        free_dims(dot.operand(0)->shape().rank(), dn.lhs_batch, dn.lhs_contracting).size());
    const auto nr = static_cast<int64_t>(
        free_dims(dot.operand(1)->shape().rank(), dn.rhs_batch, dn.rhs_contracting).size());
    std::vector<int64_t> expected;
    for (int64_t d = 0; d < nb; ++d) expected.push_back(d);
    for (int64_t d = 0; d < nr; ++d) expected.push_back(nb + nl + d);
    for (int64_t d = 0; d < nl; ++d) expected.push_back(nb + d);
    if (transpose.attrs().dimensions != expected || nl == 0 || nr == 0) return nullptr;
    std::unique_ptr<Instruction> swapped =
        dot.clone(c.unique_name("dot"), {dot.operand(1), dot.operand(0)});
    ir::DotDimNumbers& sd = swapped->attrs().dot_dims;
    sd = {dn.rhs_batch, dn.rhs_contracting, dn.lhs_batch, dn.lhs_contracting};
    std::reverse(swapped->attrs().operand_precision.begin(),
                 swapped->attrs().operand_precision.end());
    swapped->mutable_shape() = transpose.shape();
    return c.add(std::move(swapped));
  }

  // Operand k of dot is transpose(x) keeping the free dimensions' order: read x.
  static bool fold_transpose(Instruction& dot, int64_t k) {
    const Instruction* t = dot.operand(k);
    if (t->opcode() != Opcode::kTranspose || t->operand_count() != 1 ||
        !plain_array(*t->operand(0)))
      return false;
    ir::DotDimNumbers& dn = dot.attrs().dot_dims;
    std::vector<int64_t>& batch = k == 0 ? dn.lhs_batch : dn.rhs_batch;
    std::vector<int64_t>& contracting = k == 0 ? dn.lhs_contracting : dn.rhs_contracting;
    const std::vector<int64_t>& perm = t->attrs().dimensions;
    int64_t previous = -1;
    for (int64_t f : free_dims(t->shape().rank(), batch, contracting)) {
      if (perm[static_cast<size_t>(f)] < previous) return false;
      previous = perm[static_cast<size_t>(f)];
    }
    for (int64_t& d : batch) d = perm[static_cast<size_t>(d)];
    for (int64_t& d : contracting) d = perm[static_cast<size_t>(d)];
    dot.set_operand(k, t->operand(0));
    return true;
  }

  // Operand k of dot is a fusion that only reshapes and transposes its one parameter:
  // the same ops outside the fusion (reshapes cost nothing in the plan).
  static bool unfuse_relayout(ir::Computation& c, Instruction& dot, int64_t k) {
    const Instruction* fusion = dot.operand(k);
    if (fusion->opcode() != Opcode::kFusion || fusion->operand_count() != 1 ||
        fusion->called().size() != 1 || fusion->called(0) == nullptr)
      return false;
    const ir::Computation& body = *fusion->called(0);
    std::vector<const Instruction*> chain;
    for (const Instruction* i = body.root(); i != nullptr && i->opcode() != Opcode::kParameter;
         i = i->operand_count() == 1 ? i->operand(0) : nullptr) {
      if ((i->opcode() != Opcode::kReshape && i->opcode() != Opcode::kTranspose) ||
          i->operand_count() != 1 || !plain_array(*i))
        return false;
      chain.push_back(i);
    }
    if (chain.empty() || body.instruction_count() != static_cast<int64_t>(chain.size()) + 1 ||
        !plain_array(*fusion->operand(0)))
      return false;
    Instruction* value = fusion->operand(0);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      std::unique_ptr<Instruction> copy = (*it)->clone(
          c.unique_name((*it)->opcode() == Opcode::kReshape ? "reshape" : "transpose"), {value});
      copy->metadata() = fusion->metadata();
      value = c.add(std::move(copy));
    }
    dot.set_operand(k, value);
    return true;
  }

  // rhs = broadcast(w) adding exactly the batch dimensions, which lead the lhs: the
  // batch becomes rows of one product with w. The result's dimensions are unchanged
  // (batch, lhs free, rhs free before; lhs dimensions in order, rhs free after).
  static bool fold_rhs_broadcast(Instruction& dot) {
    const Instruction* b = dot.operand(1);
    ir::DotDimNumbers& dn = dot.attrs().dot_dims;
    if (b->opcode() != Opcode::kBroadcast || b->operand_count() != 1 || dn.rhs_batch.empty() ||
        !plain_array(*b->operand(0)))
      return false;
    for (size_t i = 0; i < dn.lhs_batch.size(); ++i)
      if (dn.lhs_batch[i] != static_cast<int64_t>(i)) return false;
    const std::vector<int64_t>& kept = b->attrs().dimensions;  // w dim j -> rhs dim kept[j]
    const int64_t rank = b->shape().rank();
    std::vector<int64_t> w_dim(static_cast<size_t>(rank), -1);
    for (size_t j = 0; j < kept.size(); ++j)
      w_dim[static_cast<size_t>(kept[j])] = static_cast<int64_t>(j);
    for (int64_t d = 0; d < rank; ++d) {
      const bool is_batch =
          std::find(dn.rhs_batch.begin(), dn.rhs_batch.end(), d) != dn.rhs_batch.end();
      if (is_batch != (w_dim[static_cast<size_t>(d)] < 0)) return false;
    }
    int64_t previous = -1;
    for (int64_t f : free_dims(rank, dn.rhs_batch, dn.rhs_contracting)) {
      if (w_dim[static_cast<size_t>(f)] < previous) return false;
      previous = w_dim[static_cast<size_t>(f)];
    }
    for (int64_t& d : dn.rhs_contracting) d = w_dim[static_cast<size_t>(d)];
    dn.lhs_batch.clear();
    dn.rhs_batch.clear();
    dot.set_operand(1, b->operand(0));
    return true;
  }
};

}  // namespace

std::unique_ptr<passes::Pass> make_dot_folding() { return std::make_unique<DotFolding>(); }

}  // namespace podsim::cpu
