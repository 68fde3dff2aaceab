// The Cap'n Proto file form: round trips, files, hostile bytes, and the seed corpus.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/error.h"
#include "isa/isa.h"
#include "tests/isa/test_executables.h"

namespace podsim::isa {
namespace {

using testing::custom_chip_executable;
using testing::every_opcode_executable;
using testing::small_executable;

std::string error_of(const std::vector<uint8_t>& bytes, const char* name = "evil.pex") {
  try {
    deserialize(bytes.data(), bytes.size(), name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Serialize, RoundTripsEveryField) {
  for (const Executable& e :
       {small_executable(), every_opcode_executable(), custom_chip_executable()}) {
    std::vector<uint8_t> bytes = serialize(e);
    ASSERT_EQ(bytes.size() % 8, 0u);
    EXPECT_EQ(deserialize(bytes.data(), bytes.size()), e);
    EXPECT_EQ(serialize(deserialize(bytes.data(), bytes.size())), bytes)
        << "serialization is deterministic";
  }
}

TEST(Serialize, EveryChipFieldIsStored) {
  // Change every numeric field of a preset through its TOML form (which lists them all),
  // so that a ChipConfig field the schema forgot cannot go unnoticed.
  std::string toml = topology::to_toml(topology::preset("v5e"));
  std::string changed;
  size_t start = 0;
  int fields = 0;
  while (start < toml.size()) {
    size_t end = toml.find('\n', start);
    std::string line = toml.substr(start, end - start);
    start = end + 1;
    size_t eq = line.find(" = ");
    if (eq != std::string::npos && line[eq + 3] != '"') {
      double v = std::stod(line.substr(eq + 3));
      line = line.substr(0, eq + 3) + fmt::format("{}", v == 0 ? 1 : v + 1);
      ++fields;
    }
    changed += line + "\n";
  }
  Executable e = small_executable();
  e.chip = topology::parse_chip_config(changed, "changed.toml");
  e.chip.tensor_cores = 1;
  EXPECT_GT(fields, 15);
  std::vector<uint8_t> bytes = serialize(e);
  Executable back = deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(topology::to_toml(back.chip), topology::to_toml(e.chip));
  EXPECT_EQ(back, e);
}

TEST(Serialize, FilesRoundTripAndErrorsNameThePath) {
  std::string path = ::testing::TempDir() + "/serialize_test.pex";
  write_executable(path, small_executable());
  EXPECT_EQ(read_executable(path), small_executable());

  try {
    read_executable(::testing::TempDir() + "/no_such_file.pex");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_file.pex"), std::string::npos) << e.what();
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "definitely not capnp";
  try {
    read_executable(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Serialize, WriteValidatesFirst) {
  Executable e = small_executable();
  e.programs[0].core = 7;
  std::string path = ::testing::TempDir() + "/invalid.pex";
  std::filesystem::remove(path);
  EXPECT_THROW(write_executable(path, e), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Serialize, DeserializeValidates) {
  Executable e = small_executable();
  e.programs[0].instructions[6].operands[0] = 999;  // v999
  std::vector<uint8_t> bytes = serialize(e);
  std::string error = error_of(bytes);
  EXPECT_NE(error.find("evil.pex: program 0 (core 0), instruction 6 (vadd): vector register v999"),
            std::string::npos)
      << error;
}

TEST(Serialize, WrongFormatVersion) {
  Executable e = small_executable();
  e.format_version = kFormatVersion + 1;
  std::string error = error_of(serialize(e));
  EXPECT_NE(error.find(fmt::format("format version {} cannot be read", kFormatVersion + 1)),
            std::string::npos)
      << error;
  e.format_version = 0;
  error = error_of(serialize(e));
  EXPECT_NE(error.find("not a podsim executable"), std::string::npos) << error;
}

TEST(Serialize, TruncatedAndPaddedBytes) {
  std::vector<uint8_t> bytes = serialize(small_executable());
  std::vector<uint8_t> odd(bytes.begin(), bytes.begin() + 13);
  EXPECT_NE(error_of(odd).find("not a whole number of 8-byte words"), std::string::npos)
      << error_of(odd);
  for (size_t keep : {size_t{8}, size_t{16}, bytes.size() / 2 & ~size_t{7}, bytes.size() - 8}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    std::string error = error_of(cut);
    EXPECT_NE(error.find("evil.pex: not a valid podsim executable"), std::string::npos)
        << keep << ": " << error;
  }
  std::vector<uint8_t> padded = bytes;
  padded.resize(bytes.size() + 16);
  EXPECT_NE(error_of(padded).find("16 bytes after the end of the message"), std::string::npos)
      << error_of(padded);
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
}

TEST(Serialize, RandomBytesAreRejectedCleanly) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes(8 * (1 + rng() % 64));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    std::string error = error_of(bytes);
    EXPECT_NE(error.find("podsim executable"), std::string::npos) << error;
  }
}

TEST(Serialize, RandomCorruptionNeverCrashes) {
  std::vector<uint8_t> good = serialize(every_opcode_executable());
  std::mt19937_64 rng(11);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bytes = good;
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
      bytes[rng() % bytes.size()] ^= 1u << (rng() % 8);
    try {
      Executable e = deserialize(bytes.data(), bytes.size());
      std::vector<uint8_t> again = serialize(e);
      EXPECT_EQ(deserialize(again.data(), again.size()), e);
      ++accepted;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(accepted, 0) << "some flips (in immediates, strings) leave a valid executable";
}

TEST(Serialize, OpcodesAreMappedByMnemonic) {
  // A file's opcode numbers are its own: an unknown mnemonic is reported when used.
  Executable e = small_executable();
  e.programs[0].instructions[0].opcode = static_cast<Opcode>(200);
  std::string error = error_of(serialize(e));
  EXPECT_NE(error.find("program 0 (core 0), instruction 0: unknown opcode 200"), std::string::npos)
      << error;
}

// A file written by the single-chip format (version 1, before pods) still reads: the
// executable of one chip it always was.
TEST(Serialize, ReadsFormatVersion1) {
  std::string dir = std::string(PODSIM_SOURCE_DIR) + "/tests/isa/";
  std::ifstream in(dir + "testdata/vector_add.s");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Executable old = read_executable(dir + "format1/vector_add.pex");
  EXPECT_FALSE(old.pod.has_value());
  EXPECT_EQ(old.replicas, 1);
  EXPECT_EQ(old, assemble(text));
}

// A pod executable whose chip preset has changed since it was compiled (format2/ holds
// every_opcode.pex as written before the v4 preset's description changed) still reads: its
// own chip record is the chip, the pod's included.
TEST(Serialize, APodExecutableKeepsTheChipItWasCompiledFor) {
  Executable old = read_executable(std::string(PODSIM_SOURCE_DIR) +
                                   "/tests/isa/format2/every_opcode.pex");
  ASSERT_TRUE(old.pod.has_value());
  EXPECT_EQ(old.chip.name, "v4");
  EXPECT_NE(old.chip.description, topology::preset("v4").description);
  EXPECT_EQ(old.pod->chip, old.chip);
}

// The fuzz seed corpus (tests/isa/corpus/*.pex) is the assembled tests/isa/testdata/*.s.
// PODSIM_REGENERATE_CORPUS=1 rewrites it (after a format change).
TEST(Serialize, SeedCorpusMatchesItsSources) {
  namespace fs = std::filesystem;
  fs::path testdata = fs::path(PODSIM_SOURCE_DIR) / "tests/isa/testdata";
  fs::path corpus = fs::path(PODSIM_SOURCE_DIR) / "tests/isa/corpus";
  bool regenerate = std::getenv("PODSIM_REGENERATE_CORPUS") != nullptr;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(testdata)) {
    if (entry.path().extension() != ".s") continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Executable e = assemble(text, entry.path().string());
    fs::path pex = corpus / entry.path().filename().replace_extension(".pex");
    if (regenerate) write_executable(pex.string(), e);
    ASSERT_TRUE(fs::exists(pex)) << pex << " is missing: run with PODSIM_REGENERATE_CORPUS=1";
    EXPECT_EQ(read_executable(pex.string()), e)
        << pex << " is stale: run with PODSIM_REGENERATE_CORPUS=1";
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace podsim::isa
