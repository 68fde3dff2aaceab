#include "compiler/cpu/index_map.h"

#include <algorithm>
#include <cstring>

#include "compiler/ir/shape.h"

namespace podsim::cpu {

AffineMap::AffineMap(const std::vector<int64_t>& dims, const std::vector<int64_t>& coefs,
                     int64_t base)
    : base_(base) {
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;  // its coordinate is always 0
    if (!dims_.empty() && coefs_.back() == coefs[d] * dims[d]) {
      // The previous (more major) dimension continues this one: walk them as one.
      dims_.back() *= dims[d];
      coefs_.back() = coefs[d];
      continue;
    }
    dims_.push_back(dims[d]);
    coefs_.push_back(coefs[d]);
  }
}

int64_t AffineMap::at(int64_t t) const {
  int64_t offset = base_;
  for (size_t d = dims_.size(); d-- > 0;) {
    if (d == 0) {
      offset += t * coefs_[0];
    } else {
      offset += (t % dims_[d]) * coefs_[d];
      t /= dims_[d];
    }
  }
  return offset;
}

void AffineMap::fill(int64_t start, int64_t n, int64_t* out) const {
  if (n <= 0) return;
  const size_t rank = dims_.size();
  if (rank == 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = base_;
    return;
  }
  if (rank == 1) {
    const int64_t c = coefs_[0], first = base_ + start * c;
    for (int64_t i = 0; i < n; ++i) out[i] = first + i * c;
    return;
  }
  // Odometer over the merged dimensions, one run of the innermost dimension at a time.
  std::vector<int64_t> coord(rank);
  int64_t t = start, offset = base_;
  for (size_t d = rank; d-- > 0;) {
    coord[d] = d == 0 ? t : t % dims_[d];
    if (d != 0) t /= dims_[d];
    offset += coord[d] * coefs_[d];
  }
  const int64_t inner = dims_[rank - 1], c = coefs_[rank - 1];
  int64_t i = 0;
  while (i < n) {
    const int64_t run = std::min(n - i, inner - coord[rank - 1]);
    for (int64_t k = 0; k < run; ++k) out[i + k] = offset + k * c;
    i += run;
    offset += run * c;
    coord[rank - 1] += run;
    if (coord[rank - 1] < inner) break;  // only happens when i == n
    offset -= inner * c;
    coord[rank - 1] = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      offset += coefs_[d];
      if (++coord[d] < dims_[d] || d == 0) break;
      offset -= dims_[d] * coefs_[d];
      coord[d] = 0;
    }
  }
}

namespace {

// out[k] = in[k * stride] for k < n.
template <size_t W>
void strided_run(const std::byte* in, int64_t stride, int64_t n, std::byte* out) {
  struct Unit {
    std::byte b[W];
  };
  const Unit* s = reinterpret_cast<const Unit*>(in);
  Unit* o = reinterpret_cast<Unit*>(out);
  if (stride == 1) {
    std::memcpy(o, s, static_cast<size_t>(n) * W);
  } else if (stride == 0) {
    for (int64_t k = 0; k < n; ++k) o[k] = s[0];
  } else {
    for (int64_t k = 0; k < n; ++k) o[k] = s[k * stride];
  }
}

template <size_t W>
void gather_runs(const std::vector<int64_t>& dims, const std::vector<int64_t>& coefs,
                 int64_t base_offset, int64_t start, int64_t n, const std::byte* base,
                 std::byte* out) {
  const size_t rank = dims.size();
  if (rank == 0) {
    strided_run<W>(base + static_cast<size_t>(base_offset) * W, 0, n, out);
    return;
  }
  if (rank == 1) {
    strided_run<W>(base + static_cast<size_t>(base_offset + start * coefs[0]) * W, coefs[0], n,
                   out);
    return;
  }
  int64_t coord[8];
  int64_t t = start, offset = base_offset;
  for (size_t d = rank; d-- > 0;) {
    coord[d] = d == 0 ? t : t % dims[d];
    if (d != 0) t /= dims[d];
    offset += coord[d] * coefs[d];
  }
  const int64_t inner = dims[rank - 1], c = coefs[rank - 1];
  int64_t i = 0;
  while (i < n) {
    const int64_t run = std::min(n - i, inner - coord[rank - 1]);
    strided_run<W>(base + static_cast<size_t>(offset) * W, c, run,
                   out + static_cast<size_t>(i) * W);
    i += run;
    if (i == n) break;
    offset += (run - inner) * c;
    coord[rank - 1] = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      offset += coefs[d];
      if (++coord[d] < dims[d] || d == 0) break;
      offset -= dims[d] * coefs[d];
      coord[d] = 0;
    }
  }
}

}  // namespace

void AffineMap::gather(int64_t start, int64_t n, const std::byte* base, size_t width,
                       std::byte* out) const {
  if (n <= 0) return;
  if (dims_.size() > 8) {  // rare: offsets first
    std::vector<int64_t> offsets(static_cast<size_t>(n));
    fill(start, n, offsets.data());
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out + static_cast<size_t>(i) * width,
                  base + static_cast<size_t>(offsets[static_cast<size_t>(i)]) * width, width);
    return;
  }
  switch (width) {
    case 1:
      return gather_runs<1>(dims_, coefs_, base_, start, n, base, out);
    case 2:
      return gather_runs<2>(dims_, coefs_, base_, start, n, base, out);
    case 4:
      return gather_runs<4>(dims_, coefs_, base_, start, n, base, out);
    default:
      return gather_runs<8>(dims_, coefs_, base_, start, n, base, out);
  }
}

void AffineMap::map(const int64_t* in, int64_t n, int64_t* out) const {
  const size_t rank = dims_.size();
  if (rank == 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = base_;
  } else if (rank == 1) {
    const int64_t c = coefs_[0];
    for (int64_t i = 0; i < n; ++i) out[i] = base_ + in[i] * c;
  } else {
    // Index lists are mostly runs (rows of a transpose, the pieces of a concatenate,
    // the repeated index 0 where a masked map's mask is clear): map each run with the
    // odometer of fill() or one division instead of divisions per element.
    int64_t i = 0;
    while (i < n) {
      int64_t j = i + 1;
      if (j < n && in[j] == in[i]) {
        while (j < n && in[j] == in[i]) ++j;
        const int64_t v = at(in[i]);
        for (int64_t k = i; k < j; ++k) out[k] = v;
      } else {
        while (j < n && in[j] == in[j - 1] + 1) ++j;
        if (j - i >= 4)
          fill(in[i], j - i, out + i);
        else
          for (int64_t k = i; k < j; ++k) out[k] = at(in[k]);
      }
      i = j;
    }
  }
}

std::optional<int64_t> AffineMap::linear_stride() const {
  if (dims_.empty()) return 0;
  if (dims_.size() == 1) return coefs_[0];
  return std::nullopt;
}

AffineMap broadcast_map(const std::vector<int64_t>& result_dims,
                        const std::vector<int64_t>& operand_dims,
                        const std::vector<int64_t>& dimensions) {
  const std::vector<int64_t> strides = ir::row_major_strides(operand_dims);
  std::vector<int64_t> coefs(result_dims.size(), 0);
  for (size_t k = 0; k < dimensions.size(); ++k)
    coefs[static_cast<size_t>(dimensions[k])] = strides[k];
  return AffineMap(result_dims, coefs, 0);
}

AffineMap transpose_map(const std::vector<int64_t>& operand_dims,
                        const std::vector<int64_t>& permutation) {
  const std::vector<int64_t> strides = ir::row_major_strides(operand_dims);
  std::vector<int64_t> dims(permutation.size()), coefs(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) {
    dims[i] = operand_dims[static_cast<size_t>(permutation[i])];
    coefs[i] = strides[static_cast<size_t>(permutation[i])];
  }
  return AffineMap(dims, coefs, 0);
}

AffineMap slice_map(const std::vector<int64_t>& result_dims,
                    const std::vector<int64_t>& operand_dims,
                    const std::vector<SliceRange>& ranges) {
  const std::vector<int64_t> strides = ir::row_major_strides(operand_dims);
  std::vector<int64_t> coefs(result_dims.size());
  int64_t base = 0;
  for (size_t d = 0; d < result_dims.size(); ++d) {
    coefs[d] = ranges[d].stride * strides[d];
    base += ranges[d].start * strides[d];
  }
  return AffineMap(result_dims, coefs, base);
}

AffineMap reverse_map(const std::vector<int64_t>& dims, const std::vector<int64_t>& reversed) {
  const std::vector<int64_t> strides = ir::row_major_strides(dims);
  std::vector<int64_t> coefs = strides;
  int64_t base = 0;
  for (int64_t d : reversed) {
    const auto k = static_cast<size_t>(d);
    if (dims[k] == 0) continue;
    coefs[k] = -strides[k];
    base += (dims[k] - 1) * strides[k];
  }
  return AffineMap(dims, coefs, base);
}

MaskedMap MaskedMap::concatenate(const std::vector<int64_t>& result_dims, int64_t dimension,
                                 int64_t begin, int64_t extent) {
  MaskedMap m;
  m.concat_ = true;
  m.stride_ = ir::row_major_strides(result_dims)[static_cast<size_t>(dimension)];
  m.size_ = result_dims[static_cast<size_t>(dimension)];
  m.begin_ = begin;
  m.extent_ = extent;
  return m;
}

MaskedMap MaskedMap::pad(const std::vector<int64_t>& result_dims,
                         const std::vector<int64_t>& operand_dims, const std::vector<int64_t>& low,
                         const std::vector<int64_t>& step) {
  MaskedMap m;
  m.concat_ = false;
  m.result_dims_ = result_dims;
  m.operand_dims_ = operand_dims;
  m.operand_strides_ = ir::row_major_strides(operand_dims);
  m.low_ = low;
  m.step_ = step;
  return m;
}

std::pair<int64_t, bool> MaskedMap::at(int64_t t) const {
  if (concat_) {
    const int64_t outer = t / (size_ * stride_), x = (t / stride_) % size_, inner = t % stride_;
    if (x < begin_ || x >= begin_ + extent_) return {0, false};
    return {(outer * extent_ + (x - begin_)) * stride_ + inner, true};
  }
  int64_t index = 0;
  for (size_t d = result_dims_.size(); d-- > 0;) {
    const int64_t x = t % result_dims_[d] - low_[d];
    t /= result_dims_[d];
    if (x < 0 || x % step_[d] != 0 || x / step_[d] >= operand_dims_[d]) return {0, false};
    index += (x / step_[d]) * operand_strides_[d];
  }
  return {index, true};
}

void MaskedMap::map(int64_t start, const int64_t* indices, int64_t n, int64_t* out,
                    uint8_t* mask) const {
  if (concat_ && indices == nullptr && n > 0) {
    // Consecutive result indices: step the coordinates instead of dividing.
    int64_t outer = start / (size_ * stride_), x = (start / stride_) % size_,
            inner = start % stride_;
    for (int64_t i = 0; i < n; ++i) {
      const bool valid = x >= begin_ && x < begin_ + extent_;
      out[i] = valid ? (outer * extent_ + (x - begin_)) * stride_ + inner : 0;
      mask[i] = valid;
      if (++inner == stride_) {
        inner = 0;
        if (++x == size_) {
          x = 0;
          ++outer;
        }
      }
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto [index, valid] = at(indices ? indices[i] : start + i);
    out[i] = index;
    mask[i] = valid;
  }
}

}  // namespace podsim::cpu
