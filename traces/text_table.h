// Plain-text tables and number formatting for the profile tools' terminal output
// (summaries and diffs): columns padded to their widest cell, numbers right-aligned.
#pragma once

#include <string>
#include <vector>

namespace podsim::traces {

class TextTable {
 public:
  // align: one character per column, 'l' or 'r'.
  TextTable(std::vector<std::string> header, std::string align);
  void add_row(std::vector<std::string> cells);
  // Each line starts with indent; a rule of dashes under the header.
  std::string render(const std::string& indent = "") const;

 private:
  std::vector<std::vector<std::string>> rows_;  // header first
  std::string align_;
};

// 1234567 -> "1,234,567".
std::string format_count(uint64_t value);
// value with an SI prefix and unit: (2.75e14, "FLOP/s") -> "275 TFLOP/s"; 4 significant digits.
std::string format_si(double value, const std::string& unit);
// 0.1234 -> "12.3%"; NaN -> "n/a".
std::string format_percent(double fraction);

}  // namespace podsim::traces
