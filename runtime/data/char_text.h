// A character-level language-modelling dataset for a small GPT: the vocabulary is the
// set of characters of a corpus, and example i is the window of block_size character
// ids starting at i with, as target, the same window shifted by one (the next
// character at every position).
//
// load_text_corpus() reads a text that every Debian system has (the GPL-3 text of
// base-files) and falls back to generated English-like text when it is missing, saying
// which one it used.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/data/dataset.h"

namespace podsim::data {

inline constexpr const char* kDefaultCorpusPath = "/usr/share/common-licenses/GPL-3";

struct TextCorpus {
  std::string text;
  std::string source;  // the file read, or "generated (<why>)"
};

// The file at path, or generated_text(fallback_chars, 0) when it cannot be read.
TextCorpus load_text_corpus(const std::string& path = kDefaultCorpusPath,
                            size_t fallback_chars = 32768);
// Deterministic English-like sentences from a small vocabulary of words.
std::string generated_text(size_t chars, uint64_t seed);

class CharTextDataset : public Dataset {
 public:
  // The text needs more than block_size characters.
  CharTextDataset(std::string_view text, int64_t block_size);

  // Windows of block_size ids (s64) and their next-character targets (s64).
  int64_t size() const override;
  Example get(int64_t index) const override;
  Example get_batch(std::span<const int64_t> indices) const override;

  int64_t block_size() const { return block_size_; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocabulary_.size()); }
  // The characters in id order (sorted by byte value).
  const std::string& vocabulary() const { return vocabulary_; }
  // Characters outside the vocabulary are a podsim::Error.
  std::vector<int64_t> encode(std::string_view text) const;
  std::string decode(std::span<const int64_t> ids) const;
  const std::vector<int64_t>& ids() const { return ids_; }

 private:
  int64_t block_size_;
  std::string vocabulary_;
  int64_t id_of_[256];
  std::vector<int64_t> ids_;
};

}  // namespace podsim::data
