#include "compiler/ir/safetensors.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>

#include "common/error.h"

namespace podsim::ir {
namespace {

std::vector<std::byte> make_file(const std::string& header, size_t data_bytes,
                                 std::optional<uint64_t> declared_len = std::nullopt) {
  std::vector<std::byte> out(8 + header.size() + data_bytes);
  uint64_t len = declared_len.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<std::byte>((len >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse_safetensors(bytes, "t.safetensors");
  } catch (const podsim::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripsEveryDtype) {
  NamedLiterals tensors;
  const PrimitiveType types[] = {PrimitiveType::kPred, PrimitiveType::kS8,  PrimitiveType::kS16,
                                 PrimitiveType::kS32,  PrimitiveType::kS64, PrimitiveType::kU8,
                                 PrimitiveType::kU16,  PrimitiveType::kU32, PrimitiveType::kU64,
                                 PrimitiveType::kF16,  PrimitiveType::kBF16, PrimitiveType::kF32,
                                 PrimitiveType::kF64};
  int k = 0;
  for (PrimitiveType t : types) {
    Literal l(Shape(t, {2, 3}));
    for (int64_t i = 0; i < 6; ++i) l.set_from_int64(i, (i * 7 + k) % 2 ? i : 0);
    tensors.emplace_back(fmt::format("t{}", k++), std::move(l));
  }
  tensors.emplace_back("empty", Literal(Shape(PrimitiveType::kF32, {0, 5})));
  tensors.emplace_back("scalar", Literal::scalar(PrimitiveType::kF64, 2.5));
  std::vector<std::byte> bytes = serialize_safetensors(tensors);
  NamedLiterals back = parse_safetensors(bytes);
  // The reader orders by data offset; the writer lays tensors out in the given order,
  // except that the zero-byte tensor shares its offset with the next one.
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, value] : tensors) {
    auto it = std::find_if(back.begin(), back.end(),
                           [&name = name](const auto& p) { return p.first == name; });
    ASSERT_NE(it, back.end()) << name;
    EXPECT_EQ(it->second, value) << name;
  }
}

// An empty tensor has no storage: its bytes().data() is null, and memcpy with a null
// pointer is undefined even for zero bytes (UBSan's nonnull-attribute check, which the
// sanitizer job runs this under). A file of nothing but empty tensors has an empty data
// section too.
TEST(Safetensors, RoundTripsEmptyTensors) {
  const NamedLiterals tensors = {{"none", Literal(Shape(PrimitiveType::kF32, {0}))},
                                 {"rows", Literal(Shape(PrimitiveType::kBF16, {0, 3}))}};
  const std::vector<std::byte> bytes = serialize_safetensors(tensors);
  const NamedLiterals back = parse_safetensors(bytes);
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, value] : tensors) {
    auto it = std::find_if(back.begin(), back.end(),
                           [&name = name](const auto& p) { return p.first == name; });
    ASSERT_NE(it, back.end()) << name;
    EXPECT_EQ(it->second, value) << name;
  }
}

TEST(Safetensors, WritesAtomicallyAndReadsBack) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("podsim_st_{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::string path = (dir / "a.safetensors").string();
  Literal l(Shape(PrimitiveType::kF32, {4}));
  for (int i = 0; i < 4; ++i) l.set_from_double(i, i * 0.5);
  write_safetensors(path, {{"x", l}});
  NamedLiterals back = read_safetensors(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].first, "x");
  EXPECT_EQ(back[0].second, l);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, ReadsFilesWrittenByTheReferenceLayout) {
  // Written by a separate Python writer (tests/compiler/ir/safetensors_corpus).
  NamedLiterals t = read_safetensors(std::string(PODSIM_SOURCE_DIR) +
                                     "/tests/compiler/ir/safetensors_corpus/f32_and_ints.safetensors");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].first, "w");
  EXPECT_EQ(t[0].second.shape().to_string(), "f32[2,3]");
  EXPECT_EQ(t[0].second.get_as_double(5), 5.0);
  EXPECT_EQ(t[1].first, "i");
  EXPECT_EQ(t[1].second.get_as_int64(0), -1);
}

TEST(Safetensors, RejectsHostileFiles) {
  struct Case {
    std::vector<std::byte> bytes;
    const char* phrase;
  };
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  Case cases[] = {
      {{}, "shorter than the 8-byte header"},
      {make_file(ok, 8, 1 << 30), "does not fit"},
      {make_file(ok, 8, ~uint64_t{1}), "does not fit"},
      {make_file("not json", 0), "not a JSON object"},
      {make_file("[1,2]", 0), "not a JSON object"},
      {make_file(ok, 4), "outside the 4 data bytes"},
      {make_file(ok, 12), "trailing bytes"},
      {make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12 bytes"},
      {make_file(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8), "unsupported dtype"},
      {make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative"},
      {make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "outside"},
      {make_file(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "data_offsets"},
      {make_file(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}})", 0), "too"},
      {make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6), "overlaps"},
      {make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4), "unused bytes"},
      {make_file(R"({"__metadata__":{"k":1}})", 0), "not a string"},
      {make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8), "unknown field"},
  };
  for (const Case& c : cases) {
    std::string err = error_of(c.bytes);
    EXPECT_NE(err.find(c.phrase), std::string::npos) << "expected '" << c.phrase << "', got '" << err << "'";
    EXPECT_NE(err.find("t.safetensors"), std::string::npos) << err;
  }
}

TEST(Safetensors, RejectsBoolBytesOtherThanZeroOrOne) {
  auto bytes = make_file(R"({"p":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 2);
  bytes[bytes.size() - 1] = std::byte{2};
  EXPECT_NE(error_of(bytes).find("BOOL"), std::string::npos);
}

TEST(Safetensors, MissingFileIsAClearError) {
  try {
    read_safetensors("/nonexistent/x.safetensors");
    FAIL() << "no error";
  } catch (const podsim::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.safetensors"), std::string::npos);
  }
}

}  // namespace
}  // namespace podsim::ir
