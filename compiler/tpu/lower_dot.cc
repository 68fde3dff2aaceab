// dot on the MXUs. Dimensions are classified (batch, M = lhs free, N = rhs free, K =
// contracting) and each class collapsed where the operands' strides allow; the
// innermost M, N and K dims are tiled by the MXU (mxu_rows x K tiles of the LHS,
// K x mxu_cols tiles of the weights), every other dim is a loop ("jobs"). Operands are
// read through their views (transposes cost only DMA strides).
//
// The schedule (resident weights): the weights of a block of N tiles, all of K, stay in
// VMEM (double-buffered across blocks when two fit: the next block loads while this one
// is used) while the LHS streams past them in row panels (mxu_rows x all of K, or chunks
// of K when a panel is too large) through a ring as deep as the HBM latency needs. Each
// output tile of a group of mxus_per_core N tiles has its own MXU, and the group shares
// every LHS tile; per K step the group's weight loads (mldw) are issued before its
// passes (mmul), so that every MXU loads its next weights while it multiplies. The
// accumulators are popped (mpop) after the next group's weights were requested, into an
// output ring that one DMA per group copies back. The rows of output tiles are shared
// out among the chip's TensorCores. The first block is waited for in parts, so that the
// MXUs start once its first K steps are in.
// When the weights of even one N tile do not fit, every K step streams its own weight
// and LHS tiles through double-buffered slots instead.
// Partial tiles: the MXU reads padding rows / columns, which only reach padding
// outputs, never stored; K is exact (mldw's K).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "common/error.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/stream.h"
#include "compiler/tpu/tiling.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::PrimitiveType;

// One class of dimensions after collapsing: sizes and the strides (elements) of the
// LHS, the RHS and the output along each.
struct DimClass {
  std::vector<int64_t> sizes, a, b, o;
  void add(int64_t size, int64_t sa, int64_t sb, int64_t so) {
    sizes.push_back(size);
    a.push_back(sa);
    b.push_back(sb);
    o.push_back(so);
  }
  DimClass collapsed() const {
    Collapsed c = collapse(sizes, std::vector<int>(sizes.size(), 0), {a, b, o});
    DimClass r;
    for (size_t k = 0; k < c.dims.size(); ++k)
      r.add(c.dims[k], c.strides[0][k], c.strides[1][k], c.strides[2][k]);
    return r;
  }
  // The innermost dim (tiled) and the others (looped over).
  DimClass inner() const {
    DimClass r;
    if (sizes.empty())
      r.add(1, 0, 0, 0);
    else
      r.add(sizes.back(), a.back(), b.back(), o.back());
    return r;
  }
  DimClass outer() const {
    DimClass r;
    for (size_t k = 0; k + 1 < sizes.size(); ++k) r.add(sizes[k], a[k], b[k], o[k]);
    return r;
  }
  void append(const DimClass& other) {
    for (size_t k = 0; k < other.sizes.size(); ++k)
      add(other.sizes[k], other.a[k], other.b[k], other.o[k]);
  }
};

struct Offsets {
  int64_t a = 0, b = 0, o = 0;
};

// Offsets of every index of a class, row-major.
std::vector<Offsets> offsets_of(const DimClass& c) {
  std::vector<Offsets> out;
  ir::for_each_index(c.sizes, [&](const std::vector<int64_t>& index) {
    Offsets off;
    for (size_t k = 0; k < index.size(); ++k) {
      off.a += index[k] * c.a[k];
      off.b += index[k] * c.b[k];
      off.o += index[k] * c.o[k];
    }
    out.push_back(off);
  });
  return out;
}

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& ch : r) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return r;
}

// A dot after classification: the operands' views, the inner (tiled) dims, the jobs
// (every other free dim, looped over) and the outer K offsets.
struct DotProblem {
  Leaf A, B;
  DimClass mi, ni, ki;
  std::vector<Offsets> jobs;
  std::vector<Offsets> k_offsets;
  int32_t ra = 0, rb = 0, ro = 0;  // HBM regions
  int64_t ea = 0, eb = 0, eo = 0;  // element bytes
  isa::DType da{}, db{}, dout{};
};

// One K step: element offsets from a row's / column's base, its depth, and which outer
// K offset it belongs to (the steps of one are contiguous along K).
struct KStep {
  int64_t a = 0, b = 0, k = 0, ko = 0;
};

std::vector<KStep> k_steps_of(const DotProblem& p, int64_t KT) {
  std::vector<KStep> steps;
  for (size_t ko = 0; ko < p.k_offsets.size(); ++ko)
    for (int64_t k0 = 0; k0 < p.ki.sizes[0]; k0 += KT)
      steps.push_back(KStep{p.k_offsets[ko].a + k0 * p.ki.a[0], p.k_offsets[ko].b + k0 * p.ki.b[0],
                            std::min(KT, p.ki.sizes[0] - k0), static_cast<int64_t>(ko)});
  return steps;
}

struct Step {
  int64_t a = 0, b = 0, o = 0;  // element offsets of the tiles
  int64_t m = 0, k = 0, n = 0;  // valid rows / depth / columns
  int mxu = 0;
  bool first = false, last = false;
  int64_t kstep = 0;        // index among the K steps of the output tile
  int group = 0;            // output row (job, M tile): its LHS panel
  bool load_panel = false;  // the first step of a row loads its whole LHS panel
};

// Every K step streams its weight tile, and its LHS tile or (once per row, when two
// fit in a quarter of VMEM) the whole LHS row panel, through double-buffered slots.
void emit_streamed(Lowerer& l, const DotProblem& p) {
  const topology::ChipConfig& chip = l.chip();
  const int64_t MT = chip.mxu_rows, KT = chip.mxu_rows, NT = chip.mxu_cols;
  const DimClass &mi = p.mi, &ni = p.ni, &ki = p.ki;
  const int64_t ea = p.ea, eb = p.eb, eo = p.eo;
  const int32_t ra = p.ra, rb = p.rb, ro = p.ro;
  const std::vector<KStep> ksteps = k_steps_of(p, KT);
  const auto k_steps = static_cast<int64_t>(ksteps.size());
  const int64_t panel_bytes = MT * k_steps * KT * ea;
  const bool panel = ni.sizes[0] > NT && 2 * panel_bytes <= l.vmem_free() / 4;

  std::vector<Step> steps;
  int tile = 0, group = 0;
  for (const Offsets& job : p.jobs)
    for (int64_t m0 = 0; m0 < mi.sizes[0]; m0 += MT, ++group)
      for (int64_t n0 = 0; n0 < ni.sizes[0]; n0 += NT) {
        int mxu = tile++ % chip.mxus_per_core;
        size_t first = steps.size();
        int64_t kstep = 0;
        for (const KStep& ks : ksteps) {
          Step st;
          st.a = p.A.offset + job.a + m0 * mi.a[0] + ks.a;
          st.b = p.B.offset + job.b + n0 * ni.b[0] + ks.b;
          st.o = job.o + m0 * mi.o[0] + n0 * ni.o[0];
          st.m = std::min(MT, mi.sizes[0] - m0);
          st.n = std::min(NT, ni.sizes[0] - n0);
          st.k = ks.k;
          st.mxu = mxu;
          st.kstep = kstep++;
          st.group = group;
          st.load_panel = panel && n0 == 0 && st.kstep == 0;
          steps.push_back(st);
        }
        steps[first].first = true;
        steps.back().last = true;
      }

  // LHS tiles MT x KT (the MXU streams MT rows) or panels MT x (k_steps KT), weights
  // KT x NT, results MT x NT.
  std::array<int32_t, 2> a_slot{}, b_slot{}, o_slot{};
  for (int slot = 0; slot < 2; ++slot) {
    a_slot[slot] = l.vmem(fmt::format("lhs.{}", slot), panel ? panel_bytes : MT * KT * ea);
    b_slot[slot] = l.vmem(fmt::format("rhs.{}", slot), KT * NT * eb);
    o_slot[slot] = l.vmem(fmt::format("out.{}", slot), MT * NT * eo);
  }
  const int64_t a_stride = panel ? k_steps * KT : KT;  // elements between LHS rows in VMEM
  ProgramBuilder& pb = l.pb();
  OutputRing ring(pb);
  auto issue = [&](int64_t index, int slot) {
    const Step& st = steps[static_cast<size_t>(index)];
    int count = issue_copy(pb, rb, st.b * eb, b_slot[slot], 0, eb, {st.k, st.n}, {ki.b[0], ni.b[0]},
                           {NT, 1}, kSemInput + slot);
    if (!panel)
      return count + issue_copy(pb, ra, st.a * ea, a_slot[slot], 0, ea, {st.m, st.k},
                                {mi.a[0], ki.a[0]}, {KT, 1}, kSemInput + slot);
    if (!st.load_panel) return count;
    // The whole row: the K steps of this (first) N tile, side by side.
    for (int64_t j = 0; j < k_steps; ++j) {
      const Step& kj = steps[static_cast<size_t>(index + j)];
      count += issue_copy(pb, ra, kj.a * ea, a_slot[static_cast<size_t>(st.group % 2)], j * KT * ea,
                          ea, {kj.m, kj.k}, {mi.a[0], ki.a[0]}, {a_stride, 1}, kSemInput + slot);
    }
    return count;
  };
  auto compute = [&](int64_t index, int slot) {
    const Step& st = steps[static_cast<size_t>(index)];
    int32_t lhs =
        panel ? a_slot[static_cast<size_t>(st.group % 2)] : a_slot[static_cast<size_t>(slot)];
    int64_t lhs_offset = panel ? st.kstep * KT * ea : 0;
    pb.emit(isa::Opcode::kMldw, p.db, {st.mxu, b_slot[slot], 0, pb.sreg(NT * eb), pb.sreg(st.k)});
    pb.emit(isa::Opcode::kMmul, p.da,
            {st.mxu, lhs, pb.sreg(lhs_offset), pb.sreg(a_stride * ea), st.first ? 0 : 1});
    if (!st.last) return;
    int o = ring.acquire();
    pb.emit(isa::Opcode::kMpop, p.dout, {st.mxu, o_slot[o], 0, pb.sreg(NT * eo)});
    int count = issue_copy(pb, o_slot[o], 0, ro, st.o * eo, eo, {st.m, st.n}, {NT, 1},
                           {mi.o[0], ni.o[0]}, kSemOutput + o);
    ring.release(o, count);
  };
  stream_tiles(pb, static_cast<int64_t>(steps.size()), issue, compute);
  ring.drain();
}

// The resident-weights schedule (see the top of the file); false, emitting nothing, when
// the weights of one N tile (all of K) do not fit in VMEM beside the streams.
bool emit_resident(Lowerer& l, const DotProblem& p) {
  const topology::ChipConfig& chip = l.chip();
  ProgramBuilder& pb = l.pb();
  const int64_t MT = chip.mxu_rows, KT = chip.mxu_rows, NT = chip.mxu_cols;
  const int64_t G = chip.mxus_per_core;
  const DimClass &mi = p.mi, &ni = p.ni, &ki = p.ki;
  const int64_t ea = p.ea, eb = p.eb, eo = p.eo;
  const std::vector<KStep> ksteps = k_steps_of(p, KT);
  const auto k_steps = static_cast<int64_t>(ksteps.size());
  const int64_t M = mi.sizes[0], N = ni.sizes[0];
  const int64_t n_tiles = ceil_div(N, NT);
  constexpr int64_t kAlign = 128;

  // VMEM (the same on every core): an output ring of group results, the LHS ring (row
  // panels, or chunks of C K steps when a panel would take more than an eighth), and
  // the weight blocks with what is left.
  const int64_t V = l.vmem_free();
  // With accumulators that drain while the next group computes, a group's copy back is
  // issued a group later (see emit_part), so the ring holds one more group.
  const int out_slots = chip.mxu_accumulators > 1 ? 4 : 3;
  const int64_t out_slot = MT * G * NT * eo;
  const int64_t a_step = MT * KT * ea;
  const bool panel = k_steps * a_step <= V / 8;
  const int64_t C = panel ? k_steps : std::clamp<int64_t>((V / 16) / a_step, 1, k_steps);
  // Rows per LHS load: when a row's N tiles leave its last group of MXUs part empty (N
  // not a whole number of groups), the panels of R rows load together and their tiles
  // are shared out in groups of G, so that every MXU works (6 tiles on 4 MXUs: 2 rows
  // make 3 full groups; a single tile: 4 rows make one).
  const int64_t rows_per_load = [&] {
    const int64_t left = n_tiles % G;
    const int64_t r = left == 0 ? 1 : G / std::gcd(left, G);
    return panel && r * k_steps * a_step <= V / 8 ? r : 1;
  }();
  const int64_t a_slot = rows_per_load * C * a_step;
  const int cores_available = l.step_cores();
  const int a_slots = ring_depth(chip, a_slot, cores_available, a_slot + kAlign, V / 4);
  const int64_t b_budget =
      V - out_slots * (out_slot + kAlign) - a_slots * (a_slot + kAlign) - 2 * kAlign;
  const int64_t b_tile = k_steps * KT * NT * eb;  // the weights of one N tile
  if (b_budget < b_tile) return false;
  int bufs = 2;
  int64_t nb = b_budget / (2 * b_tile);
  if (nb < std::min(n_tiles, G)) {
    bufs = 1;
    nb = b_budget / b_tile;
  }
  nb = std::min(nb, n_tiles);
  // Enough blocks for every core to have its own (no weights loaded twice).
  const auto jobs = static_cast<int64_t>(p.jobs.size());
  if (jobs * ceil_div(n_tiles, nb) < cores_available)
    nb = std::min(nb, ceil_div(n_tiles, ceil_div(cores_available, jobs)));
  // Blocks of equal widths in whole groups, as wide as fit or narrower: a wide block
  // reads the LHS fewer times, a narrow one starts sooner (the first row needs its
  // whole block). Estimated cycles: the first blocks' load, then the larger of the
  // MXU time (K / mxu_rows passes per output tile, and a pop after fill and drain) and
  // the HBM time.
  const int64_t nb_max = nb;
  auto width = [&](int64_t blocks) {
    int64_t w = ceil_div(n_tiles, blocks);
    if (w < n_tiles && w > G) w = round_up(w, G) <= nb_max ? round_up(w, G) : w - w % G;
    return w;
  };
  const double bytes_per_cycle = chip.hbm_bandwidth_bytes_per_s / chip.clock_hz;
  const double K = static_cast<double>(k_steps * KT), Md = static_cast<double>(M);
  // An MXU takes a tile per max(P, (P + fill/drain + pop) / accumulators) cycles, P its
  // passes' cycles: the timing model's systolic MXU (sim/timing/units/mxu_systolic.cc,
  // bench::mxu_tile_cycles).
  const double fill_drain = static_cast<double>(
      chip.mxu_fill_drain_cycles > 0 ? chip.mxu_fill_drain_cycles : int64_t{MT} + NT);
  const double passes =
      K + static_cast<double>(k_steps * std::max<int64_t>(chip.mxu_pass_overhead_cycles, 0));
  const double tile_cycles =
      std::max(passes, (passes + fill_drain + static_cast<double>(MT)) /
                           static_cast<double>(std::max<int64_t>(chip.mxu_accumulators, 1)));
  const double mxu_cycles = static_cast<double>(jobs * ceil_div(M, MT) * n_tiles) * tile_cycles /
                            static_cast<double>(G * cores_available);
  auto cost = [&](int64_t w) {
    const double blocks = static_cast<double>(ceil_div(n_tiles, w));
    const double bytes = static_cast<double>(jobs) *
                         (Md * K * static_cast<double>(ea) * blocks +
                          K * static_cast<double>(N * eb) + Md * static_cast<double>(N * eo));
    // The start: every core loads its first block and LHS panel while its MXUs do that
    // row; then the rest, bound by the MXUs or by HBM.
    const double first_bytes = static_cast<double>(cores_available) *
                               K * static_cast<double>(w * NT * eb + MT * ea);
    const double first_row = static_cast<double>(ceil_div(w, G)) * tile_cycles;
    return std::max(first_bytes / bytes_per_cycle, first_row) +
           std::max(mxu_cycles - first_row, (bytes - first_bytes) / bytes_per_cycle);
  };
  nb = width(ceil_div(n_tiles, nb_max));
  for (int64_t blocks = ceil_div(n_tiles, nb_max) + 1; width(blocks) >= std::min(G, n_tiles);
       ++blocks) {
    const int64_t w = width(blocks);
    if (w < nb && cost(w) < cost(nb)) nb = w;
    if (w == 1) break;
  }
  const int64_t BN = nb * NT;
  const int64_t b_bytes = k_steps * KT * BN * eb;

  struct Unit {
    int64_t job = 0, n0 = 0, cols = 0;
  };
  struct Row {
    int64_t unit = 0, m0 = 0, m = 0;
  };
  std::vector<Unit> units;
  std::vector<Row> rows;
  for (int64_t j = 0; j < jobs; ++j)
    for (int64_t n0 = 0; n0 < N; n0 += BN) {
      units.push_back(Unit{j, n0, std::min(BN, N - n0)});
      for (int64_t m0 = 0; m0 < M; m0 += MT)
        rows.push_back(Row{static_cast<int64_t>(units.size()) - 1, m0, std::min(MT, M - m0)});
    }
  const auto row_count = static_cast<int64_t>(rows.size());
  const int cores = static_cast<int>(std::clamp<int64_t>(row_count / 2, 1, cores_available));
  auto groups_of = [&](const Unit& u) { return ceil_div(ceil_div(u.cols, NT), G); };
  // Rows shared out by their output tiles (the work: rows that load together fill whole
  // groups), in contiguous runs.
  auto tiles_of = [&](const Row& r) {
    return ceil_div(units[static_cast<size_t>(r.unit)].cols, NT);
  };
  std::vector<int64_t> split(static_cast<size_t>(cores) + 1, row_count);
  split[0] = 0;
  {
    int64_t total = 0, done = 0;
    for (const Row& r : rows) total += tiles_of(r);
    int c = 1;
    for (int64_t k = 0; k < row_count && c < cores; ++k) {
      done += tiles_of(rows[static_cast<size_t>(k)]);
      while (c < cores && done * cores >= total * c) split[static_cast<size_t>(c++)] = k + 1;
    }
  }
  // A block's parts (semaphores kSemBlock + index), in the order the first row uses
  // them: each group's columns in slices of K (the first group's in the most), so that
  // every group's passes start as soon as its first slice is in.
  struct Part {
    int64_t g0 = 0, g1 = 0, s0 = 0, s1 = 0;  // groups [g0, g1), K steps [s0, s1)
  };
  auto parts_of = [&](const Unit& u) {
    const int64_t groups = groups_of(u);
    std::vector<Part> parts;
    if (groups >= kMaxBlockParts) {
      for (int64_t k = 0; k < kMaxBlockParts; ++k)
        parts.push_back(
            Part{groups * k / kMaxBlockParts, groups * (k + 1) / kMaxBlockParts, 0, k_steps});
      return parts;
    }
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t slices = std::min<int64_t>(
          k_steps, kMaxBlockParts / groups + (g == 0 ? kMaxBlockParts % groups : 0));
      for (int64_t k = 0; k < slices; ++k)
        parts.push_back(Part{g, g + 1, k_steps * k / slices, k_steps * (k + 1) / slices});
    }
    return parts;
  };

  // Runs of consecutive K steps with the same outer K offset: contiguous along K in HBM
  // and in VMEM, so one copy each.
  auto for_runs = [&](int64_t s0, int64_t s1,
                      const std::function<void(int64_t, int64_t, int64_t)>& f) {
    for (int64_t r0 = s0; r0 < s1;) {
      int64_t r1 = r0 + 1, depth = ksteps[static_cast<size_t>(r0)].k;
      while (r1 < s1 && ksteps[static_cast<size_t>(r1)].ko == ksteps[static_cast<size_t>(r0)].ko)
        depth += ksteps[static_cast<size_t>(r1++)].k;
      f(r0, r1, depth);
      r0 = r1;
    }
  };

  auto emit_part = [&](int64_t first_row, int64_t last_row) {
    const std::string& step = l.step_name();
    auto sub_regions = [&](int32_t whole, int64_t count, int64_t stride, std::string_view what,
                           int64_t from = 0) {
      std::vector<int32_t> subs;
      const isa::Region base = pb.region(whole);
      for (int64_t k = 0; k < count; ++k)
        subs.push_back(pb.add_region(fmt::format("{}.{}.{}", step, what, k),
                                     isa::MemorySpace::kVmem, base.offset + from + k * stride,
                                     base.size - from - k * stride));
      return subs;
    };
    std::vector<int32_t> o_region, a_region, b_region;
    std::vector<std::vector<int32_t>> o_sub, a_sub, b_sub;  // per MXU column / K step
    for (int k = 0; k < out_slots; ++k) {
      o_region.push_back(l.vmem(fmt::format("out.{}", k), out_slot));
      // Tile-major (each MXU's tile contiguous), so that the pops of a group touch
      // disjoint byte ranges and run side by side.
      o_sub.push_back(sub_regions(o_region.back(), G, MT * NT * eo, fmt::format("out{}", k)));
    }
    // A slot holds rows_per_load panels (or chunks) one after the other; sub-region
    // i * C + s is row i's K step s.
    for (int k = 0; k < a_slots; ++k) {
      a_region.push_back(l.vmem(fmt::format("lhs.{}", k), a_slot));
      std::vector<int32_t> subs;
      for (int64_t i = 0; i < rows_per_load; ++i) {
        const std::vector<int32_t> row =
            sub_regions(a_region.back(), C, KT * ea, fmt::format("lhs{}.{}", k, i), i * C * a_step);
        subs.insert(subs.end(), row.begin(), row.end());
      }
      a_sub.push_back(std::move(subs));
    }
    for (int k = 0; k < bufs; ++k) {
      b_region.push_back(l.vmem(fmt::format("rhs.{}", k), b_bytes));
      b_sub.push_back(sub_regions(b_region.back(), k_steps, KT * BN * eb, fmt::format("rhs{}", k)));
    }

    // The LHS loads, in the order the MXUs use them: the panels of `rows` consecutive
    // rows of one unit serve every group of their tiles; a chunk one group's K steps
    // [s0, s1) of one row.
    struct Load {
      int64_t row = 0, rows = 1, group = -1, s0 = 0, s1 = 0;
    };
    std::vector<Load> loads;
    for (int64_t r = first_row; r < last_row;) {
      const int64_t u = rows[static_cast<size_t>(r)].unit;
      if (panel) {
        // As many rows as make whole groups of this unit's tiles, within the unit.
        const int64_t left = ceil_div(units[static_cast<size_t>(u)].cols, NT) % G;
        int64_t n = left == 0 ? 1 : std::min(rows_per_load, G / std::gcd(left, G));
        n = std::max<int64_t>(n, 1);
        int64_t end = r + 1;
        while (end < last_row && end - r < n && rows[static_cast<size_t>(end)].unit == u) ++end;
        loads.push_back(Load{r, end - r, -1, 0, k_steps});
        r = end;
        continue;
      }
      for (int64_t g = 0; g < groups_of(units[static_cast<size_t>(u)]); ++g)
        for (int64_t s0 = 0; s0 < k_steps; s0 += C)
          loads.push_back(Load{r, 1, g, s0, std::min(s0 + C, k_steps)});
      ++r;
    }
    // The output tiles of a load's groups: (row within the load, N tile within the unit),
    // G to a group, each on its own MXU.
    using Tile = std::pair<int64_t, int64_t>;
    auto groups_in = [&](const Load& ld) {
      const Unit& u = units[static_cast<size_t>(rows[static_cast<size_t>(ld.row)].unit)];
      const int64_t t = ceil_div(u.cols, NT);
      std::vector<Tile> tiles;
      if (ld.group >= 0) {
        for (int64_t n = ld.group * G; n < std::min(t, (ld.group + 1) * G); ++n)
          tiles.emplace_back(0, n);
      } else {
        for (int64_t i = 0; i < ld.rows; ++i)
          for (int64_t n = 0; n < t; ++n) tiles.emplace_back(i, n);
      }
      std::vector<std::vector<Tile>> groups;
      for (size_t k = 0; k < tiles.size(); k += static_cast<size_t>(G))
        groups.emplace_back(tiles.begin() + static_cast<std::ptrdiff_t>(k),
                            tiles.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                tiles.size(), k + static_cast<size_t>(G))));
      return groups;
    };

    // Weight blocks, each in parts waited for one by one.
    struct Block {
      std::vector<Part> parts;
      std::vector<int64_t> dmas;  // per part, not yet waited for
    };
    auto issue_part = [&](int64_t unit, int buf, Block& block, size_t index) {
      const Unit& u = units[static_cast<size_t>(unit)];
      const Offsets& job = p.jobs[static_cast<size_t>(u.job)];
      const Part& part = block.parts[index];
      const int64_t c0 = part.g0 * G * NT, c1 = std::min(part.g1 * G * NT, u.cols);
      for_runs(part.s0, part.s1, [&](int64_t r0, int64_t, int64_t depth) {
        const KStep& ks = ksteps[static_cast<size_t>(r0)];
        block.dmas[index] += issue_copy(
            pb, p.rb, (p.B.offset + job.b + (u.n0 + c0) * ni.b[0] + ks.b) * eb,
            b_region[static_cast<size_t>(buf)], (r0 * KT * BN + c0) * eb, eb, {depth, c1 - c0},
            {ki.b[0], ni.b[0]}, {BN, 1}, kSemBlock + static_cast<int>(index));
      });
    };
    auto new_block = [&](int64_t unit) {
      Block b;
      b.parts = parts_of(units[static_cast<size_t>(unit)]);
      b.dmas.assign(b.parts.size(), 0);
      return b;
    };
    int64_t unit = rows[static_cast<size_t>(first_row)].unit;
    int buf = 0;
    size_t waited = 0;
    Block block = new_block(unit), next_block;
    auto next_unit = [&]() -> int64_t {
      for (int64_t r = first_row; r < last_row; ++r)
        if (rows[static_cast<size_t>(r)].unit > unit) return rows[static_cast<size_t>(r)].unit;
      return -1;
    };
    auto issue_block = [&](int64_t to, int into, Block& b) {
      b = new_block(to);
      for (size_t k = 0; k < b.parts.size(); ++k) issue_part(to, into, b, k);
    };
    // With two buffers, the next unit's block loads while this unit's rows are computed,
    // once this block is in: its parts paced over this unit's loads (as many per load as
    // spread them evenly), so that the LHS loads and copy backs that queue behind them on
    // the DMA engines are not held up by the whole block.
    size_t prefetch_issued = 0;
    int64_t prefetch_unit = -1;  // the unit whose block was begun, -1 before
    int64_t current_load = 0, prefetch_load = -1;
    auto prefetch = [&] {
      if (bufs != 2 || waited < block.parts.size() || prefetch_load == current_load) return;
      prefetch_load = current_load;
      if (prefetch_unit < 0) {
        prefetch_unit = next_unit();
        if (prefetch_unit < 0) return;
        next_block = new_block(prefetch_unit);
        prefetch_issued = 0;
      }
      int64_t left = 0;  // this unit's loads from this one on
      for (auto k = static_cast<size_t>(current_load);
           k < loads.size() && rows[static_cast<size_t>(loads[k].row)].unit == unit; ++k)
        ++left;
      const auto rest = static_cast<int64_t>(next_block.parts.size() - prefetch_issued);
      const size_t target =
          prefetch_issued + static_cast<size_t>(ceil_div(rest, std::max<int64_t>(left, 1)));
      for (; prefetch_issued < target; ++prefetch_issued)
        issue_part(prefetch_unit, 1 - buf, next_block, prefetch_issued);
    };
    // The LHS loads after the first, while the first block is on its way: issued once
    // its next-to-last part is in (the first row needs the whole block, and loads issued
    // beside it would share HBM with it), each waited for by its compute.
    std::vector<std::pair<int64_t, int>> held;  // (load, slot)
    std::vector<int64_t> held_dmas(loads.size(), 0);
    bool holding = true;
    std::function<int(int64_t, int)> issue;
    auto release_held = [&] {
      holding = false;
      for (const auto& [t, slot] : held) held_dmas[static_cast<size_t>(t)] = issue(t, slot);
      held.clear();
    };
    // Before group g's K step s: the parts up to the one holding it.
    auto wait_parts = [&](int64_t g, int64_t s) {
      size_t need = 0;
      while (need < block.parts.size() && !(block.parts[need].g0 <= g && g < block.parts[need].g1 &&
                                            block.parts[need].s0 <= s && s < block.parts[need].s1))
        ++need;
      for (; waited <= need && waited < block.parts.size(); ++waited) {
        pb.wait(kSemBlock + static_cast<int>(waited), block.dmas[waited]);
        block.dmas[waited] = 0;
        if (holding && waited + 2 >= block.parts.size()) release_held();
      }
      prefetch();
    };
    auto switch_unit = [&](int64_t to) {
      unit = to;
      if (bufs == 2) buf = 1 - buf;
      if (prefetch_unit >= 0) {
        for (; prefetch_issued < next_block.parts.size(); ++prefetch_issued)
          issue_part(unit, buf, next_block, prefetch_issued);
      } else {
        issue_block(unit, buf, next_block);
      }
      block = std::move(next_block);
      waited = 0;
      prefetch_unit = -1;
    };

    // Accumulators popped after the next group's weights were requested. With two or
    // more accumulators per MXU a pop drains while the next group computes, and the copy
    // back waits until just before the next group's pops, a whole group of passes later
    // (a DMA's issue waits until the pops that wrote its bytes have ended, and it must
    // not hold up the passes behind it); with one, the next passes wait for the pop
    // anyway and the copy back follows them.
    OutputRing ring(pb, out_slots);
    const bool overlapped_pops = chip.mxu_accumulators > 1;
    struct Popped {
      int64_t row = -1;  // the load's first row
      std::vector<Tile> tiles;
      int slot = -1;
    };
    Popped to_pop, to_copy;
    std::function<void()> copy_back;
    auto pop = [&] {
      if (to_pop.row < 0) return;
      if (overlapped_pops) copy_back();
      to_pop.slot = ring.acquire();
      for (size_t j = 0; j < to_pop.tiles.size(); ++j)
        pb.emit(isa::Opcode::kMpop, p.dout,
                {static_cast<int64_t>(j), o_sub[static_cast<size_t>(to_pop.slot)][j], 0,
                 pb.sreg(NT * eo)});
      to_copy = std::move(to_pop);
      to_pop = Popped{};
    };
    copy_back = [&] {
      if (to_copy.row < 0) return;
      int count = 0;
      for (size_t j = 0; j < to_copy.tiles.size(); ++j) {
        const auto [i, n] = to_copy.tiles[j];
        const Row& r = rows[static_cast<size_t>(to_copy.row + i)];
        const Unit& u = units[static_cast<size_t>(r.unit)];
        const Offsets& job = p.jobs[static_cast<size_t>(u.job)];
        const int64_t n0 = u.n0 + n * NT;
        count += issue_copy(pb, o_region[static_cast<size_t>(to_copy.slot)],
                            static_cast<int64_t>(j) * MT * NT * eo, p.ro,
                            (job.o + r.m0 * mi.o[0] + n0 * ni.o[0]) * eo, eo,
                            {r.m, std::min(NT, u.n0 + u.cols - n0)}, {NT, 1}, {mi.o[0], ni.o[0]},
                            kSemOutput + to_copy.slot);
      }
      ring.release(to_copy.slot, count);
      to_copy = Popped{};
    };

    // Load t's K steps [s0, s1) (within the load's), signalling `semaphore`.
    auto issue_lhs = [&](int64_t t, int slot, int64_t s0, int64_t s1, int semaphore) {
      const Load& ld = loads[static_cast<size_t>(t)];
      int count = 0;
      for (int64_t i = 0; i < ld.rows; ++i) {
        const Row& r = rows[static_cast<size_t>(ld.row + i)];
        const Offsets& job = p.jobs[static_cast<size_t>(units[static_cast<size_t>(r.unit)].job)];
        for_runs(s0, s1, [&](int64_t r0, int64_t, int64_t depth) {
          const KStep& ks = ksteps[static_cast<size_t>(r0)];
          count += issue_copy(pb, p.ra, (p.A.offset + job.a + r.m0 * mi.a[0] + ks.a) * ea,
                              a_region[static_cast<size_t>(slot)],
                              i * C * a_step + (r0 - ld.s0) * KT * ea, ea, {r.m, depth},
                              {mi.a[0], ki.a[0]}, {C * KT, 1}, semaphore);
        });
      }
      return count;
    };
    // The first block's parts are in flight alone (the first one issued already): a first
    // panel loads in the K slices of the first group's parts, each slice with its part
    // (on its semaphore), so that the first passes wait for the first slice only.
    auto issue_first = [&](int slot) {
      const Load& ld = loads.front();
      const bool sliced = panel && ld.group < 0 && block.parts.size() > 1;
      int count = sliced ? 0 : issue_lhs(0, slot, ld.s0, ld.s1, kSemInput + slot);
      for (size_t k = 0; k < block.parts.size(); ++k) {
        if (k > 0) issue_part(unit, buf, block, k);
        const Part& part = block.parts[k];
        if (sliced && part.g0 == 0)
          block.dmas[k] += issue_lhs(0, slot, part.s0, part.s1, kSemBlock + static_cast<int>(k));
      }
      return count;
    };
    issue = [&](int64_t t, int slot) {
      if (t == 0) return issue_first(slot);
      if (holding && block.parts.size() > 1) {
        held.emplace_back(t, slot);
        return 0;
      }
      const Load& ld = loads[static_cast<size_t>(t)];
      return issue_lhs(t, slot, ld.s0, ld.s1, kSemInput + slot);
    };
    // Each MXU's weights for the next K step are requested right after its pass of this
    // one (the shadow buffer is free once the pass has latched them), so that they are in
    // when the pass ends.
    // (The block's parts are waited for in order, up to the one holding the group's
    // last column group at this K step.)
    auto load_weights = [&](const std::vector<Tile>& tiles, int64_t s) {
      int64_t last = 0;
      for (const Tile& tile : tiles) last = std::max(last, tile.second / G);
      wait_parts(last, s);
      const KStep& ks = ksteps[static_cast<size_t>(s)];
      return [&, tiles, s, k = ks.k](int64_t j) {
        if (j < static_cast<int64_t>(tiles.size()))
          pb.emit(isa::Opcode::kMldw, p.db,
                  {j, b_sub[static_cast<size_t>(buf)][static_cast<size_t>(s)],
                   pb.sreg(tiles[static_cast<size_t>(j)].second * NT * eb), pb.sreg(BN * eb),
                   pb.sreg(k)});
      };
    };
    // The (group, K step) items of a load, in order.
    auto items_of = [&](const Load& ld) {
      std::vector<std::pair<std::vector<Tile>, int64_t>> items;
      for (const std::vector<Tile>& group : groups_in(ld))
        for (int64_t s = ld.s0; s < ld.s1; ++s) items.emplace_back(group, s);
      return items;
    };
    bool preloaded = false;  // the first item's weights were requested by the last load
    auto compute = [&](int64_t t, int slot) {
      if (t > 0 && holding) release_held();
      pb.wait(kSemInput + slot, held_dmas[static_cast<size_t>(t)]);
      const Load& ld = loads[static_cast<size_t>(t)];
      const Row& r = rows[static_cast<size_t>(ld.row)];
      current_load = t;
      if (r.unit != unit) switch_unit(r.unit);
      prefetch();
      const auto items = items_of(ld);
      if (!preloaded) {
        auto first = load_weights(items[0].first, items[0].second);
        for (int64_t j = 0; j < G; ++j) first(j);
      }
      // The next load's first weights follow this load's last passes when they come
      // from the same block.
      const bool next_load =
          t + 1 < static_cast<int64_t>(loads.size()) &&
          rows[static_cast<size_t>(loads[static_cast<size_t>(t) + 1].row)].unit == unit;
      preloaded = false;
      for (size_t i = 0; i < items.size(); ++i) {
        const auto& [tiles, s] = items[i];
        pop();
        std::function<void(int64_t)> next = [](int64_t) {};
        if (i + 1 < items.size()) {
          next = load_weights(items[i + 1].first, items[i + 1].second);
        } else if (next_load) {
          const auto following = items_of(loads[static_cast<size_t>(t) + 1]);
          next = load_weights(following[0].first, following[0].second);
          preloaded = true;
        }
        for (int64_t j = 0; j < G; ++j) {
          if (j < static_cast<int64_t>(tiles.size())) {
            const int64_t row = tiles[static_cast<size_t>(j)].first;
            pb.emit(isa::Opcode::kMmul, p.da,
                    {j, a_sub[static_cast<size_t>(slot)][static_cast<size_t>(row * C + s - ld.s0)],
                     0, pb.sreg(C * KT * ea), s == 0 ? 0 : 1});
          }
          next(j);
        }
        if (!overlapped_pops) copy_back();
        if (s == k_steps - 1) to_pop = Popped{ld.row, tiles, -1};
      }
    };

    issue_part(unit, buf, block, 0);
    stream_tiles(pb, static_cast<int64_t>(loads.size()), a_slots, issue, compute);
    pop();
    copy_back();
    ring.drain();
  };

  l.begin_parallel(cores);
  for (int c = 0; c < cores; ++c) {
    pb.set_core(l.options().core + c);
    if (split[static_cast<size_t>(c)] < split[static_cast<size_t>(c) + 1])
      emit_part(split[static_cast<size_t>(c)], split[static_cast<size_t>(c) + 1]);
  }
  l.end_parallel();
  return true;
}

}  // namespace

Value lower_dot(Lowerer& l, const Instruction& i, Scope& s) {
  const Instruction& lhs = *i.operand(0);
  const Instruction& rhs = *i.operand(1);
  const PrimitiveType lt = lhs.shape().type(), rt = rhs.shape().type(), ot = i.shape().type();
  auto mxu_input = [](PrimitiveType t) {
    return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16;
  };
  if (!mxu_input(lt) || !mxu_input(rt) ||
      !(ot == PrimitiveType::kF32 || ot == PrimitiveType::kBF16 || ot == PrimitiveType::kF16))
    unsupported_what(i,
                     fmt::format("dot of {} x {} -> {}", ir::type_name(lt), ir::type_name(rt),
                                 ir::type_name(ot)),
                     "the MXU multiplies bf16 (or f32 rounded to bf16) and accumulates in f32");
  const auto& precision = i.attrs().operand_precision;
  for (size_t k = 0; k < 2; ++k) {
    PrimitiveType t = k == 0 ? lt : rt;
    if (t == PrimitiveType::kF32 && k < precision.size() && precision[k] != ir::Precision::kDefault)
      unsupported_what(
          i, fmt::format("dot with precision {}", upper(ir::precision_name(precision[k]))),
          "f32 operands are lowered at DEFAULT precision only (one bf16 pass of the MXU)");
  }

  const Leaf A = view_of(l, s, lhs);
  const Leaf B = view_of(l, s, rhs);
  const ir::DotDimNumbers& dn = i.attrs().dot_dims;
  const std::vector<int64_t> out_strides = ir::row_major_strides(i.shape().dims());
  auto listed = [](const std::vector<int64_t>& v, int64_t d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };

  DimClass batch, m, n, k;
  size_t out_dim = 0;
  for (size_t j = 0; j < dn.lhs_batch.size(); ++j, ++out_dim)
    batch.add(lhs.shape().dim(dn.lhs_batch[j]), A.strides[static_cast<size_t>(dn.lhs_batch[j])],
              B.strides[static_cast<size_t>(dn.rhs_batch[j])], out_strides[out_dim]);
  for (int64_t d = 0; d < lhs.shape().rank(); ++d)
    if (!listed(dn.lhs_batch, d) && !listed(dn.lhs_contracting, d))
      m.add(lhs.shape().dim(d), A.strides[static_cast<size_t>(d)], 0, out_strides[out_dim++]);
  for (int64_t d = 0; d < rhs.shape().rank(); ++d)
    if (!listed(dn.rhs_batch, d) && !listed(dn.rhs_contracting, d))
      n.add(rhs.shape().dim(d), 0, B.strides[static_cast<size_t>(d)], out_strides[out_dim++]);
  for (size_t j = 0; j < dn.lhs_contracting.size(); ++j)
    k.add(lhs.shape().dim(dn.lhs_contracting[j]),
          A.strides[static_cast<size_t>(dn.lhs_contracting[j])],
          B.strides[static_cast<size_t>(dn.rhs_contracting[j])], 0);
  m = m.collapsed();
  n = n.collapsed();
  k = k.collapsed();
  const DimClass mi = m.inner(), ni = n.inner(), ki = k.inner();
  DimClass jobs = batch;  // everything looped over for separate outputs
  jobs.append(m.outer());
  jobs.append(n.outer());
  const DimClass k_outer = k.outer();

  int64_t depth = 1;
  for (int64_t d : k.sizes) depth *= d;
  if (depth == 0) {
    // An empty contraction: zeros.
    Expr zero;
    zero.dims = i.shape().dims();
    int node = zero.add_constant(ot, 0);
    l.begin_step(i, s);
    int32_t out = l.new_buffer(i.name(), i.shape());
    emit_elementwise_kernel(l, zero, {KernelOutput{node, out, ot}});
    return Value{out, i.shape(), {}};
  }

  l.begin_step(i, s);
  const int32_t out = l.new_buffer(i.name(), i.shape());
  DotProblem p;
  p.A = A;
  p.B = B;
  p.mi = mi;
  p.ni = ni;
  p.ki = ki;
  p.jobs = offsets_of(jobs);
  p.k_offsets = offsets_of(k_outer);
  p.ra = l.use(A.buffer);
  p.rb = l.use(B.buffer);
  p.ro = l.use(out);
  p.ea = ir::type_byte_size(lt);
  p.eb = ir::type_byte_size(rt);
  p.eo = ir::type_byte_size(ot);
  p.da = memory_dtype(lt);
  p.db = memory_dtype(rt);
  p.dout = memory_dtype(ot);
  if (!emit_resident(l, p)) emit_streamed(l, p);
  return Value{out, i.shape(), {}};
}

}  // namespace podsim::tpu
