// The _podsim extension module: `import podsim` (python/podsim/__init__.py) re-exports it.
// podsim::Error becomes podsim.Error (a RuntimeError) with the same message; where the
// message starts with the location of a call made by these bindings, that location is
// replaced by the Python caller's file:line, which is where the mistake was written.
#include <Python.h>
#include <frameobject.h>

#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "python/src/bindings.h"
#include "runtime/lazy/debug_report.h"

namespace podsim::python {
namespace {

// The folder of these sources, as the compiler spells __FILE__ in a source_location.
constexpr std::string_view bindings_dir() {
  std::string_view file = __FILE__;
  return file.substr(0, file.rfind('/') + 1);
}

// "file:line" of a frame, and its function's name.
std::pair<std::string, std::string> where_and_what(PyFrameObject* frame) {
  PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
  std::string file = py::str(reinterpret_cast<PyObject*>(code->co_filename));
  std::string name = py::str(reinterpret_cast<PyObject*>(code->co_name));
  Py_DECREF(code);
  return {file + ":" + std::to_string(PyFrame_GetLineNumber(frame)), name};
}

std::string python_caller_location() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  return frame != nullptr ? where_and_what(frame).first : std::string();
}

std::string with_python_location(const std::string& message) {
  if (!message.starts_with(bindings_dir())) return message;
  size_t colon = message.find(':', bindings_dir().size());  // after the file name
  if (colon == std::string::npos) return message;
  size_t end = message.find(':', colon + 1);  // after the line number
  std::string where = python_caller_location();
  if (end == std::string::npos || where.empty()) return message;
  return where + message.substr(end);
}

// The Python frames of the calling thread, innermost first (for the debug reports, which
// run with the GIL released; none on a thread that runs no Python).
std::vector<std::string> python_frames() {
  std::vector<std::string> out;
  if (!Py_IsInitialized()) return out;
  py::gil_scoped_acquire gil;
  PyFrameObject* frame = PyEval_GetFrame();
  if (frame != nullptr) Py_INCREF(frame);
  for (int depth = 0; frame != nullptr && depth < 10; ++depth) {
    auto [where, what] = where_and_what(frame);
    out.push_back(what + " (" + where + ")");
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference or null
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return out;
}

bool is_instance_of_numpy(py::handle value, const char* type) {
  // NumPy is imported only when a value might be one of its scalars.
  PyObject* module = PyImport_GetModule(py::str("numpy").ptr());  // new reference or null
  if (module == nullptr) return false;
  py::object numpy = py::reinterpret_steal<py::object>(module);
  return py::isinstance(value, numpy.attr(type));
}

}  // namespace

std::optional<Scalar> as_scalar(py::handle value) {
  PyObject* v = value.ptr();
  // Python's own numbers first (the common case), then NumPy's scalars and __index__.
  if (PyBool_Check(v)) return Scalar(v == Py_True);
  if (PyFloat_Check(v)) return Scalar(PyFloat_AS_DOUBLE(v));
  if (PyLong_Check(v)) return Scalar(value.cast<int64_t>());
  if (py::isinstance<Tensor>(value)) return std::nullopt;  // though 1-element tensors have __index__
  if (is_instance_of_numpy(value, "bool_")) return Scalar(PyObject_IsTrue(v) == 1);
  if (is_instance_of_numpy(value, "floating")) return Scalar(value.cast<double>());
  if (PyIndex_Check(v)) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v));
    if (!index) throw py::error_already_set();
    return Scalar(index.cast<int64_t>());
  }
  return std::nullopt;
}

}  // namespace podsim::python

PYBIND11_MODULE(_podsim, m) {
  namespace py = pybind11;
  using namespace podsim::python;
  m.doc() = "podsim: lazy tensors on simulated TPU pods, the host CPU and OpenCL GPUs";
  static py::exception<podsim::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const podsim::Error& e) {
      PyErr_SetString(error.ptr(), with_python_location(e.what()).c_str());
    }
  });
  podsim::lazy::set_frame_source(python_frames);
  bind_tensor(m);
  bind_execution(m);
  py::module_ debug = m.def_submodule("debug", "Metrics and debug reports (as torch_xla.debug.metrics)");
  bind_debug(debug);
  bind_nn(m);
  bind_optim(m);
  bind_data(m);
  bind_sim(m);
  bind_distributed(m);
}
