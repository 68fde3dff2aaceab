#include "topology/field_table.h"

#include <cmath>

namespace podsim::topology {

std::string format_field_value(FieldUnit unit, double v) {
  auto scaled = [&](double base, const char* const* units, int n) {
    int i = 0;
    while (i + 1 < n && std::fabs(v) >= base) {
      v /= base;
      ++i;
    }
    return fmt::format("{:g} {}", v, units[i]);
  };
  static const char* const kBytes[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  static const char* const kRate[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  static const char* const kHz[] = {"Hz", "kHz", "MHz", "GHz"};
  switch (unit) {
    case FieldUnit::kCount:
    case FieldUnit::kFraction:
      return fmt::format("{:g}", v);
    case FieldUnit::kBytes:
      return scaled(1024, kBytes, 5);
    case FieldUnit::kBytesPerSecond:
      return scaled(1000, kRate, 5);
    case FieldUnit::kHertz:
      return scaled(1000, kHz, 4);
    case FieldUnit::kNanoseconds:
      return fmt::format("{:g} ns", v);
    case FieldUnit::kFlag:
      return v != 0 ? "yes" : "no";
  }
  return "";
}

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\')
      out += fmt::format("\\{}", ch);
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\u{:04x}", u);
    else
      out += ch;
  }
  return out + "\"";
}

}  // namespace podsim::topology
