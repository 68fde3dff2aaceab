// A sharding as the SPMD passes reason about it: the array of devices of shape
// [t_0, ..., t_{rank-1}, r], where t_d splits dimension d and the last dimension lists the
// r devices that hold the same piece (XLA's tile assignment with a replicated last
// dimension, always present here). {replicated} and {maximal} are one tile of every
// device. Devices sharing a piece are kept in ascending order, so two tilings compare
// equal exactly when every device holds the same piece under both.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/ir/shape.h"

namespace podsim::passes::spmd {

class Tiling {
 public:
  static Tiling replicated(int64_t rank, int64_t devices);
  // podsim::Error for a manual or unknown sharding, or one whose rank is not `rank`.
  static Tiling of(const ir::Sharding& sharding, int64_t rank, int64_t devices);

  int64_t rank() const { return static_cast<int64_t>(dims_.size()) - 1; }
  int64_t tiles(int64_t dim) const { return dims_.at(static_cast<size_t>(dim)); }
  int64_t replication() const { return dims_.back(); }
  int64_t devices() const { return static_cast<int64_t>(devices_.size()); }
  // Pieces the value is cut into (the product of the t_d).
  int64_t pieces() const { return devices() / replication(); }
  bool is_replicated() const { return pieces() == 1; }
  // Whether every split dimension of shape divides evenly.
  bool divides(const ir::Shape& shape) const;

  // XLA's form: {replicated}, or devices=[...] with last_tile_dim_replicate where r > 1.
  ir::Sharding sharding() const;

  // The tiling of a value whose dimension t is split as this value's dimension from[t]
  // (-1: not split); dimensions no t takes hold copies (they join r).
  Tiling remap(const std::vector<int64_t>& from) const;
  // The same tiling with dimension d no longer split (its devices join r).
  Tiling unsplit(int64_t dim) const;
  // The tiling that splits each dimension as this one or `other` does (a batch split on
  // one mesh axis, columns on another): every device's piece is where its pieces under
  // both meet. nullopt where they do not fit together (a dimension split differently by
  // both, or pieces held by different numbers of devices).
  std::optional<Tiling> merge(const Tiling& other) const;

  // Device `device`'s position along each dimension (the last: among its copies).
  std::vector<int64_t> position(int64_t device) const;
  // The devices that differ only along `dims` (indices, `rank()` for r), one group per
  // position on the other dimensions, each in row-major order over `dims`.
  std::vector<std::vector<int64_t>> groups_along(const std::vector<int64_t>& dims) const;

  bool operator==(const Tiling&) const = default;

 private:
  Tiling(std::vector<int64_t> dims, std::vector<int64_t> devices);
  std::vector<int64_t> dims_;     // rank + 1
  std::vector<int64_t> devices_;  // row-major over dims_
  std::vector<int64_t> where_;    // device id -> its index in devices_ (derived)
};

}  // namespace podsim::passes::spmd
