// dot on the MXUs. Dimensions are classified (batch, M = lhs free, N = rhs free, K =
// contracting) and each class collapsed where the operands' strides allow; the
// innermost M, N and K dims are tiled by the MXU (mxu_rows x K tiles of the LHS,
// K x mxu_cols tiles of the weights), every other dim is a loop. For each output tile
// the K tiles stream through double-buffered VMEM slots: mldw loads the weights, mmul
// streams the LHS and accumulates in f32 (overwrite on the first K tile), and after the
// last one mpop writes the tile (f32, bf16 or f16) to an output slot that a DMA copies
// back. With several N tiles, the LHS rows' whole K panel is loaded once and stays in
// VMEM while the weight tiles stream (when it fits). Operands are read through their
// views (transposes cost only DMA strides).
// Partial tiles: the MXU reads padding rows / columns, which only reach padding
// outputs, never stored; K is exact (mldw's K).
#include <fmt/format.h>

#include <algorithm>

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
    for (size_t k = 0; k < c.dims.size(); ++k) r.add(c.dims[k], c.strides[0][k], c.strides[1][k], c.strides[2][k]);
    return r;
  }
  // The innermost dim (tiled) and the others (looped over).
  DimClass inner() const {
    DimClass r;
    if (sizes.empty()) r.add(1, 0, 0, 0);
    else r.add(sizes.back(), a.back(), b.back(), o.back());
    return r;
  }
  DimClass outer() const {
    DimClass r;
    for (size_t k = 0; k + 1 < sizes.size(); ++k) r.add(sizes[k], a[k], b[k], o[k]);
    return r;
  }
  void append(const DimClass& other) {
    for (size_t k = 0; k < other.sizes.size(); ++k) add(other.sizes[k], other.a[k], other.b[k], other.o[k]);
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

struct Step {
  int64_t a = 0, b = 0, o = 0;  // element offsets of the tiles
  int64_t m = 0, k = 0, n = 0;  // valid rows / depth / columns
  int mxu = 0;
  bool first = false, last = false;
  int64_t kstep = 0;        // index among the K steps of the output tile
  int group = 0;            // output row (job, M tile): its LHS panel
  bool load_panel = false;  // the first step of a row loads its whole LHS panel
};

}  // namespace

Value lower_dot(Lowerer& l, const Instruction& i, Scope& s) {
  const Instruction& lhs = *i.operand(0);
  const Instruction& rhs = *i.operand(1);
  const PrimitiveType lt = lhs.shape().type(), rt = rhs.shape().type(), ot = i.shape().type();
  auto mxu_input = [](PrimitiveType t) { return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16; };
  if (!mxu_input(lt) || !mxu_input(rt) ||
      !(ot == PrimitiveType::kF32 || ot == PrimitiveType::kBF16 || ot == PrimitiveType::kF16))
    unsupported_what(i, fmt::format("dot of {} x {} -> {}", ir::type_name(lt), ir::type_name(rt), ir::type_name(ot)),
                     "the MXU multiplies bf16 (or f32 rounded to bf16) and accumulates in f32");
  const auto& precision = i.attrs().operand_precision;
  for (size_t k = 0; k < 2; ++k) {
    PrimitiveType t = k == 0 ? lt : rt;
    if (t == PrimitiveType::kF32 && k < precision.size() && precision[k] != ir::Precision::kDefault)
      unsupported_what(i, fmt::format("dot with precision {}", upper(ir::precision_name(precision[k]))),
                       "f32 operands are lowered at DEFAULT precision only (one bf16 pass of the MXU)");
  }

  const Leaf A = view_of(l, s, lhs);
  const Leaf B = view_of(l, s, rhs);
  const ir::DotDimNumbers& dn = i.attrs().dot_dims;
  const std::vector<int64_t> out_strides = ir::row_major_strides(i.shape().dims());
  auto listed = [](const std::vector<int64_t>& v, int64_t d) { return std::find(v.begin(), v.end(), d) != v.end(); };

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
    k.add(lhs.shape().dim(dn.lhs_contracting[j]), A.strides[static_cast<size_t>(dn.lhs_contracting[j])],
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
  const int32_t ra = l.use(A.buffer), rb = l.use(B.buffer), ro = l.use(out);
  const int64_t ea = ir::type_byte_size(lt), eb = ir::type_byte_size(rt), eo = ir::type_byte_size(ot);
  const isa::DType da = memory_dtype(lt), db = memory_dtype(rt), dout = memory_dtype(ot);

  const topology::ChipConfig& chip = l.chip();
  const int64_t MT = chip.mxu_rows, KT = chip.mxu_rows, NT = chip.mxu_cols;
  const std::vector<Offsets> k_offsets = offsets_of(k_outer);
  const int64_t k_steps = static_cast<int64_t>(k_offsets.size()) * ceil_div(ki.sizes[0], KT);
  // The LHS row panel (all K tiles of MT rows) stays in VMEM while the weights of every
  // N tile stream past it, when two panels fit in a quarter of VMEM; otherwise each
  // step loads its LHS tile too.
  const int64_t panel_bytes = MT * k_steps * KT * ea;
  const bool panel = ni.sizes[0] > NT && 2 * panel_bytes <= l.vmem_free() / 4;

  std::vector<Step> steps;
  int tile = 0, group = 0;
  for (const Offsets& job : offsets_of(jobs))
    for (int64_t m0 = 0; m0 < mi.sizes[0]; m0 += MT, ++group)
      for (int64_t n0 = 0; n0 < ni.sizes[0]; n0 += NT) {
        int mxu = tile++ % chip.mxus_per_core;
        size_t first = steps.size();
        int64_t kstep = 0;
        for (const Offsets& ko : k_offsets)
          for (int64_t k0 = 0; k0 < ki.sizes[0]; k0 += KT) {
            Step st;
            st.a = A.offset + job.a + ko.a + m0 * mi.a[0] + k0 * ki.a[0];
            st.b = B.offset + job.b + ko.b + n0 * ni.b[0] + k0 * ki.b[0];
            st.o = job.o + m0 * mi.o[0] + n0 * ni.o[0];
            st.m = std::min(MT, mi.sizes[0] - m0);
            st.n = std::min(NT, ni.sizes[0] - n0);
            st.k = std::min(KT, ki.sizes[0] - k0);
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
    int count = issue_copy(pb, rb, st.b * eb, b_slot[slot], 0, eb, {st.k, st.n}, {ki.b[0], ni.b[0]}, {NT, 1},
                           kSemInput + slot);
    if (!panel)
      return count + issue_copy(pb, ra, st.a * ea, a_slot[slot], 0, ea, {st.m, st.k}, {mi.a[0], ki.a[0]}, {KT, 1},
                                kSemInput + slot);
    if (!st.load_panel) return count;
    // The whole row: the K steps of this (first) N tile, side by side.
    for (int64_t j = 0; j < k_steps; ++j) {
      const Step& kj = steps[static_cast<size_t>(index + j)];
      count += issue_copy(pb, ra, kj.a * ea, a_slot[static_cast<size_t>(st.group % 2)], j * KT * ea, ea, {kj.m, kj.k},
                          {mi.a[0], ki.a[0]}, {a_stride, 1}, kSemInput + slot);
    }
    return count;
  };
  auto compute = [&](int64_t index, int slot) {
    const Step& st = steps[static_cast<size_t>(index)];
    int32_t lhs = panel ? a_slot[static_cast<size_t>(st.group % 2)] : a_slot[static_cast<size_t>(slot)];
    int64_t lhs_offset = panel ? st.kstep * KT * ea : 0;
    pb.emit(isa::Opcode::kMldw, db, {st.mxu, b_slot[slot], 0, pb.sreg(NT * eb), pb.sreg(st.k)});
    pb.emit(isa::Opcode::kMmul, da, {st.mxu, lhs, pb.sreg(lhs_offset), pb.sreg(a_stride * ea), st.first ? 0 : 1});
    if (!st.last) return;
    int o = ring.acquire();
    pb.emit(isa::Opcode::kMpop, dout, {st.mxu, o_slot[o], 0, pb.sreg(NT * eo)});
    int count = issue_copy(pb, o_slot[o], 0, ro, st.o * eo, eo, {st.m, st.n}, {NT, 1}, {mi.o[0], ni.o[0]},
                           kSemOutput + o);
    ring.release(o, count);
  };
  stream_tiles(pb, static_cast<int64_t>(steps.size()), issue, compute);
  ring.drain();
  return Value{out, i.shape(), {}};
}

}  // namespace podsim::tpu
