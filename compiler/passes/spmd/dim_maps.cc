// Dimension maps per opcode.
#include "compiler/passes/spmd/dim_maps.h"

#include <algorithm>
#include <numeric>

namespace podsim::passes::spmd {
namespace {

using ir::Opcode;

std::vector<int64_t> identity(int64_t rank) {
  std::vector<int64_t> map(static_cast<size_t>(rank));
  std::iota(map.begin(), map.end(), 0);
  return map;
}

// Reshape keeps row-major order: an operand dimension is a result dimension where both
// have the same number of elements before them and one is the major part of the other
// (the same size, or merged with or split from minor dimensions): splitting either in t
// pieces (t dividing both) splits the other alike.
std::vector<int64_t> reshape_map(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> map(static_cast<size_t>(in.rank()), -1);
  int64_t before_in = 1;
  for (int64_t e = 0; e < in.rank(); ++e) {
    int64_t before_out = 1;
    for (int64_t d = 0; d < out.rank(); ++d) {
      const int64_t a = out.dim(d), b = in.dim(e);
      if (before_out == before_in && a > 1 && b > 1 && (a % b == 0 || b % a == 0)) {
        map[static_cast<size_t>(e)] = d;
        break;
      }
      before_out *= out.dim(d);
    }
    before_in *= in.dim(e);
  }
  return map;
}

std::vector<int64_t> dot_map(const ir::Instruction& i, int64_t k) {
  const ir::DotDimNumbers& dn = i.attrs().dot_dims;
  const auto& batch = k == 0 ? dn.lhs_batch : dn.rhs_batch;
  const auto& contracting = k == 0 ? dn.lhs_contracting : dn.rhs_contracting;
  const int64_t rank = i.operand(k)->shape().rank();
  std::vector<int64_t> map(static_cast<size_t>(rank), -1);
  for (size_t b = 0; b < batch.size(); ++b) map[static_cast<size_t>(batch[b])] = static_cast<int64_t>(b);
  int64_t next = static_cast<int64_t>(batch.size());
  if (k == 1) next += i.operand(0)->shape().rank() - static_cast<int64_t>(dn.lhs_batch.size() + dn.lhs_contracting.size());
  for (int64_t d = 0; d < rank; ++d) {
    const bool free = std::find(batch.begin(), batch.end(), d) == batch.end() &&
                      std::find(contracting.begin(), contracting.end(), d) == contracting.end();
    if (free) map[static_cast<size_t>(d)] = next++;
  }
  return map;
}

// Gather: the indices' batch dimensions are the result's batch dimensions (those not in
// offset_dims), and an operand dimension taken whole by every slice is its offset
// dimension.
std::optional<std::vector<int64_t>> gather_map(const ir::Instruction& i, int64_t k) {
  const ir::GatherDimNumbers& g = i.attrs().gather_dims;
  if (!g.operand_batching_dims.empty()) return std::nullopt;
  const ir::Shape& in = i.operand(k)->shape();
  std::vector<int64_t> map(static_cast<size_t>(in.rank()), -1);
  auto in_list = [](const std::vector<int64_t>& v, int64_t d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  if (k == 0) {
    size_t next = 0;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (in_list(g.collapsed_slice_dims, d)) continue;
      const int64_t out = g.offset_dims.at(next++);
      if (i.attrs().gather_slice_sizes.at(static_cast<size_t>(d)) == in.dim(d)) map[static_cast<size_t>(d)] = out;
    }
    return map;
  }
  int64_t out = 0;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (d == g.index_vector_dim) continue;
    while (in_list(g.offset_dims, out)) ++out;
    map[static_cast<size_t>(d)] = out++;
  }
  return map;
}

// Scatter (one operand): the operand's dimensions that the indices never index, not
// inserted and not batching, and that every update window covers whole, are result
// dimensions, and the updates' window dimensions over them; the indices are never split.
std::optional<std::vector<int64_t>> scatter_map(const ir::Instruction& i, int64_t k) {
  if (i.operand_count() != 3) return std::nullopt;
  const ir::ScatterDimNumbers& s = i.attrs().scatter_dims;
  const ir::Shape& operand = i.operand(0)->shape();
  const ir::Shape& updates = i.operand(2)->shape();
  auto in_list = [](const std::vector<int64_t>& v, int64_t d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  std::vector<int64_t> map(static_cast<size_t>(i.operand(k)->shape().rank()), -1);
  if (k == 1) return map;
  size_t window = 0;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (in_list(s.inserted_window_dims, d) || in_list(s.input_batching_dims, d)) continue;
    const int64_t u = s.update_window_dims.at(window++);
    if (in_list(s.scatter_dims_to_operand_dims, d) || updates.dim(u) != operand.dim(d)) continue;
    map[static_cast<size_t>(k == 0 ? d : u)] = d;
  }
  return map;
}

// Convolution (one feature group, one batch group): the input's batch is the result's
// batch, the kernel's output features the result's features.
std::vector<int64_t> convolution_map(const ir::Instruction& i, int64_t k) {
  const ir::ConvDimNumbers& c = i.attrs().conv_dims;
  std::vector<int64_t> map(static_cast<size_t>(i.operand(k)->shape().rank()), -1);
  if (i.attrs().feature_group_count != 1 || i.attrs().batch_group_count != 1) return map;
  if (k == 0)
    map[static_cast<size_t>(c.input_batch)] = c.output_batch;
  else
    map[static_cast<size_t>(c.kernel_output_feature)] = c.output_feature;
  return map;
}

}  // namespace

bool operand_ignores_result_dim(const ir::Instruction& i, int64_t k, int64_t d) {
  if (i.operand(k)->shape().is_array() && i.operand(k)->shape().rank() == 0) return true;
  auto in = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  switch (i.opcode()) {
    case Opcode::kBroadcast:
      return !in(i.attrs().dimensions, d);
    case Opcode::kGather:
      return k == 0 && !in(i.attrs().gather_dims.offset_dims, d);
    case Opcode::kScatter:
      return k == 1;  // the indices: the same along every window dimension
    case Opcode::kConvolution: {
      const ir::ConvDimNumbers& c = i.attrs().conv_dims;
      if (i.attrs().feature_group_count != 1 || i.attrs().batch_group_count != 1) return false;
      return k == 0 ? d == c.output_feature : d == c.output_batch || in(c.output_spatial, d);
    }
    default:
      return false;
  }
}

std::optional<std::vector<int64_t>> operand_dims_in_result(const ir::Instruction& i, int64_t k) {
  const ir::Shape& in = i.operand(k)->shape();
  const ir::Shape& out = i.shape();
  if (!in.is_array() || !out.is_array()) return std::nullopt;
  const Opcode op = i.opcode();
  const bool same_dims = in.dims() == out.dims();
  const bool sharding_call = op == Opcode::kCustomCall && i.attrs().custom_call_target == "Sharding";
  if (ir::is_elementwise(op) || op == Opcode::kCopy || sharding_call) {
    if (same_dims) return identity(in.rank());
    if (in.rank() == 0 && op == Opcode::kClamp) return std::vector<int64_t>{};  // a scalar bound: the same everywhere
    return std::nullopt;  // a bitcast-convert that changes width
  }
  std::vector<int64_t> map = identity(in.rank());
  switch (op) {
    case Opcode::kBroadcast:
      return i.attrs().dimensions;
    case Opcode::kTranspose:
      for (int64_t t = 0; t < out.rank(); ++t) map[static_cast<size_t>(i.attrs().dimensions[static_cast<size_t>(t)])] = t;
      return map;
    case Opcode::kReshape:
      return reshape_map(in, out);
    case Opcode::kDot:
      return dot_map(i, k);
    case Opcode::kReduce: {
      if (i.operand_count() != 2) return std::nullopt;
      if (k == 1) return map;  // the init value: a scalar
      const auto& reduced = i.attrs().dimensions;
      int64_t next = 0;
      for (int64_t d = 0; d < in.rank(); ++d)
        map[static_cast<size_t>(d)] = std::find(reduced.begin(), reduced.end(), d) != reduced.end() ? -1 : next++;
      return map;
    }
    case Opcode::kSlice:
      for (int64_t d = 0; d < in.rank(); ++d) {
        const ir::SliceDim& s = i.attrs().slice[static_cast<size_t>(d)];
        if (s.start != 0 || s.limit != in.dim(d) || s.stride != 1) map[static_cast<size_t>(d)] = -1;
      }
      return map;
    case Opcode::kPad:
      if (k == 1) return map;
      for (int64_t d = 0; d < in.rank(); ++d) {
        const ir::PadDim& p = i.attrs().padding[static_cast<size_t>(d)];
        if (p.low != 0 || p.high != 0 || p.interior != 0) map[static_cast<size_t>(d)] = -1;
      }
      return map;
    case Opcode::kConcatenate:
      map[static_cast<size_t>(i.attrs().dimensions.at(0))] = -1;
      return map;
    case Opcode::kReverse:
      for (int64_t d : i.attrs().dimensions) map[static_cast<size_t>(d)] = -1;
      return map;
    case Opcode::kGather:
      return gather_map(i, k);
    case Opcode::kScatter:
      return scatter_map(i, k);
    case Opcode::kConvolution:
      return convolution_map(i, k);
    case Opcode::kReduceWindow: {
      // Inputs along dimensions whose window takes one element at a time; init values
      // are scalars.
      if (in.rank() == 0 || !i.attrs().window) return map;
      for (int64_t d = 0; d < in.rank(); ++d)
        if (!(i.attrs().window->dims.at(static_cast<size_t>(d)) == ir::WindowDim{})) map[static_cast<size_t>(d)] = -1;
      return map;
    }
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      if (in.rank() != out.rank()) return map;  // a start index: a scalar
      for (int64_t d = 0; d < in.rank(); ++d) {
        // Dimensions taken whole (the start index clamps to 0 there) run on pieces.
        const int64_t window = op == Opcode::kDynamicSlice ? out.dim(d) : i.operand(1)->shape().dim(d);
        if (window != i.operand(0)->shape().dim(d)) map[static_cast<size_t>(d)] = -1;
      }
      return map;
    default:
      return std::nullopt;
  }
}

std::vector<std::pair<int64_t, int64_t>> window_dims(const ir::Instruction& i) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (!i.attrs().window || !i.shape().is_array()) return out;
  const bool conv = i.opcode() == Opcode::kConvolution;
  if (conv ? i.attrs().feature_group_count != 1 || i.attrs().batch_group_count != 1
           : i.opcode() != Opcode::kReduceWindow || i.operand_count() != 2)
    return out;
  const std::vector<ir::WindowDim>& dims = i.attrs().window->dims;
  for (size_t j = 0; j < dims.size(); ++j) {
    if (dims[j] == ir::WindowDim{} || dims[j].lhs_dilation != 1) continue;
    const auto r = static_cast<int64_t>(j);
    const ir::ConvDimNumbers& c = i.attrs().conv_dims;
    out.emplace_back(conv ? c.output_spatial.at(j) : r, conv ? c.input_spatial.at(j) : r);
  }
  return out;
}

std::optional<std::vector<int64_t>> operand_dims_along_result(const ir::Instruction& i, int64_t k) {
  auto map = operand_dims_in_result(i, k);
  if (!map || k != 0) return map;
  for (const auto& [result, input] : window_dims(i)) (*map)[static_cast<size_t>(input)] = result;
  for (int64_t d = 0; d < i.shape().rank(); ++d) {
    const bool shifts = (i.opcode() == Opcode::kSlice && i.attrs().slice[static_cast<size_t>(d)].stride == 1) ||
                        (i.opcode() == Opcode::kPad && i.attrs().padding[static_cast<size_t>(d)].interior == 0);
    if (shifts) (*map)[static_cast<size_t>(d)] = d;
  }
  return map;
}

std::vector<int64_t> invert(const std::vector<int64_t>& map, int64_t rank) {
  std::vector<int64_t> inverse(static_cast<size_t>(rank), -1);
  for (size_t d = 0; d < map.size(); ++d)
    if (map[d] >= 0) inverse[static_cast<size_t>(map[d])] = static_cast<int64_t>(d);
  return inverse;
}

}  // namespace podsim::passes::spmd
