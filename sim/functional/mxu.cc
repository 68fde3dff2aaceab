// The matrix units: weights-stationary bf16 x bf16 products with f32 accumulation, as
// one DEFAULT-precision pass on a TPU. Products of two bf16 values are exact in f32, so
// the only roundings are the inputs' (to bf16) and each addition's (f32, in k order).
#include <fmt/format.h>

#include <cstring>

#include "common/error.h"
#include "sim/functional/functional_model.h"
#include "sim/functional/lanes.h"

namespace podsim::sim {
namespace {

// out[j] += sum over kk of lhs[kk] * w[kk][j], adding in kk order. Columns go in blocks
// held in locals, so that the compiler vectorises them (nothing aliases) and keeps the
// partial sums in registers across kk.
void multiply_row(const float* lhs, const float* w, int64_t k, int64_t cols, float* out) {
  constexpr int64_t kBlock = 16;
  int64_t j = 0;
  for (; j + kBlock <= cols; j += kBlock) {
    float sum[kBlock], wk[kBlock];
    std::memcpy(sum, out + j, sizeof sum);
    for (int64_t kk = 0; kk < k; ++kk) {
      std::memcpy(wk, w + kk * cols + j, sizeof wk);
      for (int64_t u = 0; u < kBlock; ++u) sum[u] += lhs[kk] * wk[u];
    }
    std::memcpy(out + j, sum, sizeof sum);
  }
  for (; j < cols; ++j) {
    float sum = out[j];
    for (int64_t kk = 0; kk < k; ++kk) sum += lhs[kk] * w[kk * cols + j];
    out[j] = sum;
  }
}

}  // namespace

void FunctionalModel::execute_mxu(int core, const isa::Instruction& in, Effect& e) {
  const auto& o = in.operands;
  CoreState& c = state_.core(core);
  MxuState& mxu = c.mxus[static_cast<size_t>(o[0])];
  const int64_t* s = c.scalar.data();
  const int64_t rows = state_.chip().mxu_rows, cols = state_.chip().mxu_cols;
  const int64_t element_bytes = isa::dtype_bytes(in.dtype);
  const auto region = static_cast<int32_t>(o[1]);
  const int64_t base = executable_->regions[static_cast<size_t>(region)].offset + s[o[2]];
  const int64_t stride = s[o[3]];
  uint8_t* bytes = row_buffer_.data();
  uint32_t* row = lane_buffer_.data();

  switch (in.opcode) {
    case isa::Opcode::kMldw: {
      int64_t k = s[o[4]];
      if (k < 1 || k > rows)
        fail_at(core, in,
                fmt::format("K = {} (s{}) is outside [1, {}], the MXU's rows", k, o[4], rows));
      std::array<int64_t, 1> sizes{k}, strides{stride};
      e.read = resolve(core, in, region, s[o[2]], sizes, strides, cols * element_bytes,
                       "loads weights from");
      e.has_read = true;
      mxu.weight_rows = k;
      e.rows = k;
      if (!compute_data_) return;
      for (int64_t r = 0; r < k; ++r) {
        c.vmem.read(base + r * stride, bytes, cols * element_bytes);
        lanes::load_row(in.dtype, bytes, row, cols);
        float* w = mxu.weights.data() + r * cols;
        for (int64_t j = 0; j < cols; ++j) w[j] = lanes::round_to_bf16(lanes::to_float(row[j]));
      }
      std::fill(mxu.weights.begin() + k * cols, mxu.weights.end(), 0.0f);
      return;
    }
    case isa::Opcode::kMmul: {
      if (mxu.weight_rows == 0)
        fail_at(core, in, fmt::format("MXU m{} has no weights: run mldw first", o[0]));
      // mmul has no operand for M: the LHS tile has as many rows as the MXU.
      const int64_t m = rows, k = mxu.weight_rows;
      bool accumulate = o[4] == 1;
      if (accumulate && mxu.accumulator_rows != m)
        fail_at(core, in,
                fmt::format("accumulates into MXU m{}'s accumulator, which holds no result yet "
                            "(overwrite first: imm 0)",
                            o[0]));
      std::array<int64_t, 1> sizes{m}, strides{stride};
      e.read = resolve(core, in, region, s[o[2]], sizes, strides, k * element_bytes,
                       "streams its LHS from");
      e.has_read = true;
      e.rows = m;
      if (!compute_data_) {
        mxu.accumulator_rows = m;
        return;
      }
      if (!accumulate) {
        mxu.accumulator.assign(static_cast<size_t>(m * cols), 0.0f);
        mxu.accumulator_rows = m;
      }
      const float* w = mxu.weights.data();
      float* lhs = lhs_row_.data();
      for (int64_t i = 0; i < m; ++i) {
        c.vmem.read(base + i * stride, bytes, k * element_bytes);
        lanes::load_row(in.dtype, bytes, row, k);
        for (int64_t kk = 0; kk < k; ++kk) lhs[kk] = lanes::round_to_bf16(lanes::to_float(row[kk]));
        multiply_row(lhs, w, k, cols, mxu.accumulator.data() + i * cols);
      }
      return;
    }
    case isa::Opcode::kMpop: {
      const int64_t m = mxu.accumulator_rows;
      if (m == 0)
        fail_at(core, in, fmt::format("MXU m{}'s accumulator is empty: run mmul first", o[0]));
      std::array<int64_t, 1> sizes{m}, strides{stride};
      e.write = resolve(core, in, region, s[o[2]], sizes, strides, cols * element_bytes,
                        "pops the accumulator to");
      e.has_write = true;
      e.rows = m;
      if (!compute_data_) return;
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(row, mxu.accumulator.data() + i * cols,
                    static_cast<size_t>(cols) * sizeof(float));
        lanes::store_row(in.dtype, row, bytes, cols);
        c.vmem.write(base + i * stride, bytes, cols * element_bytes);
      }
      return;
    }
    default:
      fail_at(core, in, "is not an MXU instruction");
  }
}

}  // namespace podsim::sim
