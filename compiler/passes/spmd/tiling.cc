// Tilings: device arrays, their transposes and reshapes, and the groups of devices that
// collectives between pieces take.
#include "compiler/passes/spmd/tiling.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "compiler/ir/sharding.h"

namespace podsim::passes::spmd {
namespace {

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

// The array `devices` of shape `dims`, transposed: result dimension k is dims[perm[k]].
std::vector<int64_t> transpose(const std::vector<int64_t>& dims, const std::vector<int64_t>& devices,
                               const std::vector<int64_t>& perm) {
  std::vector<int64_t> out_dims(perm.size()), strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  for (size_t k = 0; k < perm.size(); ++k) out_dims[k] = dims[static_cast<size_t>(perm[k])];
  std::vector<int64_t> out;
  out.reserve(devices.size());
  std::vector<int64_t> index(perm.size(), 0);
  for (size_t n = 0; n < devices.size(); ++n) {
    int64_t at = 0;
    for (size_t k = 0; k < perm.size(); ++k) at += index[k] * strides[static_cast<size_t>(perm[k])];
    out.push_back(devices[static_cast<size_t>(at)]);
    for (size_t k = perm.size(); k-- > 0;) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

}  // namespace

Tiling::Tiling(std::vector<int64_t> dims, std::vector<int64_t> devices)
    : dims_(std::move(dims)), devices_(std::move(devices)) {
  // Copies of a piece in ascending order: the same placement is the same tiling.
  const int64_t r = dims_.back();
  for (size_t at = 0; at < devices_.size(); at += static_cast<size_t>(r))
    std::sort(devices_.begin() + static_cast<std::ptrdiff_t>(at),
              devices_.begin() + static_cast<std::ptrdiff_t>(at) + r);
  where_.assign(devices_.size(), -1);
  for (size_t at = 0; at < devices_.size(); ++at) {
    const int64_t device = devices_[at];
    if (device < 0 || device >= static_cast<int64_t>(devices_.size()) || where_[static_cast<size_t>(device)] >= 0)
      fail("internal: a tiling of {} devices names device {} (twice, or out of range)", devices_.size(), device);
    where_[static_cast<size_t>(device)] = static_cast<int64_t>(at);
  }
}

Tiling Tiling::replicated(int64_t rank, int64_t devices) {
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1), ids(static_cast<size_t>(devices));
  dims.push_back(devices);
  std::iota(ids.begin(), ids.end(), 0);
  return Tiling(std::move(dims), std::move(ids));
}

Tiling Tiling::of(const ir::Sharding& sharding, int64_t rank, int64_t devices) {
  using Kind = ir::Sharding::Kind;
  if (sharding.kind == Kind::kReplicated || sharding.kind == Kind::kMaximal) return replicated(rank, devices);
  if (sharding.kind != Kind::kTiled)
    fail("the SPMD partitioner does not handle the {} sharding yet", sharding.to_string());
  for (const std::string& kind : sharding.last_tile_dims)
    if (kind != "replicated") fail("the SPMD partitioner does not handle manual subgroups ({}) yet", sharding.to_string());
  const int64_t data = ir::sharding_data_rank(sharding);
  if (data != rank) fail("sharding {} tiles {} dimensions, but the value has rank {}", sharding.to_string(), data, rank);
  if (static_cast<int64_t>(sharding.devices.size()) != devices)
    fail("sharding {} places {} devices, but there are {} partitions", sharding.to_string(), sharding.devices.size(), devices);
  std::vector<int64_t> dims(sharding.tile_dims.begin(), sharding.tile_dims.begin() + data);
  dims.push_back(devices / std::max<int64_t>(product(dims), 1));
  return Tiling(std::move(dims), sharding.devices);
}

bool Tiling::divides(const ir::Shape& shape) const {
  for (int64_t d = 0; d < rank(); ++d)
    if (shape.dim(d) % tiles(d) != 0) return false;
  return true;
}

ir::Sharding Tiling::sharding() const {
  ir::Sharding s;
  if (is_replicated()) return s;
  s.kind = ir::Sharding::Kind::kTiled;
  s.tile_dims = dims_;
  s.last_tile_dim_replicate = replication() > 1;
  if (!s.last_tile_dim_replicate) s.tile_dims.pop_back();
  s.devices = devices_;
  return s;
}

Tiling Tiling::remap(const std::vector<int64_t>& from) const {
  std::vector<int64_t> perm, dims;
  std::vector<bool> used(static_cast<size_t>(rank()), false);
  for (int64_t f : from) {
    dims.push_back(f < 0 ? 1 : tiles(f));
    if (f < 0) continue;
    if (used[static_cast<size_t>(f)]) fail("internal: a dimension split twice in a remapped tiling");
    used[static_cast<size_t>(f)] = true;
    perm.push_back(f);
  }
  int64_t r = replication();
  for (int64_t d = 0; d < rank(); ++d)
    if (!used[static_cast<size_t>(d)]) {
      perm.push_back(d);
      r *= tiles(d);
    }
  perm.push_back(rank());
  dims.push_back(r);
  return Tiling(std::move(dims), transpose(dims_, devices_, perm));
}

Tiling Tiling::unsplit(int64_t dim) const {
  std::vector<int64_t> from(static_cast<size_t>(rank()));
  std::iota(from.begin(), from.end(), 0);
  from[static_cast<size_t>(dim)] = -1;
  return remap(from);
}

std::optional<Tiling> Tiling::merge(const Tiling& other) const {
  if (other.rank() != rank() || other.devices() != devices()) return std::nullopt;
  std::vector<int64_t> dims(dims_.begin(), dims_.end() - 1);
  for (int64_t d = 0; d < rank(); ++d) {
    const int64_t a = tiles(d), b = other.tiles(d);
    if (a > 1 && b > 1 && a != b) return std::nullopt;
    dims[static_cast<size_t>(d)] = std::max(a, b);
  }
  const int64_t pieces = product(dims);
  if (devices() % pieces != 0) return std::nullopt;
  std::vector<std::vector<int64_t>> buckets(static_cast<size_t>(pieces));
  for (int64_t device = 0; device < devices(); ++device) {
    const std::vector<int64_t> a = position(device), b = other.position(device);
    int64_t linear = 0;
    for (int64_t d = 0; d < rank(); ++d) {
      const size_t k = static_cast<size_t>(d);
      if (tiles(d) > 1 && other.tiles(d) > 1 && a[k] != b[k]) return std::nullopt;
      linear = linear * dims[k] + (tiles(d) > 1 ? a[k] : b[k]);
    }
    buckets[static_cast<size_t>(linear)].push_back(device);
  }
  std::vector<int64_t> ids;
  for (const std::vector<int64_t>& bucket : buckets) {
    if (static_cast<int64_t>(bucket.size()) != devices() / pieces) return std::nullopt;
    ids.insert(ids.end(), bucket.begin(), bucket.end());
  }
  dims.push_back(devices() / pieces);
  return Tiling(std::move(dims), std::move(ids));
}

std::vector<int64_t> Tiling::position(int64_t device) const {
  if (device < 0 || device >= devices()) fail("internal: device {} is not in the tiling", device);
  int64_t linear = where_[static_cast<size_t>(device)];
  std::vector<int64_t> index(dims_.size());
  for (size_t d = dims_.size(); d-- > 0;) {
    index[d] = linear % dims_[d];
    linear /= dims_[d];
  }
  return index;
}

std::vector<std::vector<int64_t>> Tiling::groups_along(const std::vector<int64_t>& along) const {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d <= rank(); ++d)
    if (std::find(along.begin(), along.end(), d) == along.end()) perm.push_back(d);
  perm.insert(perm.end(), along.begin(), along.end());
  int64_t size = 1;
  for (int64_t d : along) size *= dims_.at(static_cast<size_t>(d));
  const std::vector<int64_t> ordered = transpose(dims_, devices_, perm);
  std::vector<std::vector<int64_t>> groups;
  for (size_t at = 0; at < ordered.size(); at += static_cast<size_t>(size))
    groups.emplace_back(ordered.begin() + static_cast<std::ptrdiff_t>(at),
                        ordered.begin() + static_cast<std::ptrdiff_t>(at) + size);
  return groups;
}

}  // namespace podsim::passes::spmd
