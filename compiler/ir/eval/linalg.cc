// Reference evaluation of dot and convolution.
//
// Accumulation precision is fixed by the result type so that the oracle is
// deterministic and at least as accurate as any backend:
//   f32 / f64 results accumulate in double and round once at the end;
//   f16 / bf16 results accumulate in float and round once at the end;
//   integer (and pred) results accumulate modulo 2^64, i.e. they wrap exactly as
//   arithmetic in the result type would.
// Operands are converted to the accumulator type first, so the result type may
// differ from the operand type (bf16 x bf16 -> f32, s8 x s8 -> s32).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {
namespace {

// Operand values converted to the accumulator type Acc.
template <typename Acc>
std::vector<Acc> load(const Instruction& instruction, const Literal& l) {
  std::vector<Acc> v(static_cast<size_t>(l.num_elements()));
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    if (is_float(l.type()))
      op_fail(instruction, "floating-point operand {} with integer result {} is not supported",
              l.shape().to_string(false), instruction.shape().to_string(false));
    const bool is_unsigned = is_unsigned_int(l.type());
    for (size_t i = 0; i < v.size(); ++i) {
      const auto k = static_cast<int64_t>(i);
      v[i] = is_unsigned ? l.get_as_uint64(k) : static_cast<uint64_t>(l.get_as_int64(k));
    }
  } else {
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<Acc>(l.get_as_double(static_cast<int64_t>(i)));
  }
  return v;
}

template <typename Acc>
void store(Literal& out, int64_t i, Acc v) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    out.set_from_uint64(i, v);
  else
    out.set_from_double(i, static_cast<double>(v));  // exact for float; one rounding
}

// Calls f.template operator()<Acc>() with the accumulator type of result type t.
template <typename F>
Literal with_accumulator(const Instruction& instruction, PrimitiveType t, F&& f) {
  switch (t) {
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
      return f.template operator()<double>();
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
      return f.template operator()<float>();
    case PrimitiveType::kTuple:
      op_fail(instruction, "result must be an array");
    default:
      return f.template operator()<uint64_t>();
  }
}

const Literal& array_operand(const Instruction& instruction, Operands operands, size_t i) {
  if (operands.size() != 2) op_fail(instruction, "expected 2 operands, got {}", operands.size());
  if (operands[i]->shape().is_tuple())
    op_fail(instruction, "operand {} is a tuple; expected an array", i);
  return *operands[i];
}

void check_result_shape(const Instruction& instruction, const std::vector<int64_t>& dims) {
  const Shape& shape = instruction.shape();
  if (shape.is_tuple() || shape.dims() != dims)
    op_fail(instruction, "result shape {} does not match the computed dimensions [{}]",
            shape.to_string(false), fmt::join(dims, ","));
}

// Linear offsets (row-major strides of dims) of every combination of the listed
// dimensions, enumerated row-major in list order.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& list,
                                const std::vector<int64_t>& dims) {
  const std::vector<int64_t> strides = row_major_strides(dims);
  std::vector<int64_t> sizes;
  for (int64_t d : list) sizes.push_back(dims[static_cast<size_t>(d)]);
  std::vector<int64_t> offsets;
  for_each_index(sizes, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k)
      offset += index[k] * strides[static_cast<size_t>(list[k])];
    offsets.push_back(offset);
  });
  return offsets;
}

// Checks that batch and contracting dimension lists of one side are in range and
// disjoint; returns its remaining (free) dimensions in increasing order.
std::vector<int64_t> free_dims(const Instruction& instruction, const char* side, int64_t rank,
                               const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (const auto* list : {&batch, &contracting}) {
    for (int64_t d : *list) {
      if (d < 0 || d >= rank || used[static_cast<size_t>(d)])
        op_fail(instruction, "{} dimension {} is out of range or used twice", side, d);
      used[static_cast<size_t>(d)] = true;
    }
  }
  std::vector<int64_t> result;
  for (int64_t d = 0; d < rank; ++d)
    if (!used[static_cast<size_t>(d)]) result.push_back(d);
  return result;
}

Literal eval_dot(const Instruction& instruction, Operands operands) {
  const Literal& lhs = array_operand(instruction, operands, 0);
  const Literal& rhs = array_operand(instruction, operands, 1);
  const DotDimNumbers& dn = instruction.attrs().dot_dims;
  const std::vector<int64_t>& ld = lhs.shape().dims();
  const std::vector<int64_t>& rd = rhs.shape().dims();
  if (dn.lhs_batch.size() != dn.rhs_batch.size() ||
      dn.lhs_contracting.size() != dn.rhs_contracting.size())
    op_fail(instruction, "lhs and rhs must have as many batch and contracting dimensions");
  const std::vector<int64_t> lhs_free =
      free_dims(instruction, "lhs", lhs.shape().rank(), dn.lhs_batch, dn.lhs_contracting);
  const std::vector<int64_t> rhs_free =
      free_dims(instruction, "rhs", rhs.shape().rank(), dn.rhs_batch, dn.rhs_contracting);
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i)
    if (ld[static_cast<size_t>(dn.lhs_batch[i])] != rd[static_cast<size_t>(dn.rhs_batch[i])])
      op_fail(instruction, "batch dimension sizes differ: lhs {} vs rhs {}", dn.lhs_batch[i],
              dn.rhs_batch[i]);
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i)
    if (ld[static_cast<size_t>(dn.lhs_contracting[i])] !=
        rd[static_cast<size_t>(dn.rhs_contracting[i])])
      op_fail(instruction, "contracting dimension sizes differ: lhs {} vs rhs {}",
              dn.lhs_contracting[i], dn.rhs_contracting[i]);

  // Result dimensions: batch, then lhs free, then rhs free.
  std::vector<int64_t> out_dims;
  for (int64_t d : dn.lhs_batch) out_dims.push_back(ld[static_cast<size_t>(d)]);
  for (int64_t d : lhs_free) out_dims.push_back(ld[static_cast<size_t>(d)]);
  for (int64_t d : rhs_free) out_dims.push_back(rd[static_cast<size_t>(d)]);
  check_result_shape(instruction, out_dims);

  const std::vector<int64_t> lb = offsets_of(dn.lhs_batch, ld), rb = offsets_of(dn.rhs_batch, rd);
  const std::vector<int64_t> lm = offsets_of(lhs_free, ld), rn = offsets_of(rhs_free, rd);
  const std::vector<int64_t> lk = offsets_of(dn.lhs_contracting, ld);
  const std::vector<int64_t> rk = offsets_of(dn.rhs_contracting, rd);

  Literal out(instruction.shape());
  return with_accumulator(instruction, out.type(), [&]<typename Acc>() {
    const std::vector<Acc> a = load<Acc>(instruction, lhs), b = load<Acc>(instruction, rhs);
    // Pack the rhs as [batch][n][k] so that the inner loop reads both sides contiguously.
    const size_t K = lk.size(), N = rn.size();
    std::vector<Acc> packed_rhs(rb.size() * N * K);
    for (size_t bi = 0; bi < rb.size(); ++bi)
      for (size_t n = 0; n < N; ++n)
        for (size_t k = 0; k < K; ++k)
          packed_rhs[(bi * N + n) * K + k] = b[static_cast<size_t>(rb[bi] + rn[n] + rk[k])];
    std::vector<Acc> row(K);
    int64_t o = 0;
    for (size_t bi = 0; bi < lb.size(); ++bi) {
      for (int64_t m_offset : lm) {
        for (size_t k = 0; k < K; ++k) row[k] = a[static_cast<size_t>(lb[bi] + m_offset + lk[k])];
        for (size_t n = 0; n < N; ++n) {
          const Acc* col = packed_rhs.data() + (bi * N + n) * K;  // K may be 0: no element
          Acc sum = 0;
          for (size_t k = 0; k < K; ++k) sum += row[k] * col[k];
          store(out, o++, sum);
        }
      }
    }
    return std::move(out);
  });
}

// Checks that dims (a batch, a feature and the spatial dimensions) are a permutation
// of [0, rank).
void check_dim_labels(const Instruction& instruction, const char* what, int64_t rank,
                      std::vector<int64_t> dims) {
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(i) || static_cast<int64_t>(dims.size()) != rank)
      op_fail(instruction, "{} dimension labels do not name each of the {} dimensions once", what,
              rank);
}

// XLA convolution (see the StableHLO spec): each output element is the dot product of
// a window of the padded, base-dilated input with the (window-dilated) kernel, over
// the input features of its feature group. feature_group_count G splits input
// features and output features into G contiguous groups; batch_group_count BG splits
// the input batch and the output features into BG contiguous groups.
Literal eval_convolution(const Instruction& instruction, Operands operands) {
  const Literal& lhs = array_operand(instruction, operands, 0);
  const Literal& rhs = array_operand(instruction, operands, 1);
  const ConvDimNumbers& cd = instruction.attrs().conv_dims;
  const int64_t rank = lhs.shape().rank();
  const size_t spatial = cd.input_spatial.size();
  if (rhs.shape().rank() != rank || static_cast<int64_t>(spatial) + 2 != rank ||
      cd.kernel_spatial.size() != spatial || cd.output_spatial.size() != spatial)
    op_fail(instruction, "operands {} and {} do not match dim_labels with {} spatial dimensions",
            lhs.shape().to_string(false), rhs.shape().to_string(false), spatial);
  auto with = [](std::vector<int64_t> v, int64_t a, int64_t b) {
    v.push_back(a);
    v.push_back(b);
    return v;
  };
  check_dim_labels(instruction, "input", rank,
                   with(cd.input_spatial, cd.input_batch, cd.input_feature));
  check_dim_labels(instruction, "kernel", rank,
                   with(cd.kernel_spatial, cd.kernel_input_feature, cd.kernel_output_feature));
  check_dim_labels(instruction, "output", rank,
                   with(cd.output_spatial, cd.output_batch, cd.output_feature));
  const std::vector<int64_t>& ld = lhs.shape().dims();
  const std::vector<int64_t>& rd = rhs.shape().dims();
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };

  const int64_t batch = at(ld, cd.input_batch), features = at(ld, cd.input_feature);
  const int64_t kernel_in = at(rd, cd.kernel_input_feature);
  const int64_t kernel_out = at(rd, cd.kernel_output_feature);
  const int64_t groups = instruction.attrs().feature_group_count;
  const int64_t batch_groups = instruction.attrs().batch_group_count;
  if (groups < 1 || batch_groups < 1 || (groups > 1 && batch_groups > 1))
    op_fail(instruction,
            "feature_group_count {} / batch_group_count {}: both must be >= 1 and "
            "at most one > 1",
            groups, batch_groups);
  if (features != kernel_in * groups || kernel_out % groups != 0 ||
      kernel_out % batch_groups != 0 || batch % batch_groups != 0)
    op_fail(instruction,
            "input features {} / kernel input features {} / kernel output "
            "features {} / batch {} do not fit feature_group_count {} and batch_group_count {}",
            features, kernel_in, kernel_out, batch, groups, batch_groups);

  Window window;
  if (instruction.attrs().window)
    window = *instruction.attrs().window;
  else
    window.dims.resize(spatial);  // no window attribute: size 1 everywhere
  if (window.dims.size() != spatial)
    op_fail(instruction, "window has {} dimensions; expected {}", window.dims.size(), spatial);
  std::vector<int64_t> out_dims(static_cast<size_t>(rank));
  out_dims[static_cast<size_t>(cd.output_batch)] = batch / batch_groups;
  out_dims[static_cast<size_t>(cd.output_feature)] = kernel_out;
  std::vector<int64_t> kernel_sizes(spatial), input_sizes(spatial);
  for (size_t s = 0; s < spatial; ++s) {
    WindowDim& w = window.dims[s];
    kernel_sizes[s] = at(rd, cd.kernel_spatial[s]);
    input_sizes[s] = at(ld, cd.input_spatial[s]);
    if (!instruction.attrs().window) w.size = kernel_sizes[s];
    if (w.size != kernel_sizes[s] || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1)
      op_fail(instruction,
              "window dimension {} (size {}, stride {}, dilations {}/{}) does not "
              "fit kernel size {}",
              s, w.size, w.stride, w.lhs_dilation, w.rhs_dilation, kernel_sizes[s]);
    const int64_t base = input_sizes[s] == 0 ? 0 : (input_sizes[s] - 1) * w.lhs_dilation + 1;
    const int64_t padded = w.pad_low + base + w.pad_high;
    const int64_t extent = kernel_sizes[s] == 0 ? 0 : (kernel_sizes[s] - 1) * w.rhs_dilation + 1;
    out_dims[static_cast<size_t>(cd.output_spatial[s])] =
        (padded <= 0 || extent > padded) ? 0 : (padded - extent) / w.stride + 1;
  }
  check_result_shape(instruction, out_dims);

  const std::vector<int64_t> ls = row_major_strides(ld), rs = row_major_strides(rd);
  // Kernel window positions in row-major order, with the kernel offset each reads
  // (window_reversal reads the kernel backwards along that dimension).
  std::vector<std::vector<int64_t>> positions;
  std::vector<int64_t> kernel_offsets;
  for_each_index(kernel_sizes, [&](const std::vector<int64_t>& k) {
    int64_t offset = 0;
    for (size_t s = 0; s < spatial; ++s) {
      const int64_t used = window.dims[s].reversal ? kernel_sizes[s] - 1 - k[s] : k[s];
      offset += used * at(rs, cd.kernel_spatial[s]);
    }
    positions.push_back(k);
    kernel_offsets.push_back(offset);
  });
  const int64_t out_features_per_group = kernel_out / groups;
  const int64_t out_features_per_batch_group = kernel_out / batch_groups;
  const int64_t out_batch = batch / batch_groups;

  Literal out(instruction.shape());
  return with_accumulator(instruction, out.type(), [&]<typename Acc>() {
    const std::vector<Acc> a = load<Acc>(instruction, lhs), b = load<Acc>(instruction, rhs);
    int64_t o = 0;
    for_each_index(out_dims, [&](const std::vector<int64_t>& index) {
      const int64_t f = at(index, cd.output_feature);
      const int64_t group = f / out_features_per_group;
      const int64_t in_batch =
          (f / out_features_per_batch_group) * out_batch + at(index, cd.output_batch);
      const int64_t lhs_base =
          in_batch * at(ls, cd.input_batch) + group * kernel_in * at(ls, cd.input_feature);
      const int64_t rhs_base = f * at(rs, cd.kernel_output_feature);
      Acc sum = 0;
      for (size_t p = 0; p < positions.size(); ++p) {
        int64_t lhs_offset = lhs_base;
        bool inside = true;
        for (size_t s = 0; s < spatial && inside; ++s) {
          const WindowDim& w = window.dims[s];
          const int64_t pos = at(index, cd.output_spatial[s]) * w.stride +
                              positions[p][s] * w.rhs_dilation - w.pad_low;
          inside = pos >= 0 && pos % w.lhs_dilation == 0 && pos / w.lhs_dilation < input_sizes[s];
          lhs_offset += (pos / w.lhs_dilation) * at(ls, cd.input_spatial[s]);
        }
        if (!inside) continue;
        const int64_t rhs_offset = rhs_base + kernel_offsets[p];
        for (int64_t c = 0; c < kernel_in; ++c)
          sum += a[static_cast<size_t>(lhs_offset + c * at(ls, cd.input_feature))] *
                 b[static_cast<size_t>(rhs_offset + c * at(rs, cd.kernel_input_feature))];
      }
      store(out, o++, sum);
    });
    return std::move(out);
  });
}

}  // namespace

Literal eval_linalg(const Instruction& instruction, Operands operands) {
  switch (instruction.opcode()) {
    case Opcode::kDot:
      return eval_dot(instruction, operands);
    case Opcode::kConvolution:
      return eval_convolution(instruction, operands);
    default:
      op_fail(instruction, "internal: not a linear-algebra op");
  }
}

}  // namespace podsim::ir::eval
