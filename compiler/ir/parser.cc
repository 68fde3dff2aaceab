// Module structure of the HLO text parser: header, computations, instruction lines and
// operands. Attribute values and literals live in the other parser_*.cc files.
#include "compiler/ir/parser.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "compiler/ir/parser/internal.h"

namespace podsim::ir {
namespace parser {
namespace {

bool is_keyword(const Token& t, std::string_view word) {
  return t.kind == TokenKind::kName && !t.percent && t.text == word;
}

// Header attributes XLA writes that carry no meaning here; kept verbatim.
constexpr std::string_view kVerbatimHeaderAttributes[] = {
    "is_scheduled",
    "allow_spmd_sharding_propagation_to_output",
    "allow_spmd_sharding_propagation_to_parameters",
    "alias_passthrough_params",
    "frontend_attributes",
    "buffer_donor",
};

}  // namespace

Instruction* NameTable::find(std::string_view name) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  const size_t hash = std::hash<std::string_view>{}(name);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.generation != generation_) return nullptr;
    if (s.hash == hash && s.key == name) return s.value;
  }
}

void NameTable::insert(std::string_view name, Instruction* value) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  const size_t hash = std::hash<std::string_view>{}(name);
  size_t i = hash & mask;
  while (slots_[i].generation == generation_) i = (i + 1) & mask;
  slots_[i] = Slot{name, value, hash, generation_};
  ++size_;
}

void NameTable::reset() {
  size_ = 0;
  if (++generation_ == 0) {
    for (Slot& s : slots_) s.generation = 0;
    generation_ = 1;
  }
}

void NameTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.generation != generation_) continue;
    size_t i = s.hash & mask;
    while (slots_[i].generation == generation_) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

Parser::Parser(std::string_view text, std::string_view filename) : lex_(text, filename) {}

bool Parser::accept(TokenKind kind) {
  if (lex_.peek().kind != kind) return false;
  lex_.next();
  return true;
}

int64_t Parser::int_value(const Token& t) {
  int64_t v = 0;
  const char* end = t.text.data() + t.text.size();
  auto [ptr, ec] = std::from_chars(t.text.data(), end, v);
  if (ec != std::errc() || ptr != end) failf(t.offset, "integer {} is out of range", t.text);
  return v;
}

int64_t Parser::expect_int(std::string_view what) {
  return int_value(expect(TokenKind::kInt, what));
}

float Parser::expect_float(std::string_view what) {
  const Token t = lex_.next();
  if (t.kind != TokenKind::kInt && t.kind != TokenKind::kFloat)
    failf(t.offset, "expected a number for {}, got {}", what, describe(t));
  return std::strtof(std::string(t.text).c_str(), nullptr);
}

bool Parser::expect_bool(std::string_view what) {
  Token t = lex_.next();
  if (is_keyword(t, "true")) return true;
  if (is_keyword(t, "false")) return false;
  failf(t.offset, "expected true or false for {}, got {}", what, describe(t));
}

std::vector<int64_t> Parser::parse_int_list(std::string_view what) {
  expect(TokenKind::kLBrace, "'{' to start ", what);
  std::vector<int64_t> values;
  if (accept(TokenKind::kRBrace)) return values;
  do values.push_back(expect_int(what));
  while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in ", what);
  return values;
}

std::vector<int64_t> Parser::parse_bracket_int_list(std::string_view what) {
  expect(TokenKind::kLSquare, "'[' to start ", what);
  std::vector<int64_t> values;
  if (accept(TokenKind::kRSquare)) return values;
  do values.push_back(expect_int(what));
  while (accept(TokenKind::kComma));
  expect(TokenKind::kRSquare, "',' or ']' in ", what);
  return values;
}

std::vector<CompRef> Parser::parse_name_list(std::string_view what) {
  expect(TokenKind::kLBrace, "'{' to start ", what);
  std::vector<CompRef> names;
  if (accept(TokenKind::kRBrace)) return names;
  do {
    Token t = expect_name("a name in ", what);
    names.push_back(CompRef{t.text, t.offset});
  } while (accept(TokenKind::kComma));
  expect(TokenKind::kRBrace, "',' or '}' in ", what);
  return names;
}

std::unique_ptr<Module> Parser::parse_module() {
  line_count_ = lex_.line_count();
  Token t = lex_.next();
  if (t.kind == TokenKind::kEof) fail_at(t.offset, "empty input: expected 'HloModule <name>'");
  if (!is_keyword(t, "HloModule"))
    failf(t.offset, "expected 'HloModule <name>', got {}", describe(t));
  Token name = expect_name("the module name after 'HloModule'");
  module_ = std::make_unique<Module>(std::string(name.text));
  while (accept(TokenKind::kComma)) parse_header_attribute();
  while (!peek_is(TokenKind::kEof)) parse_computation();
  if (module_->computations().empty())
    fail_at(lex_.text().size(), "module has no computations (expected 'ENTRY name { ... }')");
  // Without an ENTRY marker XLA takes the last computation as the entry.
  module_->set_entry(entry_ ? entry_ : module_->computations().back().get());
  resolve_calls();
  return std::move(module_);
}

Shape Parser::parse_standalone_shape() {
  Shape shape = parse_shape();
  expect(TokenKind::kEof, "the end of the shape");
  return shape;
}

void Parser::parse_header_attribute() {
  Token key = expect_name("a module header attribute");
  for (std::string_view seen : header_keys_)
    if (seen == key.text) failf(key.offset, "duplicate module header attribute '{}'", key.text);
  header_keys_.push_back(key.text);
  expect(TokenKind::kEqual, "'=' after '", key.text, "'");

  if (key.text == "entry_computation_layout") {
    expect(TokenKind::kLBrace, "'{' to start entry_computation_layout");
    expect(TokenKind::kLParen, "'(' to start the entry parameter shapes");
    std::vector<Shape> params;
    if (!accept(TokenKind::kRParen)) {
      do params.push_back(parse_shape());
      while (accept(TokenKind::kComma));
      expect(TokenKind::kRParen, "',' or ')' in the entry parameter shapes");
    }
    expect(TokenKind::kArrow, "'->' before the entry result shape");
    module_->entry_result_layout = parse_shape();
    module_->entry_parameter_layouts = std::move(params);
    expect(TokenKind::kRBrace, "'}' to close entry_computation_layout");
  } else if (key.text == "input_output_alias") {
    expect(TokenKind::kLBrace, "'{' to start input_output_alias");
    if (!accept(TokenKind::kRBrace)) {
      do {
        IoAlias alias;
        alias.output_index = parse_int_list("an output index");
        expect(TokenKind::kColon, "':' after the output index");
        expect(TokenKind::kLParen, "'(' to start an alias");
        Token number = expect(TokenKind::kInt, "a parameter number");
        alias.parameter_number = int_value(number);
        if (alias.parameter_number < 0) failf(number.offset, "negative parameter number");
        expect(TokenKind::kComma, "',' after the parameter number");
        alias.parameter_index = parse_int_list("a parameter index");
        if (accept(TokenKind::kComma)) {
          Token kind = expect_name("may-alias or must-alias");
          if (kind.text == "must-alias")
            alias.must_alias = true;
          else if (kind.text != "may-alias")
            failf(kind.offset, "expected may-alias or must-alias, got {}", describe(kind));
        }
        expect(TokenKind::kRParen, "')' to close an alias");
        module_->input_output_alias.push_back(std::move(alias));
      } while (accept(TokenKind::kComma));
      expect(TokenKind::kRBrace, "',' or '}' in input_output_alias");
    }
  } else if (key.text == "replica_count" || key.text == "num_partitions") {
    Token t = expect(TokenKind::kInt, key.text);
    int64_t v = int_value(t);
    if (v < 1) failf(t.offset, "{} must be at least 1, got {}", key.text, v);
    (key.text == "replica_count" ? module_->replica_count : module_->num_partitions) = v;
  } else if (std::find(std::begin(kVerbatimHeaderAttributes), std::end(kVerbatimHeaderAttributes),
                       key.text) != std::end(kVerbatimHeaderAttributes)) {
    std::string value;
    if (peek_is(TokenKind::kLBrace)) {
      value = std::string(lex_.scan_braced(key.text).text);
    } else {
      Token t = lex_.next();
      if ((t.kind != TokenKind::kName || t.percent) && t.kind != TokenKind::kInt &&
          t.kind != TokenKind::kFloat && t.kind != TokenKind::kString)
        failf(t.offset, "expected a value for '{}', got {}", key.text, describe(t));
      value = std::string(t.text);
    }
    module_->other_header_attributes.emplace_back(std::string(key.text), std::move(value));
  } else {
    failf(key.offset, "unknown module header attribute '{}'", key.text);
  }
}

void Parser::parse_computation() {
  Token name = lex_.next();
  bool is_entry = false;
  if (is_keyword(name, "ENTRY")) {
    is_entry = true;
    name = expect_name("the ENTRY computation's name");
  } else if (name.kind != TokenKind::kName) {
    failf(name.offset, "expected a computation ('name {{ ... }}'), got {}", describe(name));
  }
  if (peek_is(TokenKind::kLParen)) parse_signature();
  expect(TokenKind::kLBrace, "'{' to open the body of computation '", name.text, "'");
  if (auto it = computations_.find(name.text); it != computations_.end())
    failf(name.offset, "duplicate computation name '{}' (first defined at line {})", name.text,
          lex_.pos(it->second.offset).line);
  if (is_entry && entry_)
    failf(name.offset, "second ENTRY computation '{}' (the first is '{}')", name.text,
          entry_->name());

  comp_ = module_->add_computation(std::make_unique<Computation>(std::string(name.text)));
  computations_.emplace(name.text, Defined{comp_, name.offset});
  if (is_entry) entry_ = comp_;
  instructions_.reset();
  root_ = nullptr;
  while (!accept(TokenKind::kRBrace)) {
    if (peek_is(TokenKind::kEof))
      failf(lex_.peek().offset, "unexpected end of file in computation '{}': expected '}}'",
            name.text);
    parse_instruction();
  }
  finish_computation(name.offset);
}

// XLA may print "%comp (p0: f32[], p1: s32[]) -> f32[] {"; the signature repeats what
// the parameter instructions say and is not kept.
void Parser::parse_signature() {
  expect(TokenKind::kLParen, "'('");
  if (!accept(TokenKind::kRParen)) {
    do {
      expect_name("a parameter name in the computation signature");
      expect(TokenKind::kColon, "':' after the parameter name");
      parse_shape();
    } while (accept(TokenKind::kComma));
    expect(TokenKind::kRParen, "',' or ')' in the computation signature");
  }
  expect(TokenKind::kArrow, "'->' in the computation signature");
  parse_shape();
}

void Parser::finish_computation(size_t offset) {
  if (comp_->instructions().empty())
    failf(offset, "computation '{}' has no instructions", comp_->name());
  comp_->set_root(root_ ? root_ : comp_->instructions().back().get());
  const auto& params = comp_->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i])
      failf(offset, "computation '{}' has parameter({}) but no parameter({})", comp_->name(),
            params.size() - 1, i);
}

Instruction* Parser::lookup_instruction(const Token& name, std::string_view role) {
  Instruction* found = instructions_.find(name.text);
  if (!found)
    failf(name.offset,
          "{} '{}' is used before its definition (or never defined) in computation '{}'; "
          "operands must be defined earlier in the same computation",
          role, name.text, comp_->name());
  return found;
}

void Parser::parse_instruction() {
  Token name = lex_.next();
  bool is_root = false;
  if (is_keyword(name, "ROOT")) {
    is_root = true;
    name = lex_.next();
  }
  if (name.kind != TokenKind::kName)
    failf(name.offset, "expected an instruction ('name = shape opcode(...)'), got {}",
          describe(name));
  if (const Instruction* first = instructions_.find(name.text))
    failf(name.offset,
          "duplicate instruction name '{}' in computation '{}' (first defined at line {})",
          name.text, comp_->name(), first->pos().line);
  expect(TokenKind::kEqual, "'=' after instruction name '", name.text, "'");
  Shape shape = parse_shape();
  Token op = lex_.next();
  if (op.kind != TokenKind::kName || op.percent)
    failf(op.offset, "expected an opcode, got {}", describe(op));
  std::optional<Opcode> opcode = opcode_from_name(op.text);
  if (!opcode) {
    if (parse_async_shorthand(name, shape, op, is_root)) return;
    failf(op.offset, "unknown opcode '{}'", op.text);
  }

  auto owned = std::make_unique<Instruction>(std::string(name.text), *opcode, std::move(shape));
  owned->set_pos(lex_.pos(name.offset));
  InstrState st;
  st.instr = owned.get();
  st.opcode_offset = op.offset;
  parse_operands(st);
  while (accept(TokenKind::kComma)) parse_attribute(st);
  check_required(st);
  add_instruction(name, std::move(owned), st, is_root);
}

void Parser::add_instruction(const Token& name, std::unique_ptr<Instruction> owned, const InstrState& st,
                             bool is_root) {
  Instruction* instr = comp_->add(std::move(owned));
  instructions_.insert(name.text, instr);
  std::vector<CompRef> calls = ordered_calls(st);
  if (!calls.empty()) pending_calls_.emplace_back(instr, std::move(calls));
  if (is_root) {
    if (root_)
      failf(name.offset, "computation '{}' has a second ROOT '{}' (the first is '{}')",
            comp_->name(), name.text, root_->name());
    root_ = instr;
  }
}

bool Parser::parse_async_shorthand(const Token& name, Shape& shape, const Token& op, bool is_root) {
  static constexpr std::pair<std::string_view, Opcode> kSuffixes[] = {
      {"-start", Opcode::kAsyncStart}, {"-update", Opcode::kAsyncUpdate}, {"-done", Opcode::kAsyncDone}};
  std::optional<Opcode> wrapped_op, async_op;
  for (const auto& [suffix, opcode] : kSuffixes)
    if (op.text.size() > suffix.size() && op.text.substr(op.text.size() - suffix.size()) == suffix) {
      wrapped_op = opcode_from_name(op.text.substr(0, op.text.size() - suffix.size()));
      async_op = opcode;
    }
  if (!wrapped_op) return false;
  auto owned = std::make_unique<Instruction>(std::string(name.text), *async_op, shape);
  owned->set_pos(lex_.pos(name.offset));
  InstrState st;
  st.instr = owned.get();
  st.opcode_offset = op.offset;
  parse_operands(st);
  if (*async_op != Opcode::kAsyncStart) {  // the update's and done's computation is the start's
    while (accept(TokenKind::kComma)) parse_attribute(st);
    add_instruction(name, std::move(owned), st, is_root);
    return true;
  }
  // The start: its attributes are the wrapped instruction's (but the thread), which
  // becomes the root of a computation of its own, on parameters for the operands.
  if (!shape.is_tuple() || shape.tuple_size() < 2)
    failf(op.offset, "{} has shape {}: an async start is (operands, result[, context...])", op.text,
          shape.to_string(false));
  auto wrapped = std::make_unique<Instruction>(std::string(name.text) + ".wrapped", *wrapped_op, shape.element(1));
  wrapped->set_pos(owned->pos());
  InstrState wst;
  wst.instr = wrapped.get();
  wst.opcode_offset = op.offset;
  while (accept(TokenKind::kComma)) {
    if (lex_.peek().text == "async_execution_thread")
      parse_attribute(st);
    else
      parse_attribute(wst);
  }
  check_required(wst);
  std::string comp_name = std::string(name.text) + ".async";
  while (computations_.count(comp_name)) comp_name += "_";
  Computation* comp = module_->add_computation(std::make_unique<Computation>(comp_name));
  computations_.emplace(comp->name(), Defined{comp, op.offset});
  for (int64_t k = 0; k < owned->operand_count(); ++k) {
    auto param = std::make_unique<Instruction>(fmt::format("p{}", k), Opcode::kParameter,
                                               owned->operand(k)->shape());
    param->attrs().parameter_number = k;
    param->set_pos(owned->pos());
    wrapped->add_operand(comp->add(std::move(param)));
  }
  Instruction* root = comp->add(std::move(wrapped));
  comp->set_root(root);
  std::vector<CompRef> calls = ordered_calls(wst);
  if (!calls.empty()) pending_calls_.emplace_back(root, std::move(calls));
  owned->add_called(comp);
  add_instruction(name, std::move(owned), st, is_root);
  return true;
}

void Parser::parse_operands(InstrState& st) {
  Instruction& in = *st.instr;
  const Opcode op = in.opcode();
  expect(TokenKind::kLParen, "'(' after opcode '", opcode_name(op), "'");
  if (op == Opcode::kParameter) {
    Token t = expect(TokenKind::kInt, "a parameter number");
    int64_t n = int_value(t);
    if (n < 0) failf(t.offset, "negative parameter number {}", n);
    // Parameters are numbered densely, so a valid number is below the line count;
    // checking here keeps an absurd number from sizing the parameter table.
    if (n >= line_count_)
      failf(t.offset, "parameter number {} is too large for a file of {} lines", n, line_count_);
    const auto& params = comp_->parameters();
    if (static_cast<size_t>(n) < params.size() && params[static_cast<size_t>(n)])
      failf(t.offset, "parameter number {} is used twice in computation '{}' (also by '{}')", n,
            comp_->name(), params[static_cast<size_t>(n)]->name());
    in.attrs().parameter_number = n;
    expect(TokenKind::kRParen, "')' after the parameter number");
    return;
  }
  if (op == Opcode::kConstant) {
    in.attrs().literal = parse_literal(in.shape(), lex_.peek().offset);
    expect(TokenKind::kRParen, "')' after the constant's value");
    return;
  }
  if (!accept(TokenKind::kRParen)) {
    const std::string_view text = lex_.text();
    do {
      // XLA's long form writes each operand's shape before its name: f32[2]{0} %a.
      const Token& next = lex_.peek();
      size_t shape_offset = next.offset;
      std::optional<Shape> written;
      size_t after = next.offset + next.text.size();
      if (next.kind == TokenKind::kLParen || (next.kind == TokenKind::kName && !next.percent &&
                                              after < text.size() && text[after] == '['))
        written = parse_shape();
      Token name = expect_name("an operand name");
      Instruction* operand = lookup_instruction(name, "operand");
      if (written && !written->compatible(operand->shape()))
        failf(shape_offset, "operand '{}' is written with shape {} but has shape {}", name.text,
              written->to_string(false), operand->shape().to_string(false));
      in.add_operand(operand);
    } while (accept(TokenKind::kComma));
    expect(TokenKind::kRParen, "',' or ')' after an operand");
  }
  int arity = opcode_arity(op);
  if (arity != kVariadic && in.operand_count() != arity)
    failf(st.opcode_offset, "{} takes {} operand{}, got {}", opcode_name(op), arity,
          arity == 1 ? "" : "s", in.operand_count());
}

void Parser::resolve_calls() {
  for (auto& [instr, refs] : pending_calls_) {
    for (const CompRef& ref : refs) {
      auto it = computations_.find(ref.name);
      if (it == computations_.end()) failf(ref.offset, "unknown computation '{}'", ref.name);
      instr->add_called(it->second.computation);
    }
  }
  // An async update or done without calls= runs its start's computation (in operand
  // order, so a chain of updates resolves front to back).
  for (const auto& c : module_->computations())
    for (const auto& i : c->instructions())
      if ((i->opcode() == Opcode::kAsyncUpdate || i->opcode() == Opcode::kAsyncDone) && i->called().empty() &&
          i->operand_count() == 1 && i->operand(0) && !i->operand(0)->called().empty() &&
          (i->operand(0)->opcode() == Opcode::kAsyncStart || i->operand(0)->opcode() == Opcode::kAsyncUpdate))
        i->add_called(i->operand(0)->called().front());
}

}  // namespace parser

std::unique_ptr<Module> parse_module(std::string_view text, std::string_view filename) {
  check_utf8(text, filename);
  parser::Parser p(text, filename);
  return p.parse_module();
}

std::unique_ptr<Module> parse_module_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("cannot read HLO file '{}': it is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open HLO file '{}': {}", path, std::strerror(errno));
  std::string text;
  std::array<char, 1 << 16> buffer;
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0)
    text.append(buffer.data(), static_cast<size_t>(in.gcount()));
  if (in.bad()) fail("cannot read HLO file '{}'", path);
  return parse_module(text, path);
}

Shape parse_shape(std::string_view text) {
  constexpr std::string_view kName = "<shape>";
  check_utf8(text, kName);
  parser::Parser p(text, kName);
  return p.parse_standalone_shape();
}

}  // namespace podsim::ir
