// Sharding geometry: pieces of arrays per device, and literals split and put together.
#include "compiler/ir/sharding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace podsim::ir {
namespace {

using Kind = Sharding::Kind;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tile index (over every tile dimension) of device, or empty when it holds no tile.
std::vector<int64_t> tile_index(const Sharding& s, int64_t device) {
  auto it = std::find(s.devices.begin(), s.devices.end(), device);
  if (it == s.devices.end()) return {};
  int64_t linear = it - s.devices.begin();
  std::vector<int64_t> index(s.tile_dims.size());
  for (size_t d = s.tile_dims.size(); d-- > 0;) {
    index[d] = linear % s.tile_dims[d];
    linear /= s.tile_dims[d];
  }
  return index;
}

void copy_block(const Literal& from, const std::vector<int64_t>& from_offset, Literal& to,
                const std::vector<int64_t>& to_offset, const std::vector<int64_t>& extent) {
  const int64_t eb = type_byte_size(from.type());
  const auto& fd = from.shape().dims();
  const auto& td = to.shape().dims();
  std::vector<int64_t> fi(fd.size()), ti(td.size());
  for_each_index(extent, [&](const std::vector<int64_t>& i) {
    for (size_t d = 0; d < i.size(); ++d) {
      fi[d] = from_offset[d] + i[d];
      ti[d] = to_offset[d] + i[d];
    }
    std::memcpy(to.bytes().data() + linear_index(td, ti) * eb,
                from.bytes().data() + linear_index(fd, fi) * eb, static_cast<size_t>(eb));
  });
}

// The part of device's piece that lies inside the array (the rest is padding).
std::vector<int64_t> inside(const Shape& shape, const Shape& piece, const std::vector<int64_t>& offsets) {
  std::vector<int64_t> extent(offsets.size());
  for (size_t d = 0; d < offsets.size(); ++d)
    extent[d] = std::clamp<int64_t>(shape.dims()[d] - offsets[d], 0, piece.dims()[d]);
  return extent;
}

}  // namespace

int64_t sharding_data_rank(const Sharding& s) {
  if (s.kind != Kind::kTiled) return 0;
  return static_cast<int64_t>(s.tile_dims.size()) - (s.last_tile_dim_replicate ? 1 : 0) -
         static_cast<int64_t>(s.last_tile_dims.size());
}

int64_t sharding_tiles(const Sharding& s, int64_t dim) {
  if (s.kind != Kind::kTiled || dim >= sharding_data_rank(s)) return 1;
  return s.tile_dims.at(static_cast<size_t>(dim));
}

bool holds_whole_value(const Sharding& s) {
  if (s.kind == Kind::kReplicated || s.kind == Kind::kMaximal) return true;
  if (s.kind != Kind::kTiled) return false;
  for (int64_t d = 0; d < sharding_data_rank(s); ++d)
    if (s.tile_dims[static_cast<size_t>(d)] != 1) return false;
  return std::find(s.last_tile_dims.begin(), s.last_tile_dims.end(), "manual") == s.last_tile_dims.end();
}

std::string sharding_problem(const Sharding& s, const Shape& shape, int64_t devices) {
  if (s.kind == Kind::kTuple) {
    if (!shape.is_tuple())
      return fmt::format("a tuple sharding on the array shape {}", shape.to_string(false));
    if (static_cast<int64_t>(s.tuple_elements.size()) != shape.tuple_size())
      return fmt::format("a tuple sharding of {} elements on a tuple of {}", s.tuple_elements.size(),
                         shape.tuple_size());
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      std::string p = sharding_problem(s.tuple_elements[static_cast<size_t>(i)], shape.element(i), devices);
      if (!p.empty()) return fmt::format("tuple element {}: {}", i, p);
    }
    return "";
  }
  if (s.kind == Kind::kMaximal && (s.maximal_device < 0 || s.maximal_device >= devices))
    return fmt::format("maximal device {} is not one of the module's {} devices", s.maximal_device, devices);
  if (s.kind != Kind::kTiled) return "";
  if (shape.is_tuple()) return "a tiled sharding on a tuple (it needs one sharding per element)";
  if (sharding_data_rank(s) != shape.rank())
    return fmt::format("{} tiles {} dimensions, but the value has rank {}", s.to_string(),
                       sharding_data_rank(s), shape.rank());
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(devices, 0)));
  for (int64_t d : s.devices) {
    if (d < 0 || d >= devices)
      return fmt::format("{} names device {}, but the module has {} devices", s.to_string(), d, devices);
    if (seen[static_cast<size_t>(d)]) return fmt::format("{} names device {} twice", s.to_string(), d);
    seen[static_cast<size_t>(d)] = true;
  }
  if (static_cast<int64_t>(s.devices.size()) != devices)
    return fmt::format("{} places {} devices, but the module has {}", s.to_string(), s.devices.size(), devices);
  return "";
}

Shape shard_shape(const Shape& shape, const Sharding& s) {
  if (s.kind != Kind::kTiled) return shape;
  Shape piece = shape;
  for (int64_t d = 0; d < shape.rank(); ++d)
    piece.mutable_dims()[static_cast<size_t>(d)] = ceil_div(shape.dim(d), sharding_tiles(s, d));
  return piece;
}

std::vector<int64_t> shard_offsets(const Shape& shape, const Sharding& s, int64_t device) {
  std::vector<int64_t> offsets(static_cast<size_t>(shape.rank()), 0);
  if (s.kind != Kind::kTiled) return offsets;
  const std::vector<int64_t> index = tile_index(s, device);
  if (index.empty()) fail("device {} holds no piece of sharding {}", device, s.to_string());
  const Shape piece = shard_shape(shape, s);
  for (int64_t d = 0; d < shape.rank(); ++d)
    offsets[static_cast<size_t>(d)] = index[static_cast<size_t>(d)] * piece.dim(d);
  return offsets;
}

Literal shard_literal(const Literal& whole, const Sharding& s, int64_t device) {
  if (s.kind == Kind::kManual || s.kind == Kind::kUnknown)
    fail("a {} sharding does not say which piece device {} holds", s.to_string(), device);
  if (whole.shape().is_tuple()) {
    std::vector<Literal> elements;
    for (size_t i = 0; i < whole.elements().size(); ++i)
      elements.push_back(shard_literal(whole.elements()[i],
                                       s.kind == Kind::kTuple ? s.tuple_elements.at(i) : s, device));
    return Literal::tuple(std::move(elements));
  }
  if (s.kind != Kind::kTiled) return whole;
  const Shape piece_shape = shard_shape(whole.shape(), s);
  const std::vector<int64_t> offsets = shard_offsets(whole.shape(), s, device);
  Literal piece(piece_shape);
  copy_block(whole, offsets, piece, std::vector<int64_t>(offsets.size(), 0),
             inside(whole.shape(), piece_shape, offsets));
  return piece;
}

Literal unshard_literal(std::span<const Literal> pieces, const Sharding& s, const Shape& shape) {
  if (s.kind == Kind::kManual || s.kind == Kind::kUnknown)
    fail("a {} sharding does not say how pieces make the whole value", s.to_string());
  if (pieces.empty()) fail("no pieces to put together");
  if (shape.is_tuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      std::vector<Literal> element_pieces;
      for (const Literal& p : pieces) element_pieces.push_back(p.elements().at(static_cast<size_t>(i)));
      elements.push_back(unshard_literal(element_pieces,
                                         s.kind == Kind::kTuple ? s.tuple_elements.at(static_cast<size_t>(i)) : s,
                                         shape.element(i)));
    }
    return Literal::tuple(std::move(elements));
  }
  if (s.kind == Kind::kMaximal) return pieces[static_cast<size_t>(s.maximal_device)];
  if (s.kind != Kind::kTiled) return pieces[0];
  Shape whole_shape = shape;
  whole_shape.clear_layout();
  Literal whole(whole_shape);
  const Shape piece_shape = shard_shape(shape, s);
  for (int64_t device = 0; device < static_cast<int64_t>(pieces.size()); ++device) {
    if (tile_index(s, device).empty()) continue;
    const Literal& piece = pieces[static_cast<size_t>(device)];
    if (!piece.shape().compatible(piece_shape))
      fail("device {} holds {}, but sharding {} of {} gives it {}", device, piece.shape().to_string(false),
           s.to_string(), shape.to_string(false), piece_shape.to_string(false));
    const std::vector<int64_t> offsets = shard_offsets(shape, s, device);
    copy_block(piece, std::vector<int64_t>(offsets.size(), 0), whole, offsets,
               inside(shape, piece_shape, offsets));
  }
  return whole;
}

}  // namespace podsim::ir
