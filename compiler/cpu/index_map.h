// Internal to the CPU target: affine maps from the row-major linear index of one shape
// to element offsets in another buffer, offset(t) = base + sum_d coord_d(t) * coef[d].
// Broadcast, transpose, slice and reverse are such maps from their result to their
// operand; so are the kept and reduced dimensions of a reduce. Dimensions that the
// map walks as one (coef[d] == coef[d+1] * dims[d+1]) and dimensions of size 1 are
// merged away at construction, which makes the common maps cheap to evaluate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace podsim::cpu {

class AffineMap {
 public:
  AffineMap() = default;
  AffineMap(const std::vector<int64_t>& dims, const std::vector<int64_t>& coefs, int64_t base);

  int64_t at(int64_t t) const;
  // out[i] = offset(start + i) for i < n.
  void fill(int64_t start, int64_t n, int64_t* out) const;
  // out[i] = base[offset(start + i)] for i < n, elements of `width` bytes: the reads of
  // fill() + a gather without the offsets, a run of the innermost dimension at a time.
  void gather(int64_t start, int64_t n, const std::byte* base, size_t width, std::byte* out) const;
  // out[i] = offset(in[i]) for i < n.
  void map(const int64_t* in, int64_t n, int64_t* out) const;
  // s where offset(t) == base + t * s for every t (a map with one merged dimension,
  // or none); nullopt otherwise.
  std::optional<int64_t> linear_stride() const;
  int64_t base() const { return base_; }

 private:
  std::vector<int64_t> dims_;
  std::vector<int64_t> coefs_;
  int64_t base_ = 0;
};

// The maps from a result index to an operand index of the data-movement ops the block
// engine walks through (broadcast, transpose, slice, reverse). operand_dims and
// result_dims are the operand's and the result's dimensions.
AffineMap broadcast_map(const std::vector<int64_t>& result_dims,
                        const std::vector<int64_t>& operand_dims,
                        const std::vector<int64_t>& dimensions);
AffineMap transpose_map(const std::vector<int64_t>& operand_dims,
                        const std::vector<int64_t>& permutation);
struct SliceRange {
  int64_t start;
  int64_t stride;
};
AffineMap slice_map(const std::vector<int64_t>& result_dims,
                    const std::vector<int64_t>& operand_dims,
                    const std::vector<SliceRange>& ranges);
AffineMap reverse_map(const std::vector<int64_t>& dims, const std::vector<int64_t>& reversed);

// The map from a concatenate's or pad's result index to one operand's index. It is
// defined only where the result element comes from that operand; elsewhere it gives
// index 0 and mask 0.
class MaskedMap {
 public:
  MaskedMap() = default;
  // Operand covering [begin, begin + extent) of `dimension` of a concatenate's result.
  static MaskedMap concatenate(const std::vector<int64_t>& result_dims, int64_t dimension,
                               int64_t begin, int64_t extent);
  // The padded operand of a pad; low may be negative; step = interior padding + 1.
  static MaskedMap pad(const std::vector<int64_t>& result_dims,
                       const std::vector<int64_t>& operand_dims, const std::vector<int64_t>& low,
                       const std::vector<int64_t>& step);

  // The operand index of result index t, and whether t comes from the operand.
  std::pair<int64_t, bool> at(int64_t t) const;
  // out[i], mask[i] for the n result indices start + i (or indices[i] when given).
  void map(int64_t start, const int64_t* indices, int64_t n, int64_t* out, uint8_t* mask) const;

 private:
  bool concat_ = true;
  // concatenate: the dimension's stride and size in the result, the operand's range.
  int64_t stride_ = 1, size_ = 1, begin_ = 0, extent_ = 0;
  // pad: per dimension.
  std::vector<int64_t> result_dims_, operand_dims_, operand_strides_, low_, step_;
};

}  // namespace podsim::cpu
