// podsim.hlo, podsim.profile and podsim.topology: HLO modules run on a backend's device,
// the profiles of simulated runs (summarised, diffed, saved for Perfetto), and the pod
// and chip configurations the SIM backend simulates. These are the types runtime/'s
// public headers hand out (ir::Module, traces::Profile, topology::PodConfig).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "python/src/bindings.h"
#include "runtime/pjrt/device.h"
#include "runtime/pjrt/sim/sim_backend.h"
#include "topology/pod_config.h"
#include "traces/chrome_trace.h"
#include "traces/compare.h"
#include "traces/summary.h"

namespace podsim::python {
namespace {

// A comparison and its table (format_diff needs the options and labels diff() was given).
struct Diff {
  traces::Diff diff;
  std::string table;
};

std::shared_ptr<ir::Module> verified(std::unique_ptr<ir::Module> module, const std::string& source) {
  ir::verify_module(*module, source);
  return module;
}

std::vector<std::string> parameter_shapes(const ir::Module& module) {
  std::vector<std::string> out;
  for (const ir::Instruction* p : module.entry()->parameters()) out.push_back(p->shape().to_string());
  return out;
}

// Compiles for the device's backend and runs once: NumPy arrays in, NumPy arrays out
// (one per element of a tuple root). The GIL is released while it compiles and runs.
std::vector<py::array> run(const ir::Module& module, const std::vector<py::array>& inputs, pjrt::Device& device) {
  const auto& parameters = module.entry()->parameters();
  if (inputs.size() != parameters.size())
    fail("run: {} takes {} inputs, got {}", module.name(), parameters.size(), inputs.size());
  std::vector<ir::Literal> literals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    literals.push_back(literal_from_numpy(inputs[i]));
    if (literals.back().shape() != parameters[i]->shape())
      fail("run: input {} is {}, the module's parameter {} is {}", i, literals.back().shape().to_string(),
           parameters[i]->name(), parameters[i]->shape().to_string());
  }
  std::vector<ir::Literal> outputs;
  {
    py::gil_scoped_release release;
    pjrt::Client& client = device.client();
    std::shared_ptr<pjrt::Executable> executable = client.compile(module);
    std::vector<std::shared_ptr<pjrt::Buffer>> arguments;
    for (ir::Literal& literal : literals) arguments.push_back(client.transfer_to_device(std::move(literal), device));
    for (const auto& buffer : executable->execute(arguments, device)) outputs.push_back(buffer->to_literal());
  }
  std::vector<py::array> out;
  for (ir::Literal& literal : outputs) out.push_back(literal_to_numpy(std::move(literal)));
  return out;
}

py::dict op_row(const traces::OpTime& op) {
  py::dict row;
  row["name"] = op.name;
  row["opcode"] = op.opcode;
  row["seconds"] = op.seconds;
  row["share"] = op.share;
  row["flops"] = op.flops;
  row["bytes"] = op.bytes;
  return row;
}

}  // namespace

void bind_sim(py::module_& m) {
  // ---- HLO modules ---------------------------------------------------------------------
  py::module_ hlo = m.def_submodule("hlo", "XLA HLO text in and out, run on a device");
  py::class_<ir::Module, std::shared_ptr<ir::Module>>(hlo, "Module")
      .def_property_readonly("name", &ir::Module::name)
      .def_property_readonly("parameter_shapes", &parameter_shapes)
      .def("to_text", [](const ir::Module& self) { return ir::print_module(self); })
      .def("__repr__", [](const ir::Module& self) { return "<hlo.Module " + self.name() + ">"; });
  hlo.def("parse", [](const std::string& text) { return verified(ir::parse_module(text, "<text>"), "<text>"); },
          py::arg("text"), "A module from HLO text, verified");
  hlo.def("load", [](const std::string& path) { return verified(ir::parse_module_file(path), path); },
          py::arg("path"), "A module from an HLO text file, verified");
  hlo.def("run", &run, py::arg("module"), py::arg("inputs"), py::arg("device"),
          "Compiles the module for the device's backend and runs it once; NumPy arrays in and out");

  // ---- Profiles ------------------------------------------------------------------------
  py::module_ profile = m.def_submodule("profile", "Profiles of simulated runs: summaries, diffs, Perfetto traces");
  py::class_<traces::Summary>(profile, "Summary")
      .def_readonly("program", &traces::Summary::program)
      .def_readonly("seconds", &traces::Summary::seconds, "The slowest chip's time")
      .def_readonly("collective_seconds", &traces::Summary::collective_seconds)
      .def_readonly("collective_exposed_seconds", &traces::Summary::collective_exposed_seconds)
      .def_property_readonly("chips", [](const traces::Summary& s) { return s.chips.size(); })
      .def_property_readonly("ops", [](const traces::Summary& s) {
        py::list out;
        for (const traces::OpTime& op : s.ops) out.append(op_row(op));
        return out;
      }, "Each op's longest time on any chip, longest first")
      .def("__str__", [](const traces::Summary& s) { return traces::format_summary(s); });
  py::class_<Diff>(profile, "Diff")
      .def_property_readonly("regressed", [](const Diff& d) { return d.diff.regressed(); })
      .def_property_readonly("regressions", [](const Diff& d) { return d.diff.regressions(); })
      .def_property_readonly("total_change", [](const Diff& d) { return d.diff.total.change; },
                             "(after - before) / before of the total time")
      .def("__str__", [](const Diff& d) { return d.table; });
  py::class_<traces::Profile>(profile, "Profile")
      .def_static("load", &traces::read_chrome_trace, py::arg("path"), "A profile from its Chrome trace JSON")
      .def("save", [](const traces::Profile& self, const std::string& path) { traces::write_chrome_trace(self, path); },
           py::arg("path"), "As Chrome trace JSON (Perfetto UI, `podsim profile summary`)")
      .def("summary", &traces::summarize);
  profile.def("diff", [](const traces::Profile& before, const traces::Profile& after, double threshold,
                         const std::string& before_label, const std::string& after_label) {
    traces::DiffOptions options;
    options.threshold = threshold;
    traces::Diff diff = traces::compare_summaries(traces::summarize(before), traces::summarize(after), options);
    std::string table = traces::format_diff(diff, options, before_label, after_label);
    return Diff{std::move(diff), std::move(table)};
  }, py::arg("before"), py::arg("after"), py::arg("threshold") = 0.05, py::arg("before_label") = "before",
     py::arg("after_label") = "after",
     "Two profiles compared op by op and collective by collective, as `podsim profile diff` (str() is its table)");
  profile.def("enable", &pjrt::set_sim_profiling, py::arg("on") = true,
              "Keep the profile of each simulated run (SIM devices) for last_run()");
  profile.def("last_run", []() -> py::object {
    std::optional<pjrt::SimRun> run = pjrt::last_sim_run();
    if (!run) return py::none();
    py::dict out;
    out["program"] = run->program;
    out["cycles"] = run->cycles;
    out["seconds"] = run->seconds;
    out["chips"] = run->chips;
    out["ici_bytes"] = run->ici_bytes;
    out["dcn_bytes"] = run->dcn_bytes;
    out["profile"] = std::move(run->profile);
    return out;
  }, "The last simulated run (program, cycles, seconds, chips, ICI/DCN bytes, profile), or None");

  // ---- Topology ------------------------------------------------------------------------
  py::module_ topology = m.def_submodule("topology", "Pods and chips the SIM backend simulates");
  py::class_<topology::PodConfig>(topology, "Pod")
      .def_readonly("name", &topology::PodConfig::name)
      .def_property_readonly("chip", [](const topology::PodConfig& p) { return p.chip.name; })
      .def_property_readonly("shape", &topology::PodConfig::shape_string)
      .def_property_readonly("dims", &topology::PodConfig::dims)
      .def_property_readonly("wraps", &topology::PodConfig::wraps)
      .def_property_readonly("chips", &topology::PodConfig::chips)
      .def_property_readonly("hosts", &topology::PodConfig::hosts)
      .def_readonly("slices", &topology::PodConfig::slices)
      .def_readonly("ici_link_bandwidth_bytes_per_s", &topology::PodConfig::ici_link_bandwidth_bytes_per_s)
      .def_readonly("ici_link_latency_ns", &topology::PodConfig::ici_link_latency_ns)
      .def_readonly("dcn_host_bandwidth_bytes_per_s", &topology::PodConfig::dcn_host_bandwidth_bytes_per_s)
      .def("describe", [](const topology::PodConfig& p) { return topology::describe(p); },
           "Every field, hosts, links, bisection and all-reduce bandwidth, a drawing (podsim topology show)")
      .def("to_toml", [](const topology::PodConfig& p) { return topology::to_toml(p); })
      .def("__repr__", [](const topology::PodConfig& p) { return "<topology.Pod " + p.name + " " + p.shape_string() + ">"; });
  topology.def("pod", [](const std::string& name) { return topology::pod_config(name); }, py::arg("name_or_path"),
               "A pod by name (v5e-8, v4:4x4x4, ...) or TOML file");
  topology.def("pod_presets", &topology::pod_preset_names);
  topology.def("chip_presets", &topology::preset_names);
  topology.def("describe_chip", [](const std::string& name) { return topology::describe(topology::chip_config(name)); },
               py::arg("name_or_path"));
  topology.def("of", [](const pjrt::Device& device) -> py::object {
    const topology::PodConfig* pod = device.client().pod();
    return pod != nullptr ? py::cast(*pod) : py::none();
  }, py::arg("device"), "The simulated pod a device's backend runs on (None for other backends)");
}

}  // namespace podsim::python
