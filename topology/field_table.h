// A configuration's fields as one table: name, unit, valid range and meaning, with a
// member pointer. Validation, TOML reading and writing, and `podsim topology show` all
// derive from the table, so a new field of a chip or a pod is one line. Internal to
// topology/.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace podsim::topology {

// kFlag: 0 or 1, written as a TOML boolean.
// kCount: an integer; kFraction: a plain real number (a ratio).
enum class FieldUnit { kCount, kBytes, kHertz, kBytesPerSecond, kNanoseconds, kFlag, kFraction };

template <class Config>
struct Field {
  std::string_view name;
  FieldUnit unit;
  std::variant<int Config::*, int64_t Config::*, double Config::*> member;
  double min;
  double max;
  std::string_view doc;
  // Optional in a TOML file without `base` (and in older executables): the default of
  // Config stands.
  bool has_default = false;

  double get(const Config& c) const {
    return std::visit([&](auto m) { return static_cast<double>(c.*m); }, member);
  }
  // `value` already range-checked.
  void set(Config& c, double value) const {
    std::visit([&](auto m) { c.*m = static_cast<std::remove_reference_t<decltype(c.*m)>>(value); },
               member);
  }
};

// A value with its unit scaled for reading: "1.2 GB/s", "16 MiB", "yes".
std::string format_field_value(FieldUnit unit, double value);

// One line per field out of its range ("\n  name = v is outside [min, max] (doc)").
template <class Config>
std::string field_problems(const Config& c, std::span<const Field<Config>> fields) {
  std::string problems;
  for (const Field<Config>& f : fields) {
    double v = f.get(c);
    if (!(v >= f.min && v <= f.max))
      problems +=
          fmt::format("\n  {} = {} is outside [{}, {}] ({})", f.name, v, f.min, f.max, f.doc);
  }
  return problems;
}

// "  name   value   doc" lines for `topology show`.
template <class Config>
std::string describe_fields(const Config& c, std::span<const Field<Config>> fields) {
  std::string out;
  for (const Field<Config>& f : fields)
    out +=
        fmt::format("  {:<34} {:>14}   {}\n", f.name, format_field_value(f.unit, f.get(c)), f.doc);
  return out;
}

// "name = value" lines that the TOML reader reads back.
template <class Config>
std::string fields_to_toml(const Config& c, std::span<const Field<Config>> fields) {
  std::string out;
  for (const Field<Config>& f : fields) {
    if (f.unit == FieldUnit::kFlag)
      out += fmt::format("{} = {}\n", f.name, f.get(c) != 0 ? "true" : "false");
    else
      out += fmt::format("{} = {}\n", f.name, f.get(c) + 0.0);  // + 0.0: -0 writes as 0
  }
  return out;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view s);

}  // namespace podsim::topology
