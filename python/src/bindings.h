// The pieces of the _podsim extension module (python/src/module.cc puts them together).
// Each binds a part of the runtime through runtime/'s public headers and the types they
// hand out (IR modules and literals, profiles, pod configurations).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::python {

namespace py = pybind11;

// NumPy arrays and literals: a literal's bytes are the array's (kept alive by it); an
// array is copied into a literal (C order, its dtype; a TypeError for dtypes podsim lacks).
py::array literal_to_numpy(ir::Literal literal);
ir::Literal literal_from_numpy(const py::array& array);

// The dtype and device keyword arguments of a factory or layer (None: the default).
inline TensorOptions options_of(std::optional<DType> dtype, pjrt::Device* device) {
  return dtype ? TensorOptions(*dtype, device) : TensorOptions(device);
}

// An int or a sequence of ints (`what` names the argument in the TypeError otherwise).
std::vector<int64_t> int_list(py::handle value, const char* what);

// State dicts (nn modules', optimizers'): named tensors in order <-> a Python dict.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
py::dict to_dict(const NamedTensors& named);
NamedTensors from_dict(const py::dict& state);

// A Python number as an op's scalar operand: bool (Python's or NumPy's), an integer
// (anything with __index__) or a float; nullopt for anything else.
std::optional<Scalar> as_scalar(py::handle value);

void bind_tensor(py::module_& m);     // python/src/tensor.cc: dtypes, Tensor, ops
void bind_execution(py::module_& m);  // python/src/execution.cc: devices, mark_step, sync
void bind_debug(py::module_& m);      // python/src/debug.cc: podsim.debug (metrics, reports)
void bind_nn(py::module_& m);         // python/src/nn.cc: _podsim.nn (layers, losses, functional)
void bind_data(py::module_& m);       // python/src/data.cc: podsim.data
void bind_distributed(py::module_& m);  // python/src/distributed.cc: podsim.distributed
void bind_sim(py::module_& m);        // python/src/sim.cc: podsim.hlo, podsim.profile, podsim.topology
void bind_optim(py::module_& m);      // python/src/optim.cc: podsim.optim, nn.utils (after bind_nn)

}  // namespace podsim::python
