// Devices and execution, as torch_xla spells them: podsim.device(), devices(),
// device_count(), mark_step() / sync(), wait_device_ops(), eager mode. Everything that
// compiles, runs or waits releases the GIL, so Python threads go on meanwhile.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/pjrt/device.h"

namespace podsim::python {

void bind_execution(py::module_& m) {
  using pjrt::Device;
  using release_gil = py::call_guard<py::gil_scoped_release>;
  constexpr auto reference = py::return_value_policy::reference;

  py::class_<Device, std::unique_ptr<Device, py::nodelete>>(m, "Device",
                                                           "A device of a backend (devices live as long as the process)")
      .def_property_readonly("name", &Device::name)
      .def_property_readonly("kind", [](const Device& d) { return std::string(pjrt::device_kind_name(d.kind())); })
      .def_property_readonly("index", &Device::ordinal)
      .def("memory_stats", [](const Device& d) {
        const pjrt::MemoryStats stats = d.memory_stats();
        py::dict out;
        out["bytes_in_use"] = stats.bytes_in_use;
        out["peak_bytes_in_use"] = stats.peak_bytes_in_use;
        out["bytes_limit"] = stats.bytes_limit;
        return out;
      })
      .def("__repr__", [](const Device& d) { return "device('" + d.name() + "')"; })
      .def("__str__", &Device::name)
      .def("__eq__", [](const Device& a, py::handle b) { return py::isinstance<Device>(b) && &a == b.cast<const Device*>(); })
      .def("__hash__", [](const Device& d) { return reinterpret_cast<intptr_t>(&d); });

  m.def("device", [](std::optional<int> index, std::optional<std::string> backend) -> Device& {
    if (!backend) return index ? device(*index) : device();
    std::span<Device* const> all = pjrt::client(*backend).devices();
    const int i = index.value_or(0);
    if (i < 0 || static_cast<size_t>(i) >= all.size())
      throw py::index_error(*backend + " has " + std::to_string(all.size()) + " device(s), not " + std::to_string(i + 1));
    return *all[static_cast<size_t>(i)];
  }, reference, py::arg("index") = py::none(), py::arg("backend") = py::none(),
        "The default device (PODSIM_DEVICE: CPU, SIM, OPENCL), or device `index` of it or of the backend named");
  m.def("devices", [](std::optional<std::string> backend) {
    if (!backend) return devices();
    std::span<Device* const> all = pjrt::client(*backend).devices();
    return std::vector<Device*>(all.begin(), all.end());
  }, reference, py::arg("backend") = py::none(), "Every device of the default backend, or of the backend named");
  m.def("device_count", &device_count);

  m.def("mark_step", [] { mark_step(); }, release_gil(),
        "Compiles (or finds cached) and launches the graph of every pending tensor; returns without waiting");
  m.def("sync", [](std::optional<std::vector<Tensor>> tensors) {
    if (tensors) sync(*tensors);
    else sync();
  }, release_gil(), py::arg("tensors") = py::none(),
        "sync(): the same as mark_step(); sync(tensors): runs just their graph, without counting a step");
  m.def("wait_device_ops", &wait_device_ops, release_gil(), "Waits until everything launched so far has finished");
  m.def("set_eager_mode", &set_eager_mode, py::arg("eager"), "Eager mode runs each op at once (PODSIM_EAGER=1)");
  m.def("eager_mode", &eager_mode);
}

}  // namespace podsim::python
