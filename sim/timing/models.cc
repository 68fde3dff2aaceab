// What the timing model's registered models declare (unit_models.h), read for a run
// (Parameters) and for users (`podsim models`, `podsim run --stats`).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "sim/timing/timed_chip.h"
#include "sim/timing/unit_models.h"

namespace podsim::sim::timing {

Parameters::Parameters(const topology::PodConfig& pod, std::string model,
                       const ModelDeclaration& declaration)
    : pod_(pod), model_(std::move(model)), declaration_(declaration) {
  for (std::string_view name : declaration_.parameters)
    if (!topology::find_field(pod_, name))
      fail("{} declares the parameter '{}', which is no field of a pod or a chip", model_, name);
}

double Parameters::operator[](std::string_view name) const {
  if (std::find(declaration_.parameters.begin(), declaration_.parameters.end(), name) ==
      declaration_.parameters.end())
    fail("{} reads '{}', which it does not declare", model_, name);
  return topology::find_field(pod_, name)->value;
}

void add_statistics(const std::string& kind, const std::string& model,
                    const ModelDeclaration& declaration, std::string component,
                    const std::vector<double>& values, std::vector<StatisticValue>& out) {
  if (values.size() != declaration.statistics.size())
    fail("{} model '{}' counted {} statistic(s) and declares {}", kind, model, values.size(),
         declaration.statistics.size());
  for (size_t k = 0; k < values.size(); ++k)
    out.push_back({component, kind + " " + model, std::string(declaration.statistics[k].name),
                   std::string(declaration.statistics[k].unit), values[k]});
}

std::string format_models(const std::vector<ModelInfo>& models) {
  std::string out;
  for (const ModelInfo& m : models) {
    out += fmt::format("{} model '{}'{}: {}\n", m.kind, m.name, m.is_default ? " (default)" : "",
                       m.summary);
    for (const ModelInfo::Parameter& p : m.parameters)
      out += fmt::format("  parameter {:<32} {:>14}   {}\n", p.name, p.value, p.meaning);
    for (const ModelInfo::Statistic& s : m.statistics)
      out += fmt::format("  statistic {:<32} {:>14}   {}\n", s.name, s.unit, s.meaning);
  }
  return out;
}

std::string format_statistics(const std::vector<StatisticValue>& statistics) {
  // Per model and statistic, in the order first met: the total over every instance of
  // the model (every unit of every chip), the largest and how many instances.
  struct Row {
    double total = 0, max = 0;
    int instances = 0;
    std::string unit;
  };
  std::vector<std::tuple<std::string, std::string>> order;
  std::map<std::tuple<std::string, std::string>, Row> rows;
  for (const StatisticValue& s : statistics) {
    auto key = std::make_tuple(s.model, s.name);
    auto [it, fresh] = rows.try_emplace(key);
    if (fresh) order.push_back(key);
    Row& r = it->second;
    r.total += s.value;
    r.max = r.instances == 0 ? s.value : std::max(r.max, s.value);
    ++r.instances;
    r.unit = s.unit;
  }
  std::string out = fmt::format("{:<26} {:<26} {:>16} {:>16} {:>9}  {}\n", "model", "statistic",
                                "total", "max per unit", "units", "unit");
  for (const auto& key : order) {
    const Row& r = rows.at(key);
    out += fmt::format("{:<26} {:<26} {:>16.10g} {:>16.10g} {:>9}  {}\n", std::get<0>(key),
                       std::get<1>(key), r.total, r.max, r.instances, r.unit);
  }
  return out;
}

}  // namespace podsim::sim::timing
