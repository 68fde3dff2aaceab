// podsim.debug: the metrics and reports of runtime/debug/, as torch_xla.debug.metrics
// offers them (metrics_report(), counter_value(), metric_data(), ...).
#include <pybind11/stl.h>

#include <string>

#include "python/src/bindings.h"
#include "runtime/debug/metrics.h"
#include "runtime/lazy/debug_report.h"

namespace podsim::python {

void bind_debug(py::module_& m) {
  m.def("metrics_report", &debug::metrics_report, "Every metric and non-zero counter, as text");
  m.def("short_metrics_report", &debug::short_metrics_report, "The key metrics and counters only");
  m.def("metrics_analysis", &debug::metrics_analysis, "One line per performance symptom the metrics show");
  m.def("counter_names", &debug::counter_names);
  m.def("counter_value", [](const std::string& name) { return debug::counter_value(name); }, py::arg("name"),
        "The counter's value (0 if it was never touched)");
  m.def("metric_names", &debug::metric_names);
  m.def("metric_data", [](const std::string& name) -> py::object {
    const debug::MetricSummary summary = debug::metric_summary(name);
    if (summary.total_samples == 0) return py::none();
    return py::make_tuple(summary.total_samples, summary.accumulator, summary.percentiles);
  }, py::arg("name"), "(total samples, accumulated value, [(percent, value)]), or None if never recorded");
  m.def("counter_add", [](const std::string& name, int64_t delta) { debug::counter_add(name, delta); }, py::arg("name"),
        py::arg("delta") = 1, "Adds to a counter (the torch bridge counts its CPU fallbacks as aten::<op>)");
  m.def("clear_metrics", &debug::clear_metrics, "Every metric and counter back to zero");
}

}  // namespace podsim::python
