#include "runtime/data/char_text.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "runtime/data/random.h"

namespace podsim::data {

TextCorpus load_text_corpus(const std::string& path, size_t fallback_chars) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    if (in.good() || in.eof()) {
      std::string s = std::move(text).str();
      if (!s.empty()) return {std::move(s), path};
    }
  }
  return {generated_text(fallback_chars, 0),
          "generated (" + path + " is missing or empty; it comes with Debian's base-files)"};
}

std::string generated_text(size_t chars, uint64_t seed) {
  static constexpr std::array<std::string_view, 12> kSubjects = {
      "the chip",   "a core",     "the compiler", "every tensor", "the runtime", "a kernel",
      "the system", "each layer", "the model",    "a program",    "the network", "our data"};
  static constexpr std::array<std::string_view, 12> kVerbs = {
      "moves",  "computes", "reads",  "writes", "schedules", "fuses",
      "stores", "loads",    "checks", "sends",  "receives",  "updates"};
  static constexpr std::array<std::string_view, 12> kObjects = {
      "the weights", "a buffer",       "the gradients",  "every block",
      "the result",  "a small matrix", "the next batch", "its memory",
      "the output",  "a vector",       "the loss",       "the parameters"};
  static constexpr std::array<std::string_view, 6> kEndings = {".", ".", ".",
                                                               "!", "?", ", and then"};
  SplitMix64 rng(seed);
  auto pick = [&](const auto& words) { return words[rng.below(words.size())]; };
  std::string text;
  bool capital = true;
  while (text.size() < chars) {
    std::string sentence = std::string(pick(kSubjects)) + " " + std::string(pick(kVerbs)) + " " +
                           std::string(pick(kObjects));
    if (capital) sentence[0] = static_cast<char>(sentence[0] - 'a' + 'A');
    std::string_view ending = pick(kEndings);
    capital = ending != ", and then";
    text += sentence;
    text += ending;
    text += rng.below(8) == 0 ? "\n" : " ";
  }
  text.resize(chars);
  return text;
}

CharTextDataset::CharTextDataset(std::string_view text, int64_t block_size)
    : block_size_(block_size) {
  if (block_size < 1) fail("CharTextDataset: block_size {} must be at least 1", block_size);
  if (static_cast<int64_t>(text.size()) <= block_size)
    fail(
        "CharTextDataset: a text of {} characters is too short for blocks of {} (it needs "
        "more characters than the block size)",
        text.size(), block_size);
  bool present[256] = {};
  for (char c : text) present[static_cast<unsigned char>(c)] = true;
  std::fill(std::begin(id_of_), std::end(id_of_), -1);
  for (int c = 0; c < 256; ++c) {
    if (!present[c]) continue;
    id_of_[c] = static_cast<int64_t>(vocabulary_.size());
    vocabulary_.push_back(static_cast<char>(c));
  }
  ids_ = encode(text);
}

int64_t CharTextDataset::size() const { return static_cast<int64_t>(ids_.size()) - block_size_; }

std::vector<int64_t> CharTextDataset::encode(std::string_view text) const {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int64_t id = id_of_[static_cast<unsigned char>(text[i])];
    if (id < 0)
      fail(
          "CharTextDataset::encode: character {} (byte {}) at offset {} is not in the "
          "vocabulary",
          text[i], static_cast<int>(static_cast<unsigned char>(text[i])), i);
    out.push_back(id);
  }
  return out;
}

std::string CharTextDataset::decode(std::span<const int64_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      fail("CharTextDataset::decode: id {} is out of range for a vocabulary of {}", id,
           vocab_size());
    out.push_back(vocabulary_[static_cast<size_t>(id)]);
  }
  return out;
}

Example CharTextDataset::get(int64_t index) const {
  int64_t indices[] = {index};
  Example batch = get_batch(indices);
  return {batch[0].reshape({block_size_}), batch[1].reshape({block_size_})};
}

Example CharTextDataset::get_batch(std::span<const int64_t> indices) const {
  auto n = static_cast<int64_t>(indices.size());
  std::vector<int64_t> inputs(static_cast<size_t>(n * block_size_));
  std::vector<int64_t> targets(inputs.size());
  for (int64_t b = 0; b < n; ++b) {
    int64_t start = indices[static_cast<size_t>(b)];
    if (start < 0 || start >= size())
      fail("CharTextDataset: index {} is out of range for a dataset of {} windows", start, size());
    auto from = ids_.begin() + start;
    std::copy(from, from + block_size_, inputs.begin() + b * block_size_);
    std::copy(from + 1, from + 1 + block_size_, targets.begin() + b * block_size_);
  }
  return {Tensor::from_vector(inputs, {n, block_size_}),
          Tensor::from_vector(targets, {n, block_size_})};
}

}  // namespace podsim::data
