// SPMD mode's user API: meshes, mark_sharding and friends (runtime/distributed/spmd.h).
#include "runtime/distributed/spmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "compiler/ir/sharding.h"
#include "compiler/passes/spmd/tiling.h"
#include "runtime/pjrt/spmd/spmd_backend.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::distributed {

using lazy::OpSite;

void use_spmd() { pjrt::use_spmd(); }

bool is_spmd() { return pjrt::spmd_enabled(); }

int global_device_count() {
  pjrt::Client& client = pjrt::default_client();
  const int64_t spmd = pjrt::spmd_device_count(client);
  return spmd > 0 ? static_cast<int>(spmd) : static_cast<int>(client.devices().size());
}

Mesh::Mesh(std::vector<int64_t> device_ids, std::vector<int64_t> shape, std::vector<std::string> axis_names)
    : device_ids_(std::move(device_ids)), shape_(std::move(shape)), axis_names_(std::move(axis_names)) {
  const int64_t n = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
  if (n != static_cast<int64_t>(device_ids_.size()))
    fail("a mesh of shape [{}] needs {} devices, got {}", fmt::join(shape_, ","), n, device_ids_.size());
  if (!axis_names_.empty() && axis_names_.size() != shape_.size())
    fail("a mesh of {} axes with {} axis names", shape_.size(), axis_names_.size());
  std::vector<int64_t> sorted = device_ids_;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i))
      fail("a mesh's device ids must be 0 .. {} each once, got [{}]", sorted.size() - 1, fmt::join(device_ids_, ","));
}

Mesh Mesh::create(std::vector<int64_t> shape, std::vector<std::string> axis_names) {
  std::vector<int64_t> ids(static_cast<size_t>(global_device_count()));
  std::iota(ids.begin(), ids.end(), 0);
  return Mesh(std::move(ids), std::move(shape), std::move(axis_names));
}

Mesh Mesh::hybrid(std::vector<int64_t> ici_shape, std::vector<int64_t> dcn_shape, std::vector<std::string> axis_names) {
  if (ici_shape.size() != dcn_shape.size())
    fail("HybridMesh: ICI shape [{}] and DCN shape [{}] need one entry per mesh axis each", fmt::join(ici_shape, ","),
         fmt::join(dcn_shape, ","));
  const int64_t per_slice = std::accumulate(ici_shape.begin(), ici_shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t slices = std::accumulate(dcn_shape.begin(), dcn_shape.end(), int64_t{1}, std::multiplies<>());
  if (per_slice * slices != global_device_count())
    fail("HybridMesh: ICI [{}] x DCN [{}] spans {} devices, but there are {}", fmt::join(ici_shape, ","),
         fmt::join(dcn_shape, ","), per_slice * slices, global_device_count());
  std::vector<int64_t> shape;
  for (size_t k = 0; k < ici_shape.size(); ++k) shape.push_back(ici_shape[k] * dcn_shape[k]);
  // Mesh position m_k = dcn_k * ici_shape[k] + ici_k; device = slice(dcn) * per_slice + index(ici).
  std::vector<int64_t> ids;
  std::vector<int64_t> m(shape.size(), 0);
  for (int64_t n = 0; n < per_slice * slices; ++n) {
    int64_t slice = 0, within = 0;
    for (size_t k = 0; k < shape.size(); ++k) {
      slice = slice * dcn_shape[k] + m[k] / ici_shape[k];
      within = within * ici_shape[k] + m[k] % ici_shape[k];
    }
    ids.push_back(slice * per_slice + within);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++m[k] < shape[k]) break;
      m[k] = 0;
    }
  }
  return Mesh(std::move(ids), std::move(shape), std::move(axis_names));
}

int64_t Mesh::axis(std::string_view name) const {
  auto it = std::find(axis_names_.begin(), axis_names_.end(), name);
  if (it == axis_names_.end()) fail("the mesh has no axis '{}' (its axes: {})", name, fmt::join(axis_names_, ", "));
  return it - axis_names_.begin();
}

ir::Sharding Mesh::sharding(const std::vector<std::optional<int64_t>>& spec) const {
  // The mesh as a tiling of a value of its own rank, remapped onto the tensor's
  // dimensions; mesh axes no dimension takes hold copies.
  const int64_t axes = static_cast<int64_t>(shape_.size());
  std::vector<int64_t> from;
  for (const auto& a : spec) {
    if (a && (*a < 0 || *a >= axes)) fail("mesh axis {} out of range: the mesh has {} axes", *a, axes);
    if (a && std::find(from.begin(), from.end(), *a) != from.end()) fail("mesh axis {} splits two dimensions", *a);
    from.push_back(a.value_or(-1));
  }
  ir::Sharding whole_mesh;
  whole_mesh.kind = ir::Sharding::Kind::kTiled;
  whole_mesh.tile_dims = shape_;
  whole_mesh.devices = device_ids_;
  const int64_t n = static_cast<int64_t>(device_ids_.size());
  return passes::spmd::Tiling::of(whole_mesh, axes, n).remap(from).sharding();
}

ir::Sharding Mesh::sharding(const std::vector<std::vector<int64_t>>& spec) const {
  const auto axes = static_cast<int64_t>(shape_.size());
  std::vector<int64_t> order;  // the grouped axes dimension by dimension, then the others
  std::vector<std::optional<int64_t>> single;
  bool grouped = false;
  for (const std::vector<int64_t>& group : spec) {
    for (int64_t a : group) {
      if (a < 0 || a >= axes) fail("mesh axis {} out of range: the mesh has {} axes", a, axes);
      if (std::find(order.begin(), order.end(), a) != order.end()) fail("mesh axis {} splits two dimensions", a);
      order.push_back(a);
    }
    single.push_back(group.empty() ? std::nullopt : std::optional<int64_t>(group[0]));
    grouped = grouped || group.size() > 1;
  }
  if (!grouped) return sharding(single);
  // A mesh with the axes reordered so that each group is adjacent, each group merged
  // into one axis (its first axis major): then one axis per dimension.
  std::vector<int64_t> merged_shape;
  std::vector<std::optional<int64_t>> merged_spec;
  for (const std::vector<int64_t>& group : spec) {
    if (group.empty()) {
      merged_spec.push_back(std::nullopt);
      continue;
    }
    int64_t size = 1;
    for (int64_t a : group) size *= shape_[static_cast<size_t>(a)];
    merged_spec.push_back(static_cast<int64_t>(merged_shape.size()));
    merged_shape.push_back(size);
  }
  for (int64_t a = 0; a < axes; ++a)
    if (std::find(order.begin(), order.end(), a) == order.end()) {
      order.push_back(a);
      merged_shape.push_back(shape_[static_cast<size_t>(a)]);
    }
  // Device ids in row-major order over the reordered axes.
  std::vector<int64_t> strides(static_cast<size_t>(axes), 1);
  for (int64_t a = axes - 1; a > 0; --a)
    strides[static_cast<size_t>(a - 1)] = strides[static_cast<size_t>(a)] * shape_[static_cast<size_t>(a)];
  std::vector<int64_t> ids, at(static_cast<size_t>(axes), 0);
  for (size_t n = 0; n < device_ids_.size(); ++n) {
    int64_t index = 0;
    for (int64_t k = 0; k < axes; ++k)
      index += at[static_cast<size_t>(k)] * strides[static_cast<size_t>(order[static_cast<size_t>(k)])];
    ids.push_back(device_ids_[static_cast<size_t>(index)]);
    for (int64_t k = axes; k-- > 0;) {
      if (++at[static_cast<size_t>(k)] < shape_[static_cast<size_t>(order[static_cast<size_t>(k)])]) break;
      at[static_cast<size_t>(k)] = 0;
    }
  }
  return Mesh(std::move(ids), std::move(merged_shape)).sharding(merged_spec);
}

namespace {

void set_sharding(const Tensor& t, const ir::Sharding& sharding, const OpSite& site) {
  const lazy::TensorImpl& impl = lazy::checked(t, site);
  if (impl.device == nullptr || impl.device->kind() != pjrt::DeviceKind::kSpmd)
    lazy::op_fail(site, "the tensor is on {}, not the SPMD device: call podsim::distributed::use_spmd() (or set PODSIM_SPMD=1) "
                  "before using a device, and move it to podsim::device()",
                  lazy::device_name(impl.device));
  lazy::NodePtr node;
  std::shared_ptr<pjrt::Buffer> buffer;
  {
    std::lock_guard guard(impl.lock);
    node = impl.node;
    buffer = impl.buffer;
  }
  if (node) {
    lazy::Node* operands[] = {node.get()};
    const std::vector<int64_t> attrs = lazy::encode_sharding(sharding);
    t.impl()->set_node(lazy::make_node(site, ir::Opcode::kCustomCall, impl.type, impl.dims, operands, attrs));
  } else if (buffer) {
    const ir::Sharding* now = buffer->sharding();
    if (now == nullptr || !(*now == sharding)) t.impl()->set_buffer(pjrt::reshard_buffer(*buffer, sharding));
  }
}

}  // namespace

std::vector<int64_t> MeshAxis::resolve(const Mesh& mesh) const {
  if (name_) return {mesh.axis(*name_)};
  if (index_) return {*index_};
  std::vector<int64_t> axes;
  for (const MeshAxis& a : group_)
    for (int64_t axis : a.resolve(mesh)) axes.push_back(axis);
  return axes;
}

namespace {

// The sharding `spec` gives a tensor of t's rank on `mesh` (errors at `site`).
ir::Sharding spec_sharding(const Tensor& t, const Mesh& mesh, const PartitionSpec& spec, const OpSite& site) {
  if (static_cast<int64_t>(spec.size()) != t.dim())
    lazy::op_fail(site, "a partition spec of {} entries for a tensor of rank {}", spec.size(), t.dim());
  if (static_cast<int64_t>(mesh.device_ids().size()) != global_device_count())
    lazy::op_fail(site, "the mesh has {} devices, but the SPMD device spans {}", mesh.device_ids().size(),
                  global_device_count());
  std::vector<std::vector<int64_t>> axes;
  for (const MeshAxis& axis : spec) axes.push_back(axis.resolve(mesh));
  return mesh.sharding(axes);
}

}  // namespace

void mark_sharding(const Tensor& t, const Mesh& mesh, const PartitionSpec& spec, Loc loc) {
  const OpSite site{"mark_sharding", loc};
  set_sharding(t, spec_sharding(t, mesh, spec, site), site);
}

Tensor distribute(const Tensor& host, const Mesh& mesh, const PartitionSpec& spec, Loc loc) {
  const OpSite site{"distribute", loc};
  const lazy::TensorImpl& impl = lazy::checked(host, site);
  if (impl.device != nullptr) lazy::op_fail(site, "expected a host tensor, got one on {}", impl.device->name());
  pjrt::Device& spmd = device();
  if (spmd.kind() != pjrt::DeviceKind::kSpmd)
    lazy::op_fail(site, "the default device is {}, not the SPMD device: call podsim::distributed::use_spmd() first", spmd.name());
  const ir::Sharding sharding = spec_sharding(host, mesh, spec, site);
  auto placed = std::make_shared<lazy::TensorImpl>(impl.type, impl.dims, &spmd);
  placed->buffer = pjrt::place_buffer(host.to_literal(loc), sharding, spmd);
  lazy::register_tensor(*placed);
  return Tensor(std::move(placed));
}

void mark_sharding(const Tensor& t, const ir::Sharding& sharding, Loc loc) {
  const OpSite site{"mark_sharding", loc};
  const std::string problem = ir::sharding_problem(sharding, t.ir_shape(), global_device_count());
  if (!problem.empty()) lazy::op_fail(site, "{}", problem);
  set_sharding(t, sharding, site);
}

void clear_sharding(const Tensor& t, Loc loc) { set_sharding(t, ir::Sharding{}, OpSite{"clear_sharding", loc}); }

namespace {

std::shared_ptr<pjrt::Buffer> sharded_buffer(const Tensor& t) {
  if (!t.defined() || t.impl()->device == nullptr) return nullptr;
  std::lock_guard guard(t.impl()->lock);
  const auto& buffer = t.impl()->buffer;
  return buffer != nullptr && buffer->sharding() != nullptr ? buffer : nullptr;
}

}  // namespace

std::string sharding_spec(const Tensor& t) {
  const auto buffer = sharded_buffer(t);
  return buffer ? buffer->sharding()->to_string() : "";
}

std::optional<ir::Sharding> sharding_of(const Tensor& t) {
  const auto buffer = sharded_buffer(t);
  return buffer ? std::optional<ir::Sharding>(*buffer->sharding()) : std::nullopt;
}

std::vector<ir::Literal> local_shards(const Tensor& t) {
  const auto buffer = sharded_buffer(t);
  if (!buffer) fail("local_shards: the tensor holds no SPMD data (a pending value, or off the SPMD device)");
  return pjrt::buffer_pieces(*buffer);
}

}  // namespace podsim::distributed
