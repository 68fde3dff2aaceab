// Shape inference of gather and scatter, with XLA's dimension-number rules (including
// the explicit batching dimensions operand_batching_dims / input_batching_dims).
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/infer/internal.h"

namespace podsim::ir::infer {
namespace {

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The index operand read with its index vector dimension: index_vector_dim may equal
// the rank, meaning an implicit trailing dimension of size 1.
struct Indices {
  int64_t vector_size = 1;
  std::vector<int64_t> batch_dims;  // sizes of every dimension but index_vector_dim
};

Indices read_indices(const Shape& indices, int64_t index_vector_dim) {
  expect_array(indices, "indices");
  if (!is_integral(indices.type())) fail("indices {} must have an integer type", str(indices));
  if (index_vector_dim < 0 || index_vector_dim > indices.rank())
    fail("index_vector_dim {} is out of range [0, {}] for indices {}", index_vector_dim,
         indices.rank(), str(indices));
  Indices r;
  for (int64_t d = 0; d < indices.rank(); ++d) {
    if (d == index_vector_dim)
      r.vector_size = indices.dim(d);
    else
      r.batch_dims.push_back(indices.dim(d));
  }
  return r;
}

// Checks shared by gather and scatter: the dimensions the operand loses (collapsed /
// inserted), its batching dimensions and their partners in the indices, and the map
// from index vector entries to operand dimensions.
void check_index_dims(const Shape& operand, const Shape& indices, int64_t index_vector_dim,
                      const Indices& idx, const std::vector<int64_t>& removed,
                      std::string_view removed_name, const std::vector<int64_t>& batching,
                      std::string_view batching_name, const std::vector<int64_t>& index_batching,
                      std::string_view index_batching_name, const std::vector<int64_t>& index_map,
                      std::string_view index_map_name) {
  int64_t rank = operand.rank();
  check_dims(removed, rank, removed_name);
  check_sorted(removed, removed_name);
  check_dims(batching, rank, batching_name);
  check_sorted(batching, batching_name);
  check_dims(concat(removed, batching), rank, fmt::format("{} + {}", removed_name, batching_name));
  if (static_cast<int64_t>(index_map.size()) != idx.vector_size)
    fail("{} {} must have one entry per index vector element ({})", index_map_name, str(index_map),
         idx.vector_size);
  check_dims(concat(index_map, batching), rank,
             fmt::format("{} + {}", index_map_name, batching_name));
  check_dims(index_batching, indices.rank(), index_batching_name);
  if (contains(index_batching, index_vector_dim))
    fail("{} {} contains index_vector_dim {}", index_batching_name, str(index_batching),
         index_vector_dim);
  if (index_batching.size() != batching.size())
    fail("{} {} and {} {} differ in length", batching_name, str(batching), index_batching_name,
         str(index_batching));
  for (size_t i = 0; i < batching.size(); ++i)
    if (operand.dim(batching[i]) != indices.dim(index_batching[i]))
      fail("operand batching dimension {} (size {}) and indices dimension {} (size {}) differ",
           batching[i], operand.dim(batching[i]), index_batching[i],
           indices.dim(index_batching[i]));
}

}  // namespace

Shape infer_gather(const Instruction& inst) {
  const Shape& operand = operand_shape(inst, 0);
  const Shape& indices = operand_shape(inst, 1);
  expect_array(operand, "operand");
  const GatherDimNumbers& g = inst.attrs().gather_dims;
  const auto& sizes = inst.attrs().gather_slice_sizes;
  Indices idx = read_indices(indices, g.index_vector_dim);
  check_index_dims(operand, indices, g.index_vector_dim, idx, g.collapsed_slice_dims,
                   "collapsed_slice_dims", g.operand_batching_dims, "operand_batching_dims",
                   g.start_indices_batching_dims, "start_indices_batching_dims", g.start_index_map,
                   "start_index_map");
  if (static_cast<int64_t>(g.offset_dims.size() + g.collapsed_slice_dims.size() +
                           g.operand_batching_dims.size()) != operand.rank())
    fail(
        "offset_dims {}, collapsed_slice_dims {} and operand_batching_dims {} must together "
        "number the operand's rank {}",
        str(g.offset_dims), str(g.collapsed_slice_dims), str(g.operand_batching_dims),
        operand.rank());
  if (static_cast<int64_t>(sizes.size()) != operand.rank())
    fail("slice_sizes {} must have one entry per dimension of {}", str(sizes), str(operand));
  std::vector<int64_t> offset_sizes;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    int64_t s = sizes[static_cast<size_t>(d)];
    if (s < 0 || s > operand.dim(d))
      fail("slice size {} of dimension {} is out of range [0, {}]", s, d, operand.dim(d));
    if (contains(g.collapsed_slice_dims, d) || contains(g.operand_batching_dims, d)) {
      if (s > 1)
        fail("slice size {} of collapsed or batching dimension {} must be at most 1", s, d);
    } else {
      offset_sizes.push_back(s);
    }
  }
  auto out_rank = static_cast<int64_t>(g.offset_dims.size() + idx.batch_dims.size());
  check_dims(g.offset_dims, out_rank, "offset_dims");
  check_sorted(g.offset_dims, "offset_dims");
  std::vector<int64_t> dims;
  size_t next_offset = 0, next_batch = 0;
  for (int64_t d = 0; d < out_rank; ++d)
    dims.push_back(contains(g.offset_dims, d) ? offset_sizes[next_offset++]
                                              : idx.batch_dims[next_batch++]);
  return Shape(operand.type(), std::move(dims));
}

Shape infer_scatter(const Instruction& inst) {
  int64_t n = inst.operand_count();
  if (n < 3 || n % 2 == 0)
    fail("expects N operands, the indices and N updates, got {} operands", n);
  int64_t count = (n - 1) / 2;
  const Shape& operand = operand_shape(inst, 0);
  const Shape& indices = operand_shape(inst, count);
  const Shape& updates = operand_shape(inst, count + 1);
  std::vector<PrimitiveType> types;
  std::vector<Shape> results;
  for (int64_t i = 0; i < count; ++i) {
    const Shape& o = operand_shape(inst, i);
    const Shape& u = operand_shape(inst, count + 1 + i);
    expect_array(o, fmt::format("operand {}", i));
    expect_array(u, fmt::format("update {}", i));
    if (o.dims() != operand.dims())
      fail("operand {} {} must have the dimensions of operand 0 {}", i, str(o), str(operand));
    if (u.dims() != updates.dims())
      fail("update {} {} must have the dimensions of update 0 {}", i, str(u), str(updates));
    if (u.type() != o.type())
      fail("update {} {} must have the type of operand {} {}", i, str(u), i, str(o));
    types.push_back(o.type());
    results.emplace_back(o.type(), o.dims());
  }
  const ScatterDimNumbers& s = inst.attrs().scatter_dims;
  Indices idx = read_indices(indices, s.index_vector_dim);
  check_index_dims(operand, indices, s.index_vector_dim, idx, s.inserted_window_dims,
                   "inserted_window_dims", s.input_batching_dims, "input_batching_dims",
                   s.scatter_indices_batching_dims, "scatter_indices_batching_dims",
                   s.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims");
  check_dims(s.update_window_dims, updates.rank(), "update_window_dims");
  check_sorted(s.update_window_dims, "update_window_dims");
  if (static_cast<int64_t>(s.update_window_dims.size() + s.inserted_window_dims.size() +
                           s.input_batching_dims.size()) != operand.rank())
    fail(
        "update_window_dims {}, inserted_window_dims {} and input_batching_dims {} must together "
        "number the operand's rank {}",
        str(s.update_window_dims), str(s.inserted_window_dims), str(s.input_batching_dims),
        operand.rank());
  if (updates.rank() != static_cast<int64_t>(s.update_window_dims.size() + idx.batch_dims.size()))
    fail("updates {} must have rank {} (update_window_dims {} plus {} scatter dimensions)",
         str(updates), s.update_window_dims.size() + idx.batch_dims.size(),
         str(s.update_window_dims), idx.batch_dims.size());
  // Window dimensions of the updates, in order, against the operand dimensions that
  // are neither inserted nor batching.
  size_t window = 0;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (contains(s.inserted_window_dims, d) || contains(s.input_batching_dims, d)) continue;
    int64_t u = s.update_window_dims[window++];
    if (updates.dim(u) > operand.dim(d))
      fail("update window dimension {} (size {}) exceeds operand dimension {} (size {})", u,
           updates.dim(u), d, operand.dim(d));
  }
  size_t batch = 0;
  for (int64_t d = 0; d < updates.rank(); ++d) {
    if (contains(s.update_window_dims, d)) continue;
    if (updates.dim(d) != idx.batch_dims[batch])
      fail("update scatter dimension {} (size {}) must equal indices batch dimension size {}", d,
           updates.dim(d), idx.batch_dims[batch]);
    ++batch;
  }
  expect_called_count(inst, 1);
  check_reducer(called_computation(inst, 0), types, types, "to_apply");
  if (results.size() == 1) return std::move(results[0]);
  return Shape::tuple(std::move(results));
}

}  // namespace podsim::ir::infer
