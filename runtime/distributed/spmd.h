// SPMD in the style of PyTorch/XLA (torch_xla.distributed.spmd): the program is traced
// once for one virtual device, a few tensors are annotated with how they split over a
// logical mesh of devices, and the compiler partitions every graph over all devices
// (compiler/passes/spmd: sharding propagation, the GSPMD-style partitioner).
//
//   podsim::distributed::use_spmd();                                   // or PODSIM_SPMD=1
//   podsim::distributed::Mesh mesh = podsim::distributed::Mesh::create({2, 2}, {"data", "model"});
//   Tensor x = ...to(podsim::device());                   // SPMD:0
//   podsim::distributed::mark_sharding(x, mesh, {"data", std::nullopt}); // rows over the data axis
//
// The SPMD device (runtime/pjrt/spmd) holds each tensor as pieces on the devices of
// the PODSIM_DEVICE backend (CPU devices: PODSIM_CPU_DEVICES; SIM: a chip of
// PODSIM_TOPOLOGY each) and cpu() puts them together. Graph outputs keep the shardings
// propagation gave them, so sharded parameters stay sharded across steps.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/ir/literal.h"
#include "runtime/tensor/tensor.h"

namespace podsim::distributed {

// SPMD mode: podsim::device() becomes the virtual device SPMD:0 over all devices of the
// PODSIM_DEVICE backend. Must come before the first use of a device.
void use_spmd();
bool is_spmd();
// Devices under the SPMD device (the backend's device count outside SPMD mode).
int global_device_count();

// A logical mesh of devices: device ids (ordinals of the backend, row-major over
// shape) and optional axis names.
class Mesh {
 public:
  Mesh(std::vector<int64_t> device_ids, std::vector<int64_t> shape, std::vector<std::string> axis_names = {});
  // Every device in order (on a simulated pod, the torus's device order: a mesh whose
  // shape follows the slice's puts mesh axes on torus axes).
  static Mesh create(std::vector<int64_t> shape, std::vector<std::string> axis_names = {});
  // PyTorch/XLA's HybridMesh for pods of several slices joined by DCN: axis k has
  // ici_shape[k] x dcn_shape[k] devices, its position the DCN part major (which slice)
  // and the ICI part minor (where in the slice). Devices are numbered slice by slice,
  // so the slices are product(dcn_shape) runs of product(ici_shape) consecutive
  // devices: collectives over an ICI axis stay inside slices, only DCN axes cross them.
  static Mesh hybrid(std::vector<int64_t> ici_shape, std::vector<int64_t> dcn_shape,
                     std::vector<std::string> axis_names = {});

  const std::vector<int64_t>& device_ids() const { return device_ids_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  // The axis of that name (podsim::Error listing the names when there is none).
  int64_t axis(std::string_view name) const;

  // The XLA sharding of a tensor whose dimension d splits over mesh axis spec[d]
  // (nullopt: not split); mesh axes no dimension uses hold copies.
  ir::Sharding sharding(const std::vector<std::optional<int64_t>>& spec) const;
  // The same with several mesh axes per dimension: dimension d splits over the product of
  // the axes spec[d] (the first major; empty: not split), as a partition spec entry
  // ("data", "model") does in PyTorch/XLA.
  ir::Sharding sharding(const std::vector<std::vector<int64_t>>& spec) const;

 private:
  std::vector<int64_t> device_ids_;
  std::vector<int64_t> shape_;
  std::vector<std::string> axis_names_;
};

// One entry of a partition spec: the mesh axis a tensor dimension splits over, by index
// or name; several axes, {"data", "model"} (the dimension splits over their product,
// the first major); or std::nullopt (not split).
class MeshAxis {
 public:
  MeshAxis(std::nullopt_t) {}                            // NOLINT: implicit by design
  MeshAxis(int index) : index_(index) {}                 // NOLINT
  MeshAxis(int64_t index) : index_(index) {}             // NOLINT
  MeshAxis(const char* name) : name_(name) {}            // NOLINT
  MeshAxis(std::string name) : name_(std::move(name)) {}  // NOLINT
  MeshAxis(std::initializer_list<MeshAxis> axes) : group_(axes) {}  // NOLINT
  // The mesh axes, in order (empty: not split).
  std::vector<int64_t> resolve(const Mesh& mesh) const;

 private:
  std::optional<int64_t> index_;
  std::optional<std::string> name_;
  std::vector<MeshAxis> group_;
};
// xs.mark_sharding's partition_spec: one entry per tensor dimension, {"data", std::nullopt}.
using PartitionSpec = std::vector<MeshAxis>;

// xs.mark_sharding: t (on the SPMD device) split as `spec` says. Data already computed is
// resharded at once; a pending value is annotated and the compiler honours it.
void mark_sharding(const Tensor& t, const Mesh& mesh, const PartitionSpec& spec, Loc loc = Loc::current());
// mark_sharding with an XLA sharding (e.g. one read back from a checkpoint).
void mark_sharding(const Tensor& t, const ir::Sharding& sharding, Loc loc = Loc::current());
// Replicated again.
void clear_sharding(const Tensor& t, Loc loc = Loc::current());
// The sharding of t's data as XLA prints it ("{devices=[2,1]0,1}"); "" for a pending
// value or a tensor off the SPMD device.
std::string sharding_spec(const Tensor& t);
// The sharding of t's data; nullopt for a pending value or a tensor off the SPMD device.
std::optional<ir::Sharding> sharding_of(const Tensor& t);
// A host tensor put on the SPMD device split as `spec` says, each device receiving only
// its piece (mark_sharding after to() would first copy the whole value to every device).
Tensor distribute(const Tensor& host, const Mesh& mesh, const PartitionSpec& spec, Loc loc = Loc::current());
// Each device's piece of t's data, in device order (PyTorch/XLA's local_shards); t must
// hold SPMD data (waits for it).
std::vector<ir::Literal> local_shards(const Tensor& t);

}  // namespace podsim::distributed
