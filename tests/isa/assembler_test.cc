// The text form: what the assembler makes of hand-written lines, round trips through the
// disassembler, coverage of every opcode, and errors with line and column.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.h"
#include "isa/isa.h"
#include "tests/isa/test_executables.h"

namespace podsim::isa {
namespace {

using testing::custom_chip_executable;
using testing::every_opcode_executable;
using testing::small_executable;

std::string read_testdata(const std::string& name) {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/tests/isa/testdata/" + name);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> testdata_files() {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PODSIM_SOURCE_DIR) + "/tests/isa/testdata"))
    if (entry.path().extension() == ".s") names.push_back(entry.path().filename().string());
  return names;
}

std::string error_of(std::string_view text) {
  try {
    assemble(text, "k.s");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr std::string_view kHeader =
    ".chip tiny\n"                   // line 1
    ".region x vmem[0] 0 1024\n"     // line 2
    ".region y vmem[0] 1024 1024\n"  // line 3
    ".program core 0\n";             // line 4

Instruction one(std::string_view line) {
  Executable e = assemble(std::string(kHeader) + std::string(line) + "\nhalt\n");
  return e.programs.at(0).instructions.at(0);
}

std::array<int64_t, kMaxOperands> ops(std::vector<int64_t> v) {
  std::array<int64_t, kMaxOperands> a{};
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

TEST(Assembler, ReadsInstructionsAsDocumented) {
  Instruction in = one("vadd.f32 v2, v0, v1");
  EXPECT_EQ(in.opcode, Opcode::kVadd);
  EXPECT_EQ(in.dtype, DType::kF32);
  EXPECT_EQ(in.operands, ops({2, 0, 1}));
  EXPECT_EQ(in.source_op, -1);

  in = one("vld.bf16 v0, y[s3], s4");  // region y is index 1
  EXPECT_EQ(in.opcode, Opcode::kVld);
  EXPECT_EQ(in.dtype, DType::kBF16);
  EXPECT_EQ(in.operands, ops({0, 1, 3, 4}));

  in = one("vst.s32 x[s1], s2, v3");
  EXPECT_EQ(in.operands, ops({0, 1, 2, 3}));

  in = one("mmul.bf16 m0, y[s5], s6, 1");
  EXPECT_EQ(in.opcode, Opcode::kMmul);
  EXPECT_EQ(in.operands, ops({0, 1, 5, 6, 1}));

  in = one("sli s5, -9223372036854775808");
  EXPECT_EQ(in.operands[1], INT64_MIN);
  in = one("sli s5, 0xffffffffffffffff  # the bit pattern");
  EXPECT_EQ(in.operands[1], -1);
  in = one("saddi s1, s2, 0x10");
  EXPECT_EQ(in.operands, ops({1, 2, 16}));

  in = one("sem.wait q7, 3");
  EXPECT_EQ(in.opcode, Opcode::kSemWait);
  EXPECT_EQ(in.operands, ops({7, 3}));
  in = one("sld.s64 s1, x[s2]");  // an optional type on an untyped instruction
  EXPECT_EQ(in.opcode, Opcode::kSld);
  EXPECT_EQ(in.dtype, DType::kS64);
  in = one("sdev s4, 2");
  EXPECT_EQ(in.opcode, Opcode::kSdev);
  EXPECT_EQ(in.operands, ops({4, 2}));
}

constexpr std::string_view kPodBody =
    ".region x vmem[0] 0 1024\n"
    ".region y vmem[0] 1024 1024\n"
    ".descriptor d0 src=x dst=y elem=4 sizes=[2] src_strides=[4] dst_strides=[4]\n"
    ".program core 0\n"
    "dma.remote.bf16 d0, s1, s2, s3, q4, q5\n"
    "halt\n";

TEST(Assembler, ReadsAPodAndRemoteDmas) {
  Executable e = assemble(".pod \"tiny:2x2\"\n" + std::string(kPodBody));
  ASSERT_TRUE(e.pod.has_value());
  EXPECT_EQ(*e.pod, topology::pod_config("tiny:2x2"));
  EXPECT_EQ(e.chip, e.pod->chip);
  EXPECT_EQ(e.replicas, 4);  // every chip a replica by default
  EXPECT_EQ(e.partitions, 1);
  const Instruction& in = e.programs[0].instructions[0];
  EXPECT_EQ(in.opcode, Opcode::kDmaRemote);
  EXPECT_EQ(in.dtype, DType::kBF16);
  EXPECT_EQ(in.operands, ops({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(assemble(disassemble(e)), e);

  // Replicas x partitions, given either way, and a pod spelled out as TOML.
  e = assemble(".pod \"tiny:2x2\"\n.partitions 2\n" + std::string(kPodBody));
  EXPECT_EQ(e.replicas, 2);
  EXPECT_EQ(e.partitions, 2);
  EXPECT_EQ(assemble(disassemble(e)), e);
  topology::PodConfig custom = topology::pod_config("tiny:2x2");
  custom.name = "my pod";
  custom.ici_link_latency_ns = 1234;
  e.pod = custom;
  std::string text = disassemble(e);
  EXPECT_NE(text.find(".pod_toml"), std::string::npos) << text;
  EXPECT_EQ(assemble(text), e);
}

TEST(Assembler, PodErrorsNameTheLine) {
  std::string no_pod = error_of(".chip tiny\n" + std::string(kPodBody));
  EXPECT_NE(no_pod.find("k.s:6:1: program 0 (core 0), instruction 0 (dma.remote): dma.remote "
                        "needs a pod"),
            std::string::npos)
      << no_pod;
  std::string count = error_of(".pod \"tiny:2x2\"\n.replicas 5\n" + std::string(kPodBody));
  EXPECT_NE(count.find("k.s:2:1: 5 replicas x 1 partitions must fit on the 4 chip(s)"),
            std::string::npos)
      << count;
  std::string both = error_of(".chip tiny\n.pod \"tiny:2x2\"\n" + std::string(kPodBody));
  EXPECT_NE(both.find("k.s:2:1: a second target chip or pod (the first is at line 1)"),
            std::string::npos)
      << both;
  std::string bad = error_of(".pod \"tiny:0x2\"\n" + std::string(kPodBody));
  EXPECT_NE(bad.find("k.s:1:6:"), std::string::npos) << bad;
}

TEST(Assembler, LabelsAndSourceOps) {
  Executable e = assemble(
      ".chip tiny\n"
      ".source 0 \"add.1\" \"add\" \"\" \"\" 0\n"
      ".source 1 \"mul.2\" \"multiply\" \"\" \"m.py\" 5\n"
      ".program core 0\n"
      "  br end\n"           // 0: forward reference
      "top: sli s1, 2 @1\n"  // 1
      "loop:\n"
      "  saddi s1, s1, -1  @0 # comment\n"  // 2
      "  bnz s1, loop\n"                    // 3
      "  bz s1, 1\n"                        // 4: a numeric target
      "end:\n"
      "  halt\n");  // 5
  const std::vector<Instruction>& p = e.programs[0].instructions;
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].operands[0], 5);
  EXPECT_EQ(p[1].source_op, 1);
  EXPECT_EQ(p[2].source_op, 0);
  EXPECT_EQ(p[3].operands, ops({1, 2}));
  EXPECT_EQ(p[4].operands, ops({1, 1}));
  EXPECT_EQ(e.source_ops[1].op_type, "multiply");
  EXPECT_EQ(e.source_ops[1].source_line, 5);
}

TEST(Assembler, DirectivesBuildTheTables) {
  Executable e = assemble(read_testdata("vector_add.s"), "vector_add.s");
  EXPECT_EQ(e.compiler_version, "hand-written");
  EXPECT_EQ(e.chip, topology::preset("tiny"));
  ASSERT_EQ(e.regions.size(), 6u);
  EXPECT_EQ(e.regions[4], (Region{"y", MemorySpace::kVmem, 0, 256, 256}));
  ASSERT_EQ(e.descriptors.size(), 3u);
  EXPECT_EQ(e.descriptors[2], (DmaDescriptor{5, 2, 4, {8, 8}, {32, 4}, {32, 4}}));
  EXPECT_EQ(e.parameters[1], (Binding{"y", 1, DType::kF32, {8, 8}}));
  EXPECT_EQ(e.outputs[0], (Binding{"z", 2, DType::kF32, {8, 8}}));

  Executable every = assemble(read_testdata("every_opcode.s"));
  ASSERT_EQ(every.constants.size(), 1u);
  EXPECT_EQ(every.constants[0].data, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                           13, 14, 15, 0xff, 0xfe}));
  EXPECT_EQ(every.parameters[0], (Binding{"p", 0, DType::kBF16, {128, 256}}));

  Executable constants =
      assemble(std::string(kHeader) + ".constant x 0a0B  # c\n.bytes ff\n.constant y\nhalt\n");
  ASSERT_EQ(constants.constants.size(), 2u);
  EXPECT_EQ(constants.constants[0], (Constant{0, {0x0a, 0x0b, 0xff}}));
  EXPECT_EQ(constants.constants[1], (Constant{1, {}}));

  Executable custom = assemble(read_testdata("custom_chip.s"));
  topology::ChipConfig expected = topology::preset("tiny");
  expected.name = "tiny-2core";
  expected.description = "tiny with two TensorCores and 2 MiB of VMEM each";
  expected.tensor_cores = 2;
  expected.vmem_bytes = 2 << 20;
  expected.clock_hz = 1.5e9;
  EXPECT_EQ(custom.chip, expected);
}

TEST(Assembler, RoundTripsThroughTheDisassembler) {
  for (const Executable& e :
       {small_executable(), every_opcode_executable(), custom_chip_executable()}) {
    std::string text = disassemble(e);
    Executable back = assemble(text, "round_trip.s");
    EXPECT_EQ(back, e) << text;
    EXPECT_EQ(disassemble(back), text);
  }
  for (const std::string& name : testdata_files()) {
    Executable e = assemble(read_testdata(name), name);
    EXPECT_EQ(assemble(disassemble(e)), e) << name;
  }
}

TEST(Assembler, HandWrittenExamplesCoverEveryOpcode) {
  // every_opcode.s must keep up with isa/opcodes.def: a new instruction needs a line there.
  std::set<Opcode> seen;
  for (const Program& p : assemble(read_testdata("every_opcode.s")).programs)
    for (const Instruction& in : p.instructions) seen.insert(in.opcode);
  for (int i = 0; i < kIsaOpcodeCount; ++i)
    EXPECT_TRUE(seen.count(static_cast<Opcode>(i)))
        << mnemonic(static_cast<Opcode>(i)) << " has no line in tests/isa/testdata/every_opcode.s";
}

TEST(Assembler, TheTextFormReliesOnTheTable) {
  // Mnemonics are unique and none ends in ".<dtype>" (the suffix would be ambiguous).
  std::set<std::string_view> mnemonics;
  for (int i = 0; i < kIsaOpcodeCount; ++i) {
    std::string_view m = mnemonic(static_cast<Opcode>(i));
    EXPECT_TRUE(mnemonics.insert(m).second) << m;
    EXPECT_EQ(opcode_from_mnemonic(m), static_cast<Opcode>(i));
    size_t dot = m.rfind('.');
    if (dot != std::string_view::npos) {
      EXPECT_FALSE(dtype_from_name(m.substr(dot + 1))) << m;
    }
    EXPECT_LE(signature(static_cast<Opcode>(i)).size(), static_cast<size_t>(kMaxOperands)) << m;
  }
}

struct BadText {
  std::string text;  // after kHeader (lines 1-4), so its first line is line 5; halt follows
  std::string expected;
};

TEST(Assembler, ErrorsNameLineAndColumn) {
  const BadText cases[] = {
      {"vadd.f32 v2, v0", "k.s:5:16: expected ','"},
      {"vadd v2, v0, v1", "k.s:5:1: vadd needs an element type"},
      {"  vfoo.f32 v1, v2", "k.s:5:3: unknown instruction 'vfoo.f32'"},
      {"vadd.f33 v1, v2, v3", "k.s:5:1: unknown element type 'f33' in 'vadd.f33'"},
      {"vadd.f32 v1, s2, v3", "k.s:5:14: expected a vector register (v0, v1, ...), found 's2'"},
      {"vld.f32 v0, nowhere[s1], s2", "k.s:5:13: unknown region 'nowhere'"},
      {"vld.f32 v0, x, s2", "k.s:5:14: expected '['"},
      {"halt\nbr missing", "k.s:6:4: undefined label 'missing'"},
      {"a: halt\na: halt", "k.s:6:1: label 'a' is already defined"},
      {"sli s1, 99999999999999999999",
       "k.s:5:9: '99999999999999999999' does not fit a signed 64-bit integer"},
      {"sli s1, 12abc", "k.s:5:9: '12abc' is not a number"},
      {"sli s1, 1 2", "k.s:5:11: unexpected '2' at the end of the line"},
      {".source 0 \"unterminated", "k.s:5:11: unterminated string"},
      {".source 0 \"a\\q\" \"\" \"\" \"\" 0", "k.s:5:13: unknown escape"},
      {".source 1 \"\" \"\" \"\" \"\" 0",
       "k.s:5:9: source ops are numbered in order: this one is 0"},
      {".descriptor d1 src=x dst=y elem=4 sizes=[1] src_strides=[0] dst_strides=[0]",
       "k.s:5:13: descriptors are numbered in order: this one is d0"},
      {".descriptor d0 src=x dest=y", "k.s:5:22: expected 'dst'"},
      {".region x hbm 0 16", "k.s:5:9: region 'x' is already declared at line 2"},
      {".region z flash 0 16", "k.s:5:11: expected hbm or vmem[CORE], found 'flash'"},
      {".region \"z\" hbm 0 16", "k.s:5:9: expected a region name, found \"z\""},
      {".bytes 00", "k.s:5:1: .bytes must follow a .constant line"},
      {".constant x\n.bytes 0g", "k.s:6:9: 'g' is not a hex digit"},
      {".constant x\n.bytes 012", "k.s:6:10: an odd number of hex digits"},
      {".constant x 0z", "k.s:5:14: 'z' is not a hex digit"},
      {".constant nowhere 00", "k.s:5:11: unknown region 'nowhere'"},
      {".region z hbm 0 16\n.bytes 00", "k.s:6:1: .bytes must follow a .constant line"},
      {".param p x f99[2]", "k.s:5:12: unknown element type 'f99'"},
      {".chip v4", "k.s:5:1: a second target chip or pod (the first is at line 1)"},
      {".format 3", "k.s:5:9: format version 3: this podsim reads versions 1 to 2"},
      {".frobnicate", "k.s:5:1: unknown directive '.frobnicate'"},
      {"vadd.f32 v1, v2, v3 $", "k.s:5:21: unexpected character '$'"},
      // Problems the validator finds are reported at the line they come from.
      {"nop:\nvadd.f32 v99, v0, v1",
       "k.s:6:1: program 0 (core 0), instruction 0 (vadd): vector register v99 does not exist "
       "(chip 'tiny' has v0..v15)"},
      {"vld.f32 v0, x[s32], s1",
       "k.s:5:1: program 0 (core 0), instruction 0 (vld): scalar register s32 does not exist"},
      {"br 7",
       "k.s:5:1: program 0 (core 0), instruction 0 (br): branch target 7 is outside the program"},
      {".region big hbm 0 999999999999",
       "k.s:5:1: region 2 ('big'): bytes [0, 0+999999999999) lie outside the HBM"},
      {"halt\n.program core 3",
       "k.s:6:1: program 1 (core 3): chip 'tiny' has 1 TensorCore(s), so no core 3"},
  };
  for (const BadText& c : cases) {
    std::string error = error_of(std::string(kHeader) + c.text + "\nhalt\n");
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << "\n  got: " << error;
  }
}

TEST(Assembler, StructuralErrors) {
  EXPECT_NE(error_of(".program core 0\nhalt\n").find("k.s:1:1: no target chip"), std::string::npos);
  EXPECT_NE(error_of(".chip tiny\nhalt\n").find("k.s:2:1: instruction outside a program"),
            std::string::npos);
  EXPECT_NE(error_of(".chip nope\n").find("k.s:1:7: unknown chip preset 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of(".chip_toml \"c\" \"d\"\nbase = \"tiny\"\n")
                .find("k.s:1:1: .chip_toml block without its .end"),
            std::string::npos);
  // TOML errors keep this file's line numbers.
  std::string error =
      error_of(".chip_toml \"c\" \"d\"\nbase = \"tiny\"\nvmem_bytes = \"lots\"\n.end\n");
  EXPECT_NE(error.find("k.s:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("vmem_bytes"), std::string::npos) << error;
  EXPECT_NE(error_of(".end\n").find("k.s:1:1: .end without a .chip_toml or .pod_toml block"), std::string::npos);
  EXPECT_NE(
      error_of(".chip tiny\n.program core 0\nsli s1, 0\n")
          .find(
              "k.s:3:1: program 0 (core 0), instruction 0 (sli): the program can run off its end"),
      std::string::npos);
}

TEST(Assembler, DisassemblerRefusesInvalidExecutables) {
  Executable e = small_executable();
  e.programs[0].instructions[6].operands[0] = 99;
  EXPECT_THROW(disassemble(e), Error);
}

}  // namespace
}  // namespace podsim::isa
