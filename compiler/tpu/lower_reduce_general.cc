// reduce with any elementwise reducer, over N >= 1 operands (variadic reduce: argmax /
// argmin as (value, iota) pairs with a comparator, and single-operand reducers the
// cross-lane units cannot fold, such as multiply or and / or of integers). The reducer
// runs on vector registers (VectorCodegen over the reducer's parameters held in
// registers), so it is applied in index order, as the reference evaluator applies it:
// with ties resolved by position ("the first extreme wins") that order is the answer.
//
// Positions (lanes in kRow, sublanes in kCol, all elements of a register in kFlat) each
// own one contiguous block of B elements of the innermost reduced group: the DMAs gather
// element q * B + u into position q at step u. Position q then accumulates its block in
// order, and a tree folds neighbouring blocks (q with q + 1, then q with q + 2, ...), the
// lower block always on the left, through a VMEM round trip that shifts the registers.
// No identity is needed: the first step takes the values as they are, later steps and
// the folds keep the accumulator where a position has no element (a select). Outer
// reduced groups are folded one after another, and the init value comes first:
// r = f(f(init, P0), P1)..., which equals the evaluator's sequential order for any
// associative reducer.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/error.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/stream.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

bool scalar_view_op(const Instruction& x) {
  switch (x.opcode()) {
    case Opcode::kCopy:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kBroadcast: return x.shape().is_scalar();
    default: return false;
  }
}

}  // namespace

Reducer build_reducer(Lowerer& l, const Instruction& reduce, int64_t n) {
  const ir::Computation& f = *reduce.called(0);
  for (const auto& owned : f.instructions()) {
    const Instruction& x = *owned;
    bool ok = x.opcode() == Opcode::kParameter || (ir::is_elementwise(x.opcode()) && x.shape().is_scalar()) ||
              (x.opcode() == Opcode::kConstant && x.shape().is_scalar()) ||
              (x.opcode() == Opcode::kTuple && &x == f.root()) || scalar_view_op(x);
    if (!ok)
      unsupported_what(reduce, ir::opcode_name(reduce.opcode()),
                       fmt::format("its reducer '{}' computes {} ('{}'); only elementwise ops on scalars are lowered",
                                   f.name(), ir::opcode_name(x.opcode()), x.name()));
  }
  // The parameters stand for registers: values with buffers no kernel reads (-2 - k),
  // so that each becomes a leaf of its own.
  Scope scope;
  scope.computation = &f;
  scope.fused = true;
  for (int64_t k = 0; k < f.parameter_count(); ++k) {
    const Instruction& param = *f.parameter(k);
    scope.values.emplace(&param, Value{static_cast<int32_t>(-2 - k), param.shape(), {}});
  }
  Reducer r;
  ExprBuilder builder(l, scope, r.expr);
  const View scalar = View::identity(0);
  const Instruction& root = *f.root();
  if (root.opcode() == Opcode::kTuple) {
    for (const Instruction* op : root.operands()) r.roots.push_back(builder.build(*op, scalar));
  } else {
    r.roots.push_back(builder.build(root, scalar, true));
  }
  if (static_cast<int64_t>(r.roots.size()) != n)
    unsupported_what(reduce, ir::opcode_name(reduce.opcode()), fmt::format("its reducer '{}' returns {} values for {} operands", f.name(),
                                                   r.roots.size(), n));
  for (const Leaf& leaf : r.expr.leaves) r.leaf_param.push_back(-2 - leaf.buffer);
  return r;
}

std::vector<int> splice_reducer(Expr& expr, const Reducer& reducer, const std::vector<int>& params) {
  const Expr& r = reducer.expr;
  std::vector<int> node(r.nodes.size(), -1);
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    const ExprNode& n = r.nodes[k];
    switch (n.kind) {
      case ExprNode::Kind::kLeaf:
        node[k] = params[static_cast<size_t>(reducer.leaf_param[static_cast<size_t>(n.leaf)])];
        break;
      case ExprNode::Kind::kConstant: node[k] = expr.add_constant(n.type, n.bits); break;
      case ExprNode::Kind::kOp: {
        std::vector<int> operands;
        for (int o : n.operands) operands.push_back(node[static_cast<size_t>(o)]);
        node[k] = expr.add_op(n.opcode, n.type, std::move(operands), n.origin);
        expr.nodes[static_cast<size_t>(node[k])].direction = n.direction;
        break;
      }
    }
  }
  std::vector<int> roots;
  for (int root : reducer.roots) roots.push_back(node[static_cast<size_t>(root)]);
  return roots;
}

void emit_general_reduce_kernel(Lowerer& l, const Expr& e, const std::vector<int>& nodes, const Plan& p,
                                const Reducer& reducer, const std::vector<Init>& inits,
                                const std::vector<int32_t>& out_buffers, const std::vector<PrimitiveType>& out_types) {
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const int64_t S = chip.vpu_sublanes, L = chip.vpu_lanes, SL = S * L;
  const size_t N = nodes.size();
  const bool row = p.mode == Mode::kRow, flat = p.mode == Mode::kFlat;
  // Positions of a register, their iota (viota mode) and the element shift between
  // neighbouring positions in a register stored with rows of L.
  const int64_t P = flat ? SL : row ? L : S;
  const int64_t iota_mode = flat ? 0 : row ? 1 : 2;
  const int64_t position_shift = row || flat ? 1 : L;

  const int64_t C = size_of(p, p.rin);  // elements of the innermost reduced group
  const int64_t B = ceil_div(C, P);     // steps: position q holds elements [q * B, (q + 1) * B)
  const int64_t m = ceil_div(C, B);     // positions holding any element
  // Steps u < full_steps fill m positions, the later ones m - 1.
  const int64_t full_steps = C - (m - 1) * B;
  auto positions_at = [&](int64_t u) { return u < full_steps ? m : m - 1; };
  const int64_t T = std::clamp<int64_t>(B, 1, l.options().max_tile_vregs);  // steps per tile

  struct Tile {
    int64_t out_index, kept0, kept_len, red_index, u0, steps;
    bool first_group, last_red, last;  // outer reduced index 0; the group's / output's last tile
  };
  std::vector<Tile> tiles;
  const int64_t kept_outer = groups_count(p, p.outer_kept), red_outer = groups_count(p, p.outer_red);
  const int64_t kept_n = size_of(p, p.kin);
  const int64_t kept_step = flat ? 1 : row ? S : L;
  for (int64_t ko = 0; ko < kept_outer; ++ko)
    for (int64_t k0 = 0; k0 < kept_n; k0 += kept_step)
      for (int64_t ro = 0; ro < red_outer; ++ro)
        for (int64_t u0 = 0; u0 < B; u0 += T) {
          int64_t steps = std::min(T, B - u0);
          bool last_red = u0 + steps == B;
          tiles.push_back(Tile{ko, k0, std::min(kept_step, kept_n - k0), ro, u0, steps, ro == 0, last_red,
                               last_red && ro == red_outer - 1});
        }

  // Leaves: resident (one element, loaded once) or streamed in tiles of T registers.
  std::vector<bool> resident;
  std::vector<int32_t> leaf_region;
  std::vector<std::array<int32_t, 2>> slots;
  int once = 0;
  for (size_t a = 0; a < e.leaves.size(); ++a) {
    const Leaf& leaf = e.leaves[a];
    int64_t eb = ir::type_byte_size(leaf.type);
    resident.push_back(std::all_of(p.c.strides[a].begin(), p.c.strides[a].end(), [](int64_t v) { return v == 0; }));
    leaf_region.push_back(l.use(leaf.buffer));
    if (resident[a]) {
      int32_t r = l.vmem(fmt::format("c{}", a), L * eb);
      slots.push_back({r, r});
      once += issue_copy(pb, leaf_region[a], leaf.offset * eb, r, 0, eb, {L}, {0}, {1}, kSemOnce);
    } else {
      slots.push_back({l.vmem(fmt::format("in{}.0", a), T * SL * eb), l.vmem(fmt::format("in{}.1", a), T * SL * eb)});
    }
  }
  std::vector<int32_t> init_slots(N, -1);
  for (size_t j = 0; j < N; ++j) {
    if (inits[j].constant) continue;
    const Leaf& leaf = inits[j].leaf;
    int64_t eb = ir::type_byte_size(leaf.type);
    init_slots[j] = l.vmem(fmt::format("init{}", j), L * eb);
    once += issue_copy(pb, l.use(leaf.buffer), leaf.offset * eb, init_slots[j], 0, eb, {L}, {0}, {1}, kSemOnce);
  }
  pb.wait(kSemOnce, once);
  // Scratch for the folds (raw 32-bit lanes, with room for the shifted reload), and the
  // output slots (a stored register whose position 0 holds the results).
  std::vector<int32_t> scratch, out_regions;
  std::vector<std::array<int32_t, 2>> out_slots;
  for (size_t j = 0; j < N; ++j) {
    scratch.push_back(l.vmem(fmt::format("fold{}", j), 2 * SL * 4));
    int64_t eb = ir::type_byte_size(out_types[j]);
    out_slots.push_back({l.vmem(fmt::format("out{}.0", j), SL * eb), l.vmem(fmt::format("out{}.1", j), SL * eb)});
    out_regions.push_back(l.use(out_buffers[j]));
  }

  auto issue = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    int count = 0;
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      if (resident[a]) continue;
      const int64_t eb = ir::type_byte_size(e.leaves[a].type);
      const int64_t sr = stride_of(p, a, p.rin), sk = stride_of(p, a, p.kin);
      const int64_t base = e.leaves[a].offset + groups_offset(p, a, p.outer_kept, t.out_index) +
                           groups_offset(p, a, p.outer_red, t.red_index) + t.kept0 * sk;
      // The tile's steps in (at most) two runs: m positions, then m - 1.
      const int64_t end = t.u0 + t.steps;
      const int64_t runs[2][2] = {{t.u0, std::min(end, full_steps)}, {std::max(t.u0, full_steps), end}};
      for (const auto& run : runs) {
        const int64_t len = run[1] - run[0], npos = positions_at(run[0]);
        if (len <= 0 || npos <= 0) continue;
        const int64_t src = (base + run[0] * sr) * eb, dst = (run[0] - t.u0) * SL * eb;
        const int32_t to = slots[a][static_cast<size_t>(slot)];
        if (row)
          count += issue_copy(pb, leaf_region[a], src, to, dst, eb, {t.kept_len, len, npos}, {sk, sr, B * sr},
                              {L, SL, 1}, kSemInput + slot);
        else if (flat)
          count += issue_copy(pb, leaf_region[a], src, to, dst, eb, {len, npos}, {sr, B * sr}, {SL, 1}, kSemInput + slot);
        else
          count += issue_copy(pb, leaf_region[a], src, to, dst, eb, {len, npos, t.kept_len}, {sr, B * sr, sk},
                              {SL, L, 1}, kSemInput + slot);
      }
    }
    return count;
  };

  VRegs regs(chip.vector_registers, l.step_name());
  VectorCodegen values(pb, regs, e, nodes);
  VectorCodegen combiner(pb, regs, reducer.expr, reducer.roots);
  OutputRing ring(pb);

  auto give = [&](const std::vector<int>& rs) {
    for (int r : rs) regs.give(r);
  };
  // The registers as N distinct ones (a repeated root shares its register).
  auto distinct = [&](std::vector<int> rs) {
    for (size_t j = 0; j < rs.size(); ++j)
      if (std::find(rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(j), rs[j]) != rs.begin() + static_cast<std::ptrdiff_t>(j)) {
        int copy = regs.take();
        vop(pb, isa::Opcode::kVor, isa::DType::kU32, copy, rs[j], rs[j]);
        rs[j] = copy;
      }
    return rs;
  };
  // f(lhs, rhs) in fresh registers.
  auto combine = [&](const std::vector<int>& lhs, const std::vector<int>& rhs) {
    std::vector<int> leaf_regs;
    for (int param : reducer.leaf_param)
      leaf_regs.push_back(param < static_cast<int>(N) ? lhs[static_cast<size_t>(param)]
                                                       : rhs[static_cast<size_t>(param) - N]);
    return distinct(combiner.emit_on(leaf_regs));
  };
  // Where position >= limit, `result` keeps `kept` (that position had nothing to add).
  auto keep_past = [&](const std::vector<int>& result, const std::vector<int>& kept, int64_t limit) {
    int mask = regs.take(), lim = regs.take();
    pb.emit(isa::Opcode::kViota, isa::DType::kS32, {mask, iota_mode});
    pb.vimm(lim, static_cast<uint32_t>(limit));
    pb.emit(isa::Opcode::kVcmp, isa::DType::kS32, {mask, mask, lim, 2 /* LT */});
    for (size_t j = 0; j < N; ++j) pb.emit(isa::Opcode::kVsel, isa::DType::kU32, {result[j], mask, result[j], kept[j]});
    regs.give(mask);
    regs.give(lim);
  };

  std::vector<int> acc, running;
  // Folds the positions of acc into position 0, lower blocks on the left.
  auto fold = [&] {
    for (int64_t k = 1; k < m; k *= 2) {
      std::vector<int> partner;
      for (size_t j = 0; j < N; ++j) {
        pb.vst(scratch[j], 0, L * 4, acc[j], isa::DType::kU32);
        partner.push_back(regs.take());
        pb.vld(partner[j], scratch[j], k * position_shift * 4, L * 4, isa::DType::kU32);
      }
      std::vector<int> next = combine(acc, partner);
      keep_past(next, acc, m - k);
      give(acc);
      give(partner);
      acc = std::move(next);
    }
  };
  auto load_inits = [&] {
    std::vector<int> rs;
    for (size_t j = 0; j < N; ++j) {
      int r = regs.take();
      if (inits[j].constant) {
        pb.vimm(r, inits[j].bits);
      } else {
        PrimitiveType t = inits[j].leaf.type;
        pb.vld(r, init_slots[j], 0, 0, memory_dtype(t));
        if (t == PrimitiveType::kPred) {  // 0 / 1 in memory, a mask in registers
          int zero = regs.take();
          pb.vimm(zero, 0);
          pb.emit(isa::Opcode::kVcmp, isa::DType::kU32, {r, r, zero, 1 /* NE */});
          regs.give(zero);
        }
      }
      rs.push_back(r);
    }
    return rs;
  };

  auto compute = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    for (int64_t s = 0; s < t.steps; ++s) {
      const int64_t u = t.u0 + s;
      auto where = [&](int a) {
        size_t leaf = static_cast<size_t>(a);
        int32_t r = slots[leaf][static_cast<size_t>(slot)];
        if (resident[leaf]) return LeafLocation{r, 0, 0};
        int64_t eb = ir::type_byte_size(e.leaves[leaf].type);
        return LeafLocation{r, s * SL * eb, L * eb};
      };
      std::vector<int> v = distinct(values.emit(where));
      if (u == 0) {
        acc = std::move(v);
        continue;
      }
      std::vector<int> next = combine(acc, v);
      if (positions_at(u) < P) keep_past(next, acc, positions_at(u));
      give(acc);
      give(v);
      acc = std::move(next);
    }
    if (!t.last_red) return;
    fold();
    std::vector<int> lhs = t.first_group ? load_inits() : running;
    std::vector<int> next = combine(lhs, acc);
    give(lhs);
    give(acc);
    acc.clear();
    running = std::move(next);
    if (!t.last) return;
    // Store position 0 of every result and write back the valid ones.
    int out = ring.acquire();
    int count = 0;
    const int64_t dst = groups_offset(p, p.out_access, p.outer_kept, t.out_index) +
                        t.kept0 * stride_of(p, p.out_access, p.kin);
    const int64_t n_out = flat ? 1 : t.kept_len;
    const int64_t src_stride = row ? L : 1;
    for (size_t j = 0; j < N; ++j) {
      const int64_t eb = ir::type_byte_size(out_types[j]);
      const int32_t slot_region = out_slots[j][static_cast<size_t>(out)];
      pb.vst(slot_region, 0, L * eb, running[j], memory_dtype(out_types[j]));
      count += issue_copy(pb, slot_region, 0, out_regions[j], dst * eb, eb, {n_out}, {src_stride},
                          {stride_of(p, p.out_access, p.kin)}, kSemOutput + out);
    }
    give(running);
    running.clear();
    ring.release(out, count);
  };
  stream_tiles(pb, static_cast<int64_t>(tiles.size()), issue, compute);
  ring.drain();
}

}  // namespace podsim::tpu
