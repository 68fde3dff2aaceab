// scikit-learn's digits: digits.csv.gz has one example per line, 64 pixel values and
// the label, comma-separated (sklearn.datasets.load_digits reads it with np.loadtxt).
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "runtime/data/datasets.h"

namespace podsim::data {
namespace {

constexpr int64_t kPixels = 64;

std::string read_gzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    fail(
        "load_digits: '{}' does not exist; it is installed by the Debian package "
        "python3-sklearn (apt-get install python3-sklearn, or scripts/setup.sh)",
        path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail("load_digits: cannot open '{}': {}", path, std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    int n = gzread(file, chunk, sizeof(chunk));
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      fail("load_digits: '{}' is not a readable gzip file: {}", path, message);
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  gzclose(file);
  return text;
}

}  // namespace

TensorDataset load_digits(const std::string& path) {
  std::string text = read_gzip(path);
  std::vector<float> images;
  std::vector<int64_t> labels;
  size_t line_start = 0;
  int64_t line_number = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string_view line(text.data() + line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    std::vector<double> values;
    size_t pos = 0;
    while (pos <= line.size()) {
      size_t comma = line.find(',', pos);
      if (comma == std::string_view::npos) comma = line.size();
      std::string_view field = line.substr(pos, comma - pos);
      while (!field.empty() && (field.front() == ' ')) field.remove_prefix(1);
      while (!field.empty() && (field.back() == ' ' || field.back() == '\r'))
        field.remove_suffix(1);
      double v = 0;
      auto [end, err] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (err != std::errc() || end != field.data() + field.size())
        fail("load_digits: {}:{}: '{}' is not a number", path, line_number, field);
      values.push_back(v);
      pos = comma + 1;
    }
    if (static_cast<int64_t>(values.size()) != kPixels + 1)
      fail("load_digits: {}:{}: {} values, expected {} pixels and a label", path, line_number,
           values.size(), kPixels);
    double label = values.back();
    if (label != std::floor(label) || label < 0 || label > 9)
      fail("load_digits: {}:{}: label {} is not a digit 0..9", path, line_number, label);
    for (int64_t i = 0; i < kPixels; ++i)
      images.push_back(static_cast<float>(values[static_cast<size_t>(i)]));
    labels.push_back(static_cast<int64_t>(label));
  }
  if (labels.empty()) fail("load_digits: '{}' holds no examples", path);
  auto n = static_cast<int64_t>(labels.size());
  return TensorDataset(
      {Tensor::from_vector(images, {n, kPixels}), Tensor::from_vector(labels, {n})});
}

}  // namespace podsim::data
