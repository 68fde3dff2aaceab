// Tokenizer for HLO text. Tokens are views into the text with byte offsets; offsets are
// turned into line:column only where needed (instruction positions, errors), so lexing
// a large module allocates nothing per token. Context-dependent values that XLA writes
// as one word (padding 0_1x2_2, window sizes 3x3, dim_labels b01f_01io->b01f) and
// opaque brace blocks (backend_config={...}) are read with the raw scan_* functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/ir/instruction.h"

namespace podsim::ir {

enum class TokenKind : uint8_t {
  kEof,
  kName,    // [A-Za-z_][A-Za-z0-9_.-]* or %name (text without the '%')
  kInt,     // -?[0-9]+
  kFloat,   // decimal with '.' or exponent, or hex float 0x1.8p3
  kString,  // "..." (text includes the quotes and escapes)
  kLBrace,
  kRBrace,
  kLParen,
  kRParen,
  kLSquare,
  kRSquare,
  kComma,
  kEqual,
  kColon,
  kArrow,      // ->
  kMinus,      // '-' not starting a number (as in -nan, -inf)
  kLessEqual,  // <=
  kQuestion,   // ? (dynamic dimension)
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;
  size_t offset = 0;     // byte offset of the token's first character
  bool percent = false;  // kName written with a leading '%'
};

// Byte offset -> 1-based line and column. Queries with non-decreasing offsets cost only
// the distance between them.
class LineMap {
 public:
  explicit LineMap(std::string_view text) : text_(text) {}
  SourcePos pos(size_t offset);
  int64_t line_count() const;

 private:
  std::string_view text_;
  size_t offset_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
};

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view filename);

  const Token& peek();
  Token next();

  // Raw scans start at the current position (skipping blanks and comments); they must
  // not be used while a peeked token lies beyond that position (it is dropped).
  // A word of [A-Za-z0-9_-] characters that may contain "->"; fails if empty.
  Token scan_word(std::string_view what);
  // A '{' ... '}' block with nested braces and strings, returned verbatim.
  Token scan_braced(std::string_view what);
  // The text of a layout after ':' up to the closing '}' (not included).
  Token scan_layout_extra();

  // Unescaped contents of a kString token.
  std::string string_value(const Token& token);

  [[noreturn]] void fail_at(size_t offset, std::string_view message);
  SourcePos pos(size_t offset) { return lines_.pos(offset); }
  int64_t line_count() const { return lines_.line_count(); }
  std::string_view text() const { return text_; }
  std::string_view filename() const { return filename_; }

 private:
  void skip_blanks();
  Token lex();
  Token lex_number(size_t start);

  std::string_view text_;
  std::string_view filename_;
  size_t pos_ = 0;
  Token peeked_;
  bool has_peeked_ = false;
  LineMap lines_;
};

// Throws podsim::Error "FILE:LINE:COL: invalid UTF-8 ..." at the first bad sequence.
void check_utf8(std::string_view text, std::string_view filename);

// For messages: a token as the user wrote it, shortened; "end of file" for kEof.
std::string describe(const Token& token);

// A C-escaped, double-quoted string that string_value() reads back to raw (non-ASCII
// and control bytes are written as octal escapes so the result is always ASCII).
std::string quote_string(std::string_view raw);

// Whether text lexes as one plain kName token (no '%' needed).
bool is_plain_name(std::string_view text);

}  // namespace podsim::ir
