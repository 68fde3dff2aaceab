// What a sharding means for a value (XLA's HloSharding): which piece of an array each
// device holds. A tiled sharding's tile assignment is an array of device ids of shape
// tile_dims; its first data_rank dimensions split the array's dimensions in order, and
// trailing dimensions (last_tile_dim_replicate, last_tile_dims={replicated}) list devices
// that hold the same piece. A dimension of size n split into k tiles gives every device
// ceil(n / k) elements of it, the last tiles padded as XLA pads them. {replicated} and
// {maximal device=N} mean every device holds (or computes) the whole value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/shape.h"

namespace podsim::ir {

// A tiled sharding's dimensions that split data (tile_dims less the trailing ones).
int64_t sharding_data_rank(const Sharding& sharding);

// Tiles dimension `dim` is split into (1 unless the sharding is tiled).
int64_t sharding_tiles(const Sharding& sharding, int64_t dim);

// Whether every device holds the whole value: replicated, maximal, or tiled with every
// data dimension in one tile.
bool holds_whole_value(const Sharding& sharding);

// What is wrong with `sharding` on a value of `shape` among `devices` devices ("" when
// nothing is): rank against the shape, tuple structure, device ids in range and each
// listed once, every device present.
std::string sharding_problem(const Sharding& sharding, const Shape& shape, int64_t devices);

// The piece a device holds: its shape (every split dimension ceil(n / tiles)) and the
// index of its first element in the whole array. Arrays only; podsim::Error for a
// device the tile assignment does not list.
Shape shard_shape(const Shape& shape, const Sharding& sharding);
std::vector<int64_t> shard_offsets(const Shape& shape, const Sharding& sharding, int64_t device);

// The literal device `device` holds of `whole` (tuples element by element; elements past
// the end of a padded last tile are zero), and the whole value put together from every
// device's piece (pieces[d] is device d's). podsim::Error for manual shardings, which
// say nothing about how pieces make a whole.
Literal shard_literal(const Literal& whole, const Sharding& sharding, int64_t device);
Literal unshard_literal(std::span<const Literal> pieces, const Sharding& sharding, const Shape& shape);

}  // namespace podsim::ir
