// Pieces of the text form shared by the assembler and the disassembler. Internal to isa/.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::isa::detail {

// The register-like operand kinds of a signature and the letter their text starts with
// (s3, v0, m1, q2, d4); 0 for the others (I, R, L).
inline char operand_prefix(char kind) {
  switch (kind) {
    case 'S':
      return 's';
    case 'V':
      return 'v';
    case 'M':
      return 'm';
    case 'Q':
      return 'q';
    case 'D':
      return 'd';
    default:
      return 0;
  }
}

// A double-quoted string: printable ASCII as is, \" \\ \n \t, every other byte as \xHH,
// so that any bytes survive the text form.
inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace podsim::isa::detail

namespace podsim::isa::detail {

// One line of assembler text as tokens; the last is always kEnd ('#' starts a comment).
//   kWord    [A-Za-z_.][A-Za-z0-9_.-]*    mnemonics, directives, names, registers
//   kInt     -?[0-9]+ or 0x[0-9a-fA-F]+   (hex is the 64-bit pattern)
//   kString  "..." with the escapes quote() writes; text is the unescaped bytes
//   kPunct   one of , [ ] : @ =
struct Token {
  enum class Kind { kWord, kInt, kString, kPunct, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;
  int64_t value = 0;
  int column = 1;  // 1-based
};

// Throws podsim::Error "source:line:column: what" on a malformed token.
std::vector<Token> tokenize(std::string_view line, std::string_view source, int line_number);

}  // namespace podsim::isa::detail
