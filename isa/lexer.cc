// The assembler's tokenizer: one line at a time, every error with line and column.
#include <charconv>
#include <cstring>

#include "common/error.h"
#include "isa/text_internal.h"

namespace podsim::isa::detail {
namespace {

bool word_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}
bool word_char(char c) { return word_start(c) || (c >= '0' && c <= '9') || c == '-'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view line, std::string_view source, int line_number)
      : line_(line), source_(source), line_number_(line_number) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      while (at_ < line_.size() && (line_[at_] == ' ' || line_[at_] == '\t')) ++at_;
      if (at_ == line_.size() || line_[at_] == '#') break;
      tokens.push_back(next());
    }
    Token end;
    end.column = column(at_);
    tokens.push_back(end);
    return tokens;
  }

 private:
  int column(size_t at) const { return static_cast<int>(at) + 1; }

  template <typename... Args>
  [[noreturn]] void error(size_t at, fmt::format_string<Args...> format, Args&&... args) const {
    fail("{}:{}:{}: {}", source_, line_number_, column(at),
         fmt::format(format, std::forward<Args>(args)...));
  }

  Token next() {
    Token t;
    t.column = column(at_);
    char c = line_[at_];
    if (word_start(c)) {
      size_t start = at_;
      while (at_ < line_.size() && word_char(line_[at_])) ++at_;
      t.kind = Token::Kind::kWord;
      t.text = line_.substr(start, at_ - start);
    } else if (digit(c) || (c == '-' && at_ + 1 < line_.size() && digit(line_[at_ + 1]))) {
      t.kind = Token::Kind::kInt;
      t.value = number();
    } else if (c == '"') {
      t.kind = Token::Kind::kString;
      t.text = string();
    } else if (std::strchr(",[]:@=", c) != nullptr) {
      t.kind = Token::Kind::kPunct;
      t.text = std::string(1, c);
      ++at_;
    } else {
      error(at_, "unexpected character '{}'", c);
    }
    return t;
  }

  int64_t number() {
    size_t start = at_++;  // a digit or '-'
    while (at_ < line_.size() && word_char(line_[at_])) ++at_;
    std::string_view text = line_.substr(start, at_ - start);
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      uint64_t bits = 0;
      auto [end, ec] = std::from_chars(first + 2, last, bits, 16);
      if (ec == std::errc::result_out_of_range) error(start, "'{}' does not fit 64 bits", text);
      if (ec != std::errc() || end != last) error(start, "'{}' is not a number", text);
      return static_cast<int64_t>(bits);
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range)
      error(start, "'{}' does not fit a signed 64-bit integer", text);
    if (ec != std::errc() || end != last) error(start, "'{}' is not a number", text);
    return value;
  }

  std::string string() {
    size_t start = at_++;
    std::string out;
    while (true) {
      if (at_ >= line_.size()) error(start, "unterminated string");
      char c = line_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= line_.size()) error(start, "unterminated string");
      char e = line_[at_++];
      switch (e) {
        case '"':
        case '\\':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'x': {
          int hi = at_ < line_.size() ? hex_value(line_[at_]) : -1;
          int lo = at_ + 1 < line_.size() ? hex_value(line_[at_ + 1]) : -1;
          if (hi < 0 || lo < 0) error(at_ - 2, "\\x needs two hex digits");
          out += static_cast<char>(hi * 16 + lo);
          at_ += 2;
          break;
        }
        default:
          error(at_ - 2, "unknown escape '\\{}' (use \\\" \\\\ \\n \\t \\xHH)", e);
      }
    }
  }

  std::string_view line_;
  std::string_view source_;
  int line_number_;
  size_t at_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view line, std::string_view source, int line_number) {
  return Lexer(line, source, line_number).run();
}

}  // namespace podsim::isa::detail
