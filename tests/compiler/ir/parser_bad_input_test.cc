// Bad HLO text: every input in tests/compiler/ir/bad/ and a few generated ones must give
// a podsim::Error naming the right line and saying what is wrong; nothing may crash,
// hang or recurse without bound. Random mutations of good modules must either parse
// (and then print and re-parse identically) or give a podsim::Error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace podsim::ir {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = fs::path(PODSIM_SOURCE_DIR) / "tests/compiler/ir/bad";
const fs::path kGoodDir = fs::path(PODSIM_SOURCE_DIR) / "tests/compiler/ir/testdata";

struct Expectation {
  int line;
  const char* phrase;
};

// Expected line and key phrase of the error for each file of the corpus.
const std::map<std::string, Expectation>& corpus() {
  static const std::map<std::string, Expectation> expectations = {
      {"absurd_dimensions.hlo", {4, "absurd dimensions"}},
      {"attribute_wrong_op.hlo", {5, "attribute 'dimensions' does not apply to add"}},
      {"bad_dim_labels.hlo", {6, "bad dim_labels part 'b0ff'"}},
      {"bad_escape.hlo", {4, "unknown escape sequence"}},
      {"bad_layout.hlo", {4, "not a permutation"}},
      {"bad_replica_groups.hlo", {11, "hold equal device counts"}},
      {"bad_sharding.hlo", {4, "does not match its 3 devices"}},
      {"bad_window.hlo", {12, "window key 'stride' has 1 dimensions"}},
      {"blank.hlo", {4, "empty input"}},
      {"conditional_mixed.hlo", {10, "not both"}},
      {"constant_out_of_range.hlo", {4, "out of range for s8"}},
      {"constant_too_few.hlo", {4, "constant has 2 elements in dimension 0"}},
      {"constant_too_many.hlo", {4, "more than 2 elements in dimension 0"}},
      {"duplicate_attribute.hlo", {6, "duplicate attribute 'dimensions'"}},
      {"duplicate_computation.hlo", {7, "duplicate computation name 'f'"}},
      {"duplicate_instruction.hlo", {5, "duplicate instruction name 'p'"}},
      {"duplicate_parameter.hlo", {5, "parameter number 0 is used twice"}},
      {"dynamic_shape.hlo", {4, "dynamic shapes are not supported"}},
      {"empty.hlo", {1, "empty input"}},
      {"empty_computation.hlo", {3, "has no instructions"}},
      {"garbage.hlo", {1, "invalid UTF-8"}},
      {"garbage_ascii.hlo", {5, "unexpected character '@'"}},
      {"garbage_control.hlo", {1, "unexpected byte 0x00"}},
      {"huge_constant.hlo", {4, "more elements than the text could hold"}},
      {"huge_dimension.hlo", {4, "out of range"}},
      {"huge_iota.hlo", {4, "more than 1048576 devices"}},
      {"huge_parameter_number.hlo", {4, "parameter number 123456789 is too large"}},
      {"integer_overflow.hlo", {1, "out of range"}},
      {"invalid_utf8.hlo", {4, "invalid UTF-8"}},
      {"malformed_shape.hlo", {4, "expected a dimension size"}},
      {"missing_attribute.hlo", {5, "broadcast needs attribute 'dimensions'"}},
      {"missing_entry_body.hlo", {4, "expected '{' to open the body of computation 'main'"}},
      {"missing_parameter.hlo", {3, "no parameter(1)"}},
      {"no_computations.hlo", {2, "module has no computations"}},
      {"no_header.hlo", {1, "expected 'HloModule"}},
      {"operand_from_other_computation.hlo", {10, "operand 'x' is used before its definition"}},
      {"operand_shape_mismatch.hlo", {5, "written with shape f32[3]"}},
      {"overlong_utf8.hlo", {3, "invalid UTF-8"}},
      {"statistics.hlo", {5, "'statistics' is not supported"}},
      {"truncated.hlo", {5, "got end of file"}},
      {"truncated_computation.hlo", {6, "unexpected end of file in computation 'main'"}},
      {"two_entries.hlo", {7, "second ENTRY computation 'b'"}},
      {"two_roots.hlo", {5, "second ROOT 'b'"}},
      {"unclosed_shape.hlo", {4, "expected ',' or ']'"}},
      {"undefined_operand.hlo", {5, "operand 'nowhere' is used before its definition"}},
      {"unknown_attribute.hlo", {5, "unknown attribute 'bogus' for add"}},
      {"unknown_computation.hlo", {5, "unknown computation 'nowhere'"}},
      {"unknown_header_attribute.hlo", {2, "unknown module header attribute 'frobnication_level'"}},
      {"unknown_op.hlo", {5, "unknown opcode 'frobnicate'"}},
      {"unknown_type.hlo", {4, "unknown element type 'c64'"}},
      {"unterminated_comment.hlo", {3, "unterminated comment"}},
      {"unterminated_string.hlo", {4, "unterminated string"}},
      {"use_before_definition.hlo", {5, "operand 'q' is used before its definition"}},
      {"wrong_arity.hlo", {5, "add takes 2 operands, got 1"}},
  };
  return expectations;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The podsim::Error message of parsing text, or "" if it parsed.
std::string error_of(const std::string& text, const std::string& filename = "input.hlo") {
  try {
    parse_module(text, filename);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParserBadInput, CorpusFilesGiveLineAndReason) {
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(kBadDir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    seen.insert(name);
    auto it = corpus().find(name);
    ASSERT_NE(it, corpus().end()) << "no expectation for " << name;
    std::string message;
    try {
      parse_module_file(entry.path().string());
      ADD_FAILURE() << "parsed without error";
      continue;
    } catch (const Error& e) {
      message = e.what();
    }
    const std::string prefix = entry.path().string() + ":" + std::to_string(it->second.line) + ":";
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
    EXPECT_NE(message.find(it->second.phrase), std::string::npos) << message;
  }
  for (const auto& [name, expectation] : corpus())
    EXPECT_TRUE(seen.count(name)) << "expected file missing from the corpus: " << name;
}

TEST(ParserBadInput, MissingFile) {
  EXPECT_THROW(parse_module_file((kBadDir / "does_not_exist.hlo").string()), Error);
  EXPECT_THROW(parse_module_file(kBadDir.string()), Error);
}

std::string module_with_root(const std::string& root) {
  return "HloModule m\n\nENTRY main {\n  " + root + "\n}\n";
}

TEST(ParserBadInput, DeepNestingIsBoundedNotRecursive) {
  constexpr int kDepth = 100000;
  const std::string open_parens(kDepth, '(');
  const std::string close_parens(kDepth, ')');
  const std::string open_braces(kDepth, '{');
  const std::string close_braces(kDepth, '}');

  std::string msg = error_of(
      module_with_root("ROOT p = " + open_parens + "f32[]" + close_parens + " parameter(0)"));
  EXPECT_NE(msg.find("input.hlo:4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nested more than 64 levels"), std::string::npos) << msg;

  msg = error_of(module_with_root("ROOT p = f32[] parameter(0), sharding=" + open_braces +
                                  "replicated" + close_braces));
  EXPECT_NE(msg.find("nested more than 64 levels"), std::string::npos) << msg;

  msg = error_of(
      module_with_root("ROOT c = f32[2] constant(" + open_braces + "1" + close_braces + ")"));
  EXPECT_NE(msg.find("input.hlo:4:"), std::string::npos) << msg;

  msg = error_of(
      module_with_root("ROOT c = (f32[]) constant(" + open_parens + "1" + close_parens + ")"));
  EXPECT_NE(msg.find("input.hlo:4:"), std::string::npos) << msg;

  std::string dims = "1";
  for (int i = 0; i < 1000; ++i) dims += ",1";
  msg = error_of(module_with_root("ROOT p = f32[" + dims + "] parameter(0)"));
  EXPECT_NE(msg.find("more than 64 dimensions"), std::string::npos) << msg;

  // Opaque blocks are scanned with a counter: deep but balanced is fine, unbalanced is
  // a clear error.
  std::string deep_config = open_braces + close_braces;
  auto m =
      parse_module(module_with_root("ROOT p = f32[] parameter(0), backend_config=" + deep_config));
  EXPECT_EQ(m->entry()->root()->attrs().backend_config, deep_config);
  msg = error_of(module_with_root("ROOT p = f32[] parameter(0), backend_config=" + open_braces));
  EXPECT_NE(msg.find("unterminated '{'"), std::string::npos) << msg;
}

TEST(ParserBadInput, EveryPrefixOfAGoodModuleFailsCleanly) {
  // Truncation at every byte: each prefix must parse or fail with a podsim::Error, and
  // only a prefix that ends with a whole computation (its '}') can parse.
  const std::string text = read_file(kGoodDir / "convolution.hlo");
  ASSERT_FALSE(text.empty());
  int parsed = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    const std::string prefix = text.substr(0, n);
    try {
      parse_module(prefix);
    } catch (const Error&) {
      continue;
    }
    ++parsed;
    const size_t last = prefix.find_last_not_of(" \n");
    ASSERT_NE(last, std::string::npos);
    EXPECT_EQ(prefix[last], '}') << "prefix of " << n << " bytes parsed";
  }
  EXPECT_GT(parsed, 0);
}

// Edits that tend to reach deep into the parser: tokens of HLO text, not random bytes.
const std::vector<std::string> kFragments = {
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    "->",
    "<=",
    "%",
    "\"",
    "/*",
    "*/",
    "-",
    "?",
    "0",
    "1",
    "-1",
    "65536",
    "99999999999999999999",
    "1.5e300",
    "nan",
    "-inf",
    "0x1p3",
    "f32[]",
    "s32[2]",
    "(f32[], pred[])",
    "{1,0}",
    "{0:T(8,128)}",
    "ROOT ",
    "ENTRY ",
    "x",
    "parameter(0)",
    "add(",
    "tuple(",
    "constant(",
    "dimensions={0}",
    "to_apply=",
    "slice={[0:1]}",
    "window={size=2}",
    "padding=0_0",
    "sharding={replicated}",
    "replica_groups=[2,2]<=[4]",
    "T(1,0)",
    "metadata={op_name=\"a\"}",
    "backend_config={}",
    "\xc3\xa9",
    "\xff",
    "\n",
};

std::string mutate(const std::string& text, std::mt19937& rng) {
  std::string out = text;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = out.empty() ? 0 : rng() % out.size();
    switch (rng() % 4) {
      case 0:  // delete a short span
        out.erase(pos, 1 + rng() % 8);
        break;
      case 1:  // insert a fragment
        out.insert(pos, kFragments[rng() % kFragments.size()]);
        break;
      case 2: {  // duplicate a span elsewhere
        const size_t len = 1 + rng() % 40;
        const std::string span = out.substr(pos, len);
        out.insert(out.empty() ? 0 : rng() % out.size(), span);
        break;
      }
      default:  // overwrite one byte with a printable character
        if (!out.empty()) out[pos] = static_cast<char>(' ' + rng() % 95);
    }
  }
  return out;
}

TEST(ParserBadInput, MutatedModulesParseOrFailCleanly) {
  std::vector<std::string> seeds;
  for (const auto& entry : fs::directory_iterator(kGoodDir))
    seeds.push_back(read_file(entry.path()));
  ASSERT_FALSE(seeds.empty());
  std::mt19937 rng(12345);
  int parsed = 0;
  int failed = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string text = mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    std::unique_ptr<Module> m;
    try {
      m = parse_module(text);
    } catch (const Error&) {
      ++failed;
      continue;
    }
    ++parsed;
    // What parses must print to text that parses back to the same printed form.
    const std::string printed = print_module(*m);
    try {
      EXPECT_EQ(print_module(*parse_module(printed, "printed")), printed);
    } catch (const Error& e) {
      ADD_FAILURE() << "printed form does not parse: " << e.what() << "\ninput:\n"
                    << text << "\nprinted:\n"
                    << printed;
    }
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(failed, 100);
}

}  // namespace
}  // namespace podsim::ir
