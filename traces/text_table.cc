#include "traces/text_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace podsim::traces {

TextTable::TextTable(std::vector<std::string> header, std::string align)
    : align_(std::move(align)) {
  if (header.size() != align_.size())
    fail("TextTable: {} columns but {} alignments", header.size(), align_.size());
  rows_.push_back(std::move(header));
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(align_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(const std::string& indent) const {
  std::vector<size_t> width(align_.size(), 0);
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string text = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) text += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      text += align_[c] == 'r' ? pad + row[c] : row[c] + pad;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(rows_[0]);
  size_t total = 0;
  for (size_t w : width) total += w;
  out += indent + std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (size_t r = 1; r < rows_.size(); ++r) line(rows_[r]);
  return out;
}

std::string format_count(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_si(double value, const std::string& unit) {
  if (std::isnan(value)) return "n/a";
  static constexpr struct {
    double scale;
    const char* prefix;
  } kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& p : kPrefixes)
    if (std::fabs(value) >= p.scale)
      return fmt::format("{:.4g} {}{}", value / p.scale, p.prefix, unit);
  return fmt::format("{:.4g} {}", value, unit);
}

std::string format_percent(double fraction) {
  if (std::isnan(fraction)) return "n/a";
  return fmt::format("{:.1f}%", fraction * 100);
}

}  // namespace podsim::traces
