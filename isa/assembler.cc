// assemble(): the text form of an executable, for hand-written kernels and for reading
// what the compiler produced (`podsim disasm`, `podsim asm`). disassemble() writes the
// same form, and assemble(disassemble(e)) == e.
//
// Syntax, one item per line; `#` starts a comment; blank lines are ignored.
//
//   .format 2                          optional; must be this podsim's format version
//   .compiler "podsim 0.1.0"           optional; the compiler version string
//   .chip tiny                         the target chip: a preset, unmodified, or
//   .chip_toml "name" "description"    any chip: the numeric fields as TOML
//   clock_hz = 1000000000              (topology's file syntax, units allowed),
//   ...                                up to a line `.end`
//   .end
//   .pod "v5e:2x2"                     or the target pod (instead of .chip): a pod name
//   .pod_toml                          (topology's syntax), or any pod as TOML up to a
//   ...                                line `.end`; its chip is the target chip
//   .end
//   .replicas 4                        with a pod: how its chips split into replicas
//   .partitions 1                      and partitions (default: every chip a replica)
//
//   .region NAME hbm OFFSET SIZE       a region of HBM (bytes); regions are numbered in
//   .region NAME vmem[CORE] OFFSET SIZE  order and referred to by NAME, declared before
//                                      use; NAME is [A-Za-z_][A-Za-z0-9_.-]*
//   .descriptor d0 src=NAME dst=NAME elem=4 sizes=[8, 128] src_strides=[512, 4]
//       dst_strides=[512, 4]           (one line) DMA descriptors, numbered d0, d1, ...
//                                      in order; element bytes, sizes, byte strides
//   .constant NAME 0011aabb...         bytes placed in region NAME before the run, as
//   .bytes ccdd...                     hex, continued on any number of .bytes lines
//   .param NAME REGION f32[8, 128]     a parameter: name (an identifier or a "string"),
//   .output NAME REGION f32[]          region, element type and dims (row-major)
//   .source 0 "add.7" "add" "jit(f)/add" "model.py" 12
//                                      source ops, numbered in order: IR instruction
//                                      name, op_type, op_name, file, line
//   .program core 0                    the program of TensorCore 0: the instructions up
//                                      to the next .program (directives may still follow)
//
// Instructions: a mnemonic (isa/opcodes.def), then `.dtype` — required on vector and MXU
// instructions (vadd.f32, vld.bf16, mmul.bf16), allowed on the others — then the
// operands of its signature separated by commas:
//   S  s0..s31         scalar register (s0 reads as zero)
//   V  v0..            vector register
//   M  m0..            MXU           Q  q0..q63   semaphore      D  d0..  descriptor
//   I  -5, 42, 0xff    64-bit immediate (hex is the bit pattern)
//   R  NAME[sN]        a region with its byte-offset register (the S that follows R in
//                      every signature); a plain NAME where no S follows
//   L  LABEL or N      branch target: a label of this program or an instruction index
// then optionally `@N`, the index of the source op the instruction came from.
// Labels are `NAME:` at the start of a line (alone or before an instruction) and name
// the next instruction of the current program.
//
//   .program core 0
//     sli s1, 0                       # offset
//     sli s2, 32                      # row stride in bytes
//     vld.f32 v0, x[s1], s2
//     vld.f32 v1, y[s1], s2
//     vadd.f32 v2, v0, v1   @0
//     vst.f32 out[s1], s2, v2
//     mmul.bf16 m0, lhs[s5], s6, 1     # LHS rows from lhs + s5, row stride s6, accumulate
//     dma d3, s1, s2, q0
//     sem.wait q0, 1
//   loop:
//     saddi s3, s3, -1
//     bnz s3, loop
//     halt
//
// Errors name the line and column. Once the text is read, the executable is validated
// (isa.h, validate()) and a problem is reported at the line of the part it is in. Whole
// examples: tests/isa/testdata/*.s (every_opcode.s has a line for each instruction).
#include <fmt/format.h>

#include <algorithm>

#include <unordered_map>

#include "common/error.h"
#include "isa/isa.h"
#include "isa/text_internal.h"
#include "isa/validator_internal.h"

namespace podsim::isa {
namespace {

using detail::Token;
using Kind = Token::Kind;

struct Position {
  int line = 1;
  int column = 1;
};

// The tokens of one line and a cursor over them.
class Line {
 public:
  Line(std::vector<Token> tokens, std::string_view source, int number)
      : tokens_(std::move(tokens)), source_(source), number_(number) {}

  const Token& peek() const { return tokens_[at_]; }
  bool at_end() const { return peek().kind == Kind::kEnd; }
  bool at_punct(char c) const { return peek().kind == Kind::kPunct && peek().text[0] == c; }
  Position position() const { return {number_, peek().column}; }

  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
    error_at(peek().column, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  [[noreturn]] void error_at(int column, fmt::format_string<Args...> format, Args&&... args) const {
    fail("{}:{}:{}: {}", source_, number_, column,
         fmt::format(format, std::forward<Args>(args)...));
  }

  std::string describe_next() const {
    switch (peek().kind) {
      case Kind::kEnd:
        return "the end of the line";
      case Kind::kInt:
        return fmt::format("'{}'", peek().value);
      case Kind::kString:
        return detail::quote(peek().text);
      default:
        return fmt::format("'{}'", peek().text);
    }
  }

  void punct(char c) {
    if (!at_punct(c)) error("expected '{}', found {}", c, describe_next());
    ++at_;
  }
  bool accept_punct(char c) {
    if (!at_punct(c)) return false;
    ++at_;
    return true;
  }
  std::string word(std::string_view what) {
    if (peek().kind != Kind::kWord) error("expected {}, found {}", what, describe_next());
    return tokens_[at_++].text;
  }
  void keyword(std::string_view k) {
    if (peek().kind != Kind::kWord || peek().text != k)
      error("expected '{}', found {}", k, describe_next());
    ++at_;
  }
  int64_t integer(std::string_view what) {
    if (peek().kind != Kind::kInt) error("expected {}, found {}", what, describe_next());
    return tokens_[at_++].value;
  }
  int32_t int32(std::string_view what) {
    int column = peek().column;
    int64_t v = integer(what);
    if (v < INT32_MIN || v > INT32_MAX) error_at(column, "{} {} does not fit 32 bits", what, v);
    return static_cast<int32_t>(v);
  }
  std::string string(std::string_view what) {
    if (peek().kind != Kind::kString)
      error("expected {} (a \"string\"), found {}", what, describe_next());
    return tokens_[at_++].text;
  }
  std::string name_or_string(std::string_view what) {
    if (peek().kind == Kind::kString || peek().kind == Kind::kWord) return tokens_[at_++].text;
    error("expected {} (a name or a \"string\"), found {}", what, describe_next());
  }
  // `[a, b, c]`
  std::vector<int64_t> int_list(std::string_view what) {
    punct('[');
    std::vector<int64_t> values;
    while (!accept_punct(']')) {
      if (!values.empty()) punct(',');
      values.push_back(integer(what));
    }
    return values;
  }
  // `<letter>N`, e.g. v12
  int64_t reg(char prefix, std::string_view what) {
    if (peek().kind == Kind::kWord && peek().text.size() > 1 && peek().text[0] == prefix) {
      std::string_view digits = std::string_view(peek().text).substr(1);
      if (digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string_view::npos) {
        ++at_;
        return std::stoll(std::string(digits));
      }
    }
    error("expected {} ({}0, {}1, ...), found {}", what, prefix, prefix, describe_next());
  }
  void end() {
    if (!at_end()) error("unexpected {} at the end of the line", describe_next());
  }

 private:
  std::vector<Token> tokens_;
  std::string_view source_;
  int number_;
  size_t at_ = 0;
};

const char* operand_name(char kind) {
  switch (kind) {
    case 'S':
      return "a scalar register";
    case 'V':
      return "a vector register";
    case 'M':
      return "an MXU";
    case 'Q':
      return "a semaphore";
    case 'D':
      return "a descriptor";
    case 'I':
      return "an immediate";
    case 'R':
      return "a region";
    case 'L':
      return "a label";
  }
  return "an operand";
}

class Assembler {
 public:
  explicit Assembler(std::string_view source) : source_(source) {}

  Executable run(std::string_view text) {
    std::vector<std::string_view> lines;
    for (size_t at = 0; at <= text.size();) {
      size_t end = std::min(text.find('\n', at), text.size());
      std::string_view line = text.substr(at, end - at);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines.push_back(line);
      at = end + 1;
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      int number = static_cast<int>(i) + 1;
      std::string_view trimmed =
          lines[i].substr(std::min(lines[i].find_first_not_of(" \t"), lines[i].size()));
      if (starts_with_word(trimmed, ".bytes")) {
        size_t at = lines[i].find(".bytes");
        if (!constant_open_)
          fail("{}:{}:{}: .bytes must follow a .constant line (or another .bytes line)", source_,
               number, at + 1);
        hex_bytes(lines[i], at + 6, number);
        continue;
      }
      // Hex after `.constant NAME` is not made of tokens.
      size_t hex_from = lines[i].size();
      if (starts_with_word(trimmed, ".constant")) hex_from = after_second_word(lines[i]);
      Line line(detail::tokenize(lines[i].substr(0, hex_from), source_, number), source_, number);
      if (line.at_end()) continue;
      if (line.peek().kind == Kind::kWord &&
          (line.peek().text == ".chip_toml" || line.peek().text == ".pod_toml")) {
        i = toml_block(line, lines, i);
        constant_open_ = false;
        continue;
      }
      statement(line);
      if (hex_from < lines[i].size()) hex_bytes(lines[i], hex_from, number);
    }
    finish_program();
    if (!chip_line_)
      fail(
          "{}:1:1: no target chip: add a line `.chip NAME` (a preset), a .chip_toml block, or a "
          "pod (`.pod NAME` or a .pod_toml block)",
          source_);
    // Defaults fill in the pod's chip count; validation reports what does not add up.
    if (e_.pod && !replicas_line_ && e_.partitions >= 1)
      e_.replicas = static_cast<int32_t>(e_.pod->chips() / e_.partitions);
    if (e_.pod && !partitions_line_ && replicas_line_ && e_.replicas >= 1)
      e_.partitions = std::max<int32_t>(1, static_cast<int32_t>(e_.pod->chips() / e_.replicas));
    if (auto issue = detail::find_issue(e_)) {
      Position at = where(*issue);
      fail("{}:{}:{}: {}", source_, at.line, at.column, detail::describe(e_, *issue));
    }
    return std::move(e_);
  }

 private:
  void statement(Line& line) {
    constant_open_ = false;
    if (line.peek().kind == Kind::kWord && line.peek().text[0] == '.' && !labels_ahead(line)) {
      Position at = line.position();
      std::string directive = line.word("a directive");
      if (directive == ".format") {
        int column = line.peek().column;
        int64_t v = line.integer("a format version");
        if (v < kOldestReadableFormatVersion || v > kFormatVersion)
          line.error_at(column, "format version {}: this podsim reads versions {} to {}", v,
                        kOldestReadableFormatVersion, kFormatVersion);
        format_line_ = at;
      } else if (directive == ".replicas" || directive == ".partitions") {
        bool replicas = directive == ".replicas";
        (replicas ? e_.replicas : e_.partitions) =
            line.int32(replicas ? "a replica count" : "a partition count");
        (replicas ? replicas_line_ : partitions_line_) = at;
      } else if (directive == ".pod") {
        set_chip_line(line, at);
        int column = line.peek().column;
        std::string name = line.peek().kind == Kind::kString ? line.string("a pod name")
                                                             : line.word("a pod name");
        try {
          set_pod(topology::pod_config(name));
        } catch (const Error& err) {
          line.error_at(column, "{}", err.what());
        }
      } else if (directive == ".compiler") {
        e_.compiler_version = line.string("the compiler version");
      } else if (directive == ".chip") {
        set_chip_line(line, at);
        int column = line.peek().column;
        std::string name = line.word("a chip preset name");
        try {
          e_.chip = topology::preset(name);
        } catch (const Error& err) {
          line.error_at(column, "{}", err.what());
        }
      } else if (directive == ".region") {
        region(line, at);
      } else if (directive == ".descriptor") {
        descriptor(line, at);
      } else if (directive == ".constant") {
        e_.constants.push_back(Constant{region_ref(line), {}});
        constant_lines_.push_back(at);
        constant_open_ = true;
      } else if (directive == ".param" || directive == ".output") {
        (directive == ".param" ? e_.parameters : e_.outputs).push_back(binding(line));
        (directive == ".param" ? parameter_lines_ : output_lines_).push_back(at);
      } else if (directive == ".source") {
        source_op(line);
      } else if (directive == ".program") {
        finish_program();
        line.keyword("core");
        e_.programs.push_back(Program{line.int32("a TensorCore number"), {}});
        program_lines_.push_back(at);
        instruction_lines_.emplace_back();
      } else if (directive == ".end") {
        line.error_at(at.column, ".end without a .chip_toml or .pod_toml block");
      } else {
        line.error_at(at.column, "unknown directive '{}'", directive);
      }
      line.end();
      return;
    }
    instruction_line(line);
  }

  // A word followed by ':' is a label even when it starts with '.'.
  static bool labels_ahead(const Line& line) {
    Line copy = line;
    copy.word("");
    return copy.at_punct(':');
  }

  // A .pod names its chip, so .chip and .pod exclude each other.
  void set_chip_line(const Line& line, Position at) {
    if (chip_line_)
      line.error_at(at.column, "a second target chip or pod (the first is at line {})",
                    chip_line_->line);
    chip_line_ = at;
  }

  void set_pod(topology::PodConfig pod) {
    e_.chip = pod.chip;
    e_.pod = std::move(pod);
  }

  // A .chip_toml or .pod_toml block, from its first line to `.end`; returns the index of
  // the `.end` line.
  size_t toml_block(Line& line, const std::vector<std::string_view>& lines, size_t i) {
    Position at = line.position();
    set_chip_line(line, at);
    const bool pod = line.word("") == ".pod_toml";
    std::string name, description;
    if (!pod) {
      name = line.string("the chip name");
      description = line.string("the chip description");
    }
    line.end();
    // Blank lines in front keep TOML's line numbers those of this file.
    std::string toml(i + 1, '\n');
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      std::string_view l = lines[j];
      size_t first = l.find_first_not_of(" \t");
      size_t last = l.find_last_not_of(" \t");
      if (first != std::string_view::npos && l.substr(first, last - first + 1) == ".end") break;
      toml += std::string(l) + "\n";
    }
    if (j == lines.size())
      line.error_at(at.column, "{} block without its .end line", pod ? ".pod_toml" : ".chip_toml");
    if (pod) {
      set_pod(topology::parse_pod_config(toml, source_));
      return j;
    }
    e_.chip = topology::parse_chip_config(toml, source_);
    e_.chip.name = name;
    e_.chip.description = description;
    return j;
  }

  void region(Line& line, Position at) {
    int column = line.peek().column;
    std::string name = line.word("a region name");
    if (!detail::is_identifier(name))
      line.error_at(column, "'{}' is not a valid region name", name);
    if (auto it = region_index_.find(name); it != region_index_.end())
      line.error_at(column, "region '{}' is already declared at line {}", name,
                    region_lines_[it->second].line);
    Region r;
    r.name = name;
    int space_column = line.peek().column;
    std::string space = line.word("hbm or vmem[CORE]");
    if (space == "hbm") {
      r.space = MemorySpace::kHbm;
    } else if (space == "vmem") {
      r.space = MemorySpace::kVmem;
      line.punct('[');
      r.core = line.int32("a TensorCore number");
      line.punct(']');
    } else {
      line.error_at(space_column, "expected hbm or vmem[CORE], found '{}'", space);
    }
    r.offset = line.integer("the region's offset in bytes");
    r.size = line.integer("the region's size in bytes");
    region_index_.emplace(name, static_cast<int32_t>(e_.regions.size()));
    e_.regions.push_back(std::move(r));
    region_lines_.push_back(at);
  }

  int32_t region_ref(Line& line) {
    int column = line.peek().column;
    std::string name = line.word("a region name");
    auto it = region_index_.find(name);
    if (it == region_index_.end())
      line.error_at(column, "unknown region '{}' (declare it with .region first)", name);
    return it->second;
  }

  void key(Line& line, std::string_view k) {
    line.keyword(k);
    line.punct('=');
  }

  void descriptor(Line& line, Position at) {
    int column = line.peek().column;
    if (line.reg('d', "the descriptor's number") != static_cast<int64_t>(e_.descriptors.size()))
      line.error_at(column, "descriptors are numbered in order: this one is d{}",
                    e_.descriptors.size());
    DmaDescriptor d;
    key(line, "src");
    d.src_region = region_ref(line);
    key(line, "dst");
    d.dst_region = region_ref(line);
    key(line, "elem");
    d.element_bytes = line.int32("the element size in bytes");
    key(line, "sizes");
    d.sizes = line.int_list("a size");
    key(line, "src_strides");
    d.src_strides = line.int_list("a stride in bytes");
    key(line, "dst_strides");
    d.dst_strides = line.int_list("a stride in bytes");
    e_.descriptors.push_back(std::move(d));
    descriptor_lines_.push_back(at);
  }

  Binding binding(Line& line) {
    Binding b;
    b.name = line.name_or_string("the name");
    b.region = region_ref(line);
    int column = line.peek().column;
    b.dtype = dtype(line, line.word("an element type (f32, bf16, ...)"), column);
    b.dims = line.int_list("a dimension");
    return b;
  }

  static DType dtype(const Line& line, std::string_view name, int column) {
    if (auto t = dtype_from_name(name)) return *t;
    std::vector<std::string_view> names;
    for (int i = 0; i < kDTypeCount; ++i) names.push_back(dtype_name(static_cast<DType>(i)));
    line.error_at(column, "unknown element type '{}' ({})", name, fmt::join(names, ", "));
  }

  void source_op(Line& line) {
    int column = line.peek().column;
    if (line.integer("the source op's number") != static_cast<int64_t>(e_.source_ops.size()))
      line.error_at(column, "source ops are numbered in order: this one is {}",
                    e_.source_ops.size());
    SourceOp s;
    s.instruction = line.string("the IR instruction name");
    s.op_type = line.string("the op type");
    s.op_name = line.string("the op name");
    s.source_file = line.string("the source file");
    s.source_line = line.integer("the source line");
    e_.source_ops.push_back(std::move(s));
  }

  static bool starts_with_word(std::string_view text, std::string_view word) {
    return text.starts_with(word) &&
           (text.size() == word.size() || text[word.size()] == ' ' || text[word.size()] == '\t');
  }

  // The end of the second whitespace-separated word (`.constant NAME`).
  static size_t after_second_word(std::string_view text) {
    size_t at = text.find_first_not_of(" \t");
    at = text.find_first_of(" \t", at);
    at = std::min(text.find_first_not_of(" \t", at), text.size());
    while (at < text.size() && text[at] != ' ' && text[at] != '\t' && text[at] != '#') ++at;
    return at;
  }

  // Hex digits from `at` to the end of the line (or a comment), appended to the last
  // constant; spaces between digits are ignored.
  void hex_bytes(std::string_view text, size_t at, int number) {
    std::vector<uint8_t>& data = e_.constants.back().data;
    int high = -1;
    size_t high_at = 0;
    for (; at < text.size() && text[at] != '#'; ++at) {
      char c = text[at];
      if (c == ' ' || c == '\t') continue;
      int v = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (v < 0) fail("{}:{}:{}: '{}' is not a hex digit", source_, number, at + 1, c);
      if (high < 0) {
        high = v;
        high_at = at;
      } else {
        data.push_back(static_cast<uint8_t>(high * 16 + v));
        high = -1;
      }
    }
    if (high >= 0)
      fail("{}:{}:{}: an odd number of hex digits (two per byte)", source_, number, high_at + 1);
  }

  void instruction_line(Line& line) {
    // Labels first.
    while (line.peek().kind == Kind::kWord && labels_ahead(line)) {
      int column = line.peek().column;
      std::string name = line.word("a label");
      line.punct(':');
      if (e_.programs.empty())
        line.error_at(column, "label '{}' outside a program (start one with .program core N)",
                      name);
      if (!labels_.emplace(name, e_.programs.back().instructions.size()).second)
        line.error_at(column, "label '{}' is already defined in this program", name);
    }
    if (line.at_end()) return;
    Position at = line.position();
    std::string word = line.word("an instruction");
    if (e_.programs.empty())
      line.error_at(at.column, "instruction outside a program (start one with .program core N)");
    Instruction in = opcode(line, word, at.column);
    std::string_view sig = signature(in.opcode);
    for (size_t k = 0; k < sig.size(); ++k) {
      if (k > 0) line.punct(',');
      in.operands[k] = operand(line, sig, k);
      if (sig[k] == 'R' && k + 1 < sig.size() && sig[k + 1] == 'S') {
        line.punct('[');
        in.operands[k + 1] = line.reg('s', "the offset's scalar register");
        line.punct(']');
        ++k;
      }
    }
    if (line.accept_punct('@')) in.source_op = line.int32("a source op number");
    line.end();
    e_.programs.back().instructions.push_back(in);
    instruction_lines_.back().push_back(at);
  }

  Instruction opcode(const Line& line, std::string_view word, int column) {
    Instruction in;
    std::optional<Opcode> op = opcode_from_mnemonic(word);
    bool typed_suffix = false;
    if (!op) {
      size_t dot = word.rfind('.');
      if (dot != std::string_view::npos) op = opcode_from_mnemonic(word.substr(0, dot));
      if (!op) line.error_at(column, "unknown instruction '{}'", word);
      std::optional<DType> t = dtype_from_name(word.substr(dot + 1));
      if (!t)
        line.error_at(column, "unknown element type '{}' in '{}'", word.substr(dot + 1), word);
      in.dtype = *t;
      typed_suffix = true;
    }
    in.opcode = *op;
    if (detail::is_typed(*op) && !typed_suffix)
      line.error_at(column, "{} needs an element type: {}.f32, {}.bf16, ...", word, word, word);
    return in;
  }

  int64_t operand(Line& line, std::string_view sig, size_t k) {
    char kind = sig[k];
    if (char prefix = detail::operand_prefix(kind)) return line.reg(prefix, operand_name(kind));
    if (kind == 'I') return line.integer(operand_name(kind));
    if (kind == 'R') return region_ref(line);
    if (kind == 'L') {
      if (line.peek().kind == Kind::kInt) return line.integer("a branch target");
      Position at = line.position();
      fixups_.push_back(Fixup{e_.programs.back().instructions.size(), k, line.word("a label"), at});
      return 0;
    }
    line.error("operand kind '{}' of this instruction is unknown", kind);
  }

  void finish_program() {
    for (const Fixup& f : fixups_) {
      auto it = labels_.find(f.label);
      if (it == labels_.end())
        fail("{}:{}:{}: undefined label '{}' in this program", source_, f.at.line, f.at.column,
             f.label);
      e_.programs.back().instructions[f.instruction].operands[f.operand] =
          static_cast<int64_t>(it->second);
    }
    fixups_.clear();
    labels_.clear();
  }

  Position where(const detail::Issue& issue) const {
    using detail::Part;
    switch (issue.part) {
      case Part::kExecutable:
        return format_line_;
      case Part::kChip:
        return *chip_line_;
      case Part::kPod:
        return replicas_line_ ? *replicas_line_
                              : partitions_line_ ? *partitions_line_ : *chip_line_;
      case Part::kRegion:
        return region_lines_[issue.index];
      case Part::kDescriptor:
        return descriptor_lines_[issue.index];
      case Part::kConstant:
        return constant_lines_[issue.index];
      case Part::kParameter:
        return parameter_lines_[issue.index];
      case Part::kOutput:
        return output_lines_[issue.index];
      case Part::kProgram:
        return program_lines_[issue.index];
      case Part::kInstruction:
        return instruction_lines_[issue.index][issue.instruction];
    }
    return {};
  }

  struct Fixup {
    size_t instruction;
    size_t operand;
    std::string label;
    Position at;
  };

  std::string_view source_;
  Executable e_;
  std::unordered_map<std::string, int32_t> region_index_;
  std::unordered_map<std::string, size_t> labels_;  // of the current program
  std::vector<Fixup> fixups_;                       // of the current program
  bool constant_open_ = false;                      // .bytes may follow
  Position format_line_;
  std::optional<Position> chip_line_;  // .chip, .chip_toml, .pod or .pod_toml
  std::optional<Position> replicas_line_, partitions_line_;
  std::vector<Position> region_lines_, descriptor_lines_, constant_lines_, parameter_lines_,
      output_lines_, program_lines_;
  std::vector<std::vector<Position>> instruction_lines_;
};

}  // namespace

Executable assemble(std::string_view text, std::string_view source_name) {
  return Assembler(source_name).run(text);
}

}  // namespace podsim::isa
