// Elementwise kernels on the vector unit. The kernel's index space is collapsed (see
// tiling.h) and cut into tiles of (ar x sublanes) rows by (ac x lanes) columns over its
// two innermost dimensions (the outer ones are looped over), or, when it collapses to
// one dimension, into contiguous chunks. Each leaf streams through two VMEM slots:
// a full tile, or one row repeated by a zero vld row stride when the leaf does not
// vary along the rows (a bias), or, when it does not vary at all, one copy loaded
// before the stream. Padding past the array's edge is computed on and never stored:
// only the valid part of a tile is DMAed back.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/stream.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {
namespace {

enum class LeafKind { kResident, kRow, kFull };

struct Tile {
  int64_t outer = 0;  // linear index over the outer dims
  int64_t r0 = 0, c0 = 0, rows = 1, cols = 1;
};

// Element offset of linear index `outer` over dims[0..n) with the given strides.
int64_t outer_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, size_t n, int64_t outer) {
  int64_t offset = 0;
  for (size_t k = n; k-- > 0;) {
    offset += (outer % dims[k]) * strides[k];
    outer /= dims[k];
  }
  return offset;
}

}  // namespace

void emit_elementwise_kernel(Lowerer& l, const Expr& e, const std::vector<KernelOutput>& outputs) {
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const int64_t S = chip.vpu_sublanes, L = chip.vpu_lanes;
  std::vector<int32_t> out_regions;
  for (const KernelOutput& o : outputs) out_regions.push_back(l.use(o.buffer));
  int64_t total = 1;
  for (int64_t d : e.dims) total *= d;
  if (total == 0) return;

  // Accesses: the leaves, then the outputs (row-major over e.dims).
  std::vector<std::vector<int64_t>> strides;
  for (const Leaf& leaf : e.leaves) strides.push_back(leaf.strides);
  const size_t first_out = strides.size();
  for (size_t k = 0; k < outputs.size(); ++k) strides.push_back(ir::row_major_strides(e.dims));
  Collapsed c = collapse(e.dims, std::vector<int>(e.dims.size(), 0), strides);
  if (c.dims.empty()) {
    c.dims = {1};
    for (auto& s : c.strides) s = {0};
  }
  const size_t k = c.dims.size();
  const bool flat = k == 1;
  const size_t n_outer = flat ? 0 : k - 2;
  auto s_row = [&](size_t a) { return flat ? 0 : c.strides[a][k - 2]; };
  auto s_col = [&](size_t a) { return c.strides[a][k - 1]; };

  std::vector<LeafKind> kinds;
  for (size_t a = 0; a < e.leaves.size(); ++a) {
    bool constant = std::all_of(c.strides[a].begin(), c.strides[a].end(), [](int64_t s) { return s == 0; });
    kinds.push_back(constant ? LeafKind::kResident : (!flat && s_row(a) == 0) ? LeafKind::kRow : LeafKind::kFull);
  }

  // Tile shape: ar x ac registers, shrunk until the slots fit in VMEM.
  const int64_t max_v = l.options().max_tile_vregs;
  const int64_t R = flat ? 1 : c.dims[k - 2], C = c.dims[k - 1];
  int64_t ac = flat ? 1 : std::clamp<int64_t>(ceil_div(C, L), 1, max_v);
  int64_t ar = flat ? std::clamp<int64_t>(ceil_div(C, S * L), 1, max_v)
                    : std::clamp<int64_t>(ceil_div(R, S), 1, std::max<int64_t>(1, max_v / ac));
  auto slot_bytes = [&](int64_t ar_, int64_t ac_) {
    int64_t bytes = 0;
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      int64_t eb = ir::type_byte_size(e.leaves[a].type);
      if (kinds[a] == LeafKind::kResident) bytes += L * eb + 128;
      else bytes += 2 * ((kinds[a] == LeafKind::kRow ? 1 : ar_ * S) * ac_ * L * eb + 128);
    }
    for (const KernelOutput& o : outputs) bytes += 2 * (ar_ * S * ac_ * L * ir::type_byte_size(o.type) + 128);
    return bytes;
  };
  while (slot_bytes(ar, ac) > l.vmem_free() && (ar > 1 || ac > 1)) {
    if (ar >= ac) ar = (ar + 1) / 2;
    else ac = (ac + 1) / 2;
  }
  const int64_t TR = ar * S, TC = ac * L;

  // Tiles: flat chunks of TR x TC elements, or (outer, row block, column block).
  std::vector<Tile> tiles;
  if (flat) {
    for (int64_t start = 0; start < C; start += TR * TC)
      tiles.push_back(Tile{0, 0, start, 1, std::min(TR * TC, C - start)});
  } else {
    int64_t outer_count = 1;
    for (size_t d = 0; d < n_outer; ++d) outer_count *= c.dims[d];
    for (int64_t o = 0; o < outer_count; ++o)
      for (int64_t r0 = 0; r0 < R; r0 += TR)
        for (int64_t c0 = 0; c0 < C; c0 += TC)
          tiles.push_back(Tile{o, r0, c0, std::min(TR, R - r0), std::min(TC, C - c0)});
  }
  auto base = [&](size_t a, const Tile& t, int64_t offset) {
    return offset + outer_offset(c.dims, c.strides[a], n_outer, t.outer) + t.r0 * s_row(a) + t.c0 * s_col(a);
  };

  // Constant leaves: one lanes-wide row, loaded once.
  std::vector<int32_t> leaf_region(e.leaves.size(), -1);
  std::vector<std::array<int32_t, 2>> leaf_slots(e.leaves.size(), {-1, -1});
  int once = 0;
  for (size_t a = 0; a < e.leaves.size(); ++a) {
    const Leaf& leaf = e.leaves[a];
    int64_t eb = ir::type_byte_size(leaf.type);
    leaf_region[a] = l.use(leaf.buffer);
    if (kinds[a] == LeafKind::kResident) {
      int32_t r = l.vmem(fmt::format("c{}", a), L * eb);
      leaf_slots[a] = {r, r};
      once += issue_copy(pb, leaf_region[a], leaf.offset * eb, r, 0, eb, {L}, {0}, {1}, kSemOnce);
    } else {
      int64_t rows = kinds[a] == LeafKind::kRow ? 1 : TR;
      for (int s = 0; s < 2; ++s) leaf_slots[a][s] = l.vmem(fmt::format("in{}.{}", a, s), rows * TC * eb);
    }
  }
  pb.wait(kSemOnce, once);
  std::vector<std::array<int32_t, 2>> out_slots;
  for (size_t o = 0; o < outputs.size(); ++o) {
    int64_t eb = ir::type_byte_size(outputs[o].type);
    out_slots.push_back({l.vmem(fmt::format("out{}.0", o), TR * TC * eb), l.vmem(fmt::format("out{}.1", o), TR * TC * eb)});
  }

  auto issue = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    int count = 0;
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      if (kinds[a] == LeafKind::kResident) continue;
      const Leaf& leaf = e.leaves[a];
      int64_t eb = ir::type_byte_size(leaf.type);
      int64_t src = base(a, t, leaf.offset) * eb;
      int32_t dst = leaf_slots[a][static_cast<size_t>(slot)];
      if (kinds[a] == LeafKind::kRow || flat)
        count += issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.cols}, {s_col(a)}, {1}, kSemInput + slot);
      else
        count += issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.rows, t.cols}, {s_row(a), s_col(a)}, {TC, 1},
                            kSemInput + slot);
    }
    return count;
  };

  VRegs regs(chip.vector_registers, l.step_name());
  std::vector<int> roots;
  for (const KernelOutput& o : outputs) roots.push_back(o.node);
  VectorCodegen codegen(pb, regs, e, roots);
  OutputRing ring(pb);

  auto compute = [&](int64_t index, int slot) {
    const Tile& t = tiles[static_cast<size_t>(index)];
    int out = ring.acquire();
    for (int64_t i = 0; i < ar; ++i)
      for (int64_t j = 0; j < ac; ++j) {
        // Registers entirely past the valid part of the tile compute nothing.
        if (flat ? i * S * L >= t.cols : (i * S >= t.rows || j * L >= t.cols)) continue;
        const int64_t cell = i * S * TC + j * L;  // element offset of the register in a tile
        auto where = [&](int a) {
          size_t leaf = static_cast<size_t>(a);
          int64_t eb = ir::type_byte_size(e.leaves[leaf].type);
          int32_t r = leaf_slots[leaf][static_cast<size_t>(slot)];
          switch (kinds[leaf]) {
            case LeafKind::kResident: return LeafLocation{r, 0, 0};
            case LeafKind::kRow: return LeafLocation{r, j * L * eb, 0};
            case LeafKind::kFull: break;
          }
          return LeafLocation{r, cell * eb, TC * eb};
        };
        std::vector<int> values = codegen.emit(where);
        for (size_t o = 0; o < outputs.size(); ++o) {
          int64_t eb = ir::type_byte_size(outputs[o].type);
          pb.vst(out_slots[o][static_cast<size_t>(out)], cell * eb, TC * eb, values[o], memory_dtype(outputs[o].type));
        }
        codegen.give_back(values);
      }
    int count = 0;
    for (size_t o = 0; o < outputs.size(); ++o) {
      int64_t eb = ir::type_byte_size(outputs[o].type);
      size_t a = first_out + o;
      int64_t dst = base(a, t, 0) * eb;
      int32_t src = out_slots[o][static_cast<size_t>(out)];
      if (flat)
        count += issue_copy(pb, src, 0, out_regions[o], dst, eb, {t.cols}, {1}, {s_col(a)}, kSemOutput + out);
      else
        count += issue_copy(pb, src, 0, out_regions[o], dst, eb, {t.rows, t.cols}, {TC, 1}, {s_row(a), s_col(a)},
                            kSemOutput + out);
    }
    ring.release(out, count);
  };
  stream_tiles(pb, static_cast<int64_t>(tiles.size()), issue, compute);
  ring.drain();
}

Value lower_elementwise(Lowerer& l, const ir::Instruction& i, Scope& s) {
  Expr e;
  e.dims = i.shape().dims();
  ExprBuilder builder(l, s, e);
  int node = builder.build(i, View::identity(i.shape().rank()), /*root=*/true);
  l.begin_step(i, s);
  int32_t out = l.new_buffer(i.name(), i.shape());
  emit_elementwise_kernel(l, e, {KernelOutput{node, out, i.shape().type()}});
  return Value{out, i.shape(), {}};
}

}  // namespace podsim::tpu
