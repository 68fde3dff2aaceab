// dot through BLAS. Any dot is a batch of B matrix products [M,K] x [K,N] -> [M,N]:
// batch dimensions, then the lhs free dimensions (M), then the rhs free dimensions (N)
// are the row-major result, so C is written in place. An operand whose free and
// contracting dimensions each collapse to one uniform stride (one of them 1) is passed
// to GEMM as it is, transposed or not; any other layout, and any operand of another
// float type (bf16, f16), is packed into a [M,K] / [K,N] matrix of the GEMM type -
// the lhs a panel of rows at a time, so that a 16-bit operand never exists as a whole
// in f32. f32/bf16/f16 results use SGEMM (rounded once to a 16-bit result type), f64
// results DGEMM; integer dots run through the evaluator.
//
// Accuracy: SGEMM accumulates in float where the evaluator accumulates f32 results in
// double, so results differ by at most about K * 2^-24 * sum|a*b| per element.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/cpu/dot_folding.h"
#include "compiler/cpu/gemm.h"
#include "compiler/cpu/kernel.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::PrimitiveType;

// Batched products of at least this many multiply-adds run their batch elements as
// TBB tasks (each product is computed exactly as on one thread).
constexpr int64_t kParallelBatchMacs = int64_t{1} << 19;

// Offsets (row-major strides of dims) of every combination of the listed dimensions.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& list,
                                const std::vector<int64_t>& dims) {
  const std::vector<int64_t> strides = ir::row_major_strides(dims);
  std::vector<int64_t> sizes;
  for (int64_t d : list) sizes.push_back(dims[static_cast<size_t>(d)]);
  std::vector<int64_t> offsets;
  ir::for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k)
      offset += index[k] * strides[static_cast<size_t>(list[k])];
    offsets.push_back(offset);
  });
  return offsets;
}

// The uniform stride of an offset table; 0 ("any") for tables of at most one entry.
std::optional<int64_t> uniform_stride(const std::vector<int64_t>& t) {
  if (t.size() <= 1) return 0;
  const int64_t s = t[1] - t[0];
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] != t[0] + static_cast<int64_t>(i) * s) return std::nullopt;
  return s;
}

// How GEMM reads one operand matrix [rows, cols] in place, if it can.
struct Direct {
  bool trans = false;
  int64_t ld = 0;
};

std::optional<Direct> direct_view(const std::vector<int64_t>& rows,
                                  const std::vector<int64_t>& cols, int64_t nrows, int64_t ncols) {
  const std::optional<int64_t> rs = uniform_stride(rows), cs = uniform_stride(cols);
  if (!rs || !cs) return std::nullopt;
  const int64_t r = rows.size() <= 1 ? std::max<int64_t>(ncols, 1) : *rs;
  const int64_t c = cols.size() <= 1 ? std::max<int64_t>(nrows, 1) : *cs;
  if ((cols.size() <= 1 || *cs == 1) && r >= std::max<int64_t>(ncols, 1)) return Direct{false, r};
  if ((rows.size() <= 1 || *rs == 1) && c >= std::max<int64_t>(nrows, 1)) return Direct{true, c};
  return std::nullopt;
}

struct Operand {
  PrimitiveType type;
  size_t width;
  std::vector<int64_t> batch, rows, cols;  // offset tables
  std::optional<Direct> direct;            // set when passed to GEMM in place
};

class DotKernel final : public Kernel {
 public:
  DotKernel(const Instruction& dot, bool f64) : f64_(f64), out_type_(dot.shape().type()) {
    const ir::DotDimNumbers& dn = dot.attrs().dot_dims;
    const ir::Shape& ls = dot.operand(0)->shape();
    const ir::Shape& rs = dot.operand(1)->shape();
    const std::vector<int64_t> lf = free_dims(ls.rank(), dn.lhs_batch, dn.lhs_contracting);
    const std::vector<int64_t> rf = free_dims(rs.rank(), dn.rhs_batch, dn.rhs_contracting);
    lhs_ = {ls.type(),
            static_cast<size_t>(ir::type_byte_size(ls.type())),
            offsets_of(dn.lhs_batch, ls.dims()),
            offsets_of(lf, ls.dims()),
            offsets_of(dn.lhs_contracting, ls.dims()),
            std::nullopt};
    rhs_ = {rs.type(),
            static_cast<size_t>(ir::type_byte_size(rs.type())),
            offsets_of(dn.rhs_batch, rs.dims()),
            offsets_of(dn.rhs_contracting, rs.dims()),
            offsets_of(rf, rs.dims()),
            std::nullopt};
    batch_ = static_cast<int64_t>(lhs_.batch.size());
    m_ = static_cast<int64_t>(lhs_.rows.size());
    k_ = static_cast<int64_t>(lhs_.cols.size());
    n_ = static_cast<int64_t>(rhs_.cols.size());
    const PrimitiveType gemm_type = f64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
    if (lhs_.type == gemm_type) lhs_.direct = direct_view(lhs_.rows, lhs_.cols, m_, k_);
    if (rhs_.type == gemm_type) rhs_.direct = direct_view(rhs_.rows, rhs_.cols, k_, n_);
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    const size_t gw = f64_ ? 8 : 4;
    const bool out_direct = out_type_ == (f64_ ? PrimitiveType::kF64 : PrimitiveType::kF32);
    std::vector<std::byte> packed_b, packed_a, result;
    if (!rhs_.direct) packed_b.resize(static_cast<size_t>(k_ * n_) * gw);
    // Lhs panels of about 4 MiB when the lhs is packed.
    const int64_t panel = lhs_.direct
                              ? std::max<int64_t>(m_, 1)
                              : std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(k_, 1),
                                                    1, std::max<int64_t>(m_, 1));
    if (!lhs_.direct) packed_a.resize(static_cast<size_t>(panel * k_) * gw);
    if (!out_direct) result.resize(static_cast<size_t>(m_ * n_) * gw);
    if (lhs_.direct && rhs_.direct && out_direct && batch_ > 1 &&
        batch_ * m_ * n_ * k_ >= kParallelBatchMacs) {
      // Independent products on operands in place: one task per batch element.
      tbb::parallel_for(int64_t{0}, batch_, [&](int64_t b) {
        gemm(f64_, lhs_.direct->trans, rhs_.direct->trans, m_, n_, k_,
             operands[0] + static_cast<size_t>(lhs_.batch[static_cast<size_t>(b)]) * lhs_.width,
             lhs_.direct->ld,
             operands[1] + static_cast<size_t>(rhs_.batch[static_cast<size_t>(b)]) * rhs_.width,
             rhs_.direct->ld, outputs[0] + static_cast<size_t>(b * m_ * n_) * gw, n_);
      });
      return;
    }
    for (int64_t b = 0; b < batch_; ++b) {
      const std::byte* lhs =
          operands[0] + static_cast<size_t>(lhs_.batch[static_cast<size_t>(b)]) * lhs_.width;
      const std::byte* rhs =
          operands[1] + static_cast<size_t>(rhs_.batch[static_cast<size_t>(b)]) * rhs_.width;
      std::byte* c =
          out_direct ? outputs[0] + static_cast<size_t>(b * m_ * n_) * gw : result.data();
      const void* bmat = rhs;
      bool trans_b = false;
      int64_t ldb = n_;
      if (rhs_.direct) {
        trans_b = rhs_.direct->trans;
        ldb = rhs_.direct->ld;
      } else {
        pack(rhs_, rhs, 0, k_, packed_b.data());
        bmat = packed_b.data();
      }
      for (int64_t m0 = 0; m0 < m_; m0 += panel) {
        const int64_t rows = std::min(panel, m_ - m0);
        std::byte* cpanel = c + static_cast<size_t>(m0 * n_) * gw;
        if (lhs_.direct) {
          gemm(f64_, lhs_.direct->trans, trans_b, rows, n_, k_, lhs, lhs_.direct->ld, bmat, ldb,
               cpanel, n_);
        } else {
          pack(lhs_, lhs, m0, rows, packed_a.data());
          gemm(f64_, false, trans_b, rows, n_, k_, packed_a.data(), k_, bmat, ldb, cpanel, n_);
        }
      }
      if (!out_direct)
        store_from_f32(
            reinterpret_cast<const float*>(result.data()), m_ * n_, out_type_,
            outputs[0] + static_cast<size_t>(b * m_ * n_ * ir::type_byte_size(out_type_)));
    }
  }

 private:
  // Rows [r0, r0 + count) of an operand matrix into a dense row-major matrix.
  void pack(const Operand& op, const std::byte* base, int64_t r0, int64_t count,
            std::byte* dst) const {
    const int64_t cols = static_cast<int64_t>(op.cols.size());
    for (int64_t r = 0; r < count; ++r) {
      const std::byte* row =
          base + static_cast<size_t>(op.rows[static_cast<size_t>(r0 + r)]) * op.width;
      if (f64_)
        gather_to_f64(row, op.type, op.cols.data(), cols,
                      reinterpret_cast<double*>(dst) + r * cols);
      else
        gather_to_f32(row, op.type, op.cols.data(), cols, reinterpret_cast<float*>(dst) + r * cols);
    }
  }

  bool f64_;
  PrimitiveType out_type_;
  Operand lhs_, rhs_;
  int64_t batch_ = 0, m_ = 0, k_ = 0, n_ = 0;
};

bool is_gemm_float(PrimitiveType t) { return ir::is_float(t); }

}  // namespace

std::unique_ptr<Kernel> make_dot_kernel(const Instruction& dot) {
  if (dot.operand_count() != 2 || !dot.shape().is_array() || !dot.operand(0)->shape().is_array() ||
      !dot.operand(1)->shape().is_array())
    return make_evaluator_kernel(dot);
  const PrimitiveType out = dot.shape().type();
  if (!is_gemm_float(out) || !is_gemm_float(dot.operand(0)->shape().type()) ||
      !is_gemm_float(dot.operand(1)->shape().type()))
    return make_evaluator_kernel(dot);
  return std::make_unique<DotKernel>(dot, out == PrimitiveType::kF64);
}

}  // namespace podsim::cpu
