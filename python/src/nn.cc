// podsim.nn's C++ layers and podsim.nn.functional. The layers are runtime/nn/'s modules
// with torch's constructor signatures; podsim.nn.Module (python/podsim/nn.py), the base
// class of models written in Python, holds them as children like its own submodules.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/nn/nn.h"

namespace podsim::python {
namespace {

using nn::Int2;
using nn::Module;
using nn::Reduction;
using pjrt::Device;

Int2 int2_of(py::handle value) {
  const std::vector<int64_t> pair = int_list(value, "a size");
  if (pair.size() == 1) return Int2(pair[0]);
  if (pair.size() != 2) throw py::value_error("expected an int or a pair of ints");
  return Int2(pair[0], pair[1]);
}
std::optional<Int2> optional_int2(py::handle value) {
  return value.is_none() ? std::nullopt : std::optional<Int2>(int2_of(value));
}

Reduction reduction_of(const std::string& name) {
  if (name == "mean") return Reduction::kMean;
  if (name == "sum") return Reduction::kSum;
  if (name == "none") return Reduction::kNone;
  throw py::value_error("reduction is 'mean', 'sum' or 'none', not '" + name + "'");
}

Tensor or_undefined(const std::optional<Tensor>& t) { return t.value_or(Tensor()); }

py::object optional_tensor(const Tensor& t) { return t.defined() ? py::cast(t) : py::none(); }

}  // namespace

void bind_nn(py::module_& m) {
  py::module_ nn_module = m.def_submodule("nn", "runtime/nn's modules (podsim.nn re-exports them)");
  // The C++ module tree; models written in Python derive from podsim.nn.Module instead.
  py::class_<Module, std::shared_ptr<Module>>(nn_module, "_CModule")
      .def("__call__", [](Module& self, const Tensor& x) { return self.forward(x); })
      .def("forward", [](Module& self, const Tensor& x) { return self.forward(x); })
      .def("named_parameters", [](const Module& self, const std::string& prefix, bool recurse) {
             py::list out;
             for (auto& [name, t] : self.named_parameters(recurse)) out.append(py::make_tuple(prefix + name, t));
             return out;
           }, py::arg("prefix") = "", py::arg("recurse") = true)
      .def("parameters", [](const Module& self, bool recurse) { return self.parameters(recurse); },
           py::arg("recurse") = true)
      .def("named_buffers", [](const Module& self, const std::string& prefix, bool recurse) {
             py::list out;
             for (auto& [name, t] : self.named_buffers(recurse)) out.append(py::make_tuple(prefix + name, t));
             return out;
           }, py::arg("prefix") = "", py::arg("recurse") = true)
      .def("buffers", [](const Module& self, bool recurse) { return self.buffers(recurse); }, py::arg("recurse") = true)
      .def("named_children", &Module::named_children)
      .def("state_dict", [](const Module& self) { return to_dict(self.state_dict()); })
      .def("load_state_dict", [](Module& self, const py::dict& state, bool strict) {
             nn::LoadResult r = self.load_state_dict(from_dict(state), strict);
             return py::make_tuple(r.missing_keys, r.unexpected_keys);
           }, py::arg("state_dict"), py::arg("strict") = true,
           "Copies the values in; returns (missing_keys, unexpected_keys) (errors when strict)")
      .def("train", [](Module& self, bool mode) -> Module& { return self.train(mode); }, py::arg("mode") = true)
      .def("eval", [](Module& self) -> Module& { return self.eval(); })
      .def_property_readonly("training", &Module::is_training)
      .def("to", [](Module& self, Device& device) -> Module& { return self.to(device); }, py::arg("device"))
      .def("zero_grad", [](Module& self, bool set_to_none) {
             if (!set_to_none) throw py::value_error("zero_grad: podsim modules clear grads (set_to_none=True)");
             self.zero_grad();
           }, py::arg("set_to_none") = true)
      .def("__repr__", [](const Module& self) { return self.type_name() + "()"; });

  auto layer = [&]<typename M>(const char* name) {
    return py::class_<M, Module, std::shared_ptr<M>>(nn_module, name);
  };
  // A loss: forward(input, target), called as loss(input, target).
  auto loss = [&]<typename M>(const char* name) {
    auto forward = [](M& self, const Tensor& input, const Tensor& target) { return self.forward(input, target); };
    return layer.template operator()<M>(name).def("__call__", forward).def("forward", forward);
  };
  layer.operator()<nn::Linear>("Linear")
      .def(py::init([](int64_t in, int64_t out, bool bias, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::Linear>(in, out, bias, options_of(dtype, device));
           }), py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true, py::kw_only(),
           py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("weight", &nn::Linear::weight)
      .def_property_readonly("bias", [](const nn::Linear& l) { return optional_tensor(l.bias()); });
  layer.operator()<nn::Embedding>("Embedding")
      .def(py::init([](int64_t n, int64_t dim, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::Embedding>(n, dim, options_of(dtype, device));
           }), py::arg("num_embeddings"), py::arg("embedding_dim"), py::kw_only(), py::arg("device") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("weight", &nn::Embedding::weight);
  layer.operator()<nn::LayerNorm>("LayerNorm")
      .def(py::init([](py::handle shape, double eps, bool affine, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::LayerNorm>(int_list(shape, "normalized_shape"), eps, affine, options_of(dtype, device));
           }), py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true, py::kw_only(),
           py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("weight", [](const nn::LayerNorm& l) { return optional_tensor(l.weight()); })
      .def_property_readonly("bias", [](const nn::LayerNorm& l) { return optional_tensor(l.bias()); });
  layer.operator()<nn::BatchNorm2d>("BatchNorm2d")
      .def(py::init([](int64_t features, double eps, double momentum, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::BatchNorm2d>(features, eps, momentum, options_of(dtype, device));
           }), py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::kw_only(),
           py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("weight", &nn::BatchNorm2d::weight)
      .def_property_readonly("bias", &nn::BatchNorm2d::bias)
      .def_property_readonly("running_mean", &nn::BatchNorm2d::running_mean)
      .def_property_readonly("running_var", &nn::BatchNorm2d::running_var);
  layer.operator()<nn::RMSNorm>("RMSNorm")
      .def(py::init([](py::handle shape, std::optional<double> eps, bool affine, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::RMSNorm>(int_list(shape, "normalized_shape"), eps, affine, options_of(dtype, device));
           }), py::arg("normalized_shape"), py::arg("eps") = py::none(), py::arg("elementwise_affine") = true,
           py::kw_only(), py::arg("device") = py::none(), py::arg("dtype") = py::none());
  layer.operator()<nn::Dropout>("Dropout").def(py::init<double>(), py::arg("p") = 0.5);
  layer.operator()<nn::ReLU>("ReLU").def(py::init<>());
  layer.operator()<nn::SiLU>("SiLU").def(py::init<>());
  layer.operator()<nn::Tanh>("Tanh").def(py::init<>());
  layer.operator()<nn::GELU>("GELU").def(py::init([](const std::string& approximate) {
    if (approximate != "none" && approximate != "tanh") throw py::value_error("GELU: approximate is 'none' or 'tanh'");
    return std::make_shared<nn::GELU>(approximate == "tanh" ? GeluApproximate::kTanh : GeluApproximate::kNone);
  }), py::arg("approximate") = "none");
  layer.operator()<nn::Softmax>("Softmax").def(py::init<int64_t>(), py::arg("dim"));
  layer.operator()<nn::Flatten>("Flatten").def(py::init<int64_t, int64_t>(), py::arg("start_dim") = 1,
                                               py::arg("end_dim") = -1);
  layer.operator()<nn::Conv2d>("Conv2d")
      .def(py::init([](int64_t in, int64_t out, py::handle kernel, py::handle stride, py::handle padding,
                       py::handle dilation, bool bias, Device* device, std::optional<DType> dtype) {
             return std::make_shared<nn::Conv2d>(in, out, int2_of(kernel), int2_of(stride), int2_of(padding),
                                                 int2_of(dilation), bias, options_of(dtype, device));
           }), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("bias") = true, py::kw_only(),
           py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("weight", &nn::Conv2d::weight)
      .def_property_readonly("bias", [](const nn::Conv2d& c) { return optional_tensor(c.bias()); });
  // torch's forward gives (output, weights); the weights are not computed here (None).
  layer.operator()<nn::MultiheadAttention>("MultiheadAttention")
      .def(py::init([](int64_t dim, int64_t heads, bool bias, bool batch_first, bool causal, Device* device,
                       std::optional<DType> dtype) {
             return std::make_shared<nn::MultiheadAttention>(dim, heads, bias, batch_first, causal,
                                                             options_of(dtype, device));
           }), py::arg("embed_dim"), py::arg("num_heads"), py::arg("bias") = true, py::arg("batch_first") = false,
           py::kw_only(), py::arg("causal") = false, py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def("__call__", [](nn::MultiheadAttention& a, const Tensor& q, const Tensor& k, const Tensor& v,
                          std::optional<Tensor> mask, std::optional<bool> is_causal) {
             Tensor out = is_causal ? a.forward(q, k, v, or_undefined(mask), *is_causal) : a.forward(q, k, v, or_undefined(mask));
             return py::make_tuple(out, py::none());
           }, py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
           py::arg("is_causal") = py::none());
  layer.operator()<nn::MaxPool2d>("MaxPool2d")
      .def(py::init([](py::handle kernel, py::handle stride, py::handle padding) {
             return std::make_shared<nn::MaxPool2d>(int2_of(kernel), optional_int2(stride), int2_of(padding));
           }), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0);
  layer.operator()<nn::AvgPool2d>("AvgPool2d")
      .def(py::init([](py::handle kernel, py::handle stride, py::handle padding) {
             return std::make_shared<nn::AvgPool2d>(int2_of(kernel), optional_int2(stride), int2_of(padding));
           }), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0);
  loss.operator()<nn::CrossEntropyLoss>("CrossEntropyLoss")
      .def(py::init([](const std::string& reduction, double label_smoothing, int64_t ignore_index) {
             return std::make_shared<nn::CrossEntropyLoss>(reduction_of(reduction), label_smoothing, ignore_index);
           }), py::kw_only(), py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0,
           py::arg("ignore_index") = -100);
  loss.operator()<nn::NLLLoss>("NLLLoss")
      .def(py::init([](const std::string& reduction, int64_t ignore_index) {
             return std::make_shared<nn::NLLLoss>(reduction_of(reduction), ignore_index);
           }), py::kw_only(), py::arg("reduction") = "mean", py::arg("ignore_index") = -100);
  loss.operator()<nn::MSELoss>("MSELoss")
      .def(py::init([](const std::string& reduction) { return std::make_shared<nn::MSELoss>(reduction_of(reduction)); }),
           py::kw_only(), py::arg("reduction") = "mean");

  // ---- podsim.nn.functional ----------------------------------------------------------
  py::module_ f = nn_module.def_submodule("functional", "torch.nn.functional for lazy tensors");
  f.def("linear", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) { return nn::functional::linear(x, w, or_undefined(b)); },
        py::arg("input"), py::arg("weight"), py::arg("bias") = py::none());
  f.def("embedding", [](const Tensor& i, const Tensor& w) { return nn::functional::embedding(i, w); },
        py::arg("input"), py::arg("weight"));
  f.def("one_hot", [](const Tensor& i, int64_t n) { return nn::functional::one_hot(i, n); }, py::arg("tensor"),
        py::arg("num_classes"));
  f.def("layer_norm", [](const Tensor& x, py::handle shape, std::optional<Tensor> w, std::optional<Tensor> b, double eps) {
          return nn::functional::layer_norm(x, int_list(shape, "normalized_shape"), or_undefined(w), or_undefined(b), eps);
        }, py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
        py::arg("eps") = 1e-5);
  f.def("dropout", [](const Tensor& x, double p, bool training) { return nn::functional::dropout(x, p, training); },
        py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true);
  f.def("silu", [](const Tensor& x) { return nn::functional::silu(x); });
  f.def("tril", [](const Tensor& x, int64_t d) { return nn::functional::tril(x, d); }, py::arg("input"), py::arg("diagonal") = 0);
  f.def("triu", [](const Tensor& x, int64_t d) { return nn::functional::triu(x, d); }, py::arg("input"), py::arg("diagonal") = 0);
  f.def("scaled_dot_product_attention", [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask,
                                           bool causal) {
          return nn::functional::scaled_dot_product_attention(q, k, v, or_undefined(mask), causal);
        }, py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
        py::arg("is_causal") = false);
  f.def("conv2d", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, py::handle stride, py::handle padding,
                     py::handle dilation) {
          return nn::functional::conv2d(x, w, or_undefined(b), int2_of(stride), int2_of(padding), int2_of(dilation));
        }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
        py::arg("dilation") = 1);
  f.def("max_pool2d", [](const Tensor& x, py::handle kernel, py::handle stride, py::handle padding) {
          return nn::functional::max_pool2d(x, int2_of(kernel), optional_int2(stride), int2_of(padding));
        }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0);
  f.def("avg_pool2d", [](const Tensor& x, py::handle kernel, py::handle stride, py::handle padding) {
          return nn::functional::avg_pool2d(x, int2_of(kernel), optional_int2(stride), int2_of(padding));
        }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0);
  f.def("cross_entropy", [](const Tensor& x, const Tensor& y, const std::string& reduction, double smoothing,
                            int64_t ignore_index) {
          return nn::functional::cross_entropy(x, y, reduction_of(reduction), smoothing, ignore_index);
        }, py::arg("input"), py::arg("target"), py::kw_only(), py::arg("reduction") = "mean",
        py::arg("label_smoothing") = 0.0, py::arg("ignore_index") = -100);
  f.def("nll_loss", [](const Tensor& x, const Tensor& y, const std::string& reduction, int64_t ignore_index) {
          return nn::functional::nll_loss(x, y, reduction_of(reduction), ignore_index);
        }, py::arg("input"), py::arg("target"), py::kw_only(), py::arg("reduction") = "mean", py::arg("ignore_index") = -100);
  f.def("mse_loss", [](const Tensor& x, const Tensor& y, const std::string& reduction) {
          return nn::functional::mse_loss(x, y, reduction_of(reduction));
        }, py::arg("input"), py::arg("target"), py::kw_only(), py::arg("reduction") = "mean");
  for (const char* name : {"relu", "sigmoid", "tanh", "gelu", "softmax", "log_softmax"})
    f.attr(name) = m.attr(name);
}

}  // namespace podsim::python
