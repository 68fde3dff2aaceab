// How rng-bit-generator's ThreeFry output fills an array narrower than 64 bits per
// element (XLA's RngBitGenerator expander): the shape is halved along its first even
// dimension (else its largest, the first of equals), and generator output k fills the
// two positions 2h and 2h + 1 of that dimension. Shared by the evaluator and the targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace podsim::ir {

// The dimension that is halved; dims must not be empty.
inline size_t three_fry_split_dimension(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] % 2 == 0) return i;
  size_t largest = 0;
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] > dims[largest]) largest = i;
  return largest;
}

}  // namespace podsim::ir
