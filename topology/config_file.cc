// Chip configurations from TOML files (toml++).
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <cstdlib>
#include <sstream>
#include <toml++/toml.h>

#include "common/error.h"
#include "topology/chip_config.h"
#include "topology/chip_fields.h"

namespace podsim::topology {
namespace {

struct UnitScale {
  std::string_view suffix;
  double scale;
};

// Units a field of each kind accepts in a string value ("32 GiB", "1.05 GHz").
std::span<const UnitScale> units_for(FieldUnit unit) {
  static const UnitScale kBytes[] = {{"B", 1},         {"KB", 1e3},  {"MB", 1e6},  {"GB", 1e9},  {"TB", 1e12},
                                     {"KiB", 1024.0},  {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                     {"TiB", 1099511627776.0}};
  static const UnitScale kRate[] = {{"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
                                    {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}};
  static const UnitScale kHz[] = {{"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
  static const UnitScale kNs[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}};
  switch (unit) {
    case FieldUnit::kBytes: return kBytes;
    case FieldUnit::kBytesPerSecond: return kRate;
    case FieldUnit::kHertz: return kHz;
    case FieldUnit::kNanoseconds: return kNs;
    case FieldUnit::kCount: break;
  }
  return {};
}

std::string where(std::string_view source, const toml::node& node) {
  return fmt::format("{}:{}:{}", source, node.source().begin.line, node.source().begin.column);
}

double field_value(const ChipField& f, const toml::node& node, std::string_view source) {
  if (auto i = node.as_integer()) return static_cast<double>(i->get());
  if (auto d = node.as_floating_point()) {
    if (f.unit == FieldUnit::kCount) fail("{}: '{}' must be an integer", where(source, node), f.name);
    return d->get();
  }
  if (auto s = node.as_string()) {
    std::string text = s->get();
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    std::string_view unit(end, text.c_str() + text.size() - end);
    while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.remove_prefix(1);
    auto units = units_for(f.unit);
    if (end != text.c_str())
      for (const UnitScale& u : units)
        if (unit == u.suffix) return number * u.scale;
    std::string accepted;
    for (const UnitScale& u : units) accepted += (accepted.empty() ? "" : ", ") + std::string(u.suffix);
    if (accepted.empty()) fail("{}: '{}' must be a number, not \"{}\"", where(source, node), f.name, text);
    fail("{}: '{}' = \"{}\" is not a number with a unit ({})", where(source, node), f.name, text, accepted);
  }
  fail("{}: '{}' must be a number{}", where(source, node), f.name,
       f.unit == FieldUnit::kCount ? "" : " or a string with a unit");
}

}  // namespace

ChipConfig parse_chip_config(std::string_view toml_text, std::string_view source) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column, e.description());
  }

  ChipConfig config;
  bool from_preset = false;
  if (const toml::node* base = table.get("base")) {
    auto name = base->as_string();
    if (!name) fail("{}: 'base' must be a preset name string", where(source, *base));
    config = preset(name->get());
    from_preset = true;
  }
  std::vector<std::string_view> missing;
  for (const ChipField& f : chip_fields())
    if (!from_preset && !f.has_default && !table.contains(f.name)) missing.push_back(f.name);
  if (!missing.empty())
    fail("{}: missing {} (give every field, or `base = \"v4\"` to start from a preset)", source,
         fmt::join(missing, ", "));

  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    if (k == "base") continue;
    if (k == "name" || k == "description") {
      auto s = node.as_string();
      if (!s) fail("{}: '{}' must be a string", where(source, node), k);
      (k == "name" ? config.name : config.description) = s->get();
      continue;
    }
    const ChipField* field = nullptr;
    for (const ChipField& f : chip_fields())
      if (f.name == k) field = &f;
    if (!field) fail("{}: unknown key '{}' (see `podsim topology show v4` for the fields)", where(source, node), k);
    double v = field_value(*field, node, source);
    if (!(v >= field->min && v <= field->max))
      fail("{}: '{}' = {} is outside [{}, {}] ({})", where(source, node), k, v, field->min, field->max, field->doc);
    if (field->unit == FieldUnit::kCount && v != std::floor(v))
      fail("{}: '{}' must be an integer", where(source, node), k);
    field->set(config, v);
  }
  if (config.name.empty()) config.name = std::string(source);
  config.validate();
  return config;
}

ChipConfig load_chip_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open chip configuration '{}' (not a preset either: {})", path, fmt::join(preset_names(), ", "));
  std::stringstream text;
  text << in.rdbuf();
  return parse_chip_config(text.str(), path);
}

}  // namespace podsim::topology
