// podsim.distributed: PyTorch/XLA's multi-device API. launch() runs a Python function per
// device on its own thread (xmp.spawn / torch_xla.launch; each thread takes the GIL to
// run Python and releases it in every device wait), the collectives of xm (all_reduce,
// all_gather, reduce_scatter, all_to_all, collective_permute, optimizer_step), and SPMD
// (use_spmd, Mesh, mark_sharding, ... as torch_xla.distributed.spmd).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/distributed/collectives.h"
#include "runtime/distributed/spmd.h"
#include "runtime/optim/optimizer.h"

namespace podsim::python {
namespace {

using namespace distributed;

ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "mean") return ReduceOp::kMean;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  throw py::value_error("reduce_type is 'sum', 'mean', 'max' or 'min', not '" + name + "'");
}

// A partition spec entry: None, an axis index or name, or a tuple of them.
MeshAxis mesh_axis(py::handle entry) {
  if (entry.is_none()) return MeshAxis(std::nullopt);
  if (py::isinstance<py::str>(entry)) return MeshAxis(entry.cast<std::string>());
  if (PyIndex_Check(entry.ptr())) return MeshAxis(entry.cast<int64_t>());
  if (py::isinstance<py::tuple>(entry) || py::isinstance<py::list>(entry)) {
    std::vector<MeshAxis> axes;
    for (py::handle axis : entry) axes.push_back(mesh_axis(axis));
    if (axes.size() == 1) return axes[0];
    if (axes.size() != 2) throw py::value_error("a partition spec entry joins two mesh axes at most here");
    return MeshAxis({axes[0], axes[1]});
  }
  throw py::type_error("a partition spec entry is None, an axis index or name, or a tuple of them");
}

PartitionSpec partition_spec(const py::sequence& spec) {
  PartitionSpec out;
  for (py::handle entry : spec) out.push_back(mesh_axis(entry));
  return out;
}

}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("distributed", "Collectives, the per-device launcher and SPMD (torch_xla's xm, "
                                                 "xmp and xs)");
  d.def("launch", [](const std::function<void(int)>& fn, std::optional<std::vector<pjrt::Device*>> devices) {
    py::gil_scoped_release release;
    launch(fn, devices.value_or(std::vector<pjrt::Device*>{}));
  }, py::arg("fn"), py::arg("devices") = py::none(),
        "Runs fn(replica) once per device (all of the default backend's unless given), each on its own thread");
  d.def("world_size", &world_size, "Replicas of the current launch (1 outside one)");
  d.def("ordinal", &ordinal, "This thread's replica (0 outside a launch)");
  const auto groups_arg = py::arg("groups") = py::none();
  using Groups = std::optional<ReplicaGroups>;
  d.def("all_reduce", [](const Tensor& x, const std::string& op, double scale, Groups groups) {
    return all_reduce(x, reduce_op(op), scale, groups.value_or(ReplicaGroups{}));
  }, py::arg("input"), py::arg("reduce_type") = "sum", py::arg("scale") = 1.0, groups_arg);
  d.def("all_gather", [](const Tensor& x, int64_t dim, Groups groups) {
    return all_gather(x, dim, groups.value_or(ReplicaGroups{}));
  }, py::arg("input"), py::arg("dim") = 0, groups_arg);
  d.def("reduce_scatter", [](const Tensor& x, const std::string& op, int64_t dim, double scale, Groups groups) {
    return reduce_scatter(x, reduce_op(op), dim, scale, groups.value_or(ReplicaGroups{}));
  }, py::arg("input"), py::arg("reduce_type") = "sum", py::arg("dim") = 0, py::arg("scale") = 1.0, groups_arg);
  d.def("all_to_all", [](const Tensor& x, int64_t dim, Groups groups) {
    return all_to_all(x, dim, groups.value_or(ReplicaGroups{}));
  }, py::arg("input"), py::arg("dim"), groups_arg);
  d.def("collective_permute", [](const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
    return collective_permute(x, pairs);
  }, py::arg("input"), py::arg("pairs"));
  d.def("optimizer_step", [](optim::Optimizer& optimizer) { optimizer_step(optimizer); }, py::arg("optimizer"),
        "Averages every grad over the replicas, then steps (xm.optimizer_step)");

  // ---- SPMD ----------------------------------------------------------------------------
  d.def("use_spmd", &use_spmd, "SPMD mode: podsim.device() becomes SPMD:0 over every device (before first use)");
  d.def("is_spmd", &is_spmd);
  d.def("global_device_count", &global_device_count);
  py::class_<Mesh>(d, "Mesh")
      .def(py::init<std::vector<int64_t>, std::vector<int64_t>, std::vector<std::string>>(), py::arg("device_ids"),
           py::arg("mesh_shape"), py::arg("axis_names") = std::vector<std::string>{})
      .def_static("create", &Mesh::create, py::arg("mesh_shape"), py::arg("axis_names") = std::vector<std::string>{},
                  "Every device in order (on a pod, the torus's order)")
      .def_static("hybrid", &Mesh::hybrid, py::arg("ici_mesh_shape"), py::arg("dcn_mesh_shape"),
                  py::arg("axis_names") = std::vector<std::string>{}, "PyTorch/XLA's HybridMesh over DCN slices")
      .def_property_readonly("device_ids", &Mesh::device_ids)
      .def_property_readonly("shape", &Mesh::shape)
      .def_property_readonly("axis_names", &Mesh::axis_names);
  d.def("mark_sharding", [](const Tensor& t, const Mesh& mesh, const py::sequence& spec) {
    mark_sharding(t, mesh, partition_spec(spec));
  }, py::arg("tensor"), py::arg("mesh"), py::arg("partition_spec"));
  d.def("clear_sharding", [](const Tensor& t) { clear_sharding(t); }, py::arg("tensor"));
  d.def("sharding_spec", &sharding_spec, py::arg("tensor"), "As XLA prints it; '' for a pending value");
  d.def("distribute", [](const Tensor& host, const Mesh& mesh, const py::sequence& spec) {
    return distribute(host, mesh, partition_spec(spec));
  }, py::arg("tensor"), py::arg("mesh"), py::arg("partition_spec"),
        "A host tensor put on the SPMD device, each device receiving only its piece");
  d.def("local_shards", [](const Tensor& t) {
    std::vector<ir::Literal> shards = [&] {
      py::gil_scoped_release release;
      return local_shards(t);
    }();
    std::vector<py::array> out;
    for (ir::Literal& shard : shards) out.push_back(literal_to_numpy(std::move(shard)));
    return out;
  }, py::arg("tensor"), "Each device's piece, in device order, as NumPy arrays");
}

}  // namespace podsim::python
