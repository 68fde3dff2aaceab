// podsim.optim: runtime/optim/'s optimizers and schedules with torch.optim's signatures.
// param_groups are live views: opt.param_groups[0]["lr"] = 0.01 changes the optimizer.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/sgd.h"

namespace podsim::python {
namespace {

using optim::Optimizer;
using optim::ParamGroup;

// torch accepts an iterable of tensors or of dicts {"params": [...], option: value}.
std::vector<ParamGroup> groups_of(const py::iterable& params) {
  std::vector<ParamGroup> groups;
  ParamGroup loose;
  for (py::handle item : params) {
    if (py::isinstance<Tensor>(item)) {
      loose.params.push_back(item.cast<Tensor>());
      continue;
    }
    if (!py::isinstance<py::dict>(item)) throw py::type_error("params must be tensors or dicts of parameter groups");
    ParamGroup group;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(item)) {
      const std::string name = py::str(key);
      if (name == "params") {
        for (py::handle p : value) group.params.push_back(p.cast<Tensor>());
      } else if (name == "betas") {
        auto betas = value.cast<std::pair<double, double>>();
        group.options["beta1"] = betas.first;
        group.options["beta2"] = betas.second;
      } else {
        group.options[name] = value.cast<double>();
      }
    }
    groups.push_back(std::move(group));
  }
  if (!loose.params.empty()) {
    if (!groups.empty()) throw py::type_error("params mixes tensors and parameter groups");
    groups.push_back(std::move(loose));
  }
  if (groups.empty()) throw py::value_error("optimizer got an empty parameter list");
  return groups;
}

// One group of a live optimizer: "params" and its options ("betas" as torch's pair).
struct GroupView {
  std::shared_ptr<Optimizer> optimizer;
  size_t index;
  ParamGroup& group() const { return optimizer->param_groups().at(index); }
  py::object get(const std::string& key) const {
    const ParamGroup& g = group();
    if (key == "params") return py::cast(g.params);
    if (key == "betas" && g.options.count("beta1")) return py::make_tuple(g.options.at("beta1"), g.options.at("beta2"));
    auto it = g.options.find(key);
    if (it == g.options.end()) throw py::key_error(key);
    return py::float_(it->second);
  }
  void set(const std::string& key, py::handle value) const {
    ParamGroup& g = group();
    if (key == "betas") {
      auto betas = value.cast<std::pair<double, double>>();
      g.options["beta1"] = betas.first;
      g.options["beta2"] = betas.second;
    } else if (g.options.count(key)) {
      g.options[key] = value.cast<double>();
    } else {
      throw py::key_error("the optimizer has no option '" + key + "'");
    }
  }
};

}  // namespace

void bind_optim(py::module_& m) {
  py::module_ o = m.def_submodule("optim", "torch.optim for lazy tensors");
  py::class_<GroupView>(o, "_ParamGroup")
      .def("__getitem__", &GroupView::get)
      .def("__setitem__", &GroupView::set)
      .def("keys", [](const GroupView& v) {
        std::vector<std::string> keys{"params"};
        for (const auto& [k, _] : v.group().options) keys.push_back(k);
        return keys;
      })
      .def("__repr__", [](const GroupView& v) {
        std::string out = "{";
        for (const auto& [k, x] : v.group().options) out += "'" + k + "': " + std::to_string(x) + ", ";
        return out + "'params': [" + std::to_string(v.group().params.size()) + " tensors]}";
      });

  py::class_<Optimizer, std::shared_ptr<Optimizer>>(o, "Optimizer")
      .def("step", [](Optimizer& self) { self.step(); }, "Records one update of every parameter that has a grad")
      .def("zero_grad", &Optimizer::zero_grad, py::arg("set_to_none") = true)
      .def_property_readonly("param_groups", [](const std::shared_ptr<Optimizer>& self) {
        py::list out;
        for (size_t i = 0; i < self->param_groups().size(); ++i) out.append(GroupView{self, i});
        return out;
      })
      .def("add_param_group", [](Optimizer& self, const py::dict& group) { self.add_param_group(groups_of(py::make_tuple(group))[0]); })
      .def("state_dict", [](const Optimizer& self) { return to_dict(self.state_dict()); })
      .def("load_state_dict", [](Optimizer& self, const py::dict& state) { self.load_state_dict(from_dict(state)); })
      .def("__repr__", [](const Optimizer& self) { return self.name() + "(lr=" + std::to_string(self.lr()) + ")"; });

  py::class_<optim::SGD, Optimizer, std::shared_ptr<optim::SGD>>(o, "SGD")
      .def(py::init([](const py::iterable& params, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov) {
             return std::make_shared<optim::SGD>(groups_of(params),
                                                 optim::SGDOptions{lr, momentum, dampening, weight_decay, nesterov});
           }), py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::Adam, Optimizer, std::shared_ptr<optim::Adam>>(o, "Adam")
      .def(py::init([](const py::iterable& params, double lr, std::pair<double, double> betas, double eps,
                       double weight_decay, bool amsgrad) {
             return std::make_shared<optim::Adam>(
                 groups_of(params), optim::AdamOptions{lr, betas.first, betas.second, eps, weight_decay, amsgrad});
           }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::pair{0.9, 0.999}, py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false);
  py::class_<optim::AdamW, optim::Adam, std::shared_ptr<optim::AdamW>>(o, "AdamW")
      .def(py::init([](const py::iterable& params, double lr, std::pair<double, double> betas, double eps,
                       double weight_decay, bool amsgrad) {
             return std::make_shared<optim::AdamW>(
                 groups_of(params), optim::AdamWOptions{lr, betas.first, betas.second, eps, weight_decay, amsgrad});
           }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::pair{0.9, 0.999}, py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 1e-2, py::arg("amsgrad") = false);

  // Schedules keep their optimizer alive.
  py::module_ s = o.def_submodule("lr_scheduler", "torch.optim.lr_scheduler's schedules");
  py::class_<optim::LRScheduler, std::shared_ptr<optim::LRScheduler>>(s, "LRScheduler")
      .def("step", &optim::LRScheduler::step)
      .def("get_last_lr", &optim::LRScheduler::last_lr)
      .def_property_readonly("last_epoch", &optim::LRScheduler::last_epoch)
      .def_property_readonly("base_lrs", &optim::LRScheduler::base_lrs);
  py::class_<optim::StepLR, optim::LRScheduler, std::shared_ptr<optim::StepLR>>(s, "StepLR")
      .def(py::init<Optimizer&, int64_t, double>(), py::arg("optimizer"), py::arg("step_size"), py::arg("gamma") = 0.1,
           py::keep_alive<1, 2>());
  py::class_<optim::LambdaLR, optim::LRScheduler, std::shared_ptr<optim::LambdaLR>>(s, "LambdaLR")
      .def(py::init<Optimizer&, std::function<double(int64_t)>>(), py::arg("optimizer"), py::arg("lr_lambda"),
           py::keep_alive<1, 2>());
  py::class_<optim::CosineWarmupLR, optim::LambdaLR, std::shared_ptr<optim::CosineWarmupLR>>(s, "CosineWarmupLR")
      .def(py::init<Optimizer&, int64_t, int64_t, double>(), py::arg("optimizer"), py::arg("warmup_steps"),
           py::arg("total_steps"), py::arg("num_cycles") = 0.5, py::keep_alive<1, 2>());

  py::module_ utils = m.attr("nn").cast<py::module_>().def_submodule("utils", "torch.nn.utils's gradient clipping");
  utils.def("clip_grad_norm_", [](const std::vector<Tensor>& params, double max_norm, double norm_type) {
    return optim::clip_grad_norm_(params, max_norm, norm_type);
  }, py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0);
}

}  // namespace podsim::python
