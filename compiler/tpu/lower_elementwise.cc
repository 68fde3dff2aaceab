// Elementwise kernels on the vector unit. The kernel's index space is collapsed (see
// tiling.h) and cut into tiles of (ar x sublanes) rows by (ac x lanes) columns over its
// two innermost dimensions (the outer ones are looped over), or, when it collapses to
// one dimension, into contiguous chunks. The tiles are shared out among the chip's
// TensorCores (in straight-line code) and stream through VMEM in large batches (see
// emit_elementwise_kernel). Each leaf has per tile of a batch:
// a full tile, or one row repeated by a zero vld row stride when the leaf does not
// vary along the rows (a bias), or, when it does not vary at all, one copy loaded
// before the stream. Padding past the array's edge is computed on and never stored:
// only the valid part of a tile is DMAed back.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "compiler/tpu/lowerings.h"
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
int64_t outer_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                     size_t n, int64_t outer) {
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
    bool constant =
        std::all_of(c.strides[a].begin(), c.strides[a].end(), [](int64_t s) { return s == 0; });
    kinds.push_back(constant                   ? LeafKind::kResident
                    : (!flat && s_row(a) == 0) ? LeafKind::kRow
                                               : LeafKind::kFull);
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
      if (kinds[a] == LeafKind::kResident)
        bytes += L * eb + 128;
      else
        bytes += 2 * ((kinds[a] == LeafKind::kRow ? 1 : ar_ * S) * ac_ * L * eb + 128);
    }
    for (const KernelOutput& o : outputs)
      bytes += 2 * (ar_ * S * ac_ * L * ir::type_byte_size(o.type) + 128);
    return bytes;
  };
  while (slot_bytes(ar, ac) > l.vmem_free() && (ar > 1 || ac > 1)) {
    if (ar >= ac)
      ar = (ar + 1) / 2;
    else
      ac = (ac + 1) / 2;
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
    return offset + outer_offset(c.dims, c.strides[a], n_outer, t.outer) + t.r0 * s_row(a) +
           t.c0 * s_col(a);
  };

  // The tiles are split over the step's cores (contiguous runs). Each core streams its
  // run in batches as large as its VMEM holds: the reads of a batch are all issued at
  // once (waited for in up to kMaxRingSlots groups, so computing starts when the first
  // group is in), and its results are written back when its last read has landed, just
  // before the next batch's reads. A write issued while reads are in flight would wait
  // for them at the core's VMEM port and hold up later reads in HBM behind it, so reads
  // and writes alternate in large phases; HBM idles one latency per batch.
  const int64_t tile_count = static_cast<int64_t>(tiles.size());
  const int cores =
      tile_count >= 4 ? static_cast<int>(std::min<int64_t>(l.step_cores(), tile_count / 2)) : 1;
  int64_t per_tile = 0;  // VMEM per tile of a batch
  for (size_t a = 0; a < e.leaves.size(); ++a)
    if (kinds[a] != LeafKind::kResident)
      per_tile +=
          (kinds[a] == LeafKind::kRow ? 1 : TR) * TC * ir::type_byte_size(e.leaves[a].type) + 128;
  for (const KernelOutput& o : outputs) per_tile += TR * TC * ir::type_byte_size(o.type) + 128;
  const int64_t resident_bytes = static_cast<int64_t>(e.leaves.size()) * (L * 8 + 128);
  const int64_t batch = std::max<int64_t>(1, (l.vmem_free() - resident_bytes) / per_tile);

  auto emit_part = [&](int64_t first, int64_t last) {
    const int64_t slots = std::min(batch, last - first);
    // Constant leaves: one lanes-wide row, loaded once.
    std::vector<int32_t> leaf_region(e.leaves.size(), -1);
    std::vector<std::vector<int32_t>> leaf_slots(e.leaves.size());
    int once = 0;
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      const Leaf& leaf = e.leaves[a];
      int64_t eb = ir::type_byte_size(leaf.type);
      leaf_region[a] = l.use(leaf.buffer);
      if (kinds[a] == LeafKind::kResident) {
        int32_t r = l.vmem(fmt::format("c{}", a), L * eb);
        leaf_slots[a].assign(static_cast<size_t>(slots), r);
        once += issue_copy(pb, leaf_region[a], leaf.offset * eb, r, 0, eb, {L}, {0}, {1}, kSemOnce);
      }
    }
    for (size_t a = 0; a < e.leaves.size(); ++a) {
      if (kinds[a] == LeafKind::kResident) continue;
      int64_t eb = ir::type_byte_size(e.leaves[a].type);
      int64_t rows = kinds[a] == LeafKind::kRow ? 1 : TR;
      for (int64_t k = 0; k < slots; ++k)
        leaf_slots[a].push_back(l.vmem(fmt::format("in{}.{}", a, k), rows * TC * eb));
    }
    pb.wait(kSemOnce, once);
    std::vector<std::vector<int32_t>> out_slots;
    for (size_t o = 0; o < outputs.size(); ++o) {
      int64_t eb = ir::type_byte_size(outputs[o].type);
      out_slots.emplace_back();
      for (int64_t k = 0; k < slots; ++k)
        out_slots.back().push_back(l.vmem(fmt::format("out{}.{}", o, k), TR * TC * eb));
    }

    auto issue_reads = [&](const Tile& t, int64_t slot, int semaphore) {
      int count = 0;
      for (size_t a = 0; a < e.leaves.size(); ++a) {
        if (kinds[a] == LeafKind::kResident) continue;
        const Leaf& leaf = e.leaves[a];
        int64_t eb = ir::type_byte_size(leaf.type);
        int64_t src = base(a, t, leaf.offset) * eb;
        int32_t dst = leaf_slots[a][static_cast<size_t>(slot)];
        if (kinds[a] == LeafKind::kRow || flat)
          count +=
              issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.cols}, {s_col(a)}, {1}, semaphore);
        else
          count += issue_copy(pb, leaf_region[a], src, dst, 0, eb, {t.rows, t.cols},
                              {s_row(a), s_col(a)}, {TC, 1}, semaphore);
      }
      return count;
    };
    auto issue_writes = [&](const Tile& t, int64_t slot, int semaphore) {
      int count = 0;
      for (size_t o = 0; o < outputs.size(); ++o) {
        int64_t eb = ir::type_byte_size(outputs[o].type);
        size_t a = first_out + o;
        int64_t dst = base(a, t, 0) * eb;
        int32_t src = out_slots[o][static_cast<size_t>(slot)];
        if (flat)
          count +=
              issue_copy(pb, src, 0, out_regions[o], dst, eb, {t.cols}, {1}, {s_col(a)}, semaphore);
        else
          count += issue_copy(pb, src, 0, out_regions[o], dst, eb, {t.rows, t.cols}, {TC, 1},
                              {s_row(a), s_col(a)}, semaphore);
      }
      return count;
    };

    VRegs regs(chip.vector_registers, l.step_name());
    std::vector<int> roots;
    for (const KernelOutput& o : outputs) roots.push_back(o.node);
    VectorCodegen codegen(pb, regs, e, roots);
    auto compute = [&](const Tile& t, int64_t slot) {
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
              case LeafKind::kResident:
                return LeafLocation{r, 0, 0};
              case LeafKind::kRow:
                return LeafLocation{r, j * L * eb, 0};
              case LeafKind::kFull:
                break;
            }
            return LeafLocation{r, cell * eb, TC * eb};
          };
          std::vector<int> values = codegen.emit(where);
          for (size_t o = 0; o < outputs.size(); ++o) {
            int64_t eb = ir::type_byte_size(outputs[o].type);
            pb.vst(out_slots[o][static_cast<size_t>(slot)], cell * eb, TC * eb, values[o],
                   memory_dtype(outputs[o].type));
          }
          codegen.give_back(values);
        }
    };

    // Writes still reading output slots: per semaphore, and which slots each covers.
    std::vector<int64_t> writes(kMaxRingSlots, 0);
    std::vector<std::pair<int64_t, int64_t>> write_slots(kMaxRingSlots, {0, 0});
    auto wait_writes = [&](int64_t s0, int64_t s1) {  // of slots [s0, s1)
      for (int g = 0; g < kMaxRingSlots; ++g)
        if (writes[static_cast<size_t>(g)] > 0 && write_slots[static_cast<size_t>(g)].first < s1 &&
            s0 < write_slots[static_cast<size_t>(g)].second) {
          pb.wait(kSemOutput + g, writes[static_cast<size_t>(g)]);
          writes[static_cast<size_t>(g)] = 0;
        }
    };
    for (int64_t b0 = first; b0 < last; b0 += slots) {
      const int64_t count = std::min(slots, last - b0);
      const bool last_batch = b0 + count == last;
      const int groups = static_cast<int>(std::min<int64_t>(kMaxRingSlots, count));
      auto group_begin = [&](int g) {
        return count * g / groups;
      };  // slots [begin(g), begin(g + 1))
      std::vector<int64_t> reads(static_cast<size_t>(groups), 0);
      for (int g = 0; g < groups; ++g)
        for (int64_t k = group_begin(g); k < group_begin(g + 1); ++k)
          reads[static_cast<size_t>(g)] +=
              issue_reads(tiles[static_cast<size_t>(b0 + k)], k, kSemInput + g);
      std::vector<int> pending;  // groups computed, not yet written
      for (int g = 0; g < groups; ++g) {
        pb.wait(kSemInput + g, reads[static_cast<size_t>(g)]);
        wait_writes(group_begin(g), group_begin(g + 1));
        for (int64_t k = group_begin(g); k < group_begin(g + 1); ++k)
          compute(tiles[static_cast<size_t>(b0 + k)], k);
        pending.push_back(g);
        // Reads still to come hold writes back, except in the last batch.
        if (!last_batch && g + 1 < groups) continue;
        for (int w : pending) {
          // Writes of an earlier batch on this semaphore may cover other slots (the
          // last batch is grouped differently): wait for them rather than lose track.
          if (writes[static_cast<size_t>(w)] > 0) {
            pb.wait(kSemOutput + w, writes[static_cast<size_t>(w)]);
            writes[static_cast<size_t>(w)] = 0;
          }
          for (int64_t k = group_begin(w); k < group_begin(w + 1); ++k)
            writes[static_cast<size_t>(w)] +=
                issue_writes(tiles[static_cast<size_t>(b0 + k)], k, kSemOutput + w);
          write_slots[static_cast<size_t>(w)] = {group_begin(w), group_begin(w + 1)};
        }
        pending.clear();
      }
    }
    wait_writes(0, slots);
  };

  l.begin_parallel(cores);
  for (int c = 0; c < cores; ++c) {
    pb.set_core(l.options().core + c);
    emit_part(tile_count * c / cores, tile_count * (c + 1) / cores);
  }
  l.end_parallel();
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
