#include "compiler/opencl/gemm_source.h"

#include <fmt/format.h>

#include <utility>

#include "compiler/opencl/emitter.h"

namespace podsim::opencl {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A kernel's sizes as macros of its source: the #defines before it, the #undefs after.
std::pair<std::string, std::string> size_macros(const GemmShape& s, const GemmTiling& t) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"TM", t.tile_m}, {"TN", t.tile_n}, {"TK", t.tile_k}, {"RM", t.reg_m}, {"RN", t.reg_n},
      {"NT", t.threads()}, {"M", s.m}, {"N", s.n}, {"K", s.k}};
  std::string defines, undefs;
  for (const auto& [name, value] : sizes) {
    defines += fmt::format("#define {} {}\n", name, value);
    undefs += fmt::format("#undef {}\n", name);
  }
  return {defines, undefs};
}

// The pipelined kernel (see GemmTiling::pipelined). Each work-item loads its share of the
// next slab of A and B into registers (16-byte loads along the contiguous dimension)
// while it multiplies the current slab out of local memory, then stores the share into
// the other local buffer: one barrier per slab. Local tiles are k-major (as[k][m],
// bs[k][n]); a work-item's rows and columns are reg/4 runs of 4, spaced a tile/(reg/4)
// apart, so a warp's 16-byte local reads are contiguous and its stores to C coalesce.
std::string pipelined_source(const GemmShape& s, const GemmTiling& t, const std::string& name) {
  const int wx = t.tile_n / t.reg_n, wy = t.tile_m / t.reg_m, threads = wx * wy;
  const int na = t.tile_m * t.tile_k / 4, nb = t.tile_n * t.tile_k / 4;  // float4s per slab
  const int la = (na + threads - 1) / threads, lb = (nb + threads - 1) / threads;
  // Per register q: index l of the float4 in the slab, its global load and local store.
  auto slab = [&](const char* reg, bool k_major, const char* from, const char* local,
                  const char* major_dim, int tile_free) {
    // k_major: the matrix is K x F row-major (float4 runs along the free dimension F);
    // else F x K (runs along K, scattered into the k-major local tile).
    std::string load, store;
    if (k_major) {
      load = fmt::format(
          "      const int kk = l / ({1} / 4), ff = l % ({1} / 4) * 4;\n"
          "      {0}[q] = *(__global const float4*)({2} + (long)(k0n + kk) * {3} + f0 + ff);\n",
          reg, tile_free, from, major_dim);
      store = fmt::format(
          "      const int kk = l / ({1} / 4), ff = l % ({1} / 4) * 4;\n"
          "      *(__local float4*)&{2}[nb][kk][ff] = {0}[q];\n",
          reg, tile_free, local);
    } else {
      load = fmt::format(
          "      const int ff = l / (TK / 4), kk = l % (TK / 4) * 4;\n"
          "      {0}[q] = *(__global const float4*)({1} + (long)(f0 + ff) * K + k0n + kk);\n",
          reg, from);
      store = fmt::format(
          "      const int ff = l / (TK / 4), kk = l % (TK / 4) * 4;\n"
          "      {1}[nb][kk][ff] = {0}[q].x; {1}[nb][kk + 1][ff] = {0}[q].y;\n"
          "      {1}[nb][kk + 2][ff] = {0}[q].z; {1}[nb][kk + 3][ff] = {0}[q].w;\n",
          reg, local);
    }
    return std::pair(load, store);
  };
  const auto [load_a, store_a] = slab("pa", s.trans_a, "a", "as", "M", t.tile_m);
  const auto [load_b, store_b] = slab("pb", !s.trans_b, "b", "bs", "N", t.tile_n);
  auto loop = [threads](int count, int total, const std::string& body) {
    const std::string guard =
        total % threads == 0 ? "" : fmt::format("      if (l >= {}) break;\n", total);
    return fmt::format(
        "    for (int q = 0; q < {}; ++q) {{\n      const int l = tid + q * NT;\n{}{}    }}\n",
        count, guard, body);
  };
  auto with_f0 = [](const char* f0, const std::string& body) {
    return fmt::format("    {{\n      const int f0 = {};\n{}    }}\n", f0, body);
  };
  const std::string load =
      with_f0("row0", loop(la, na, load_a)) + with_f0("col0", loop(lb, nb, load_b));
  const std::string store = loop(la, na, store_a) + loop(lb, nb, store_b);
  const auto macros = size_macros(s, t);
  return fmt::format(
      R"({defines}
__kernel __attribute__((reqd_work_group_size({wx}, {wy}, 1)))
void {name}(__global const float* restrict a, __global const float* restrict b, __global float* restrict out) {{
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * {wx} + tx;
  const int row0 = get_group_id(1) * TM, col0 = get_group_id(0) * TN;
  const long batch = get_group_id(2);
  a += batch * ((long)M * K);
  b += batch * ((long)K * N);
  out += batch * ((long)M * N);
  __local float as[2][TK][TM + 4] __attribute__((aligned(16)));
  __local float bs[2][TK][TN + 4] __attribute__((aligned(16)));
  float4 pa[{la}], pb[{lb}];
  float acc[RM][RN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < RN; ++j) acc[i][j] = 0;
  int k0n = 0, nb = 0;
{load}{store}  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k0 = 0; k0 < K; k0 += TK) {{
    const int cb = nb;
    k0n = k0 + TK;
    nb = cb ^ 1;
    if (k0n < K) {{
{load}    }}
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) {{
      float ra[RM], rb[RN];
#pragma unroll
      for (int c = 0; c < RM / 4; ++c) {{
        const float4 v = *(__local const float4*)&as[cb][kk][c * (TM * 4 / RM) + ty * 4];
        ra[4 * c] = v.x; ra[4 * c + 1] = v.y; ra[4 * c + 2] = v.z; ra[4 * c + 3] = v.w;
      }}
#pragma unroll
      for (int c = 0; c < RN / 4; ++c) {{
        const float4 v = *(__local const float4*)&bs[cb][kk][c * (TN * 4 / RN) + tx * 4];
        rb[4 * c] = v.x; rb[4 * c + 1] = v.y; rb[4 * c + 2] = v.z; rb[4 * c + 3] = v.w;
      }}
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
    }}
    if (k0n < K) {{
{store}    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
#pragma unroll
  for (int i = 0; i < RM; ++i) {{
    const long row = row0 + i / 4 * (TM * 4 / RM) + ty * 4 + i % 4;
#pragma unroll
    for (int c = 0; c < RN / 4; ++c)
      *(__global float4*)(out + row * N + col0 + c * (TN * 4 / RN) + tx * 4) =
          (float4)(acc[i][4 * c], acc[i][4 * c + 1], acc[i][4 * c + 2], acc[i][4 * c + 3]);
  }}
}}
{undefs}
)",
      fmt::arg("defines", macros.first), fmt::arg("undefs", macros.second), fmt::arg("wx", wx),
      fmt::arg("wy", wy), fmt::arg("name", name), fmt::arg("la", la), fmt::arg("lb", lb), fmt::arg("load", load),
      fmt::arg("store", store));
}

}  // namespace

bool gemm_tiling_fits(const GemmShape& s, const GemmTiling& t) {
  if (!t.pipelined) return true;
  using ir::PrimitiveType;
  const int threads = t.threads();  // slabs of at least a float4 per two work-items
  return s.a_type == PrimitiveType::kF32 && s.b_type == PrimitiveType::kF32 &&
         s.c_type == PrimitiveType::kF32 && s.m % t.tile_m == 0 && s.n % t.tile_n == 0 &&
         s.k % t.tile_k == 0 && t.reg_m % 4 == 0 && t.reg_n % 4 == 0 &&
         t.tile_m * t.tile_k / 4 >= threads / 2 && t.tile_n * t.tile_k / 4 >= threads / 2;
}

std::string gemm_source(const GemmShape& s, const GemmTiling& t, const std::string& name) {
  using ir::PrimitiveType;
  const bool f64 = s.a_type == PrimitiveType::kF64 || s.b_type == PrimitiveType::kF64 ||
                   s.c_type == PrimitiveType::kF64;
  if (t.pipelined) return pipelined_source(s, t, name);
  const std::string c = f64 ? "double" : "float";
  // Global loads: A's and B's slabs are read along their contiguous dimension so that
  // neighbouring work-items read neighbouring addresses.
  const std::string load_a = s.trans_a ? "const int kk = l / TM, mm = l % TM;"   // A is K x M
                                       : "const int mm = l / TK, kk = l % TK;";  // A is M x K
  const std::string a_index =
      s.trans_a ? "(long)(k0 + kk) * M + (row0 + mm)" : "(long)(row0 + mm) * K + (k0 + kk)";
  const std::string load_b = s.trans_b ? "const int nn = l / TK, kk = l % TK;"   // B is N x K
                                       : "const int kk = l / TN, nn = l % TN;";  // B is K x N
  const std::string b_index =
      s.trans_b ? "(long)(col0 + nn) * K + (k0 + kk)" : "(long)(k0 + kk) * N + (col0 + nn)";
  std::string slab_a = fmt::format(
      "    for (int l = tid; l < TK * TM; l += (TM / RM) * (TN / RN)) {{\n      {}\n"
      "      as[kk][mm] = (row0 + mm < M && k0 + kk < K) ? ({})({}) : ({})0;\n    }}\n",
      load_a, c, load_expr(s.a_type, "a", "aoff + " + a_index), c);
  std::string slab_b = fmt::format(
      "    for (int l = tid; l < TK * TN; l += (TM / RM) * (TN / RN)) {{\n      {}\n"
      "      bs[kk][nn] = (col0 + nn < N && k0 + kk < K) ? ({})({}) : ({})0;\n    }}\n",
      load_b, c, load_expr(s.b_type, "b", "boff + " + b_index), c);
  // f32 operands whose tiles all lie inside the matrices: unguarded 16-byte loads along the
  // contiguous dimension (every row start is 16-byte aligned: K, M, N are multiples of the
  // tile sizes), four elements per work-item and load.
  if (s.a_type == PrimitiveType::kF32 && s.b_type == PrimitiveType::kF32 && s.m % t.tile_m == 0 &&
      s.n % t.tile_n == 0 && s.k % t.tile_k == 0) {
    slab_a = s.trans_a
                 ? "    for (int l = tid; l < TK * TM / 4; l += (TM / RM) * (TN / RN)) {\n"
                   "      const int kk = l / (TM / 4), mm = l % (TM / 4) * 4;\n"
                   "      vstore4(vload4(0, a + aoff + (long)(k0 + kk) * M + row0 + mm), 0, "
                   "&as[kk][mm]);\n"
                   "    }\n"
                 : "    for (int l = tid; l < TK * TM / 4; l += (TM / RM) * (TN / RN)) {\n"
                   "      const int mm = l / (TK / 4), kk = l % (TK / 4) * 4;\n"
                   "      const float4 v = vload4(0, a + aoff + (long)(row0 + mm) * K + k0 + kk);\n"
                   "      as[kk][mm] = v.x; as[kk + 1][mm] = v.y; as[kk + 2][mm] = v.z; as[kk + "
                   "3][mm] = v.w;\n"
                   "    }\n";
    slab_b = s.trans_b
                 ? "    for (int l = tid; l < TK * TN / 4; l += (TM / RM) * (TN / RN)) {\n"
                   "      const int nn = l / (TK / 4), kk = l % (TK / 4) * 4;\n"
                   "      const float4 v = vload4(0, b + boff + (long)(col0 + nn) * K + k0 + kk);\n"
                   "      bs[kk][nn] = v.x; bs[kk + 1][nn] = v.y; bs[kk + 2][nn] = v.z; bs[kk + "
                   "3][nn] = v.w;\n"
                   "    }\n"
                 : "    for (int l = tid; l < TK * TN / 4; l += (TM / RM) * (TN / RN)) {\n"
                   "      const int kk = l / (TN / 4), nn = l % (TN / 4) * 4;\n"
                   "      vstore4(vload4(0, b + boff + (long)(k0 + kk) * N + col0 + nn), 0, "
                   "&bs[kk][nn]);\n"
                   "    }\n";
  }
  const auto macros = size_macros(s, t);
  return fmt::format(
      R"({defines}
__kernel __attribute__((reqd_work_group_size(TN / RN, TM / RM, 1)))
void {name}(__global const {sa}* restrict a, __global const {sb}* restrict b, __global {sc}* restrict out) {{
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * (TN / RN) + tx;
  const int row0 = get_group_id(1) * TM, col0 = get_group_id(0) * TN;
  const long batch = get_group_id(2);
  const long aoff = batch * ((long)M * K), boff = batch * ((long)K * N), coff = batch * ((long)M * N);
  __local {c} as[TK][TM + 4];
  __local {c} bs[TK][TN + 4];
  {c} acc[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = 0;
  for (int k0 = 0; k0 < K; k0 += TK) {{
{slab_a}{slab_b}    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) {{
      {c} ra[RM], rb[RN];
      for (int i = 0; i < RM; ++i) ra[i] = as[kk][ty * RM + i];
      for (int j = 0; j < RN; ++j) rb[j] = bs[kk][tx * RN + j];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = mad(ra[i], rb[j], acc[i][j]);
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int i = 0; i < RM; ++i) {{
    const int row = row0 + ty * RM + i;
    if (row >= M) break;
    for (int j = 0; j < RN; ++j) {{
      const int col = col0 + tx * RN + j;
      if (col < N) {{ {store} }}
    }}
  }}
}}
{undefs}
)",
      fmt::arg("defines", macros.first), fmt::arg("undefs", macros.second), fmt::arg("name", name), fmt::arg("sa", *storage_type(s.a_type)),
      fmt::arg("sb", *storage_type(s.b_type)), fmt::arg("sc", *storage_type(s.c_type)),
      fmt::arg("c", c), fmt::arg("slab_a", slab_a), fmt::arg("slab_b", slab_b),
      fmt::arg("store", store_stmt(s.c_type, "out", "coff + (long)row * N + col", "acc[i][j]")));
}

Launch3 gemm_launch(const GemmShape& s, const GemmTiling& t) {
  Launch3 l;
  l.local = {t.tile_n / t.reg_n, t.tile_m / t.reg_m, 1};
  l.global = {ceil_div(s.n, t.tile_n) * l.local[0], ceil_div(s.m, t.tile_m) * l.local[1], s.batch};
  return l;
}

int default_gemm_tiling(const GemmShape& s) {
  // At least ~64 work-groups keep a GPU's compute units fed; below that, smaller tiles.
  int smallest = 0;
  for (size_t i = 0; i < kGemmTilings.size(); ++i) {
    const GemmTiling& t = kGemmTilings[i];
    if (t.pipelined) continue;
    smallest = static_cast<int>(i);
    if (ceil_div(s.m, t.tile_m) * ceil_div(s.n, t.tile_n) * s.batch >= 64) break;
  }
  return smallest;
}

}  // namespace podsim::opencl
