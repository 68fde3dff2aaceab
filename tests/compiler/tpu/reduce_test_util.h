// HLO text for the reduce tests: a single-operand reduce of `type` over `reduced` dims
// with a binary reducer `op` and an init constant.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace podsim::tpu::testing {

inline std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? "," : "") + std::to_string(v[k]);
  return s;
}

inline std::vector<int64_t> kept_dims(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& reduced) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < dims.size(); ++d)
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == reduced.end())
      kept.push_back(dims[d]);
  return kept;
}

inline std::string reduce_module(const std::string& type, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& reduced, const std::string& op,
                                 const std::string& init) {
  return fmt::format(R"(HloModule m
f {{
  a = {0}[] parameter(0)
  b = {0}[] parameter(1)
  ROOT c = {0}[] {1}(a, b)
}}
ENTRY e {{
  x = {0}[{2}] parameter(0)
  i = {0}[] constant({3})
  ROOT r = {0}[{4}] reduce(x, i), dimensions={{{5}}}, to_apply=f
}})",
                     type, op, join(dims), init, join(kept_dims(dims, reduced)), join(reduced));
}

}  // namespace podsim::tpu::testing
