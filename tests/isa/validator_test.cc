// Malicious executables: a valid one with one field changed each, rejected by validate()
// and by deserialize() (through the file form) with a message naming the problem.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>

#include "common/error.h"
#include "isa/isa.h"
#include "tests/isa/test_executables.h"

namespace podsim::isa {
namespace {

using testing::every_opcode_executable;
using testing::make;
using testing::small_executable;

struct Mutation {
  const char* name;
  std::function<void(Executable&)> mutate;
  const char* expected;  // a phrase of the message
};

// Instruction indices of small_executable(): 3 dma, 4 sem.wait, 5 vld, 6 vadd, 7 vst,
// 9 bnz, 12 halt. Regions: 0 x_hbm, 1 y_hbm, 2 x, 3 y, 4 w.
Instruction& at(Executable& e, size_t n) { return e.programs[0].instructions[n]; }

const Mutation kMutations[] = {
    {"bad opcode", [](Executable& e) { at(e, 6).opcode = static_cast<Opcode>(200); },
     "unknown opcode 200"},
    {"bad dtype", [](Executable& e) { at(e, 6).dtype = static_cast<DType>(77); },
     "instruction 6 (vadd): unknown data type 77"},
    {"scalar register 999", [](Executable& e) { at(e, 8).operands[1] = 999; },
     "instruction 8 (saddi): scalar register s999 does not exist"},
    {"negative scalar register", [](Executable& e) { at(e, 0).operands[0] = -1; },
     "scalar register s-1 does not exist"},
    {"vector register 999", [](Executable& e) { at(e, 6).operands[2] = 999; },
     "program 0 (core 0), instruction 6 (vadd): vector register v999 does not exist (chip 'tiny' "
     "has v0..v15)"},
    {"vector register just past the chip's", [](Executable& e) { at(e, 5).operands[0] = 16; },
     "vector register v16"},
    {"MXU index",
     [](Executable& e) {
       at(e, 6) = make(Opcode::kMpop, DType::kF32, {1, 2, 1, 2});
     },
     "MXU m1 does not exist"},
    {"semaphore", [](Executable& e) { at(e, 4).operands[0] = kSemaphores; }, "semaphore q64 does not exist"},
    {"descriptor index", [](Executable& e) { at(e, 3).operands[0] = 2; },
     "descriptor d2 does not exist"},
    {"region index", [](Executable& e) { at(e, 5).operands[1] = 5; },
     "region index 5 is out of range"},
    {"vector load from HBM", [](Executable& e) { at(e, 5).operands[1] = 0; },
     "region 0 ('x_hbm') is in HBM; loads and stores reach only the core's own VMEM"},
    {"unused operand", [](Executable& e) { at(e, 12).operands[0] = 1; },
     "operand 0 is unused by halt and must be 0"},
    {"source op", [](Executable& e) { at(e, 6).source_op = 2; }, "source op 2 is out of range"},
    {"negative source op", [](Executable& e) { at(e, 6).source_op = -2; },
     "source op -2 is out of range"},
    {"branch out of range", [](Executable& e) { at(e, 9).operands[1] = 13; },
     "instruction 9 (bnz): branch target 13 is outside the program"},
    {"negative branch", [](Executable& e) { at(e, 9).operands[1] = -1; },
     "branch target -1 is outside"},
    {"bad sdev selector",
     [](Executable& e) { at(e, 3) = make(Opcode::kSdev, DType::kF32, {1, 6}); },
     "immediate 6 is not a valid sdev selector"},
    {"remote DMA without a pod",
     [](Executable& e) { at(e, 3) = make(Opcode::kDmaRemote, DType::kF32, {0, 1, 1, 1, 0, 0}); },
     "instruction 3 (dma.remote): dma.remote needs a pod"},
    {"replicas without a pod", [](Executable& e) { e.replicas = 2; },
     "2 replicas x 1 partitions must fit on the 1 chip(s) of a single chip"},
    {"pod of another chip",
     [](Executable& e) { e.pod = topology::pod_config("v5e:2x2"); e.replicas = 4; },
     "the pod's chip ('v5e') is not the executable's chip ('tiny')"},
    {"bad comparison",
     [](Executable& e) {
       at(e, 6) = make(Opcode::kVcmp, DType::kF32, {0, 0, 0, 6});
     },
     "immediate 6 is not a valid comparison"},
    {"bad conversion source",
     [](Executable& e) {
       at(e, 6) = make(Opcode::kVcvt, DType::kF32, {0, 0, kDTypeCount});
     },
     "not a valid source data type"},
    {"negative semaphore count", [](Executable& e) { at(e, 4).operands[1] = -1; },
     "not a valid semaphore count"},
    {"missing halt", [](Executable& e) { e.programs[0].instructions.pop_back(); },
     "instruction 11 (sem.wait): the program can run off its end"},
    {"conditional branch last", [](Executable& e) { e.programs[0].instructions.resize(10); },
     "its last instruction is bnz, not halt or br"},
    {"empty program", [](Executable& e) { e.programs[0].instructions.clear(); },
     "program 0 (core 0): no instructions"},
    {"program for core 7", [](Executable& e) { e.programs[0].core = 7; },
     "program 0 (core 7): chip 'tiny' has 1 TensorCore(s), so no core 7"},
    {"two programs for one core", [](Executable& e) { e.programs.push_back(e.programs[0]); },
     "program 1 (core 0): program 0 is also for core 0"},
    {"region beyond HBM", [](Executable& e) { e.regions[1].offset = (256 << 20) - 128; },
     "region 1 ('y_hbm'): bytes [268435328, 268435328+256) lie outside the HBM of chip 'tiny'"},
    {"region offset overflow", [](Executable& e) { e.regions[1].offset = INT64_MAX; },
     "lie outside the HBM"},
    {"region size beyond VMEM", [](Executable& e) { e.regions[2].size = (1 << 20) + 1; },
     "outside the VMEM of core 0"},
    {"VMEM of a missing core", [](Executable& e) { e.regions[2].core = 3; },
     "VMEM of core 3, but chip 'tiny' has 1"},
    {"HBM region with a core", [](Executable& e) { e.regions[0].core = 1; },
     "an HBM region must have core 0"},
    {"negative region size", [](Executable& e) { e.regions[3].size = -4; },
     "region 3 ('y'): negative size -4"},
    {"negative region offset", [](Executable& e) { e.regions[3].offset = -4; },
     "negative offset -4"},
    {"unknown memory space",
     [](Executable& e) { e.regions[3].space = static_cast<MemorySpace>(9); },
     "unknown memory space 9"},
    {"region name with a space", [](Executable& e) { e.regions[3].name = "y y"; },
     "the name is not an identifier"},
    {"empty region name", [](Executable& e) { e.regions[3].name = ""; },
     "the name is not an identifier"},
    {"duplicate region name", [](Executable& e) { e.regions[3].name = "x"; },
     "region 3 ('x'): the name is also region 2's"},
    {"descriptor beyond its region",
     [](Executable& e) {
       e.descriptors[0].sizes = {9, 8};
     },
     "descriptor d0: the source extent of 288 bytes exceeds region 0 ('x_hbm') of 256 bytes"},
    {"descriptor extent overflow",
     [](Executable& e) {
       e.descriptors[0].src_strides = {INT64_MAX / 2, 4};
     },
     "descriptor d0: the source extent overflows 64 bits"},
    {"descriptor destination", [](Executable& e) { e.descriptors[1].dst_strides = {8}; },
     "descriptor d1: the destination extent of 508 bytes exceeds region 1"},
    {"negative descriptor size",
     [](Executable& e) {
       e.descriptors[0].sizes = {-3, 8};
     },
     "size -3 of dimension 0 is not positive"},
    {"negative stride",
     [](Executable& e) {
       e.descriptors[0].dst_strides = {32, -4};
     },
     "negative stride in dimension 1"},
    {"descriptor strides missing", [](Executable& e) { e.descriptors[0].src_strides = {32}; },
     "2 sizes but 1 source and 2 destination strides"},
    {"descriptor with 5 dims",
     [](Executable& e) {
       e.descriptors[0].sizes = e.descriptors[0].src_strides =
           e.descriptors[0].dst_strides = {1, 1, 1, 1, 1};
     },
     "5 dimensions (at most 4)"},
    {"descriptor element size", [](Executable& e) { e.descriptors[0].element_bytes = 0; },
     "element size 0 bytes is not positive"},
    {"descriptor region", [](Executable& e) { e.descriptors[1].src_region = -1; },
     "descriptor d1: region index -1 is out of range"},
    {"constant too large", [](Executable& e) { e.constants[0].data.resize(17); },
     "constant 0: data of 17 bytes do not fit region 4 ('w') of 16 bytes"},
    {"constant region", [](Executable& e) { e.constants[0].region = 9; },
     "constant 0: region index 9 is out of range"},
    {"parameter larger than its region",
     [](Executable& e) {
       e.parameters[0].dims = {8, 9};
     },
     "parameter 0 ('x'): f32[8, 9] of 288 bytes do not fit region 0 ('x_hbm') of 256 bytes"},
    {"int64 overflow in dims",
     [](Executable& e) {
       e.outputs[0].dims = {int64_t{1} << 32, int64_t{1} << 32};
     },
     "output 0 ('y'): the size of dims [4294967296, 4294967296] overflows 64 bits"},
    {"dims overflow only with the element size",
     [](Executable& e) { e.outputs[0].dims = {int64_t{1} << 62}; }, "overflows 64 bits"},
    {"negative dim",
     [](Executable& e) {
       e.parameters[0].dims = {-8, -8};
     },
     "negative dimension -8"},
    {"binding dtype", [](Executable& e) { e.outputs[0].dtype = static_cast<DType>(13); },
     "output 0 ('y'): unknown data type 13"},
    {"invalid chip", [](Executable& e) { e.chip.vector_registers = 0; },
     "the target chip 'tiny' is invalid"},
    {"chip without a name", [](Executable& e) { e.chip.name.clear(); },
     "the target chip has no name"},
    {"wrong format version", [](Executable& e) { e.format_version = 3; }, "format version 3"},
};

class Malicious : public ::testing::TestWithParam<Mutation> {};

TEST_P(Malicious, IsRejectedInMemoryAndFromBytes) {
  const Mutation& m = GetParam();
  Executable e = small_executable();
  validate(e);
  m.mutate(e);
  try {
    validate(e);
    ADD_FAILURE() << "validate() accepted it";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(m.expected), std::string::npos) << err.what();
  }
  std::vector<uint8_t> bytes = serialize(e);
  try {
    deserialize(bytes.data(), bytes.size(), "evil.pex");
    ADD_FAILURE() << "deserialize() accepted it";
  } catch (const Error& err) {
    std::string what = err.what();
    EXPECT_EQ(what.rfind("evil.pex: ", 0), 0u) << what;
    EXPECT_NE(what.find(m.expected), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Validator, Malicious, ::testing::ValuesIn(kMutations),
                         [](const ::testing::TestParamInfo<Mutation>& info) {
                           std::string name;
                           for (const char* c = info.param.name; *c; ++c)
                             name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           return name;
                         });

TEST(Validator, AcceptsTheTestExecutables) {
  validate(small_executable());
  validate(every_opcode_executable());
  validate(testing::custom_chip_executable());
}

TEST(Validator, EveryOpcodeExecutableUsesEveryOpcodeAndValidImmediates) {
  Executable e = every_opcode_executable();
  const Program& p = e.programs[0];
  ASSERT_EQ(p.instructions.size(), static_cast<size_t>(kIsaOpcodeCount) + 1);
  for (int i = 0; i < kIsaOpcodeCount; ++i)
    EXPECT_EQ(p.instructions[i].opcode, static_cast<Opcode>(i));
}

TEST(Validator, BoundariesAreInclusiveWhereTheyShouldBe) {
  Executable e = small_executable();
  e.regions[1].offset = (256 << 20) - 256;  // ends exactly at the end of HBM
  e.regions[2].size = 1 << 20;              // all of VMEM
  e.descriptors[0].sizes = {8, 8};          // extent exactly 256
  e.constants[0].data.resize(16);
  at(e, 5).operands[0] = 15;  // the last vector register
  at(e, 0).operands[0] = 31;
  at(e, 4).operands[0] = 31;
  validate(e);
}

TEST(Validator, HaltOrBranchMayEndAProgram) {
  Executable e = small_executable();
  e.programs[0].instructions.back() = make(Opcode::kBr, DType::kF32, {5});
  validate(e);
}

}  // namespace
}  // namespace podsim::isa
