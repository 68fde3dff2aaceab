// convolution as im2col + SGEMM, for float results with feature_group_count and
// batch_group_count 1 (any number of spatial dimensions, any dim_labels, strides,
// padding, dilations and window reversal); other convolutions run through the
// evaluator. Output positions P = batch x output spatial positions (row-major) form
// the rows of the patch matrix A[P, Kpos * Cin], the kernel is packed as
// W[Kpos * Cin, Cout], and C = A W is stored (or scattered, for layouts where the
// output feature is not innermost) into the result. A is built a panel of rows at a
// time so that it stays a few MiB. Accuracy as for dot: float accumulation.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "compiler/cpu/gemm.h"
#include "compiler/cpu/kernel.h"
#include "compiler/ir/native_types.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::PrimitiveType;

int64_t at(const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; }

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const Instruction& conv) {
    const ir::ConvDimNumbers& cd = conv.attrs().conv_dims;
    const ir::Shape& ls = conv.operand(0)->shape();
    const ir::Shape& rs = conv.operand(1)->shape();
    in_type_ = ls.type();
    kernel_type_ = rs.type();
    out_type_ = conv.shape().type();
    const std::vector<int64_t>& ld = ls.dims();
    const std::vector<int64_t>& rd = rs.dims();
    const std::vector<int64_t>& od = conv.shape().dims();
    const std::vector<int64_t> lst = ir::row_major_strides(ld), rst = ir::row_major_strides(rd),
                               ost = ir::row_major_strides(od);
    spatial_ = cd.input_spatial.size();
    batch_ = at(ld, cd.input_batch);
    cin_ = at(ld, cd.input_feature);
    cout_ = at(rd, cd.kernel_output_feature);
    in_batch_stride_ = at(lst, cd.input_batch);
    in_feature_stride_ = at(lst, cd.input_feature);
    out_batch_stride_ = at(ost, cd.output_batch);
    out_feature_stride_ = at(ost, cd.output_feature);
    ir::Window window;
    if (conv.attrs().window)
      window = *conv.attrs().window;
    else
      window.dims.resize(spatial_);
    for (size_t s = 0; s < spatial_; ++s) {
      Dim d;
      d.in_size = at(ld, cd.input_spatial[s]);
      d.in_stride = at(lst, cd.input_spatial[s]);
      d.kernel_size = at(rd, cd.kernel_spatial[s]);
      d.kernel_stride = at(rst, cd.kernel_spatial[s]);
      d.out_size = at(od, cd.output_spatial[s]);
      d.out_stride = at(ost, cd.output_spatial[s]);
      const ir::WindowDim& w = window.dims[s];
      d.stride = w.stride;
      d.pad_low = w.pad_low;
      d.lhs_dilation = w.lhs_dilation;
      d.rhs_dilation = w.rhs_dilation;
      d.reversal = w.reversal;
      dims_.push_back(d);
    }
    positions_ = batch_;
    kernel_positions_ = 1;
    for (const Dim& d : dims_) {
      positions_ *= d.out_size;
      kernel_positions_ *= d.kernel_size;
    }
    depth_ = kernel_positions_ * cin_;
    // Kernel offsets of every (kernel position, input feature) row of W, and of the
    // output features.
    std::vector<int64_t> ksizes;
    for (const Dim& d : dims_) ksizes.push_back(d.kernel_size);
    ir::for_each_index(ksizes, [&](const std::vector<int64_t>& k) {
      int64_t offset = 0;
      for (size_t s = 0; s < spatial_; ++s)
        offset +=
            (dims_[s].reversal ? dims_[s].kernel_size - 1 - k[s] : k[s]) * dims_[s].kernel_stride;
      for (int64_t c = 0; c < cin_; ++c)
        w_rows_.push_back(offset + c * at(rst, cd.kernel_input_feature));
    });
    for (int64_t f = 0; f < cout_; ++f) w_cols_.push_back(f * at(rst, cd.kernel_output_feature));
    for (int64_t c = 0; c < cin_; ++c) feature_offsets_.push_back(c * in_feature_stride_);
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    if (positions_ == 0 || cout_ == 0) return;
    std::vector<float> w(static_cast<size_t>(depth_ * cout_));
    for (int64_t r = 0; r < depth_; ++r) {
      const std::byte* row = operands[1] + static_cast<size_t>(w_rows_[static_cast<size_t>(r)]) *
                                               ir::type_byte_size(kernel_type_);
      gather_to_f32(row, kernel_type_, w_cols_.data(), cout_, w.data() + r * cout_);
    }
    const int64_t panel =
        std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(depth_, 1), 1, positions_);
    std::vector<float> a(static_cast<size_t>(panel * depth_)),
        c(static_cast<size_t>(panel * cout_));
    std::vector<int64_t> out_offsets(static_cast<size_t>(panel));
    for (int64_t p0 = 0; p0 < positions_; p0 += panel) {
      const int64_t rows = std::min(panel, positions_ - p0);
      // Patch rows are independent; BLAS is not running while TBB fills them.
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, 64),
                        [&](const tbb::blocked_range<int64_t>& r) {
                          std::vector<int64_t> o(spatial_), k(spatial_);
                          for (int64_t p = r.begin(); p < r.end(); ++p)
                            out_offsets[static_cast<size_t>(p)] =
                                patch_row(operands[0], p0 + p, a.data() + p * depth_, o, k);
                        });
      gemm(false, false, false, rows, cout_, depth_, a.data(), depth_, w.data(), cout_, c.data(),
           cout_);
      store(c.data(), rows, out_offsets, outputs[0]);
    }
  }

 private:
  struct Dim {
    int64_t in_size, in_stride, kernel_size, kernel_stride, out_size, out_stride;
    int64_t stride, pad_low, lhs_dilation, rhs_dilation;
    bool reversal;
  };

  // Fills row p of the patch matrix; returns the output offset of position p.
  int64_t patch_row(const std::byte* input, int64_t p, float* row, std::vector<int64_t>& o,
                    std::vector<int64_t>& k) const {
    int64_t rest = p;
    for (size_t s = spatial_; s-- > 0;) {
      o[s] = rest % dims_[s].out_size;
      rest /= dims_[s].out_size;
    }
    const int64_t b = rest;
    int64_t out_offset = b * out_batch_stride_;
    for (size_t s = 0; s < spatial_; ++s) out_offset += o[s] * dims_[s].out_stride;
    const size_t width = static_cast<size_t>(ir::type_byte_size(in_type_));
    std::fill(k.begin(), k.end(), 0);
    for (int64_t kp = 0; kp < kernel_positions_; ++kp) {
      int64_t offset = b * in_batch_stride_;
      bool inside = true;
      for (size_t s = 0; s < spatial_ && inside; ++s) {
        const Dim& d = dims_[s];
        const int64_t pos = o[s] * d.stride + k[s] * d.rhs_dilation - d.pad_low;
        inside = pos >= 0 && pos % d.lhs_dilation == 0 && pos / d.lhs_dilation < d.in_size;
        offset += (pos / d.lhs_dilation) * d.in_stride;
      }
      float* dst = row + kp * cin_;
      if (inside)
        gather_to_f32(input + static_cast<size_t>(offset) * width, in_type_,
                      feature_offsets_.data(), cin_, dst);
      else
        std::fill(dst, dst + cin_, 0.0f);
      for (size_t s = spatial_; s-- > 0;) {
        if (++k[s] < dims_[s].kernel_size) break;
        k[s] = 0;
      }
    }
    return out_offset;
  }

  void store(const float* c, int64_t rows, const std::vector<int64_t>& offsets,
             std::byte* out) const {
    const size_t width = static_cast<size_t>(ir::type_byte_size(out_type_));
    for (int64_t p = 0; p < rows; ++p) {
      const float* src = c + p * cout_;
      std::byte* base = out + static_cast<size_t>(offsets[static_cast<size_t>(p)]) * width;
      if (out_feature_stride_ == 1) {
        store_from_f32(src, cout_, out_type_, base);
      } else {
        for (int64_t f = 0; f < cout_; ++f)
          store_from_f32(src + f, 1, out_type_,
                         base + static_cast<size_t>(f * out_feature_stride_) * width);
      }
    }
  }

  PrimitiveType in_type_, kernel_type_, out_type_;
  size_t spatial_ = 0;
  int64_t batch_ = 0, cin_ = 0, cout_ = 0;
  int64_t in_batch_stride_ = 0, in_feature_stride_ = 0, out_batch_stride_ = 0,
          out_feature_stride_ = 0;
  std::vector<Dim> dims_;
  int64_t positions_ = 0, kernel_positions_ = 0, depth_ = 0;
  std::vector<int64_t> w_rows_, w_cols_, feature_offsets_;
};

bool float32_like(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

}  // namespace

std::unique_ptr<Kernel> make_convolution_kernel(const Instruction& conv) {
  if (conv.operand_count() != 2 || !conv.shape().is_array() ||
      !conv.operand(0)->shape().is_array() || !conv.operand(1)->shape().is_array() ||
      conv.attrs().feature_group_count != 1 || conv.attrs().batch_group_count != 1 ||
      !float32_like(conv.shape().type()) || !float32_like(conv.operand(0)->shape().type()) ||
      !float32_like(conv.operand(1)->shape().type()))
    return make_evaluator_kernel(conv);
  if (conv.attrs().window &&
      conv.attrs().window->dims.size() != conv.attrs().conv_dims.input_spatial.size())
    return make_evaluator_kernel(conv);
  return std::make_unique<ConvKernel>(conv);
}

}  // namespace podsim::cpu
