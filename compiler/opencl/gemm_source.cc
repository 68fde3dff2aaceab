#include "compiler/opencl/gemm_source.h"

#include <fmt/format.h>

#include "compiler/opencl/kernel_source.h"

namespace podsim::opencl {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string gemm_source(const GemmShape& s, const GemmTiling& t, const std::string& name) {
  using ir::PrimitiveType;
  const bool f64 = s.a_type == PrimitiveType::kF64 || s.b_type == PrimitiveType::kF64 ||
                   s.c_type == PrimitiveType::kF64;
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
  return fmt::format(
      R"(#define TM {tm}
#define TN {tn}
#define TK {tk}
#define RM {rm}
#define RN {rn}
#define M {m}
#define N {n}
#define K {k}
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
#undef TM
#undef TN
#undef TK
#undef RM
#undef RN
#undef M
#undef N
#undef K
)",
      fmt::arg("tm", t.tile_m), fmt::arg("tn", t.tile_n), fmt::arg("tk", t.tile_k),
      fmt::arg("rm", t.reg_m), fmt::arg("rn", t.reg_n), fmt::arg("m", s.m), fmt::arg("n", s.n),
      fmt::arg("k", s.k), fmt::arg("name", name), fmt::arg("sa", *storage_type(s.a_type)),
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
  for (size_t i = 0; i + 1 < kGemmTilings.size(); ++i) {
    const GemmTiling& t = kGemmTilings[i];
    if (ceil_div(s.m, t.tile_m) * ceil_div(s.n, t.tile_n) * s.batch >= 64)
      return static_cast<int>(i);
  }
  return static_cast<int>(kGemmTilings.size() - 1);
}

}  // namespace podsim::opencl
