// podsim.Tensor and its ops, with PyTorch's Python spelling: operators, broadcasting
// Python numbers, dims given as an int or a sequence, sizes as varargs or one sequence,
// numpy() / from_numpy(), item(), indexing by ints, slices, None, ... and 1-D index
// tensors. Calls that may run a graph (reading values, repr) release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "python/src/bindings.h"
#include "runtime/autograd/autograd.h"

namespace podsim::python {
namespace {

using namespace pybind11::literals;

using pjrt::Device;
using release_gil = py::call_guard<py::gil_scoped_release>;

// ---- dtypes ------------------------------------------------------------------------

struct DTypeName {
  DType dtype;
  const char* name;   // podsim.<name>, as torch spells it
  const char* numpy;  // NumPy's name; null where NumPy has none
};
constexpr DTypeName kDTypes[] = {
    {kBool, "bool", "bool"},         {kUInt8, "uint8", "uint8"},       {kInt8, "int8", "int8"},
    {kInt16, "int16", "int16"},      {kInt32, "int32", "int32"},       {kInt64, "int64", "int64"},
    {DType::kU16, "uint16", "uint16"}, {DType::kU32, "uint32", "uint32"}, {DType::kU64, "uint64", "uint64"},
    {kFloat16, "float16", "float16"}, {kBFloat16, "bfloat16", nullptr}, {kFloat32, "float32", "float32"},
    {kFloat64, "float64", "float64"},
};

const DTypeName& dtype_entry(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d;
  fail("dtype {} has no Python name", ir::type_name(dtype));
}

DType dtype_of_numpy(const py::dtype& numpy_dtype) {
  const std::string name = py::str(numpy_dtype.attr("name"));
  for (const DTypeName& d : kDTypes)
    if (d.numpy != nullptr && name == d.numpy) return d.dtype;
  throw py::type_error("podsim has no dtype for NumPy's " + name);
}

py::object numpy_module() { return py::module_::import("numpy"); }

// ---- arguments ---------------------------------------------------------------------

// reshape(2, 3) or reshape((2, 3)).
std::vector<int64_t> sizes_of(const py::args& args, const char* what) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return int_list(args[0], what);
  return int_list(args, what);
}

// dim=None (every dimension), an int or a sequence.
std::vector<int64_t> dims_of(const py::object& dim) { return dim.is_none() ? std::vector<int64_t>{} : int_list(dim, "dim"); }

py::object scalar_to_python(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kBool: return py::bool_(s.to_bool());
    case Scalar::Kind::kInt: return py::int_(s.to_int());
    case Scalar::Kind::kFloat: return py::float_(s.to_double());
  }
  return py::none();
}

// ---- NumPy -------------------------------------------------------------------------

Tensor tensor_from_numpy(const py::array& source, Device* device) {
  return Tensor::from_literal(literal_from_numpy(source), device);
}

// torch.tensor(data): NumPy arrays keep their dtype; Python floats become float32.
Tensor tensor_from_data(const py::object& data, std::optional<DType> dtype, Device* device, bool requires_grad) {
  Tensor t;
  if (py::isinstance<Tensor>(data)) {
    t = data.cast<Tensor>().detach();
    if (device != nullptr) t = t.to(*device);
  } else {
    const bool is_array = py::isinstance<py::array>(data);
    py::array array = numpy_module().attr("asarray")(data);
    if (!is_array && array.dtype().kind() == 'f') array = array.attr("astype")("float32");
    if (array.dtype().kind() == 'O' || array.dtype().kind() == 'U')
      throw py::type_error("podsim.tensor: data must be numbers (nested sequences of one length each)");
    t = tensor_from_numpy(array, device);
  }
  if (dtype && *dtype != t.dtype()) t = t.to(*dtype);
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// ---- Binary ops with a Python number on either side ----------------------------------

template <typename TT, typename TS, typename ST>
py::object binary(const char* op, py::handle a, py::handle b, TT tt, TS ts, ST st) {
  const bool a_tensor = py::isinstance<Tensor>(a), b_tensor = py::isinstance<Tensor>(b);
  if (a_tensor && b_tensor) return py::cast(tt(a.cast<const Tensor&>(), b.cast<const Tensor&>()));
  if (a_tensor)
    if (auto s = as_scalar(b)) return py::cast(ts(a.cast<const Tensor&>(), *s));
  if (b_tensor)
    if (auto s = as_scalar(a)) return py::cast(st(*s, b.cast<const Tensor&>()));
  throw py::type_error(std::string(op) + ": operands must be tensors or Python numbers, not " +
                       std::string(py::str(py::type::handle_of(a).attr("__name__"))) + " and " +
                       std::string(py::str(py::type::handle_of(b).attr("__name__"))));
}

// A Python operator returns NotImplemented for an operand it does not know.
template <typename F>
py::object or_not_implemented(py::handle other, F f) {
  if (!py::isinstance<Tensor>(other) && !as_scalar(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return f();
}

#define PODSIM_BINARY(name, fn)                                                                      \
  [](py::handle a, py::handle b) {                                                                   \
    return binary(                                                                                   \
        name, a, b, [](const Tensor& x, const Tensor& y) { return fn(x, y); },                       \
        [](const Tensor& x, Scalar y) { return fn(x, y); }, [](Scalar x, const Tensor& y) { return fn(x, y); }); \
  }
#define PODSIM_COMMUTATIVE(name, fn)                                                                 \
  [](py::handle a, py::handle b) {                                                                   \
    return binary(                                                                                   \
        name, a, b, [](const Tensor& x, const Tensor& y) { return fn(x, y); },                       \
        [](const Tensor& x, Scalar y) { return fn(x, y); }, [](Scalar x, const Tensor& y) { return fn(y, x); }); \
  }
// Comparisons: a number on the left compares the other way round.
#define PODSIM_COMPARISON(name, fn, flipped)                                                         \
  [](py::handle a, py::handle b) {                                                                   \
    return binary(                                                                                   \
        name, a, b, [](const Tensor& x, const Tensor& y) { return fn(x, y); },                       \
        [](const Tensor& x, Scalar y) { return fn(x, y); }, [](Scalar x, const Tensor& y) { return flipped(y, x); }); \
  }

// ---- Indexing ----------------------------------------------------------------------

Tensor index(const Tensor& self, py::handle key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  int64_t consumed = 0;  // dims of self the key names
  for (py::handle item : items)
    if (!item.is_none() && item.ptr() != Py_Ellipsis) ++consumed;
  if (consumed > self.dim())
    throw py::index_error("too many indices for a tensor of " + std::to_string(self.dim()) + " dimensions");
  Tensor out = self;
  int64_t dim = 0;  // the dimension of `out` the next item applies to
  for (py::handle item : items) {
    if (item.ptr() == Py_Ellipsis) {
      dim += self.dim() - consumed;
    } else if (item.is_none()) {
      out = out.unsqueeze(dim++);
    } else if (PySlice_Check(item.ptr())) {
      auto slice = py::reinterpret_borrow<py::slice>(item);
      auto bound = [](py::handle v) { return v.is_none() ? std::optional<int64_t>() : v.cast<int64_t>(); };
      const std::optional<int64_t> step = bound(slice.attr("step"));
      if (step && *step <= 0) throw py::value_error("slice step must be positive");
      out = out.slice(dim++, bound(slice.attr("start")), bound(slice.attr("stop")), step.value_or(1));
    } else if (py::isinstance<Tensor>(item)) {  // before __index__, which 1-element tensors have
      const Tensor& index = item.cast<const Tensor&>();
      if (index.dim() != 1) throw py::type_error("an index tensor must be 1-D");
      out = out.index_select(dim++, index);
    } else if (PyIndex_Check(item.ptr())) {
      int64_t i = item.cast<int64_t>();
      const int64_t size = out.size(dim);
      if (i < -size || i >= size)
        throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension of size " + std::to_string(size));
      if (i < 0) i += size;
      out = out.narrow(dim, i, 1).squeeze(dim);
    } else {
      throw py::type_error("tensors are indexed by ints, slices, None, ... and 1-D index tensors");
    }
  }
  return out;
}

// t.max() / t.max(dim, keepdim): torch gives (values, indices) when a dim is named.
py::object max_or_min(const Tensor& x, const py::object& dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return py::cast(is_max ? max(x) : min(x));
  const int64_t d = dim.cast<int64_t>();
  Tensor values = is_max ? max(x, {d}, keepdim) : min(x, {d}, keepdim);
  Tensor indices = is_max ? argmax(x, d, keepdim) : argmin(x, d, keepdim);
  return py::make_tuple(values, indices);
}

Tensor to(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  Device* device = nullptr;
  std::optional<DType> dtype;
  auto take = [&](py::handle v) {
    if (py::isinstance<Device>(v)) device = v.cast<Device*>();
    else if (py::isinstance<DType>(v)) dtype = v.cast<DType>();
    else if (!v.is_none()) throw py::type_error("to(): expects a podsim device and/or a dtype");
  };
  for (py::handle a : args) take(a);
  for (auto [k, v] : kwargs) {
    const std::string key = py::str(k);
    if (key != "device" && key != "dtype") throw py::type_error("to(): unexpected keyword " + key);
    take(v);
  }
  py::gil_scoped_release release;
  Tensor out = self;
  if (device != nullptr) out = out.to(*device);
  if (dtype) out = out.to(*dtype);
  return out;
}

}  // namespace

std::vector<int64_t> int_list(py::handle value, const char* what) {
  if (PyIndex_Check(value.ptr())) return {value.cast<int64_t>()};
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
    throw py::type_error(std::string(what) + " must be an int or a sequence of ints");
  std::vector<int64_t> out;
  for (py::handle item : value) {
    if (!PyIndex_Check(item.ptr())) throw py::type_error(std::string(what) + " must be an int or a sequence of ints");
    out.push_back(item.cast<int64_t>());
  }
  return out;
}

py::dict to_dict(const NamedTensors& named) {
  py::dict out;
  for (const auto& [name, tensor] : named) out[py::str(name)] = tensor;
  return out;
}

NamedTensors from_dict(const py::dict& state) {
  NamedTensors out;
  for (auto [name, tensor] : state) out.emplace_back(name.cast<std::string>(), tensor.cast<Tensor>());
  return out;
}

py::array literal_to_numpy(ir::Literal literal) {
  const DTypeName& entry = dtype_entry(literal.type());
  if (entry.numpy == nullptr)
    throw py::type_error(std::string("NumPy has no ") + entry.name + "; convert first: t.to(podsim.float32).numpy()");
  auto* owned = new ir::Literal(std::move(literal));
  py::capsule keeper(owned, [](void* p) { delete static_cast<ir::Literal*>(p); });
  const std::vector<int64_t>& dims = owned->shape().dims();
  return py::array(py::dtype(entry.numpy), std::vector<py::ssize_t>(dims.begin(), dims.end()), {},
                   owned->bytes().data(), keeper);
}

ir::Literal literal_from_numpy(const py::array& source) {
  // (np.ascontiguousarray would make a 0-d array 1-d.)
  py::array array = numpy_module().attr("require")(source, py::none(), "C");
  const DType dtype = dtype_of_numpy(array.dtype());
  ir::Literal literal(ir::Shape(dtype, std::vector<int64_t>(array.shape(), array.shape() + array.ndim())));
  if (static_cast<size_t>(array.nbytes()) != literal.bytes().size())
    fail("from_numpy: {} bytes for a literal of {}", array.nbytes(), literal.bytes().size());
  std::memcpy(literal.bytes().data(), array.data(), literal.bytes().size());
  return literal;
}

void bind_tensor(py::module_& m) {
  py::enum_<DType> dtype(m, "dtype", "Element types, named as torch names them (podsim.float32, ...)");
  for (const DTypeName& d : kDTypes) {
    dtype.value(d.name, d.dtype);
    m.attr(d.name) = d.dtype;
  }
  // Replacing (not overloading) the enum's own __repr__ and __str__.
  auto spelled = py::cpp_function([](DType d) { return std::string("podsim.") + dtype_entry(d).name; }, py::is_method(dtype));
  dtype.attr("__repr__") = spelled;
  dtype.attr("__str__") = spelled;
  dtype.def_property_readonly("is_floating_point", [](DType d) { return ir::is_float(d); });
  dtype.def_property_readonly("itemsize", [](DType d) { return ir::type_byte_size(d); });
  for (auto [alias, d] : {std::pair{"float", kFloat32}, {"double", kFloat64}, {"half", kFloat16}, {"long", kInt64},
                          {"int", kInt32}, {"short", kInt16}})
    m.attr(alias) = d;

  py::class_<Tensor> t(m, "Tensor", "A lazy tensor: ops record a graph that mark_step() runs");
  t.def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("shape", [](const Tensor& self) { return py::tuple(py::cast(self.shape())); })
      .def("size", [](const Tensor& self, std::optional<int64_t> dim) -> py::object {
             if (dim) return py::int_(self.size(*dim));
             return py::tuple(py::cast(self.shape()));
           }, py::arg("dim") = py::none())
      .def("dim", &Tensor::dim)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def_property_readonly("device", &Tensor::device, py::return_value_policy::reference,
                             "The podsim device, or None for a host tensor")
      .def_property_readonly("is_pending", &Tensor::is_pending, "Whether the value is an unexecuted graph")
      .def("__len__", [](const Tensor& self) {
        if (self.dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return self.size(0);
      })
      .def("__hash__", [](const Tensor& self) { return reinterpret_cast<intptr_t>(self.impl().get()); })
      .def("__repr__", [](const Tensor& self) { return self.to_string(); }, release_gil())
      .def("numpy", [](const Tensor& self) {
             ir::Literal literal = [&] {
               py::gil_scoped_release release;
               return self.detach().to_literal();
             }();
             return literal_to_numpy(std::move(literal));
           }, "The value as a NumPy array (the bytes read from the device, not copied again)")
      .def("__array__", [](const Tensor& self, py::object dtype) {
             py::gil_scoped_release release;
             ir::Literal literal = self.detach().to_literal();
             py::gil_scoped_acquire acquire;
             py::array a = literal_to_numpy(std::move(literal));
             return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
           }, py::arg("dtype") = py::none())
      .def("item", [](const Tensor& self) {
             Scalar s = [&] {
               py::gil_scoped_release release;
               return self.item();
             }();
             return scalar_to_python(s);
           })
      .def("tolist", [](const Tensor& self) { return py::cast(self).attr("numpy")().attr("tolist")(); })
      .def("__bool__", [](const Tensor& self) {
        py::gil_scoped_release release;
        return self.item().to_bool();
      })
      .def("__float__", [](const Tensor& self) {
        py::gil_scoped_release release;
        return self.item().to_double();
      })
      .def("__int__", [](const Tensor& self) {
        py::gil_scoped_release release;
        return self.item().to_int();
      })
      .def("__index__", [](const Tensor& self) {
        if (ir::is_float(self.dtype()) || self.numel() != 1) throw py::type_error("only 1-element integral tensors are indices");
        py::gil_scoped_release release;
        return self.item().to_int();
      })
      .def("to", &to, "to(device), to(dtype) or both; moving data runs the graph it needs")
      .def("cpu", [](const Tensor& self) { return self.cpu(); }, release_gil(), "A host tensor of the value")
      .def("float", [](const Tensor& self) { return self.to(kFloat32); })
      .def("double", [](const Tensor& self) { return self.to(kFloat64); })
      .def("long", [](const Tensor& self) { return self.to(kInt64); })
      .def("int", [](const Tensor& self) { return self.to(kInt32); })
      .def("bool", [](const Tensor& self) { return self.to(kBool); })
      .def("bfloat16", [](const Tensor& self) { return self.to(kBFloat16); })
      // Autograd.
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& self, bool on) { self.requires_grad_(on); })
      .def("requires_grad_", [](Tensor& self, bool on) { return self.requires_grad_(on); },
           py::arg("requires_grad") = true)
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad",
                    [](const Tensor& self) -> py::object {
                      Tensor g = self.grad();
                      return g.defined() ? py::cast(g) : py::none();
                    },
                    [](Tensor& self, std::optional<Tensor> g) { self.set_grad(g.value_or(Tensor())); })
      .def("backward", [](const Tensor& self, std::optional<Tensor> gradient) { self.backward(gradient.value_or(Tensor())); },
           py::arg("gradient") = py::none())
      .def("detach", &Tensor::detach)
      .def("copy_", [](Tensor& self, const Tensor& source) { return self.copy_(source); })
      // Shapes.
      .def("reshape", [](const Tensor& self, py::args shape) { return self.reshape(sizes_of(shape, "shape")); })
      .def("view", [](const Tensor& self, py::args shape) { return self.view(sizes_of(shape, "shape")); })
      .def("permute", [](const Tensor& self, py::args dims) { return self.permute(sizes_of(dims, "dims")); })
      .def("expand", [](const Tensor& self, py::args sizes) { return self.expand(sizes_of(sizes, "sizes")); })
      .def("transpose", [](const Tensor& self, int64_t a, int64_t b) { return self.transpose(a, b); })
      .def("t", [](const Tensor& self) { return self.t(); })
      .def_property_readonly("T", [](const Tensor& self) {
        std::vector<int64_t> dims(static_cast<size_t>(self.dim()));
        for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(dims.size() - 1 - i);
        return self.permute(dims);
      })
      .def("squeeze", [](const Tensor& self, std::optional<int64_t> dim) { return squeeze(self, dim); },
           py::arg("dim") = py::none())
      .def("unsqueeze", [](const Tensor& self, int64_t dim) { return self.unsqueeze(dim); })
      .def("flatten", [](const Tensor& self, int64_t start, int64_t end) { return self.flatten(start, end); },
           py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("slice", [](const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                       int64_t step) { return self.slice(dim, start, end, step); },
           py::arg("dim"), py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("step") = 1,
           "x[start:end:step] along dim, with Python's clamping")
      .def("narrow", [](const Tensor& self, int64_t dim, int64_t start, int64_t length) { return self.narrow(dim, start, length); })
      .def("index_select", [](const Tensor& self, int64_t dim, const Tensor& i) { return self.index_select(dim, i); })
      .def("gather", [](const Tensor& self, int64_t dim, const Tensor& i) { return self.gather(dim, i); })
      .def("__getitem__", &index)
      .def("__setitem__", [](const Tensor&, py::handle, py::handle) {
        throw py::type_error("podsim tensors do not alias storage: build the new value (podsim.where, podsim.cat) "
                             "and copy_ it into place");
      })
      // Reductions.
      .def("sum", [](const Tensor& self, py::object dim, bool keepdim) { return self.sum(dims_of(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("mean", [](const Tensor& self, py::object dim, bool keepdim) { return self.mean(dims_of(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("max", [](const Tensor& self, py::object dim, bool keepdim) { return max_or_min(self, dim, keepdim, true); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("min", [](const Tensor& self, py::object dim, bool keepdim) { return max_or_min(self, dim, keepdim, false); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amax", [](const Tensor& self, py::object dim, bool keepdim) { return self.max(dims_of(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amin", [](const Tensor& self, py::object dim, bool keepdim) { return self.min(dims_of(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmax", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) { return self.argmax(dim, keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmin", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) { return self.argmin(dim, keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("logsumexp", [](const Tensor& self, py::object dim, bool keepdim) { return self.logsumexp(dims_of(dim), keepdim); },
           py::arg("dim"), py::arg("keepdim") = false)
      .def("softmax", [](const Tensor& self, int64_t dim) { return self.softmax(dim); }, py::arg("dim"))
      .def("log_softmax", [](const Tensor& self, int64_t dim) { return self.log_softmax(dim); }, py::arg("dim"))
      // Elementwise.
      .def("exp", [](const Tensor& self) { return self.exp(); })
      .def("log", [](const Tensor& self) { return self.log(); })
      .def("sqrt", [](const Tensor& self) { return self.sqrt(); })
      .def("rsqrt", [](const Tensor& self) { return rsqrt(self); })
      .def("abs", [](const Tensor& self) { return self.abs(); })
      .def("neg", [](const Tensor& self) { return neg(self); })
      .def("relu", [](const Tensor& self) { return self.relu(); })
      .def("sigmoid", [](const Tensor& self) { return self.sigmoid(); })
      .def("tanh", [](const Tensor& self) { return self.tanh(); })
      .def("clamp", [](const Tensor& self, std::optional<double> lo, std::optional<double> hi) {
             auto s = [](std::optional<double> v) { return v ? std::optional<Scalar>(*v) : std::nullopt; };
             return self.clamp(s(lo), s(hi));
           }, py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("matmul", [](const Tensor& self, const Tensor& other) { return self.matmul(other); })
      .def("__matmul__", [](const Tensor& self, const Tensor& other) { return self.matmul(other); })
      .def("__neg__", [](const Tensor& self) { return neg(self); })
      .def("__abs__", [](const Tensor& self) { return self.abs(); });

  // Arithmetic and comparison: functions, methods and operators, with Python numbers on
  // either side (an operator returns NotImplemented for an operand it does not know).
  auto binary_op = [&](const char* name, const char* op, const char* rop, auto fn) {
    m.def(name, fn);
    t.def(name, fn);
    t.def(op, [fn](py::handle a, py::handle b) { return or_not_implemented(b, [&] { return fn(a, b); }); });
    if (rop != nullptr)
      t.def(rop, [fn](py::handle a, py::handle b) { return or_not_implemented(b, [&] { return fn(b, a); }); });
  };
  binary_op("add", "__add__", "__radd__", PODSIM_COMMUTATIVE("add", add));
  binary_op("sub", "__sub__", "__rsub__", PODSIM_BINARY("sub", sub));
  binary_op("mul", "__mul__", "__rmul__", PODSIM_COMMUTATIVE("mul", mul));
  binary_op("div", "__truediv__", "__rtruediv__", PODSIM_BINARY("div", div));
  binary_op("pow", "__pow__", "__rpow__", PODSIM_BINARY("pow", pow));
  binary_op("lt", "__lt__", nullptr, PODSIM_COMPARISON("lt", lt, gt));
  binary_op("le", "__le__", nullptr, PODSIM_COMPARISON("le", le, ge));
  binary_op("gt", "__gt__", nullptr, PODSIM_COMPARISON("gt", gt, lt));
  binary_op("ge", "__ge__", nullptr, PODSIM_COMPARISON("ge", ge, le));
  binary_op("eq", "__eq__", nullptr, PODSIM_COMPARISON("eq", eq, eq));
  binary_op("ne", "__ne__", nullptr, PODSIM_COMPARISON("ne", ne, ne));
  auto in_place = [&](const char* name, auto fn) {
    t.def(name, [name, fn](Tensor& self, py::handle other) -> Tensor& {
      if (py::isinstance<Tensor>(other)) return fn(self, other.cast<const Tensor&>());
      if (auto s = as_scalar(other)) return fn(self, *s);
      throw py::type_error(std::string(name) + ": the operand must be a tensor or a Python number");
    });
  };
  in_place("__iadd__", [](Tensor& a, const auto& b) -> Tensor& { return a += b; });
  in_place("__isub__", [](Tensor& a, const auto& b) -> Tensor& { return a -= b; });
  in_place("__imul__", [](Tensor& a, const auto& b) -> Tensor& { return a *= b; });
  in_place("__itruediv__", [](Tensor& a, const auto& b) -> Tensor& { return a /= b; });

  // ---- Functions -------------------------------------------------------------------
  m.def("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); });
  m.def("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); });
  m.def("where", [](const Tensor& c, py::handle a, py::handle b) {
    return binary(
        "where", a, b, [&](const Tensor& x, const Tensor& y) { return where(c, x, y); },
        [&](const Tensor& x, Scalar y) { return where(c, x, y); }, [&](Scalar x, const Tensor& y) { return where(c, x, y); });
  });
  m.def("matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); });
  m.def("gelu", [](const Tensor& x, const std::string& approximate) {
    if (approximate != "none" && approximate != "tanh") throw py::value_error("gelu: approximate is 'none' or 'tanh'");
    return gelu(x, approximate == "tanh" ? GeluApproximate::kTanh : GeluApproximate::kNone);
  }, py::arg("input"), py::arg("approximate") = "none");
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "abs", "neg", "relu", "sigmoid", "tanh", "sum", "mean", "max",
                           "min", "amax", "amin", "argmax", "argmin", "logsumexp", "softmax", "log_softmax", "reshape",
                           "permute", "transpose", "squeeze", "unsqueeze", "flatten", "narrow", "index_select", "gather",
                           "clamp", "t"})
    m.def(name, [name](py::handle x, py::args args, py::kwargs kwargs) {
      if (!py::isinstance<Tensor>(x)) throw py::type_error(std::string(name) + ": the first argument must be a podsim.Tensor");
      return x.attr(name)(*args, **kwargs);
    });
  m.def("cat", [](const std::vector<Tensor>& ts, int64_t dim) { return cat(ts, dim); }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("stack", [](const std::vector<Tensor>& ts, int64_t dim) { return stack(ts, dim); }, py::arg("tensors"), py::arg("dim") = 0);

  m.def("tensor", &tensor_from_data, py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false,
        "A tensor of data (numbers, nested sequences or a NumPy array; Python floats become float32)");
  m.def("from_numpy", [](const py::array& a) { return tensor_from_numpy(a, nullptr); },
        "A host tensor of the array's dtype and values (copied: podsim tensors own their storage)");
  auto creation = [&](const char* name, auto fn) {
    m.def(name, [fn](py::args size, std::optional<DType> dtype, Device* device, bool requires_grad) {
      Tensor out = fn(sizes_of(size, "size"), options_of(dtype, device));
      if (requires_grad) out.requires_grad_(true);
      return out;
    }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  };
  creation("zeros", [](std::vector<int64_t> s, TensorOptions o) { return zeros(std::move(s), o); });
  creation("ones", [](std::vector<int64_t> s, TensorOptions o) { return ones(std::move(s), o); });
  creation("rand", [](std::vector<int64_t> s, TensorOptions o) { return rand(std::move(s), o); });
  creation("randn", [](std::vector<int64_t> s, TensorOptions o) { return randn(std::move(s), o); });
  m.def("full", [](py::handle size, py::handle value, std::optional<DType> dtype, Device* device) {
    auto s = as_scalar(value);
    if (!s) throw py::type_error("full: the fill value must be a Python number");
    return full(int_list(size, "size"), *s, options_of(dtype, device));
  }, py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("arange", [](py::handle a, py::handle b, py::handle step, std::optional<DType> dtype, Device* device) {
    auto scalar = [](py::handle v) {
      auto s = as_scalar(v);
      if (!s) throw py::type_error("arange: bounds and step must be Python numbers");
      return *s;
    };
    if (b.is_none()) return arange(scalar(a), options_of(dtype, device));
    return arange(scalar(a), scalar(b), scalar(step), options_of(dtype, device));
  }, py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(), py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
  for (const char* name : {"zeros", "ones", "rand", "randn"})
    m.def((std::string(name) + "_like").c_str(), [name](const Tensor& x, std::optional<DType> dtype) {
      return py::module_::import("podsim").attr(name)(py::cast(x.shape()), "dtype"_a = dtype.value_or(x.dtype()),
                                                      "device"_a = py::cast(x.device(), py::return_value_policy::reference));
    }, py::arg("input"), py::kw_only(), py::arg("dtype") = py::none());
  m.def("manual_seed", &manual_seed, py::arg("seed"), "Seeds the generators of every device and of the host");

  // torch.no_grad() as a context manager (grad mode is per thread, as in torch).
  struct NoGrad {
    std::unique_ptr<NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "no_grad", "with podsim.no_grad(): ops record no backward nodes")
      .def(py::init<>())
      .def("__enter__", [](NoGrad& self) { self.guard = std::make_unique<NoGradGuard>(); })
      .def("__exit__", [](NoGrad& self, py::args) { self.guard.reset(); });
  m.def("is_grad_enabled", &is_grad_enabled);
  py::module_ autograd = m.def_submodule("autograd", "torch.autograd's functional forms");
  autograd.def("grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                          std::optional<std::vector<Tensor>> grad_outputs, bool retain_graph) {
    std::vector<py::object> out;
    for (const Tensor& g : grad(outputs, inputs, grad_outputs.value_or(std::vector<Tensor>{}), retain_graph))
      out.push_back(g.defined() ? py::cast(g) : py::none());
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(), py::arg("retain_graph") = false,
     "The gradients of outputs with respect to inputs (None for an input they do not depend on)");
}

}  // namespace podsim::python
