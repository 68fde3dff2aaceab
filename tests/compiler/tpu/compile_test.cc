// Properties of the executables the TPU target produces: validity, errors for what it
// cannot lower, source-op attribution, buffer reuse, double buffering, other cores.
#include <fmt/format.h>

#include <map>

#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

const isa::Program& program(const isa::Executable& e) { return e.programs.at(0); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TpuCompile, UnsupportedOpsNameTheOpAndTheLine) {
  std::string message = error_of([] {
    compile_text(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT s = f32[4] sine(x)
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message, "not supported on the TPU target: sine (line 4)")) << message;

  message = error_of([] {
    compile_text(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] cosine(x)
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message, "not supported on the TPU target: cosine (line 4)")) << message;

  message = error_of([] {
    compile_text(R"(HloModule m
ENTRY e {
  x = s64[4] parameter(0)
  ROOT a = s64[4] add(x, x)
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message, "not supported on the TPU target: add (line 4): s64")) << message;
}

TEST(TpuCompile, ExecutablesValidateAndRoundTripThroughText) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[9,17] parameter(0)
  w = f32[17,5] parameter(1)
  d = f32[9,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[9,5] tanh(d)
})",
                                   "tiny");
  EXPECT_NO_THROW(isa::validate(e));
  EXPECT_EQ(e.compiler_version, std::string(kCompilerVersion));
  EXPECT_EQ(isa::assemble(isa::disassemble(e)), e);
  ASSERT_EQ(e.parameters.size(), 2u);
  EXPECT_EQ(e.parameters[0].name, "x");
  EXPECT_EQ(e.parameters[1].dims, (std::vector<int64_t>{17, 5}));
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.outputs[0].name, "out0");
  EXPECT_EQ(e.outputs[0].dims, (std::vector<int64_t>{9, 5}));
}

TEST(TpuCompile, EveryInstructionIsAttributedToItsIrOp) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[9,17] parameter(0)
  w = f32[17,5] parameter(1)
  d = f32[9,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_type="MatMul" op_name="model/dense/MatMul" source_file="model.py" source_line=12}
  ROOT t = f32[9,5] tanh(d), metadata={op_type="Tanh" op_name="model/tanh"}
})",
                                   "tiny");
  std::map<std::string, int> per_op;
  for (const isa::Instruction& in : program(e).instructions) {
    ASSERT_GE(in.source_op, 0);
    const isa::SourceOp& s = e.source_ops[static_cast<size_t>(in.source_op)];
    ++per_op[s.instruction];
    if (in.opcode == isa::Opcode::kMmul) {
      EXPECT_EQ(s.instruction, "d");
      EXPECT_EQ(s.op_name, "model/dense/MatMul");
      EXPECT_EQ(s.source_file, "model.py");
      EXPECT_EQ(s.source_line, 12);
    }
    if (in.opcode == isa::Opcode::kVtanh) {
      EXPECT_EQ(s.op_type, "Tanh");
    }
  }
  EXPECT_GT(per_op["d"], 0);
  EXPECT_GT(per_op["t"], 0);
}

TEST(TpuCompile, FusedKernelsAreAttributedToTheirFusion) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[9,17] parameter(0)
  a = f32[9,17] exponential(x)
  ROOT b = f32[9,17] multiply(a, a)
})",
                                   "tiny", /*fuse=*/true);
  for (const isa::Instruction& in : program(e).instructions)
    if (in.opcode == isa::Opcode::kVexp) {
      EXPECT_EQ(e.source_ops[static_cast<size_t>(in.source_op)].instruction.rfind("fusion", 0), 0u)
          << e.source_ops[static_cast<size_t>(in.source_op)].instruction;
    }
}

TEST(TpuCompile, IntermediateBuffersReuseHbm) {
  // A chain of unfused ops: each intermediate dies two steps after it is made.
  std::string body;
  for (int k = 1; k <= 6; ++k) body += fmt::format("  v{} = f32[64,64] exponential(v{})\n", k, k - 1);
  isa::Executable e = compile_text("HloModule m\nENTRY e {\n  v0 = f32[64,64] parameter(0)\n" + body +
                                       "  ROOT r = f32[64,64] negate(v6)\n}",
                                   "tiny");
  int64_t sum = 0, extent = 0;
  for (const isa::Region& r : e.regions)
    if (r.space == isa::MemorySpace::kHbm) {
      sum += r.size;
      extent = std::max(extent, r.offset + r.size);
    }
  EXPECT_EQ(sum, 8 * 64 * 64 * 4);  // parameter, 6 intermediates, output
  EXPECT_LE(extent, 4 * (64 * 64 * 4 + 512));  // live at once: at most parameter, 2 temporaries, output
}

TEST(TpuCompile, OutOfDeviceMemoryIsAnError) {
  std::string message = error_of([] {
    compile_text(R"(HloModule m
ENTRY e {
  a = f32[50000000] parameter(0)
  b = f32[50000000] parameter(1)
  ROOT t = (f32[50000000], f32[50000000]) tuple(a, b)
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message, "out of device memory")) << message;
}

// Input DMAs of tile t + 1 are issued before the vector unit computes tile t, into the
// other slot.
TEST(TpuCompile, ElementwiseDmasAreDoubleBuffered) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[64,40] parameter(0)
  y = f32[64,40] parameter(1)
  ROOT r = f32[64,40] add(x, y)
})",
                                   "tiny");
  const auto& code = program(e).instructions;
  auto is_input_dma = [&](const isa::Instruction& in) {
    if (in.opcode != isa::Opcode::kDma) return false;
    const isa::DmaDescriptor& d = e.descriptors[static_cast<size_t>(in.operands[0])];
    return e.regions[static_cast<size_t>(d.src_region)].space == isa::MemorySpace::kHbm &&
           e.regions[static_cast<size_t>(d.dst_region)].space == isa::MemorySpace::kVmem;
  };
  // Tiles: the input DMAs in issue order (two per tile), and each tile's first vadd.
  std::vector<size_t> dma_at;
  std::vector<int32_t> dma_slot;
  std::vector<size_t> compute_at;
  for (size_t pc = 0; pc < code.size(); ++pc) {
    if (is_input_dma(code[pc])) {
      dma_at.push_back(pc);
      dma_slot.push_back(e.descriptors[static_cast<size_t>(code[pc].operands[0])].dst_region);
    }
    if (code[pc].opcode == isa::Opcode::kSemWait && code[pc].operands[0] < 2) compute_at.push_back(pc);
  }
  const size_t tiles = compute_at.size();
  ASSERT_GE(tiles, 3u);
  ASSERT_EQ(dma_at.size(), 2 * tiles);
  for (size_t t = 0; t + 1 < tiles; ++t) {
    EXPECT_LT(dma_at[2 * (t + 1)], compute_at[t]) << "tile " << t + 1 << "'s DMA after tile " << t << "'s compute";
    EXPECT_NE(dma_slot[2 * (t + 1)], dma_slot[2 * t]) << "tiles " << t << " and " << t + 1 << " share a slot";
  }
  // And the result is right.
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[64,40] parameter(0)
  y = f32[64,40] parameter(1)
  ROOT r = f32[64,40] add(x, y)
})"});
}

TEST(TpuCompile, DotWeightsForTheNextKTileLoadWhileTheMxuWorks) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[16,40] parameter(0)
  w = f32[40,16] parameter(1)
  ROOT d = f32[16,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                                   "tiny");
  auto region_of = [&](const isa::Instruction& in, bool dst) {
    const isa::DmaDescriptor& d = e.descriptors[static_cast<size_t>(in.operands[0])];
    return e.regions[static_cast<size_t>(dst ? d.dst_region : d.src_region)].name;
  };
  // Before each mmul but the last, the weights of the following step were requested.
  int weights = 0, lhs = 0, mmuls = 0;
  for (const isa::Instruction& in : program(e).instructions) {
    if (in.opcode == isa::Opcode::kDma && region_of(in, false) == "w") ++weights;
    if (in.opcode == isa::Opcode::kDma && region_of(in, false) == "x") ++lhs;
    if (in.opcode == isa::Opcode::kMmul) {
      ++mmuls;
      EXPECT_GE(weights, std::min(mmuls + 1, 20)) << "mmul " << mmuls;
    }
  }
  EXPECT_EQ(mmuls, 2 * 2 * 5);  // 2 x 2 output tiles of 8 x 8, 5 K tiles each
  EXPECT_EQ(weights, 20);
  EXPECT_EQ(lhs, 2 * 5);  // each row of LHS tiles is loaded once for both N tiles
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[16,40] parameter(0)
  w = f32[40,16] parameter(1)
  ROOT d = f32[16,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})", "tiny", 0, 40 * 40.0 / (1 << 24), false, -1, 1, false, 1, /*bf16_values=*/true});
}

TEST(TpuCompile, RunsOnAnotherCore) {
  Options options;
  options.core = 1;
  auto module = ir::parse_module(R"(HloModule m
ENTRY e {
  x = f32[9,10] parameter(0)
  ROOT r = f32[9,10] exponential(x)
})");
  isa::Executable e = compile(*module, topology::preset("v4"), options);
  EXPECT_EQ(program(e).core, 1);
  for (const isa::Region& r : e.regions)
    if (r.space == isa::MemorySpace::kVmem) {
      EXPECT_EQ(r.core, 1);
    }
  std::mt19937_64 rng(2);
  ir::Literal x = random_literal(module->entry()->parameter(0)->shape(), rng);
  auto out = run_executable(e, {x}, {module->entry()->root()->shape()});
  std::vector<ir::Literal> args = {x};
  EXPECT_TRUE(near(out[0], ir::evaluate(*module, args), 1e-6, 0));
  options.core = 2;
  EXPECT_FALSE(error_of([&] { compile(*module, topology::preset("v4"), options); }).empty());
}

TEST(TpuCompile, TupleParametersAreNotSupported) {
  std::string message = error_of([] {
    compile_text(R"(HloModule m
ENTRY e {
  p = (f32[2], f32[2]) parameter(0)
  ROOT g = f32[2] get-tuple-element(p), index=0
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message, "not supported on the TPU target: parameter (line 3)")) << message;
}

}  // namespace
}  // namespace podsim::tpu::testing
