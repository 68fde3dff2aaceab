// Chip and pod configurations from TOML files (toml++): one reader for any field table.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "topology/chip_config.h"
#include "topology/chip_fields.h"
#include "topology/pod_config.h"
#include "topology/pod_fields.h"

namespace podsim::topology {
namespace {

struct UnitScale {
  std::string_view suffix;
  double scale;
};

// Units a field of each kind accepts in a string value ("32 GiB", "1.05 GHz").
std::span<const UnitScale> units_for(FieldUnit unit) {
  static const UnitScale kBytes[] = {
      {"B", 1},           {"KB", 1e3},           {"MB", 1e6},
      {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
      {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  static const UnitScale kRate[] = {{"B/s", 1},        {"KB/s", 1e3},  {"MB/s", 1e6},
                                    {"GB/s", 1e9},     {"TB/s", 1e12}, {"Gbps", 1e9 / 8},
                                    {"Tbps", 1e12 / 8}};
  static const UnitScale kHz[] = {{"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
  static const UnitScale kNs[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}};
  switch (unit) {
    case FieldUnit::kBytes:
      return kBytes;
    case FieldUnit::kBytesPerSecond:
      return kRate;
    case FieldUnit::kHertz:
      return kHz;
    case FieldUnit::kNanoseconds:
      return kNs;
    case FieldUnit::kCount:
    case FieldUnit::kFlag:
    case FieldUnit::kFraction:
      break;
  }
  return {};
}

std::string where(std::string_view source, const toml::node& node) {
  return fmt::format("{}:{}:{}", source, node.source().begin.line, node.source().begin.column);
}

template <class Config>
double field_value(const Field<Config>& f, const toml::node& node, std::string_view source) {
  if (f.unit == FieldUnit::kFlag) {
    if (auto b = node.as_boolean()) return b->get() ? 1 : 0;
    fail("{}: '{}' must be true or false", where(source, node), f.name);
  }
  if (auto i = node.as_integer()) return static_cast<double>(i->get());
  if (auto d = node.as_floating_point()) {
    if (f.unit == FieldUnit::kCount)
      fail("{}: '{}' must be an integer", where(source, node), f.name);
    return d->get();
  }
  if (auto s = node.as_string()) {
    std::string text = s->get();
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    std::string_view unit(end, text.c_str() + text.size() - end);
    while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front())))
      unit.remove_prefix(1);
    auto units = units_for(f.unit);
    if (end != text.c_str())
      for (const UnitScale& u : units)
        if (unit == u.suffix) return number * u.scale;
    std::string accepted;
    for (const UnitScale& u : units)
      accepted += (accepted.empty() ? "" : ", ") + std::string(u.suffix);
    if (accepted.empty())
      fail("{}: '{}' must be a number, not \"{}\"", where(source, node), f.name, text);
    fail("{}: '{}' = \"{}\" is not a number with a unit ({})", where(source, node), f.name, text,
         accepted);
  }
  fail("{}: '{}' must be a number{}", where(source, node), f.name,
       f.unit == FieldUnit::kCount ? "" : " or a string with a unit");
}

toml::table parse_table(std::string_view toml_text, std::string_view source) {
  try {
    return toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column, e.description());
  }
}

std::string string_value(const toml::node& node, std::string_view key, std::string_view source) {
  auto s = node.as_string();
  if (!s) fail("{}: '{}' must be a string", where(source, node), key);
  return s->get();
}

// Fills `config` from a table: `name`, `description`, every field of the table (all of
// them unless `complete` already holds, i.e. a `base` was given); `other(key, node)`
// takes the keys that are not fields and returns false for unknown ones.
template <class Config, class Other>
void read_fields(const toml::table& table, std::span<const Field<Config>> fields, Config& config,
                 bool complete, std::string_view source, std::string_view example, Other other) {
  std::vector<std::string_view> missing;
  for (const Field<Config>& f : fields)
    if (!complete && !f.has_default && !table.contains(f.name)) missing.push_back(f.name);
  if (!missing.empty())
    fail("{}: missing {} (give every field, or `base = \"{}\"` to start from a preset)", source,
         fmt::join(missing, ", "), example);
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    if (k == "base") continue;
    if (k == "name" || k == "description") {
      (k == "name" ? config.name : config.description) = string_value(node, k, source);
      continue;
    }
    const Field<Config>* field = nullptr;
    for (const Field<Config>& f : fields)
      if (f.name == k) field = &f;
    if (!field) {
      if (other(k, node)) continue;
      fail("{}: unknown key '{}' (see `podsim topology show {}` for the fields)",
           where(source, node), k, example);
    }
    double v = field_value(*field, node, source);
    if (!(v >= field->min && v <= field->max))
      fail("{}: '{}' = {} is outside [{}, {}] ({})", where(source, node), k, v, field->min,
           field->max, field->doc);
    if (field->unit == FieldUnit::kCount && v != std::floor(v))
      fail("{}: '{}' must be an integer", where(source, node), k);
    field->set(config, v);
  }
  if (config.name.empty()) config.name = std::string(source);
}

ChipConfig chip_from_table(const toml::table& table, std::string_view source) {
  ChipConfig config;
  bool from_preset = false;
  if (const toml::node* base = table.get("base")) {
    config = preset(string_value(*base, "base", source));
    from_preset = true;
  }
  read_fields<ChipConfig>(
      table, chip_fields(), config, from_preset, source, "v4",
      [source](std::string_view key, const toml::node& node) {
        // Link figures used to be chip fields too; the pod's are the ones a run uses.
        if (key == "ici_link_bandwidth_bytes_per_s" || key == "ici_latency_ns")
          fail("{}: '{}' is a figure of the pod's links now: set {} in the pod's TOML "
               "(`podsim topology show v5e-8 --toml` lists a pod's fields)",
               where(source, node), key,
               key == "ici_latency_ns" ? "ici_link_latency_ns" : key);
        return false;
      });
  config.validate();
  return config;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChipConfig parse_chip_config(std::string_view toml_text, std::string_view source) {
  return chip_from_table(parse_table(toml_text, source), source);
}

PodConfig parse_pod_config(std::string_view toml_text, std::string_view source) {
  const toml::table table = parse_table(toml_text, source);
  PodConfig config;
  bool from_preset = false;
  if (const toml::node* base = table.get("base")) {
    const std::string name = string_value(*base, "base", source);
    if (name.find('/') != std::string::npos || name.find(".toml") != std::string::npos)
      fail("{}: 'base' must name a pod (v5e-16, v4:4x4x8), not a file", where(source, *base));
    config = pod_config(name);
    from_preset = true;
  }
  bool has_chip = from_preset;
  read_fields<PodConfig>(table, pod_fields(), config, from_preset, source, "v5e-16",
                         [&](std::string_view key, const toml::node& node) {
                           if (key != "chip") return false;
                           if (auto t = node.as_table())
                             config.chip = chip_from_table(*t, fmt::format("{} [chip]", source));
                           else
                             config.chip = chip_config(string_value(node, key, source));
                           has_chip = true;
                           return true;
                         });
  if (!has_chip)
    fail("{}: missing 'chip' (a preset name, a chip TOML file, or a [chip] table)", source);
  config.validate();
  return config;
}

bool names_a_chip(std::string_view name_or_path) {
  const std::vector<std::string> chips = preset_names();
  auto is_preset = [&](std::string_view n) {
    return std::find(chips.begin(), chips.end(), n) != chips.end();
  };
  if (is_preset(name_or_path)) return true;
  if (name_or_path.find(".toml") == std::string_view::npos) return false;
  std::optional<std::string> text = read_file(std::string(name_or_path));
  if (!text) return true;  // let the chip reader report it
  toml::table table;
  try {
    table = toml::parse(*text);
  } catch (const toml::parse_error&) {
    return true;  // let the chip reader report it
  }
  if (table.contains("chip")) return false;
  const toml::node* base = table.get("base");
  return base == nullptr || !base->is_string() || is_preset(base->as_string()->get());
}

PodConfig load_pod_config(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text) fail("cannot open pod configuration '{}'", path);
  return parse_pod_config(*text, path);
}

ChipConfig load_chip_config(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text)
    fail("cannot open chip configuration '{}' (not a preset either: {})", path,
         fmt::join(preset_names(), ", "));
  return parse_chip_config(*text, path);
}

}  // namespace podsim::topology
