// Shapes, numbers and constant literals of the HLO text parser.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "compiler/ir/parser/internal.h"

namespace podsim::ir::parser {
namespace {

struct IntRange {
  int64_t min;
  uint64_t max;
};

IntRange int_range(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS8:
      return {INT8_MIN, INT8_MAX};
    case PrimitiveType::kS16:
      return {INT16_MIN, INT16_MAX};
    case PrimitiveType::kS32:
      return {INT32_MIN, INT32_MAX};
    case PrimitiveType::kS64:
      return {INT64_MIN, INT64_MAX};
    case PrimitiveType::kU8:
      return {0, UINT8_MAX};
    case PrimitiveType::kU16:
      return {0, UINT16_MAX};
    case PrimitiveType::kU32:
      return {0, UINT32_MAX};
    case PrimitiveType::kU64:
      return {0, UINT64_MAX};
    default:
      return {0, 0};
  }
}

// Array elements in shape (summed over tuple leaves), saturating at limit + 1.
int64_t leaf_elements(const Shape& shape, int64_t limit) {
  if (shape.is_array()) return checked_num_elements(shape.dims());
  int64_t total = 0;
  for (const Shape& e : shape.elements()) {
    int64_t n = leaf_elements(e, limit);
    if (n < 0 || n > limit - total) return limit + 1;
    total += n;
  }
  return total;
}

bool is_word(const Token& t, std::string_view word) {
  return t.kind == TokenKind::kName && !t.percent && t.text == word;
}

class LiteralReader {
 public:
  explicit LiteralReader(Parser& p) : p_(p), lex_(p.lexer()) {}

  void fill(Literal& lit, int depth) {
    if (lit.shape().is_tuple()) {
      if (depth >= kMaxNesting)
        p_.failf(lex_.peek().offset, "constant nested more than {} levels deep", kMaxNesting);
      p_.expect(TokenKind::kLParen, "'(' to start a tuple constant");
      auto& elements = lit.elements();
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i) p_.expect(TokenKind::kComma, "',' between tuple constant elements");
        fill(elements[i], depth + 1);
      }
      p_.expect(TokenKind::kRParen, "')' to close a tuple constant");
      return;
    }
    int64_t next = 0;
    fill_array(lit, 0, next);
  }

 private:
  // The nesting depth here is the rank, which parse_shape bounds.
  void fill_array(Literal& lit, size_t dim, int64_t& next) {
    const auto& dims = lit.shape().dims();
    if (dim == dims.size()) {
      element(lit, next++);
      return;
    }
    p_.expect(TokenKind::kLBrace, "'{' to start a dimension of the constant");
    for (int64_t i = 0; i < dims[dim]; ++i) {
      if (i && !p_.accept(TokenKind::kComma)) {
        const Token& t = lex_.peek();
        if (t.kind != TokenKind::kRBrace)
          p_.failf(t.offset, "expected ',' between constant elements, got {}", describe(t));
      }
      if (p_.peek_is(TokenKind::kRBrace))
        p_.failf(lex_.peek().offset,
                 "constant has {} elements in dimension {}, but its shape {} says {}", i, dim,
                 lit.shape().to_string(false), dims[dim]);
      fill_array(lit, dim + 1, next);
    }
    Token close = lex_.next();
    if (close.kind == TokenKind::kComma)
      p_.failf(close.offset, "constant has more than {} elements in dimension {} (shape {})",
               dims[dim], dim, lit.shape().to_string(false));
    if (close.kind != TokenKind::kRBrace)
      p_.failf(close.offset, "expected '}}' to close a dimension of the constant, got {}",
               describe(close));
  }

  void element(Literal& lit, int64_t index) {
    Token t = lex_.next();
    const PrimitiveType type = lit.type();
    if (type == PrimitiveType::kPred) {
      if (is_word(t, "true") || is_word(t, "false")) {
        lit.set_from_int64(index, t.text == "true" ? 1 : 0);
      } else if (t.kind == TokenKind::kInt && (t.text == "0" || t.text == "1")) {
        lit.set_from_int64(index, t.text == "1" ? 1 : 0);
      } else {
        p_.failf(t.offset, "expected true or false in a pred constant, got {}", describe(t));
      }
      return;
    }
    if (is_integral(type)) {
      integer(lit, index, t);
      return;
    }
    size_t offset = t.offset;
    bool negative = false;
    if (t.kind == TokenKind::kMinus) {
      negative = true;
      t = lex_.next();
      if (!is_word(t, "nan") && !is_word(t, "inf"))
        p_.failf(offset, "expected a number in a {} constant, got '-'", type_name(type));
    }
    double v = 0;
    if (is_word(t, "nan")) {
      v = std::numeric_limits<double>::quiet_NaN();
      skip_nan_payload();
    } else if (is_word(t, "inf")) {
      v = std::numeric_limits<double>::infinity();
    } else if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) {
      // Narrower types read the text as float, not double: a float printed in shortest
      // form then reads back exactly, without rounding twice.
      v = type == PrimitiveType::kF64 ? to_float<double>(t) : to_float<float>(t);
    } else {
      p_.failf(t.offset, "expected a number in a {} constant, got {}", type_name(type),
               describe(t));
    }
    if (negative) v = -v;
    lit.set_from_double(index, v);
    if (std::isfinite(v) && !std::isfinite(lit.get_as_double(index)))
      p_.failf(offset, "value {} is out of range for {}", t.text, type_name(type));
  }

  void integer(Literal& lit, int64_t index, const Token& t) {
    const PrimitiveType type = lit.type();
    if (t.kind != TokenKind::kInt)
      p_.failf(t.offset, "expected an integer in a {} constant, got {}", type_name(type),
               describe(t));
    const IntRange range = int_range(type);
    const char* begin = t.text.data();
    const char* end = begin + t.text.size();
    if (is_signed_int(type)) {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(begin, end, v);
      if (ec != std::errc() || ptr != end || v < range.min || v > static_cast<int64_t>(range.max))
        p_.failf(t.offset, "value {} is out of range for {}", t.text, type_name(type));
      lit.set_from_int64(index, v);
      return;
    }
    // Unsigned values are read as uint64 so that all of u64 is exact; "-0" is zero.
    bool negative = *begin == '-';
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(begin + (negative ? 1 : 0), end, v);
    if (ec != std::errc() || ptr != end || v > range.max || (negative && v != 0))
      p_.failf(t.offset, "value {} is out of range for {}", t.text, type_name(type));
    lit.set_from_uint64(index, v);
  }

  // XLA may write a NaN's payload as nan(0x...); it is accepted and not kept.
  void skip_nan_payload() {
    const std::string_view text = lex_.text();
    const Token& next = lex_.peek();
    if (next.kind != TokenKind::kLParen || next.offset == 0 || text[next.offset - 1] != 'n') return;
    lex_.next();
    p_.expect(TokenKind::kFloat, "a hexadecimal NaN payload");
    p_.expect(TokenKind::kRParen, "')' after the NaN payload");
  }

  template <typename F>
  F to_float(const Token& t) {
    std::string_view s = t.text;
    bool negative = !s.empty() && s[0] == '-';
    if (negative) s.remove_prefix(1);
    F v = 0;
    std::errc ec{};
    const char* ptr = nullptr;
    if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      auto r = std::from_chars(s.data() + 2, s.data() + s.size(), v, std::chars_format::hex);
      ec = r.ec;
      ptr = r.ptr;
    } else {
      auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      ec = r.ec;
      ptr = r.ptr;
    }
    if (ec == std::errc::result_out_of_range) {
      // from_chars reports underflow and overflow alike; strtod tells them apart
      // (underflow reads as the nearest denormal or zero, as XLA does).
      std::string copy(t.text);
      v = std::is_same_v<F, float> ? std::strtof(copy.c_str(), nullptr)
                                   : static_cast<F>(std::strtod(copy.c_str(), nullptr));
      if (std::isinf(v)) p_.failf(t.offset, "value {} is out of range", t.text);
      return v;
    }
    if (ec != std::errc() || ptr != s.data() + s.size())
      p_.failf(t.offset, "malformed number {}", t.text);
    return negative ? -v : v;
  }

  Parser& p_;
  Lexer& lex_;
};

}  // namespace

Shape Parser::parse_shape(int depth) {
  if (depth >= kMaxNesting)
    failf(lex_.peek().offset, "shape nested more than {} levels deep", kMaxNesting);
  Token t = lex_.next();
  if (t.kind == TokenKind::kLParen) {
    std::vector<Shape> elements;
    if (!accept(TokenKind::kRParen)) {
      do elements.push_back(parse_shape(depth + 1));
      while (accept(TokenKind::kComma));
      expect(TokenKind::kRParen, "',' or ')' in a tuple shape");
    }
    return Shape::tuple(std::move(elements));
  }
  if (t.kind != TokenKind::kName || t.percent)
    failf(t.offset, "expected a shape (such as f32[2,3] or (f32[], s32[])), got {}", describe(t));
  std::optional<PrimitiveType> type = type_from_name(t.text);
  if (!type)
    failf(t.offset,
          "unknown element type '{}' (supported: pred, s8, s16, s32, s64, u8, u16, u32, u64, "
          "f16, bf16, f32, f64)",
          t.text);
  expect(TokenKind::kLSquare, "'[' after element type '", t.text, "'");
  std::vector<int64_t> dims;
  Token close = lex_.next();
  while (close.kind != TokenKind::kRSquare) {
    if (close.kind == TokenKind::kLessEqual || close.kind == TokenKind::kQuestion)
      failf(close.offset, "dynamic shapes are not supported (dimension '{}' in a {} shape)",
            close.text, t.text);
    if (close.kind != TokenKind::kInt)
      failf(close.offset, "expected a dimension size in a {} shape, got {}", t.text,
            describe(close));
    int64_t v = int_value(close);
    if (v < 0) failf(close.offset, "negative dimension size {}", v);
    if (dims.size() >= static_cast<size_t>(kMaxNesting))
      failf(close.offset, "shape has more than {} dimensions", kMaxNesting);
    dims.push_back(v);
    close = lex_.next();
    if (close.kind == TokenKind::kComma)
      close = lex_.next();
    else if (close.kind != TokenKind::kRSquare)
      failf(close.offset, "expected ',' or ']' in the dimensions of a shape, got {}",
            describe(close));
  }
  if (checked_num_elements(dims) < 0)
    failf(t.offset, "absurd dimensions: {}[{}] has more than 2^40 elements", t.text,
          fmt::join(dims, ","));
  Shape shape(*type, std::move(dims));

  // A layout is only a layout when it touches the ']': in "-> f32[2] {" the brace opens
  // a computation body.
  const std::string_view text = lex_.text();
  const size_t after = close.offset + 1;
  if (after < text.size() && text[after] == '{') {
    Token open = lex_.next();
    Layout layout;
    if (!peek_is(TokenKind::kRBrace) && !peek_is(TokenKind::kColon)) {
      do layout.minor_to_major.push_back(expect_int("a layout dimension"));
      while (accept(TokenKind::kComma));
    }
    if (accept(TokenKind::kColon)) layout.extra = std::string(lex_.scan_layout_extra().text);
    expect(TokenKind::kRBrace, "'}' to close the layout");
    const int64_t rank = shape.rank();
    std::vector<bool> used(static_cast<size_t>(rank), false);
    bool ok = static_cast<int64_t>(layout.minor_to_major.size()) == rank;
    for (int64_t d : layout.minor_to_major) {
      if (!ok || d < 0 || d >= rank || used[static_cast<size_t>(d)]) {
        ok = false;
        break;
      }
      used[static_cast<size_t>(d)] = true;
    }
    if (!ok)
      failf(open.offset, "layout {{{}}} is not a permutation of the {} dimensions of {}",
            fmt::join(layout.minor_to_major, ","), rank, shape.to_string(false));
    shape.set_layout(std::move(layout));
  }
  return shape;
}

Literal Parser::parse_literal(const Shape& shape, size_t offset) {
  // Every element takes at least one character, so a shape with more elements than the
  // rest of the text has characters cannot be spelled out; checking before allocating
  // keeps a huge declared shape from exhausting memory.
  const auto remaining =
      static_cast<int64_t>(lex_.text().size() - std::min(offset, lex_.text().size()));
  if (leaf_elements(shape, remaining) > remaining)
    failf(offset, "constant of shape {} has more elements than the text could hold",
          shape.to_string(false));
  Literal lit(shape);
  LiteralReader(*this).fill(lit, 0);
  return lit;
}

}  // namespace podsim::ir::parser
