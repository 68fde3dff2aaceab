// Structured attribute values of the HLO text parser: slices, padding, windows,
// convolution dim_labels, shardings, replica groups, metadata and opaque blocks.
#include <charconv>

#include "compiler/ir/parser/internal.h"

namespace podsim::ir::parser {
namespace {

struct Piece {
  std::string_view text;
  size_t offset;
};

std::vector<Piece> split(std::string_view s, size_t offset, char sep) {
  std::vector<Piece> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back({s.substr(start), offset + start});
      return out;
    }
    out.push_back({s.substr(start, end - start), offset + start});
    start = end + 1;
  }
}

int64_t piece_int(Parser& p, const Piece& piece, std::string_view what) {
  int64_t v = 0;
  const char* end = piece.text.data() + piece.text.size();
  auto [ptr, ec] = std::from_chars(piece.text.data(), end, v);
  if (piece.text.empty() || ec != std::errc() || ptr != end)
    p.failf(piece.offset, "expected an integer in {}, got '{}'", what, piece.text);
  return v;
}

// One part of dim_labels ("b01f"): positions of the two letters and of each spatial
// digit. Returns the spatial positions in digit order.
std::vector<int64_t> read_labels(Parser& p, const Piece& part, char first, char second,
                                 int64_t& first_pos, int64_t& second_pos) {
  const std::string_view s = part.text;
  if (s.size() < 2)
    p.failf(part.offset, "dim_labels part '{}' needs '{}' and '{}'", s, first, second);
  const size_t spatial = s.size() - 2;
  std::vector<int64_t> positions(spatial, -1);
  first_pos = second_pos = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    int64_t* slot = nullptr;
    if (c == first)
      slot = &first_pos;
    else if (c == second)
      slot = &second_pos;
    else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < spatial)
      slot = &positions[static_cast<size_t>(c - '0')];
    if (!slot || *slot != -1)
      p.failf(part.offset + i,
              "bad dim_labels part '{}': expected '{}', '{}' and the digits 0..{} once each", s,
              first, second, static_cast<int64_t>(spatial) - 1);
    *slot = static_cast<int64_t>(i);
  }
  return positions;
}

int64_t product(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d < 1) return -1;
  return checked_num_elements(dims);
}

}  // namespace

std::vector<SliceDim> Parser::parse_slice() {
  expect(TokenKind::kLBrace, "'{' to start slice");
  std::vector<SliceDim> dims;
  if (accept(TokenKind::kRBrace)) return dims;
  do {
    expect(TokenKind::kLSquare, "'[' to start a slice dimension ([start:limit:stride])");
    SliceDim d;
    d.start = expect_int("a slice start");
    expect(TokenKind::kColon, "':' after the slice start");
    d.limit = expect_int("a slice limit");
    if (accept(TokenKind::kColon)) d.stride = expect_int("a slice stride");
    expect(TokenKind::kRSquare, "']' to close a slice dimension");
    dims.push_back(d);
  } while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in slice");
  return dims;
}

std::vector<PadDim> Parser::parse_padding() {
  Token word = lex_.scan_word("padding such as 0_1x2_2_1 (low_high[_interior] per dimension)");
  std::vector<PadDim> dims;
  for (const Piece& dim : split(word.text, word.offset, 'x')) {
    std::vector<Piece> parts = split(dim.text, dim.offset, '_');
    if (parts.size() != 2 && parts.size() != 3)
      failf(dim.offset, "padding dimension '{}' must be low_high or low_high_interior", dim.text);
    PadDim d;
    d.low = piece_int(*this, parts[0], "padding");
    d.high = piece_int(*this, parts[1], "padding");
    if (parts.size() == 3) d.interior = piece_int(*this, parts[2], "padding");
    dims.push_back(d);
  }
  return dims;
}

Window Parser::parse_window() {
  Token open = expect(TokenKind::kLBrace, "'{' to start window");
  std::vector<std::string_view> keys;
  std::vector<Piece> sizes, strides, pads, lhs, rhs, reversal;
  size_t dim_count = 0;
  bool have_count = false;
  while (!accept(TokenKind::kRBrace)) {
    Token key =
        expect_name("a window key (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)");
    std::vector<Piece>* target = nullptr;
    if (key.text == "size")
      target = &sizes;
    else if (key.text == "stride")
      target = &strides;
    else if (key.text == "pad")
      target = &pads;
    else if (key.text == "lhs_dilate")
      target = &lhs;
    else if (key.text == "rhs_dilate")
      target = &rhs;
    else if (key.text == "rhs_reversal" || key.text == "window_reversal")
      target = &reversal;
    else
      failf(key.offset,
            "unknown window key '{}' (expected size, stride, pad, lhs_dilate, "
            "rhs_dilate or rhs_reversal)",
            key.text);
    if (!target->empty()) failf(key.offset, "duplicate window key '{}'", key.text);
    expect(TokenKind::kEqual, "'=' after window key '", key.text, "'");
    Token value = lex_.scan_word(fmt::format("a value for window key '{}'", key.text));
    *target = split(value.text, value.offset, 'x');
    if (have_count && target->size() != dim_count)
      failf(value.offset, "window key '{}' has {} dimensions, but an earlier key has {}", key.text,
            target->size(), dim_count);
    dim_count = target->size();
    have_count = true;
  }
  Window w;
  if (!have_count) return w;
  if (sizes.empty()) failf(open.offset, "window needs size=");
  w.dims.resize(dim_count);
  for (size_t i = 0; i < dim_count; ++i) {
    WindowDim& d = w.dims[i];
    d.size = piece_int(*this, sizes[i], "window size");
    if (!strides.empty()) d.stride = piece_int(*this, strides[i], "window stride");
    if (!pads.empty()) {
      std::vector<Piece> lh = split(pads[i].text, pads[i].offset, '_');
      if (lh.size() != 2) failf(pads[i].offset, "window pad '{}' must be low_high", pads[i].text);
      d.pad_low = piece_int(*this, lh[0], "window pad");
      d.pad_high = piece_int(*this, lh[1], "window pad");
    }
    if (!lhs.empty()) d.lhs_dilation = piece_int(*this, lhs[i], "window lhs_dilate");
    if (!rhs.empty()) d.rhs_dilation = piece_int(*this, rhs[i], "window rhs_dilate");
    if (!reversal.empty()) {
      int64_t r = piece_int(*this, reversal[i], "window rhs_reversal");
      if (r != 0 && r != 1) failf(reversal[i].offset, "window rhs_reversal must be 0 or 1");
      d.reversal = r == 1;
    }
  }
  return w;
}

ConvDimNumbers Parser::parse_dim_labels() {
  Token word = lex_.scan_word("dim_labels such as b01f_01io->b01f");
  const std::string_view s = word.text;
  size_t arrow = s.find("->");
  size_t underscore = s.find('_');
  if (arrow == std::string_view::npos || underscore == std::string_view::npos ||
      underscore > arrow || s.find('_', underscore + 1) < arrow ||
      s.find("->", arrow + 2) != std::string_view::npos)
    failf(word.offset, "dim_labels '{}' must look like b01f_01io->b01f", s);
  Piece input{s.substr(0, underscore), word.offset};
  Piece kernel{s.substr(underscore + 1, arrow - underscore - 1), word.offset + underscore + 1};
  Piece output{s.substr(arrow + 2), word.offset + arrow + 2};
  ConvDimNumbers d;
  d.input_spatial = read_labels(*this, input, 'b', 'f', d.input_batch, d.input_feature);
  d.kernel_spatial =
      read_labels(*this, kernel, 'i', 'o', d.kernel_input_feature, d.kernel_output_feature);
  d.output_spatial = read_labels(*this, output, 'b', 'f', d.output_batch, d.output_feature);
  if (d.kernel_spatial.size() != d.input_spatial.size() ||
      d.output_spatial.size() != d.input_spatial.size())
    failf(word.offset, "dim_labels '{}' give different numbers of spatial dimensions", s);
  return d;
}

IotaList Parser::parse_iota_after_reshape(std::vector<int64_t> reshape_dims, size_t offset) {
  expect(TokenKind::kLessEqual, "'<=' in an iota device list");
  IotaList iota;
  iota.reshape_dims = std::move(reshape_dims);
  iota.iota_dims = parse_bracket_int_list("iota dimensions");
  const Token& t = lex_.peek();
  if (t.kind == TokenKind::kName && !t.percent && t.text == "T") {
    lex_.next();
    expect(TokenKind::kLParen, "'(' after T");
    do iota.transpose.push_back(expect_int("a transpose dimension"));
    while (accept(TokenKind::kComma));
    expect(TokenKind::kRParen, "',' or ')' in T(...)");
  }
  int64_t n = product(iota.iota_dims);
  if (iota.reshape_dims.empty() || iota.iota_dims.empty() || n < 1 ||
      product(iota.reshape_dims) != n)
    failf(offset, "iota device list {}: dimensions must be positive and hold equal device counts",
          iota.to_string());
  if (n > kMaxIotaDevices)
    failf(offset, "iota device list {} has more than {} devices", iota.to_string(),
          kMaxIotaDevices);
  if (!iota.transpose.empty()) {
    std::vector<bool> used(iota.iota_dims.size(), false);
    bool ok = iota.transpose.size() == iota.iota_dims.size();
    for (int64_t p : iota.transpose) {
      if (!ok || p < 0 || p >= static_cast<int64_t>(used.size()) || used[static_cast<size_t>(p)]) {
        ok = false;
        break;
      }
      used[static_cast<size_t>(p)] = true;
    }
    if (!ok) failf(offset, "iota device list {}: T(...) is not a permutation", iota.to_string());
  }
  return iota;
}

Sharding Parser::parse_sharding(int depth) {
  if (depth >= kMaxNesting)
    failf(lex_.peek().offset, "sharding nested more than {} levels deep", kMaxNesting);
  Token open = expect(TokenKind::kLBrace, "'{' to start a sharding");
  Sharding s;
  if (peek_is(TokenKind::kLBrace) || peek_is(TokenKind::kRBrace)) {
    s.kind = Sharding::Kind::kTuple;
    if (accept(TokenKind::kRBrace)) return s;
    do s.tuple_elements.push_back(parse_sharding(depth + 1));
    while (accept(TokenKind::kComma));
    expect(TokenKind::kRBrace, "',' or '}' in a tuple sharding");
    return s;
  }
  bool have_kind = false;
  auto set_kind = [&](Sharding::Kind k, const Token& t) {
    if (have_kind) failf(t.offset, "sharding has more than one kind ('{}')", t.text);
    have_kind = true;
    s.kind = k;
  };
  while (!accept(TokenKind::kRBrace)) {
    Token word = expect_name("a sharding (replicated, maximal, devices=, manual or unknown)");
    if (word.text == "replicated") {
      set_kind(Sharding::Kind::kReplicated, word);
    } else if (word.text == "manual") {
      set_kind(Sharding::Kind::kManual, word);
    } else if (word.text == "unknown") {
      set_kind(Sharding::Kind::kUnknown, word);
    } else if (word.text == "maximal") {
      set_kind(Sharding::Kind::kMaximal, word);
      Token device = expect_name("'device=' after maximal");
      if (device.text != "device") failf(device.offset, "expected 'device=' after maximal");
      expect(TokenKind::kEqual, "'=' after device");
      s.maximal_device = expect_int("a device number");
    } else if (word.text == "devices") {
      set_kind(Sharding::Kind::kTiled, word);
      expect(TokenKind::kEqual, "'=' after devices");
      size_t dims_offset = lex_.peek().offset;
      s.tile_dims = parse_bracket_int_list("tile assignment dimensions");
      if (peek_is(TokenKind::kLessEqual)) {
        s.iota = parse_iota_after_reshape(s.tile_dims, dims_offset);
        s.devices = s.iota->expand();
      } else {
        do s.devices.push_back(expect_int("a device number"));
        while (accept(TokenKind::kComma));
        int64_t n = product(s.tile_dims);
        if (s.tile_dims.empty() || n != static_cast<int64_t>(s.devices.size()))
          failf(dims_offset, "sharding tile assignment [{}] does not match its {} devices",
                fmt::join(s.tile_dims, ","), s.devices.size());
      }
    } else if (word.text == "last_tile_dim_replicate") {
      s.last_tile_dim_replicate = true;
    } else if (word.text == "last_tile_dims") {
      expect(TokenKind::kEqual, "'=' after last_tile_dims");
      expect(TokenKind::kLBrace, "'{' to start last_tile_dims");
      do {
        Token t = expect_name("manual or replicated");
        if (t.text != "manual" && t.text != "replicated")
          failf(t.offset, "expected manual or replicated in last_tile_dims, got {}", describe(t));
        s.last_tile_dims.emplace_back(t.text);
      } while (accept(TokenKind::kComma));
      expect(TokenKind::kRBrace, "',' or '}' in last_tile_dims");
    } else if (word.text == "metadata") {
      // Sharding provenance; not kept.
      expect(TokenKind::kEqual, "'=' after metadata");
      parse_metadata();
    } else {
      failf(word.offset, "unknown sharding keyword '{}'", word.text);
    }
  }
  if (!have_kind) failf(open.offset, "sharding has no kind (replicated, maximal, devices=, ...)");
  if ((s.last_tile_dim_replicate || !s.last_tile_dims.empty()) &&
      (s.kind != Sharding::Kind::kTiled ||
       (s.last_tile_dim_replicate && !s.last_tile_dims.empty())))
    failf(open.offset,
          "last_tile_dim_replicate / last_tile_dims need devices= and exclude each other");
  if (s.last_tile_dims.size() > s.tile_dims.size())
    failf(open.offset, "more last_tile_dims than tile dimensions");
  return s;
}

ReplicaGroups Parser::parse_replica_groups() {
  ReplicaGroups groups;
  if (peek_is(TokenKind::kLSquare)) {
    size_t offset = lex_.peek().offset;
    std::vector<int64_t> shape = parse_bracket_int_list("replica group dimensions");
    if (shape.size() != 2)
      failf(offset, "iota replica_groups need [groups,group_size]<=[...], got {} dimensions",
            shape.size());
    groups.iota = parse_iota_after_reshape(shape, offset);
    std::vector<int64_t> ids = groups.iota->expand();
    const auto size = static_cast<size_t>(shape[1]);
    for (size_t start = 0; start < ids.size(); start += size)
      groups.groups.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                 ids.begin() + static_cast<std::ptrdiff_t>(start + size));
    return groups;
  }
  expect(TokenKind::kLBrace, "'{' or '[' to start replica_groups");
  if (accept(TokenKind::kRBrace)) return groups;
  do groups.groups.push_back(parse_int_list("a replica group"));
  while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in replica_groups");
  return groups;
}

std::vector<std::pair<int64_t, int64_t>> Parser::parse_source_target_pairs() {
  expect(TokenKind::kLBrace, "'{' to start source_target_pairs");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (accept(TokenKind::kRBrace)) return pairs;
  do {
    expect(TokenKind::kLBrace, "'{' to start a source,target pair");
    int64_t source = expect_int("a source device");
    expect(TokenKind::kComma, "',' between source and target");
    int64_t target = expect_int("a target device");
    expect(TokenKind::kRBrace, "'}' to close a source,target pair");
    pairs.emplace_back(source, target);
  } while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in source_target_pairs");
  return pairs;
}

Metadata Parser::parse_metadata() {
  expect(TokenKind::kLBrace, "'{' to start metadata");
  Metadata m;
  while (!accept(TokenKind::kRBrace)) {
    Token key = expect_name("a metadata key");
    expect(TokenKind::kEqual, "'=' after metadata key '", key.text, "'");
    if (key.text == "op_type" || key.text == "op_name" || key.text == "source_file") {
      std::string value = string_value(expect(TokenKind::kString, "a quoted string"));
      (key.text == "op_type"   ? m.op_type
       : key.text == "op_name" ? m.op_name
                               : m.source_file) = std::move(value);
    } else if (key.text == "source_line") {
      m.source_line = expect_int("source_line");
    } else if (peek_is(TokenKind::kLBrace)) {
      // Other keys XLA writes (deduplicated_name, scheduling_name, stack_frame_id,
      // preserve_layout, profile_type={...}, ...) are accepted and dropped.
      lex_.scan_braced(key.text);
    } else {
      Token v = lex_.next();
      if (v.kind != TokenKind::kString && v.kind != TokenKind::kInt &&
          v.kind != TokenKind::kFloat && v.kind != TokenKind::kName)
        failf(v.offset, "expected a value for metadata key '{}', got {}", key.text, describe(v));
    }
    accept(TokenKind::kComma);
  }
  return m;
}

std::map<std::string, std::string> Parser::parse_frontend_attributes() {
  expect(TokenKind::kLBrace, "'{' to start frontend_attributes");
  std::map<std::string, std::string> attrs;
  if (accept(TokenKind::kRBrace)) return attrs;
  do {
    Token key = lex_.next();
    std::string name;
    if (key.kind == TokenKind::kName && !key.percent)
      name = std::string(key.text);
    else if (key.kind == TokenKind::kString)
      name = string_value(key);
    else
      failf(key.offset, "expected a frontend attribute name, got {}", describe(key));
    expect(TokenKind::kEqual, "'=' after a frontend attribute name");
    std::string value =
        string_value(expect(TokenKind::kString, "a quoted frontend attribute value"));
    if (!attrs.emplace(std::move(name), std::move(value)).second)
      failf(key.offset, "duplicate frontend attribute {}", describe(key));
  } while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in frontend_attributes");
  return attrs;
}

std::string Parser::parse_opaque_value(std::string_view what) {
  if (peek_is(TokenKind::kLBrace)) return std::string(lex_.scan_braced(what).text);
  Token t = lex_.next();
  if (t.kind != TokenKind::kString)
    failf(t.offset, "expected a quoted string or {{...}} for {}, got {}", what, describe(t));
  // Validates the escapes so that the kept text reads back the same way.
  string_value(t);
  return std::string(t.text);
}

}  // namespace podsim::ir::parser
