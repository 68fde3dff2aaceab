#include "compiler/ir/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/utf8.h"

namespace podsim::ir {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_letter(c) || is_digit(c) || c == '.' || c == '-'; }

}  // namespace

SourcePos LineMap::pos(size_t offset) {
  offset = std::min(offset, text_.size());
  if (offset < offset_) {
    offset_ = 0;
    line_start_ = 0;
    line_ = 1;
  }
  const char* base = text_.data();
  const char* p = base + offset_;
  const char* end = base + offset;
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (!nl) break;
    p = static_cast<const char*>(nl) + 1;
    ++line_;
    line_start_ = static_cast<size_t>(p - base);
  }
  offset_ = offset;
  return SourcePos{line_, static_cast<int>(offset - line_start_) + 1};
}

int64_t LineMap::line_count() const {
  int64_t lines = 1;
  const char* p = text_.data();
  const char* end = p + text_.size();
  while (const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p))) {
    p = static_cast<const char*>(nl) + 1;
    ++lines;
  }
  return lines;
}

Lexer::Lexer(std::string_view text, std::string_view filename)
    : text_(text), filename_(filename), lines_(text) {}

void Lexer::fail_at(size_t offset, std::string_view message) {
  SourcePos p = lines_.pos(offset);
  fail("{}:{}:{}: {}", filename_, p.line, p.column, message);
}

void Lexer::skip_blanks() {
  const size_t n = text_.size();
  while (pos_ < n) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) fail_at(pos_, "unterminated comment '/*'");
      pos_ = close + 2;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') {
      size_t nl = text_.find('\n', pos_);
      pos_ = nl == std::string_view::npos ? n : nl + 1;
    } else {
      return;
    }
  }
}

const Token& Lexer::peek() {
  if (!has_peeked_) {
    size_t saved = pos_;
    peeked_ = lex();
    pos_ = saved;
    has_peeked_ = true;
  }
  return peeked_;
}

Token Lexer::next() {
  if (has_peeked_) {
    has_peeked_ = false;
    pos_ = peeked_.offset + peeked_.text.size() + (peeked_.percent ? 1 : 0);
    return peeked_;
  }
  return lex();
}

Token Lexer::lex_number(size_t start) {
  const size_t n = text_.size();
  size_t p = start;
  if (text_[p] == '-') ++p;
  if (p + 1 < n && text_[p] == '0' && (text_[p + 1] == 'x' || text_[p + 1] == 'X')) {
    p += 2;
    size_t digits = p;
    while (p < n && (is_hex_digit(text_[p]) || text_[p] == '.')) ++p;
    if (p == digits) fail_at(start, "malformed hexadecimal number");
    if (p < n && (text_[p] == 'p' || text_[p] == 'P')) {
      ++p;
      if (p < n && (text_[p] == '+' || text_[p] == '-')) ++p;
      size_t exp = p;
      while (p < n && is_digit(text_[p])) ++p;
      if (p == exp) fail_at(start, "malformed hexadecimal float exponent");
    }
    pos_ = p;
    return Token{TokenKind::kFloat, text_.substr(start, p - start), start};
  }
  bool is_float = false;
  while (p < n && is_digit(text_[p])) ++p;
  if (p < n && text_[p] == '.') {
    is_float = true;
    ++p;
    while (p < n && is_digit(text_[p])) ++p;
  }
  if (p < n && (text_[p] == 'e' || text_[p] == 'E')) {
    size_t q = p + 1;
    if (q < n && (text_[q] == '+' || text_[q] == '-')) ++q;
    if (q < n && is_digit(text_[q])) {
      is_float = true;
      p = q;
      while (p < n && is_digit(text_[p])) ++p;
    }
  }
  pos_ = p;
  return Token{is_float ? TokenKind::kFloat : TokenKind::kInt, text_.substr(start, p - start),
               start};
}

Token Lexer::lex() {
  skip_blanks();
  const size_t n = text_.size();
  const size_t start = pos_;
  if (start >= n) return Token{TokenKind::kEof, {}, n};
  char c = text_[start];
  auto single = [&](TokenKind kind) {
    pos_ = start + 1;
    return Token{kind, text_.substr(start, 1), start};
  };
  switch (c) {
    case '{':
      return single(TokenKind::kLBrace);
    case '}':
      return single(TokenKind::kRBrace);
    case '(':
      return single(TokenKind::kLParen);
    case ')':
      return single(TokenKind::kRParen);
    case '[':
      return single(TokenKind::kLSquare);
    case ']':
      return single(TokenKind::kRSquare);
    case ',':
      return single(TokenKind::kComma);
    case '=':
      return single(TokenKind::kEqual);
    case ':':
      return single(TokenKind::kColon);
    case '?':
      return single(TokenKind::kQuestion);
    default:
      break;
  }
  if (c == '<') {
    if (start + 1 < n && text_[start + 1] == '=') {
      pos_ = start + 2;
      return Token{TokenKind::kLessEqual, text_.substr(start, 2), start};
    }
    fail_at(start, "unexpected character '<'");
  }
  if (c == '-') {
    if (start + 1 < n && text_[start + 1] == '>') {
      pos_ = start + 2;
      return Token{TokenKind::kArrow, text_.substr(start, 2), start};
    }
    if (start + 1 < n && is_digit(text_[start + 1])) return lex_number(start);
    return single(TokenKind::kMinus);
  }
  if (is_digit(c)) return lex_number(start);
  if (c == '"') {
    size_t p = start + 1;
    while (p < n && text_[p] != '"') {
      if (text_[p] == '\\') ++p;
      ++p;
    }
    if (p >= n) fail_at(start, "unterminated string");
    pos_ = p + 1;
    return Token{TokenKind::kString, text_.substr(start, pos_ - start), start};
  }
  bool percent = c == '%';
  size_t p = percent ? start + 1 : start;
  if (p >= n || !(percent ? is_name_char(text_[p]) : is_letter(text_[p]))) {
    if (percent) fail_at(start, "expected a name after '%'");
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) fail_at(start, fmt::format("unexpected character '{}'", c));
    fail_at(start, fmt::format("unexpected byte 0x{:02x}", u));
  }
  size_t name_start = p;
  while (p < n && is_name_char(text_[p])) {
    // "a->b": the arrow is its own token.
    if (text_[p] == '-' && p + 1 < n && text_[p + 1] == '>') break;
    ++p;
  }
  if (p == name_start) fail_at(start, "expected a name after '%'");
  pos_ = p;
  return Token{TokenKind::kName, text_.substr(name_start, p - name_start), start, percent};
}

Token Lexer::scan_word(std::string_view what) {
  has_peeked_ = false;
  skip_blanks();
  const size_t n = text_.size();
  size_t p = pos_;
  while (p < n) {
    char c = text_[p];
    if (is_letter(c) || is_digit(c) || c == '-') {
      ++p;
    } else if (c == '>' && p > pos_ && text_[p - 1] == '-') {
      ++p;
    } else {
      break;
    }
  }
  if (p == pos_) fail_at(pos_, fmt::format("expected {}", what));
  Token t{TokenKind::kName, text_.substr(pos_, p - pos_), pos_};
  pos_ = p;
  return t;
}

Token Lexer::scan_braced(std::string_view what) {
  has_peeked_ = false;
  skip_blanks();
  const size_t n = text_.size();
  const size_t start = pos_;
  if (start >= n || text_[start] != '{')
    fail_at(start, fmt::format("expected '{{' to start {}", what));
  // A counter, not recursion: nesting depth costs nothing here.
  size_t depth = 0;
  size_t p = start;
  while (p < n) {
    char c = text_[p];
    if (c == '"') {
      ++p;
      while (p < n && text_[p] != '"') {
        if (text_[p] == '\\') ++p;
        ++p;
      }
      if (p >= n) break;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) {
        pos_ = p + 1;
        return Token{TokenKind::kName, text_.substr(start, pos_ - start), start};
      }
    }
    ++p;
  }
  fail_at(start, fmt::format("unterminated '{{' in {}", what));
}

Token Lexer::scan_layout_extra() {
  has_peeked_ = false;
  const size_t n = text_.size();
  const size_t start = pos_;
  size_t p = start;
  int parens = 0;
  while (p < n) {
    char c = text_[p];
    if (c == '(') {
      ++parens;
    } else if (c == ')') {
      if (--parens < 0) fail_at(p, "unbalanced ')' in layout");
    } else if (c == '}' && parens == 0) {
      break;
    } else if (c == '{' || c == '"' || c == '\n' || static_cast<unsigned char>(c) < 0x20 ||
               static_cast<unsigned char>(c) >= 0x7f) {
      fail_at(p, "unexpected character in layout");
    }
    ++p;
  }
  if (p >= n) fail_at(start, "unterminated layout: expected '}'");
  pos_ = p;
  return Token{TokenKind::kName, text_.substr(start, p - start), start};
}

std::string Lexer::string_value(const Token& token) {
  std::string_view s = token.text.substr(1, token.text.size() - 2);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    size_t at = token.offset + 1 + i;
    if (++i >= s.size()) fail_at(at, "unterminated escape sequence");
    char e = s[i];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '?':
        out += '?';
        break;
      case 'x': {
        int value = 0;
        int digits = 0;
        while (digits < 2 && i + 1 < s.size() && is_hex_digit(s[i + 1])) {
          char h = s[++i];
          value = value * 16 + (is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
          ++digits;
        }
        if (digits == 0) fail_at(at, "\\x escape without hex digits");
        out += static_cast<char>(value);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int value = e - '0';
          for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
            value = value * 8 + (s[++i] - '0');
          if (value > 255) fail_at(at, "octal escape out of range");
          out += static_cast<char>(value);
        } else {
          fail_at(at, fmt::format("unknown escape sequence '\\{}'", e));
        }
    }
  }
  return out;
}

void check_utf8(std::string_view text, std::string_view filename) {
  const size_t i = first_invalid_utf8(text);
  if (i == std::string_view::npos) return;
  LineMap lines(text);
  SourcePos p = lines.pos(i);
  fail("{}:{}:{}: invalid UTF-8 (byte 0x{:02x}); HLO text must be UTF-8", filename, p.line,
       p.column, static_cast<unsigned char>(text[i]));
}

std::string describe(const Token& token) {
  if (token.kind == TokenKind::kEof) return "end of file";
  std::string_view t = token.text;
  std::string text = token.percent ? "%" : "";
  text += t.size() > 40 ? std::string(t.substr(0, 40)) + "..." : std::string(t);
  return "'" + text + "'";
}

std::string quote_string(std::string_view raw) {
  std::string out = "\"";
  for (char c : raw) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u >= 0x7f)
          out += fmt::format("\\{:03o}", u);
        else
          out += c;
    }
  }
  return out + "\"";
}

bool is_plain_name(std::string_view text) {
  if (text.empty() || !is_letter(text[0])) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!is_name_char(text[i])) return false;
    if (text[i] == '-' && i + 1 < text.size() && text[i + 1] == '>') return false;
  }
  return true;
}

}  // namespace podsim::ir
