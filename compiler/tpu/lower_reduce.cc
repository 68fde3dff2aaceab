// reduce on the vector unit, with add, maximum or minimum as the combiner (and, or on
// pred, whose masks fold as unsigned minimum / maximum). The
// operand's index space (an expression: a fused reduce computes its input inline) is
// collapsed into groups of reduced and kept dimensions. With the innermost group
// reduced, tiles are (kept rows) x (reduced columns): registers accumulate elementwise
// over every tile of an output row block, then vredl folds the lanes. Otherwise tiles
// are (reduced rows) x (kept columns) and vreds folds the sublanes. A full reduction of
// one contiguous group streams flat chunks into one register. Other groups are loops:
// kept ones give separate outputs, reduced ones more tiles to accumulate. Padding
// lanes / sublanes in the reduced direction are masked to the combiner's identity.
// Floats accumulate in f32 (bf16 rounds once, on the store). Every other reducer, and
// variadic reduce, goes to lower_reduce_general.cc.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>

#include "common/error.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/stream.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

int64_t groups_offset(const Plan& p, size_t a, const std::vector<int>& gs, int64_t index) {
  int64_t offset = 0;
  for (size_t k = gs.size(); k-- > 0;) {
    int64_t n = p.c.dims[static_cast<size_t>(gs[k])];
    offset += (index % n) * p.c.strides[a][static_cast<size_t>(gs[k])];
    index /= n;
  }
  return offset;
}

int64_t groups_count(const Plan& p, const std::vector<int>& gs) {
  int64_t n = 1;
  for (int g : gs) n *= p.c.dims[static_cast<size_t>(g)];
  return n;
}

Init init_of(Lowerer& l, Scope& s, const Instruction& init) {
  Init r;
  if (init.opcode() == Opcode::kConstant && init.shape().is_scalar() && !l.find_value(init, s)) {
    r.bits = lane_bits(init, *init.attrs().literal);
    return r;
  }
  r.constant = false;
  r.leaf = view_of(l, s, init);
  return r;
}

namespace {

// Whether a single-operand reduce's to_apply is `ROOT op(p0, p1)` with a combiner the
// cross-lane units fold, and which (otherwise: the general lowering).
bool lane_foldable(const Instruction& i, Opcode& op) {
  const ir::Computation& f = *i.called(0);
  const Instruction* root = f.root();
  bool simple = f.parameter_count() == 2 && root->operand_count() == 2 &&
                root->operand(0)->opcode() == Opcode::kParameter && root->operand(1)->opcode() == Opcode::kParameter &&
                root->operand(0) != root->operand(1);
  const bool pred = i.operand(0)->shape().type() == PrimitiveType::kPred;
  op = root->opcode();
  if (simple && !pred && (op == Opcode::kAdd || op == Opcode::kMaximum || op == Opcode::kMinimum)) return true;
  return simple && pred && (op == Opcode::kAnd || op == Opcode::kOr);
}

// Preds live as masks (all ones / zero): and / or fold as unsigned min / max.
Opcode lane_combiner(Opcode op) {
  return op == Opcode::kAnd ? Opcode::kMinimum : op == Opcode::kOr ? Opcode::kMaximum : op;
}

int64_t combiner_imm(Opcode op) { return op == Opcode::kAdd ? 0 : op == Opcode::kMaximum ? 1 : 2; }
isa::Opcode combiner_op(Opcode op) {
  return op == Opcode::kAdd ? isa::Opcode::kVadd : op == Opcode::kMaximum ? isa::Opcode::kVmax : isa::Opcode::kVmin;
}

uint32_t identity_bits(Opcode op, PrimitiveType t) {
  if (op == Opcode::kAdd) return 0;
  if (t == PrimitiveType::kPred) return op == Opcode::kMaximum ? 0u : 0xFFFFFFFFu;
  bool max = op == Opcode::kMaximum;
  if (ir::is_float(t))
    return std::bit_cast<uint32_t>(max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
  int bits = ir::type_bit_width(t);
  if (ir::is_signed_int(t)) {
    int64_t lo = -(int64_t{1} << (bits - 1)), hi = (int64_t{1} << (bits - 1)) - 1;
    return static_cast<uint32_t>(static_cast<int32_t>(max ? lo : hi));
  }
  return max ? 0u : static_cast<uint32_t>((uint64_t{1} << bits) - 1);
}

// The kernel for a plan with reduced groups (comb is the lane combiner: add, maximum or
// minimum).
void emit_reduce_kernel(Lowerer& l, const Expr& e, int node, const Plan& p, Opcode comb, const Init& init,
                        int32_t out_buffer, PrimitiveType out_type, const Instruction& origin) {
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const int64_t S = chip.vpu_sublanes, L = chip.vpu_lanes;
  const PrimitiveType in_type = e.nodes[static_cast<size_t>(node)].type;
  const isa::DType acc_t = ir::is_float(in_type)             ? isa::DType::kF32
                           : in_type == PrimitiveType::kPred ? isa::DType::kU32
                                                             : isa_dtype(origin, in_type);
  const uint32_t identity = identity_bits(comb, in_type);
  const int32_t out_region = l.use(out_buffer);
  const int64_t out_eb = ir::type_byte_size(out_type);
  const isa::DType out_t = memory_dtype(out_type);

  // Tile: rows x cols of the collapsed space; which group each runs along.
  const bool row = p.mode == Mode::kRow, flat = p.mode == Mode::kFlat;
  const int row_group = flat ? -1 : row ? p.kin : p.rin;
  const int col_group = flat ? p.rin : row ? p.rin : p.kin;
  const int64_t R = size_of(p, row_group), C = size_of(p, col_group);
  const int64_t max_v = l.options().max_tile_vregs;
  const int64_t max_acc = std::min<int64_t>(4, std::max<int64_t>(1, max_v / 2));
  int64_t ar, ac;
  if (flat) {
    ac = 1;
    ar = std::clamp<int64_t>(ceil_div(C, S * L), 1, max_v);
  } else if (row) {
    ar = std::clamp<int64_t>(ceil_div(R, S), 1, max_acc);
    ac = std::clamp<int64_t>(ceil_div(C, L), 1, std::max<int64_t>(1, max_v / ar));
  } else {
    ac = std::clamp<int64_t>(ceil_div(C, L), 1, max_acc);
    ar = std::clamp<int64_t>(ceil_div(R, S), 1, std::max<int64_t>(1, max_v / ac));
  }
  const int64_t TR = ar * S, TC = ac * L;

  // Streamed input tiles, grouped by output tile.
  struct Tile {
    int64_t out_index, kept0, red_index, red0, rows, cols;
    bool first, last;
  };
  std::vector<Tile> tiles;
  const int64_t kept_outer = groups_count(p, p.outer_kept), red_outer = groups_count(p, p.outer_red);
  const int64_t kept_n = size_of(p, p.kin), red_n = size_of(p, p.rin);
  const int64_t kept_step = flat ? 1 : row ? TR : TC;
  const int64_t red_step = flat ? TR * TC : row ? TC : TR;
  for (int64_t ko = 0; ko < kept_outer; ++ko)
    for (int64_t k0 = 0; k0 < kept_n; k0 += kept_step) {
      int64_t kept_len = std::min(kept_step, kept_n - k0);
      size_t first = tiles.size();
      for (int64_t ro = 0; ro < red_outer; ++ro)
        for (int64_t r0 = 0; r0 < red_n; r0 += red_step) {
          int64_t red_len = std::min(red_step, red_n - r0);
          Tile t{ko, k0, ro, r0, row ? kept_len : red_len, row ? red_len : kept_len, false, false};
          if (flat) t.rows = 1, t.cols = red_len;
          tiles.push_back(t);
        }
      tiles[first].first = true;
      tiles.back().last = true;
    }

  // Leaves: offset of a tile, strides along its rows and columns.
  auto leaf_base = [&](size_t a, const Tile& t) {
    return e.leaves[a].offset + groups_offset(p, a, p.outer_kept, t.out_index) +
           groups_offset(p, a, p.outer_red, t.red_index) + t.kept0 * stride_of(p, a, p.kin) +
           t.red0 * stride_of(p, a, p.rin);
  };
  auto s_row = [&](size_t a) { return stride_of(p, a, row_group); };
  auto s_col = [&](size_t a) { return stride_of(p, a, col_group); };
  enum class Kind { kResident, kRow, kFull };
  std::vector<Kind> kinds;
  std::vector<int32_t> leaf_region;
  std::vector<std::array<int32_t, 2>> slots;
  int once = 0;
  for (size_t a = 0; a < e.leaves.size(); ++a) {
    const Leaf& leaf = e.leaves[a];
    int64_t eb = ir::type_byte_size(leaf.type);
    bool constant = std::all_of(p.c.strides[a].begin(), p.c.strides[a].end(), [](int64_t v) { return v == 0; });
    kinds.push_back(constant ? Kind::kResident : (!flat && s_row(a) == 0) ? Kind::kRow : Kind::kFull);
    leaf_region.push_back(l.use(leaf.buffer));
    if (kinds[a] == Kind::kResident) {
      int32_t r = l.vmem(fmt::format("c{}", a), L * eb);
      slots.push_back({r, r});
      once += issue_copy(pb, leaf_region[a], leaf.offset * eb, r, 0, eb, {L}, {0}, {1}, kSemOnce);
    } else {
      int64_t rows = kinds[a] == Kind::kRow ? 1 : TR;
      slots.push_back({l.vmem(fmt::format("in{}.0", a), rows * TC * eb), l.vmem(fmt::format("in{}.1", a), rows * TC * eb)});
    }
  }
  int32_t init_slot = -1;
  if (!init.constant) {
    int64_t eb = ir::type_byte_size(init.leaf.type);
    init_slot = l.vmem("init", L * eb);
    once += issue_copy(pb, l.use(init.leaf.buffer), init.leaf.offset * eb, init_slot, 0, eb, {L}, {0}, {1}, kSemOnce);
  }
  pb.wait(kSemOnce, once);
  // Output slots: the folded registers as stored (row: column 0 holds the results;
  // col and flat: row 0 does).
  const int64_t out_rows = row ? TR : S, out_cols = row ? L : TC;
  std::array<int32_t, 2> out_slots = {l.vmem("out.0", out_rows * out_cols * out_eb),
                                      l.vmem("out.1", out_rows * out_cols * out_eb)};

  auto issue = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    int count = 0;
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      if (kinds[a] == Kind::kResident) continue;
      int64_t eb = ir::type_byte_size(e.leaves[a].type);
      int64_t src = leaf_base(a, t) * eb;
      int32_t dst = slots[a][static_cast<size_t>(slot)];
      if (kinds[a] == Kind::kRow || flat)
        count += issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.cols}, {s_col(a)}, {1}, kSemInput + slot);
      else
        count += issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.rows, t.cols}, {s_row(a), s_col(a)}, {TC, 1},
                            kSemInput + slot);
    }
    return count;
  };

  VRegs regs(chip.vector_registers, l.step_name());
  const int64_t n_acc = flat ? 1 : row ? ar : ac;
  std::vector<int> acc;
  for (int64_t k = 0; k < n_acc; ++k) acc.push_back(regs.take());
  VectorCodegen codegen(pb, regs, e, {node});
  OutputRing ring(pb);

  // Masks lanes (iota mode 1), sublanes (2) or elements (0) at or past `valid` to the
  // identity.
  auto mask_tail = [&](int value, int64_t iota_mode, int64_t valid) {
    int m = regs.take(), lim = regs.take();
    pb.emit(isa::Opcode::kViota, isa::DType::kS32, {m, iota_mode});
    pb.vimm(lim, static_cast<uint32_t>(valid));
    pb.emit(isa::Opcode::kVcmp, isa::DType::kS32, {m, m, lim, 2 /* LT */});
    pb.vimm(lim, identity);
    pb.emit(isa::Opcode::kVsel, acc_t, {value, m, value, lim});
    regs.give(m);
    regs.give(lim);
  };

  auto compute = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    if (t.first)
      for (int r : acc) pb.vimm(r, identity);
    for (int64_t i = 0; i < ar; ++i)
      for (int64_t j = 0; j < ac; ++j) {
        if (flat ? i * S * L >= t.cols : (i * S >= t.rows || j * L >= t.cols)) continue;
        const int64_t cell = i * S * TC + j * L;
        auto where = [&](int a) {
          size_t leaf = static_cast<size_t>(a);
          int64_t eb = ir::type_byte_size(e.leaves[leaf].type);
          int32_t r = slots[leaf][static_cast<size_t>(slot)];
          if (kinds[leaf] == Kind::kResident) return LeafLocation{r, 0, 0};
          if (kinds[leaf] == Kind::kRow) return LeafLocation{r, j * L * eb, 0};
          return LeafLocation{r, cell * eb, TC * eb};
        };
        int value = codegen.emit(where)[0];
        if (flat && t.cols - i * S * L < S * L) mask_tail(value, 0, t.cols - i * S * L);
        if (row && t.cols - j * L < L) mask_tail(value, 1, t.cols - j * L);
        if (!row && !flat && t.rows - i * S < S) mask_tail(value, 2, t.rows - i * S);
        int target = acc[static_cast<size_t>(flat ? 0 : row ? i : j)];
        vop(pb, combiner_op(comb), acc_t, target, target, value);
        codegen.give_back({value});
      }
    if (!t.last) return;
    // Fold, combine with init, store, write back the valid results.
    int out = ring.acquire();
    int32_t out_slot = out_slots[static_cast<size_t>(out)];
    int init_reg = regs.take();
    if (init.constant) pb.vimm(init_reg, init.bits);
    else pb.vld(init_reg, init_slot, 0, 0, memory_dtype(init.leaf.type));
    for (size_t k = 0; k < acc.size(); ++k) {
      int r = acc[k];
      if (row || flat) pb.emit(isa::Opcode::kVredl, acc_t, {r, r, combiner_imm(comb)});
      if (!row) pb.emit(isa::Opcode::kVreds, acc_t, {r, r, combiner_imm(comb)});
      vop(pb, combiner_op(comb), acc_t, r, r, init_reg);
      int64_t offset = row ? static_cast<int64_t>(k) * S * L : static_cast<int64_t>(k) * L;
      pb.vst(out_slot, offset * out_eb, out_cols * out_eb, r, out_t);
    }
    regs.give(init_reg);
    int64_t dst = groups_offset(p, p.out_access, p.outer_kept, t.out_index) + t.kept0 * stride_of(p, p.out_access, p.kin);
    int64_t n_out = flat ? 1 : row ? t.rows : t.cols;
    int64_t src_stride = row ? L : 1;
    int count = issue_copy(pb, out_slot, 0, out_region, dst * out_eb, out_eb, {n_out}, {src_stride},
                           {stride_of(p, p.out_access, p.kin)}, kSemOutput + out);
    ring.release(out, count);
  };
  stream_tiles(pb, static_cast<int64_t>(tiles.size()), issue, compute);
  ring.drain();
}

}  // namespace

Value lower_reduce(Lowerer& l, const Instruction& i, Scope& s) {
  // N operands, then N init values (the verifier checked the shapes).
  const int64_t n_ops = i.operand_count() / 2;
  std::vector<PrimitiveType> types;
  std::vector<ir::Shape> out_shapes;
  for (int64_t k = 0; k < n_ops; ++k) {
    types.push_back(i.operand(k)->shape().type());
    isa_dtype(i, types.back());
    out_shapes.push_back(n_ops == 1 ? i.shape() : i.shape().elements()[static_cast<size_t>(k)]);
  }
  Opcode comb = Opcode::kAdd;
  const bool lane_fold = n_ops == 1 && lane_foldable(i, comb);
  std::optional<Reducer> reducer;
  if (!lane_fold) reducer = build_reducer(l, i, i.operand_count() / 2);

  const Instruction& input = *i.operand(0);
  Expr e;
  e.dims = input.shape().dims();
  ExprBuilder builder(l, s, e);
  std::vector<int> nodes;
  std::vector<Init> inits;
  for (int64_t k = 0; k < n_ops; ++k) nodes.push_back(builder.build(*i.operand(k), View::identity(input.shape().rank())));
  for (int64_t k = 0; k < n_ops; ++k) inits.push_back(init_of(l, s, *i.operand(n_ops + k)));

  std::vector<int> labels(e.dims.size(), kKept);
  for (int64_t d : i.attrs().dimensions) labels[static_cast<size_t>(d)] = kReduced;
  // The output, row-major over the kept dims, as an access of the operand's space.
  std::vector<int64_t> out_strides(e.dims.size(), 0);
  int64_t stride = 1;
  for (size_t d = e.dims.size(); d-- > 0;)
    if (labels[d] == kKept) {
      out_strides[d] = stride;
      stride *= e.dims[d];
    }
  std::vector<std::vector<int64_t>> strides;
  for (const Leaf& leaf : e.leaves) strides.push_back(leaf.strides);
  strides.push_back(out_strides);
  Plan p;
  p.c = collapse(e.dims, labels, strides);
  p.out_access = e.leaves.size();

  auto new_buffers = [&] {
    std::vector<int32_t> out;
    for (int64_t k = 0; k < n_ops; ++k)
      out.push_back(l.new_buffer(n_ops == 1 ? i.name() : fmt::format("{}.{}", i.name(), k),
                                 out_shapes[static_cast<size_t>(k)]));
    return out;
  };

  int64_t reduced_elements = 1;
  for (int64_t d : i.attrs().dimensions) reduced_elements *= e.dims[static_cast<size_t>(d)];
  bool any_reduced = std::count(p.c.labels.begin(), p.c.labels.end(), kReduced) > 0;
  if (reduced_elements == 0 || !any_reduced) {
    // Nothing to fold: the result is init (an empty reduction) or f(init, x) per element.
    Expr f;
    f.dims = reduced_elements == 0 ? out_shapes[0].dims() : e.dims;
    if (reduced_elements != 0) f = e;
    std::vector<int> init_nodes;
    for (int64_t k = 0; k < n_ops; ++k) {
      const Init& init = inits[static_cast<size_t>(k)];
      if (init.constant) {
        init_nodes.push_back(f.add_constant(types[static_cast<size_t>(k)], init.bits));
      } else {
        Leaf leaf = init.leaf;
        leaf.strides.assign(f.dims.size(), 0);
        init_nodes.push_back(f.add_leaf(leaf));
      }
    }
    std::vector<int> results = init_nodes;
    if (reduced_elements != 0) {
      if (lane_fold) {
        results = {f.add_op(comb, types[0], {init_nodes[0], nodes[0]}, &i)};
      } else {
        std::vector<int> params = init_nodes;
        params.insert(params.end(), nodes.begin(), nodes.end());
        results = splice_reducer(f, *reducer, params);
      }
    }
    l.begin_step(i, s);
    std::vector<int32_t> out = new_buffers();
    std::vector<KernelOutput> outputs;
    for (int64_t k = 0; k < n_ops; ++k)
      outputs.push_back(KernelOutput{results[static_cast<size_t>(k)], out[static_cast<size_t>(k)],
                                     types[static_cast<size_t>(k)]});
    emit_elementwise_kernel(l, f, outputs);
    return value_in(i, out);
  }

  const int n = static_cast<int>(p.c.dims.size());
  for (int g = n - 1; g >= 0; --g) {
    if (p.c.labels[static_cast<size_t>(g)] == kReduced && p.rin < 0) p.rin = g;
    if (p.c.labels[static_cast<size_t>(g)] == kKept && p.kin < 0) p.kin = g;
  }
  for (int g = 0; g < n; ++g) {
    if (g == p.rin || g == p.kin) continue;
    (p.c.labels[static_cast<size_t>(g)] == kKept ? p.outer_kept : p.outer_red).push_back(g);
  }
  // The general kernel folds outer reduced groups one after another, so a full
  // reduction streams its innermost group through whole registers.
  if (p.kin < 0 && (n == 1 || !lane_fold)) p.mode = Mode::kFlat;
  else p.mode = p.rin == n - 1 ? Mode::kRow : Mode::kCol;

  l.begin_step(i, s);
  std::vector<int32_t> out = new_buffers();
  if (lane_fold)
    emit_reduce_kernel(l, e, nodes[0], p, lane_combiner(comb), inits[0], out[0], types[0], i);
  else
    emit_general_reduce_kernel(l, e, nodes, p, *reducer, inits, out, types);
  return value_in(i, out);
}

}  // namespace podsim::tpu
