#include "compiler/tpu/tiling.h"

#include "common/error.h"

namespace podsim::tpu {

Collapsed collapse(const std::vector<int64_t>& dims, const std::vector<int>& labels,
                   const std::vector<std::vector<int64_t>>& strides) {
  Collapsed c;
  c.strides.resize(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool merge = !c.dims.empty() && c.labels.back() == labels[d];
    for (size_t a = 0; merge && a < strides.size(); ++a)
      merge = c.strides[a].back() == strides[a][d] * dims[d];
    if (merge) {
      c.dims.back() *= dims[d];
      for (size_t a = 0; a < strides.size(); ++a) c.strides[a].back() = strides[a][d];
      continue;
    }
    c.dims.push_back(dims[d]);
    c.labels.push_back(labels[d]);
    for (size_t a = 0; a < strides.size(); ++a) c.strides[a].push_back(strides[a][d]);
  }
  return c;
}

int32_t contiguous_descriptor(ProgramBuilder& pb, int32_t src_region, int32_t dst_region, int64_t bytes) {
  int64_t eb = 8;
  while (bytes % eb != 0) eb /= 2;
  isa::DmaDescriptor d;
  d.src_region = src_region;
  d.dst_region = dst_region;
  d.element_bytes = static_cast<int32_t>(eb);
  d.sizes = {bytes / eb};
  d.src_strides = {eb};
  d.dst_strides = {eb};
  return pb.descriptor(d);
}

int issue_copy(ProgramBuilder& pb, int32_t src_region, int64_t src_offset, int32_t dst_region, int64_t dst_offset,
               int64_t element_bytes, const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
               const std::vector<int64_t>& dst_strides, int semaphore) {
  return issue_copy(pb, src_region, -1, src_offset, dst_region, -1, dst_offset, element_bytes, sizes, src_strides,
                    dst_strides, semaphore);
}

int issue_copy(ProgramBuilder& pb, int32_t src_region, int src_reg, int64_t src_offset, int32_t dst_region,
               int dst_reg, int64_t dst_offset, int64_t element_bytes, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides, int semaphore) {
  for (int64_t s : sizes)
    if (s == 0) return 0;
  std::vector<int> labels(sizes.size(), 0);
  Collapsed c = collapse(sizes, labels, {src_strides, dst_strides});
  if (c.dims.empty()) {  // one element
    c.dims = {1};
    c.strides = {{1}, {1}};
  }
  const size_t n = c.dims.size();
  const size_t inner = std::min(n, static_cast<size_t>(isa::kMaxDmaDims));
  const size_t outer = n - inner;
  isa::DmaDescriptor d;
  d.src_region = src_region;
  d.dst_region = dst_region;
  d.element_bytes = static_cast<int32_t>(element_bytes);
  for (size_t k = outer; k < n; ++k) {
    d.sizes.push_back(c.dims[k]);
    d.src_strides.push_back(c.strides[0][k] * element_bytes);
    d.dst_strides.push_back(c.strides[1][k] * element_bytes);
  }
  int32_t desc = pb.descriptor(d);
  // One DMA per index of the outer dimensions (beyond what one descriptor holds).
  std::vector<int64_t> index(outer, 0);
  int count = 0;
  int tmp[2] = {-1, -1};
  // The register holding base + offset: a cached constant, or a sum in a held register.
  auto offset_reg = [&](int base, int64_t offset, int side) {
    if (base < 0) return pb.sreg(offset);
    if (offset == 0) return base;
    if (tmp[side] < 0) tmp[side] = pb.hold_sreg();
    pb.emit(isa::Opcode::kSaddi, isa::DType::kF32, {tmp[side], base, offset});
    return tmp[side];
  };
  while (true) {
    int64_t so = src_offset, dof = dst_offset;
    for (size_t k = 0; k < outer; ++k) {
      so += index[k] * c.strides[0][k] * element_bytes;
      dof += index[k] * c.strides[1][k] * element_bytes;
    }
    int a = offset_reg(src_reg, so, 0);
    int b = offset_reg(dst_reg, dof, 1);
    pb.emit(isa::Opcode::kDma, isa::DType::kF32, {desc, a, b, semaphore});
    ++count;
    size_t k = outer;
    for (; k-- > 0;) {
      if (++index[k] < c.dims[k]) break;
      index[k] = 0;
    }
    if (k == static_cast<size_t>(-1)) break;
  }
  for (int r : tmp)
    if (r >= 0) pb.release_sreg(r);
  return count;
}

}  // namespace podsim::tpu
