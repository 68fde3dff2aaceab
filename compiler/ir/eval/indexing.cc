// Reference evaluation of gather, scatter and sort with XLA's semantics (dimension
// numbers as in the StableHLO spec, including the batching dimensions). Gather clamps
// start indices so the slice stays in bounds; scatter skips an update window that
// does not fit entirely (as XLA's evaluator and backends do).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {
namespace {

size_t element_size(const Literal& l) { return static_cast<size_t>(type_byte_size(l.type())); }

Literal scalar_at(const Literal& l, int64_t i) {
  Literal s(Shape::scalar(l.type()));
  const size_t es = element_size(l);
  std::memcpy(s.bytes().data(), l.bytes().data() + static_cast<size_t>(i) * es, es);
  return s;
}

void store_scalar(Literal& l, int64_t i, const Literal& scalar) {
  const size_t es = element_size(l);
  std::memcpy(l.bytes().data() + static_cast<size_t>(i) * es, scalar.bytes().data(), es);
}

// Checks that every entry of list is in [0, rank) and appears once across all the
// lists marked in used.
void mark_dims(const Instruction& instruction, const char* what, const std::vector<int64_t>& list,
               std::vector<bool>& used) {
  for (int64_t d : list) {
    if (d < 0 || d >= static_cast<int64_t>(used.size()) || used[static_cast<size_t>(d)])
      op_fail(instruction, "{} dimension {} is out of range or used twice", what, d);
    used[static_cast<size_t>(d)] = true;
  }
}

std::vector<int64_t> unused_dims(const std::vector<bool>& used) {
  std::vector<int64_t> result;
  for (size_t d = 0; d < used.size(); ++d)
    if (!used[d]) result.push_back(static_cast<int64_t>(d));
  return result;
}

// The index array (start_indices / scatter_indices) read as int64 (unsigned values
// beyond int64 saturate; they are out of range either way), with the geometry of its
// index vectors.
struct IndexArray {
  std::vector<int64_t> values;
  std::vector<int64_t> batch_dims;     // dims of the array other than index_vector_dim
  std::vector<int64_t> batch_strides;  // their strides
  int64_t vector_size = 1;
  int64_t vector_stride = 0;
  int64_t index_vector_dim = 0;

  // Offset of the first component of the index vector at batch index g.
  int64_t base(const std::vector<int64_t>& g) const {
    int64_t offset = 0;
    for (size_t j = 0; j < g.size(); ++j) offset += g[j] * batch_strides[j];
    return offset;
  }
  // Position in the batch index of indices-array dimension d (d != index_vector_dim).
  size_t batch_position(int64_t d) const {
    return static_cast<size_t>(d < index_vector_dim ? d : d - 1);
  }
};

IndexArray read_indices(const Instruction& instruction, const Literal& l,
                        int64_t index_vector_dim) {
  if (l.shape().is_tuple() || !is_integral(l.type()))
    op_fail(instruction, "indices {} must be an integer array", l.shape().to_string(false));
  const std::vector<int64_t>& dims = l.shape().dims();
  const int64_t rank = l.shape().rank();
  if (index_vector_dim < 0 || index_vector_dim > rank)
    op_fail(instruction, "index_vector_dim {} is out of range for indices of rank {}",
            index_vector_dim, rank);
  IndexArray a;
  a.index_vector_dim = index_vector_dim;
  const std::vector<int64_t> strides = row_major_strides(dims);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == index_vector_dim) {
      a.vector_size = dims[static_cast<size_t>(d)];
      a.vector_stride = strides[static_cast<size_t>(d)];
    } else {
      a.batch_dims.push_back(dims[static_cast<size_t>(d)]);
      a.batch_strides.push_back(strides[static_cast<size_t>(d)]);
    }
  }
  a.values.resize(static_cast<size_t>(l.num_elements()));
  const bool is_unsigned = is_unsigned_int(l.type());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    if (is_unsigned) {
      uint64_t u = l.get_as_uint64(k);
      a.values[i] = static_cast<int64_t>(
          std::min<uint64_t>(u, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
    } else {
      a.values[i] = l.get_as_int64(k);
    }
  }
  return a;
}

// Checks the batching dimension pairs: operand dimension sizes equal the indices'
// batch dimension sizes. Marks the operand dims in used.
void check_batching(const Instruction& instruction, const std::vector<int64_t>& operand_dims,
                    const std::vector<int64_t>& operand_batching,
                    const std::vector<int64_t>& indices_batching, const IndexArray& indices,
                    int64_t indices_rank, std::vector<bool>& used) {
  mark_dims(instruction, "operand batching", operand_batching, used);
  if (operand_batching.size() != indices_batching.size())
    op_fail(instruction, "{} operand batching dimensions but {} indices batching dimensions",
            operand_batching.size(), indices_batching.size());
  std::vector<bool> used_indices(static_cast<size_t>(indices_rank), false);
  for (size_t i = 0; i < indices_batching.size(); ++i) {
    const int64_t d = indices_batching[i];
    if (d < 0 || d >= indices_rank || d == indices.index_vector_dim ||
        used_indices[static_cast<size_t>(d)])
      op_fail(instruction, "indices batching dimension {} is invalid", d);
    used_indices[static_cast<size_t>(d)] = true;
    if (indices.batch_dims[indices.batch_position(d)] !=
        operand_dims[static_cast<size_t>(operand_batching[i])])
      op_fail(instruction,
              "batching dimension sizes differ: operand dimension {} vs indices "
              "dimension {}",
              operand_batching[i], d);
  }
}

Literal eval_gather(const Instruction& instruction, Operands operands) {
  if (operands.size() != 2) op_fail(instruction, "expected 2 operands, got {}", operands.size());
  const Literal& operand = *operands[0];
  if (operand.shape().is_tuple()) op_fail(instruction, "operand must be an array");
  const GatherDimNumbers& gd = instruction.attrs().gather_dims;
  const std::vector<int64_t>& slice_sizes = instruction.attrs().gather_slice_sizes;
  const std::vector<int64_t>& op_dims = operand.shape().dims();
  const int64_t op_rank = operand.shape().rank();
  const IndexArray indices = read_indices(instruction, *operands[1], gd.index_vector_dim);
  const int64_t indices_rank = operands[1]->shape().rank();

  if (static_cast<int64_t>(slice_sizes.size()) != op_rank)
    op_fail(instruction, "slice_sizes has {} entries for an operand of rank {}", slice_sizes.size(),
            op_rank);
  for (int64_t d = 0; d < op_rank; ++d)
    if (slice_sizes[static_cast<size_t>(d)] < 0 ||
        slice_sizes[static_cast<size_t>(d)] > op_dims[static_cast<size_t>(d)])
      op_fail(instruction, "slice size {} does not fit operand dimension {} of size {}",
              slice_sizes[static_cast<size_t>(d)], d, op_dims[static_cast<size_t>(d)]);
  if (static_cast<int64_t>(gd.start_index_map.size()) != indices.vector_size)
    op_fail(instruction, "start_index_map has {} entries but index vectors have {}",
            gd.start_index_map.size(), indices.vector_size);
  std::vector<bool> mapped(static_cast<size_t>(op_rank), false);
  mark_dims(instruction, "start_index_map", gd.start_index_map, mapped);

  std::vector<bool> removed(static_cast<size_t>(op_rank), false);
  mark_dims(instruction, "collapsed slice", gd.collapsed_slice_dims, removed);
  check_batching(instruction, op_dims, gd.operand_batching_dims, gd.start_indices_batching_dims,
                 indices, indices_rank, removed);
  for (size_t d = 0; d < removed.size(); ++d)
    if (removed[d] && slice_sizes[d] > 1)
      op_fail(instruction, "collapsed or batching dimension {} has slice size {}; expected 1", d,
              slice_sizes[d]);
  const std::vector<int64_t> offset_operand_dims = unused_dims(removed);
  if (offset_operand_dims.size() != gd.offset_dims.size())
    op_fail(instruction, "{} offset_dims for {} uncollapsed operand dimensions",
            gd.offset_dims.size(), offset_operand_dims.size());

  // Result dimensions: offset_dims take the slice sizes, the rest the batch dims.
  const size_t out_rank = indices.batch_dims.size() + gd.offset_dims.size();
  std::vector<int64_t> out_dims(out_rank, -1);
  std::vector<bool> is_offset(out_rank, false);
  mark_dims(instruction, "offset", gd.offset_dims, is_offset);
  if (!std::is_sorted(gd.offset_dims.begin(), gd.offset_dims.end()))
    op_fail(instruction, "offset_dims must be sorted");
  std::vector<int64_t> batch_out_dims;
  for (size_t k = 0; k < gd.offset_dims.size(); ++k)
    out_dims[static_cast<size_t>(gd.offset_dims[k])] =
        slice_sizes[static_cast<size_t>(offset_operand_dims[k])];
  for (size_t d = 0, j = 0; d < out_rank; ++d) {
    if (is_offset[d]) continue;
    out_dims[d] = indices.batch_dims[j++];
    batch_out_dims.push_back(static_cast<int64_t>(d));
  }
  const Shape& shape = instruction.shape();
  if (shape.is_tuple() || shape.type() != operand.type() || shape.dims() != out_dims)
    op_fail(instruction, "result shape {} does not match the computed shape {}",
            shape.to_string(false), Shape(operand.type(), out_dims).to_string(false));

  Literal out(shape);
  const std::vector<int64_t> op_strides = row_major_strides(op_dims);
  const size_t es = element_size(operand);
  std::vector<int64_t> g(batch_out_dims.size()), start(static_cast<size_t>(op_rank));
  int64_t o = 0;
  for_each_index(out_dims, [&](const std::vector<int64_t>& index) {
    for (size_t j = 0; j < g.size(); ++j) g[j] = index[static_cast<size_t>(batch_out_dims[j])];
    std::fill(start.begin(), start.end(), 0);
    const int64_t base = indices.base(g);
    for (size_t k = 0; k < gd.start_index_map.size(); ++k) {
      const auto d = static_cast<size_t>(gd.start_index_map[k]);
      const int64_t v =
          indices
              .values[static_cast<size_t>(base + static_cast<int64_t>(k) * indices.vector_stride)];
      start[d] = std::clamp<int64_t>(v, 0, op_dims[d] - slice_sizes[d]);
    }
    for (size_t i = 0; i < gd.operand_batching_dims.size(); ++i)
      start[static_cast<size_t>(gd.operand_batching_dims[i])] =
          g[indices.batch_position(gd.start_indices_batching_dims[i])];
    for (size_t k = 0; k < gd.offset_dims.size(); ++k)
      start[static_cast<size_t>(offset_operand_dims[k])] +=
          index[static_cast<size_t>(gd.offset_dims[k])];
    int64_t offset = 0;
    for (size_t d = 0; d < start.size(); ++d) offset += start[d] * op_strides[d];
    std::memcpy(out.bytes().data() + static_cast<size_t>(o++) * es,
                operand.bytes().data() + static_cast<size_t>(offset) * es, es);
  });
  return out;
}

// XLA scatter: for each scatter index (outer, row-major) and each element of its
// update window (inner, row-major), result[i] = to_apply(result[i], update) over all
// N operands at once. A window that does not fit entirely is skipped.
Literal eval_scatter(const Instruction& instruction, Operands operands, Context& context) {
  if (operands.size() < 3 || operands.size() % 2 == 0)
    op_fail(instruction, "expected N operands, indices and N updates; got {} operands",
            operands.size());
  const size_t n = operands.size() / 2;
  const ScatterDimNumbers& sd = instruction.attrs().scatter_dims;
  const Literal& first = *operands[0];
  const Literal& first_update = *operands[n + 1];
  std::vector<Literal> results;
  std::vector<Shape> result_shapes;
  for (size_t i = 0; i < n; ++i) {
    const Literal& input = *operands[i];
    const Literal& update = *operands[n + 1 + i];
    if (input.shape().is_tuple() || update.shape().is_tuple() ||
        input.shape().dims() != first.shape().dims() ||
        update.shape().dims() != first_update.shape().dims() || update.type() != input.type())
      op_fail(instruction, "operand {} ({}) and update {} ({}) do not match operand 0 / update 0",
              i, input.shape().to_string(false), i, update.shape().to_string(false));
    results.push_back(input);
    result_shapes.push_back(input.shape());
  }
  const Shape expected = n == 1 ? result_shapes[0] : Shape::tuple(result_shapes);
  if (!instruction.shape().compatible(expected))
    op_fail(instruction, "result shape {} does not match the computed shape {}",
            instruction.shape().to_string(false), expected.to_string(false));

  const std::vector<int64_t>& op_dims = first.shape().dims();
  const std::vector<int64_t>& up_dims = first_update.shape().dims();
  const auto op_rank = static_cast<int64_t>(op_dims.size());
  const IndexArray indices = read_indices(instruction, *operands[n], sd.index_vector_dim);
  const int64_t indices_rank = operands[n]->shape().rank();

  if (static_cast<int64_t>(sd.scatter_dims_to_operand_dims.size()) != indices.vector_size)
    op_fail(instruction, "scatter_dims_to_operand_dims has {} entries but index vectors have {}",
            sd.scatter_dims_to_operand_dims.size(), indices.vector_size);
  std::vector<bool> mapped(static_cast<size_t>(op_rank), false);
  mark_dims(instruction, "scatter_dims_to_operand_dims", sd.scatter_dims_to_operand_dims, mapped);
  std::vector<bool> removed(static_cast<size_t>(op_rank), false);
  mark_dims(instruction, "inserted window", sd.inserted_window_dims, removed);
  check_batching(instruction, op_dims, sd.input_batching_dims, sd.scatter_indices_batching_dims,
                 indices, indices_rank, removed);
  const std::vector<int64_t> window_operand_dims = unused_dims(removed);

  std::vector<bool> is_window(up_dims.size(), false);
  mark_dims(instruction, "update window", sd.update_window_dims, is_window);
  if (!std::is_sorted(sd.update_window_dims.begin(), sd.update_window_dims.end()))
    op_fail(instruction, "update_window_dims must be sorted");
  if (window_operand_dims.size() != sd.update_window_dims.size())
    op_fail(instruction, "{} update_window_dims for {} operand window dimensions",
            sd.update_window_dims.size(), window_operand_dims.size());
  const std::vector<int64_t> update_scatter_dims = unused_dims(is_window);
  if (update_scatter_dims.size() != indices.batch_dims.size())
    op_fail(instruction, "updates have {} scatter dimensions but indices have {} batch dimensions",
            update_scatter_dims.size(), indices.batch_dims.size());
  std::vector<int64_t> scatter_sizes, window_sizes;
  for (size_t j = 0; j < update_scatter_dims.size(); ++j) {
    scatter_sizes.push_back(up_dims[static_cast<size_t>(update_scatter_dims[j])]);
    if (scatter_sizes.back() != indices.batch_dims[j])
      op_fail(instruction, "update dimension {} has size {}; indices batch dimension has {}",
              update_scatter_dims[j], scatter_sizes.back(), indices.batch_dims[j]);
  }
  // Full window extent along each operand dimension (1 for inserted/batching dims).
  std::vector<int64_t> extent(static_cast<size_t>(op_rank), 1);
  for (size_t k = 0; k < sd.update_window_dims.size(); ++k) {
    window_sizes.push_back(up_dims[static_cast<size_t>(sd.update_window_dims[k])]);
    const auto d = static_cast<size_t>(window_operand_dims[k]);
    extent[d] = window_sizes.back();
    if (extent[d] > op_dims[d])
      op_fail(instruction, "update window dimension {} (size {}) exceeds operand dimension {}",
              sd.update_window_dims[k], extent[d], d);
  }

  const Computation& computation = called_computation(instruction, 0);
  const std::vector<int64_t> op_strides = row_major_strides(op_dims);
  const std::vector<int64_t> up_strides = row_major_strides(up_dims);
  std::vector<int64_t> start(static_cast<size_t>(op_rank));
  for_each_index(scatter_sizes, [&](const std::vector<int64_t>& g) {
    std::fill(start.begin(), start.end(), 0);
    const int64_t base = indices.base(g);
    for (size_t k = 0; k < sd.scatter_dims_to_operand_dims.size(); ++k)
      start[static_cast<size_t>(sd.scatter_dims_to_operand_dims[k])] =
          indices
              .values[static_cast<size_t>(base + static_cast<int64_t>(k) * indices.vector_stride)];
    for (size_t i = 0; i < sd.input_batching_dims.size(); ++i)
      start[static_cast<size_t>(sd.input_batching_dims[i])] =
          g[indices.batch_position(sd.scatter_indices_batching_dims[i])];
    for (size_t d = 0; d < start.size(); ++d)
      if (start[d] < 0 || start[d] > op_dims[d] - extent[d]) return;
    int64_t op_base = 0, up_base = 0;
    for (size_t d = 0; d < start.size(); ++d) op_base += start[d] * op_strides[d];
    for (size_t j = 0; j < g.size(); ++j)
      up_base += g[j] * up_strides[static_cast<size_t>(update_scatter_dims[j])];
    for_each_index(window_sizes, [&](const std::vector<int64_t>& w) {
      int64_t op_offset = op_base, up_offset = up_base;
      for (size_t k = 0; k < w.size(); ++k) {
        op_offset += w[k] * op_strides[static_cast<size_t>(window_operand_dims[k])];
        up_offset += w[k] * up_strides[static_cast<size_t>(sd.update_window_dims[k])];
      }
      std::vector<Literal> args;
      for (size_t i = 0; i < n; ++i) args.push_back(scalar_at(results[i], op_offset));
      for (size_t i = 0; i < n; ++i) args.push_back(scalar_at(*operands[n + 1 + i], up_offset));
      Literal combined = context.call(computation, std::move(args));
      std::vector<Literal> parts;
      if (n == 1)
        parts.push_back(std::move(combined));
      else if (combined.shape().is_tuple())
        parts = std::move(combined.elements());
      bool ok = parts.size() == n;
      for (size_t i = 0; ok && i < n; ++i)
        ok = parts[i].shape().is_scalar() && parts[i].type() == results[i].type();
      if (!ok)
        op_fail(instruction, "computation '{}' must return {} of the operand element types",
                computation.name(), n == 1 ? "a scalar" : "a tuple of scalars");
      for (size_t i = 0; i < n; ++i) store_scalar(results[i], op_offset, parts[i]);
    });
  });
  if (n == 1) return std::move(results[0]);
  return Literal::tuple(std::move(results));
}

// Sorts every 1-D line along the sort dimension of all N operands by one stable
// permutation; comparator(lhs_0, rhs_0, lhs_1, rhs_1, ...) says lhs sorts first.
// std::stable_sort is used whether or not is_stable is set, so results are
// deterministic.
Literal eval_sort(const Instruction& instruction, Operands operands, Context& context) {
  if (operands.empty()) op_fail(instruction, "expected at least one operand");
  const auto& attr = instruction.attrs().dimensions;
  if (attr.size() != 1) op_fail(instruction, "expected one sort dimension");
  const Literal& first = *operands[0];
  std::vector<Shape> shapes;
  for (size_t k = 0; k < operands.size(); ++k) {
    if (operands[k]->shape().is_tuple() || operands[k]->shape().dims() != first.shape().dims())
      op_fail(instruction, "operand {} has shape {}; all operands need the dimensions of {}", k,
              operands[k]->shape().to_string(false), first.shape().to_string(false));
    shapes.push_back(operands[k]->shape());
  }
  const Shape expected = shapes.size() == 1 ? shapes[0] : Shape::tuple(shapes);
  if (!instruction.shape().compatible(expected))
    op_fail(instruction, "result shape {} does not match the computed shape {}",
            instruction.shape().to_string(false), expected.to_string(false));
  const std::vector<int64_t>& dims = first.shape().dims();
  const int64_t dim = attr[0];
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size()))
    op_fail(instruction, "sort dimension {} is out of range for rank {}", dim, dims.size());
  const Computation& comparator = called_computation(instruction, 0);

  const int64_t length = dims[static_cast<size_t>(dim)];
  const int64_t inner = row_major_strides(dims)[static_cast<size_t>(dim)];
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= dims[static_cast<size_t>(d)];

  std::vector<Literal> results;
  for (const Literal* l : operands) results.emplace_back(l->shape());
  std::vector<int64_t> perm(static_cast<size_t>(length));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      std::iota(perm.begin(), perm.end(), 0);
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
        std::vector<Literal> args;
        for (const Literal* l : operands) {
          args.push_back(scalar_at(*l, base + x * inner));
          args.push_back(scalar_at(*l, base + y * inner));
        }
        Literal r = context.call(comparator, std::move(args));
        if (!r.shape().is_scalar() || r.type() != PrimitiveType::kPred)
          op_fail(instruction, "comparator '{}' returned {}; expected pred[]", comparator.name(),
                  r.shape().to_string(false));
        return r.data<bool>()[0];
      });
      for (size_t k = 0; k < operands.size(); ++k) {
        const size_t es = element_size(*operands[k]);
        for (int64_t j = 0; j < length; ++j)
          std::memcpy(results[k].bytes().data() + static_cast<size_t>(base + j * inner) * es,
                      operands[k]->bytes().data() +
                          static_cast<size_t>(base + perm[static_cast<size_t>(j)] * inner) * es,
                      es);
      }
    }
  }
  if (results.size() == 1) return std::move(results[0]);
  return Literal::tuple(std::move(results));
}

// The k largest (or smallest) of each row along the last dimension, in IEEE totalOrder
// for floats (-NaN < -inf < -0 < +0 < inf < NaN), equal values in position order.
Literal eval_topk(const Instruction& instruction, Operands operands) {
  const Literal& x = *operands[0];
  const int64_t n = x.shape().dims().back(), k = instruction.attrs().k;
  const int64_t rows = n ? x.num_elements() / n : 0;
  const PrimitiveType type = x.type();
  // A key whose signed order is the element order.
  auto key = [&](int64_t i) -> int64_t {
    if (is_float(type)) {
      const double v = x.get_as_double(i);
      int64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      return bits < 0 ? bits ^ std::numeric_limits<int64_t>::max() : bits;
    }
    if (is_unsigned_int(type))
      return static_cast<int64_t>(x.get_as_uint64(i) ^ (uint64_t{1} << 63));
    return x.get_as_int64(i);
  };
  Literal values(instruction.shape().element(0)), positions(instruction.shape().element(1));
  const size_t es = element_size(x);
  std::vector<int64_t> order(static_cast<size_t>(n)), keys(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) keys[static_cast<size_t>(j)] = key(r * n + j);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const int64_t ka = keys[static_cast<size_t>(a)], kb = keys[static_cast<size_t>(b)];
      return instruction.attrs().largest ? ka > kb : ka < kb;
    });
    for (int64_t j = 0; j < k; ++j) {
      const int64_t from = r * n + order[static_cast<size_t>(j)];
      std::memcpy(values.bytes().data() + static_cast<size_t>(r * k + j) * es,
                  x.bytes().data() + static_cast<size_t>(from) * es, es);
      positions.set_from_int64(r * k + j, order[static_cast<size_t>(j)]);
    }
  }
  std::vector<Literal> results;
  results.push_back(std::move(values));
  results.push_back(std::move(positions));
  return Literal::tuple(std::move(results));
}

}  // namespace

Literal eval_indexing(const Instruction& instruction, Operands operands, Context& context) {
  switch (instruction.opcode()) {
    case Opcode::kGather:
      return eval_gather(instruction, operands);
    case Opcode::kScatter:
      return eval_scatter(instruction, operands, context);
    case Opcode::kSort:
      return eval_sort(instruction, operands, context);
    case Opcode::kTopK:
      return eval_topk(instruction, operands);
    default:
      op_fail(instruction, "internal: not an indexing op");
  }
}

}  // namespace podsim::ir::eval
