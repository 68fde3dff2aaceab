// Properties of the executables the TPU target produces: validity, errors for what it
// cannot lower, source-op attribution, buffer reuse, double buffering, other cores.
#include <fmt/format.h>

#include <map>
#include <set>

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
  ROOT c = f32[4] custom-call(x), custom_call_target="my_kernel"
})",
                 "tiny");
  });
  EXPECT_TRUE(contains(message,
                       "not supported on the TPU target: custom-call 'my_kernel' (line 4): the "
                       "target has no definition"))
      << message;

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

TEST(TpuCompile, DefinedCustomCallsAndXlaMarkersRun) {
  passes::define_custom_calls(*ir::parse_module(R"(HloModule defs
ENTRY softplus (x: f32[]) -> f32[] {
  x = f32[] parameter(0)
  e = f32[] exponential(x)
  ROOT y = f32[] log-plus-one(e)
})"),
                              "defs.hlo");
  const std::string text = R"(HloModule m
ENTRY e {
  p = f32[8,128] parameter(0)
  s = f32[8,128] custom-call(p), custom_call_target="Sharding", sharding={replicated}
  ROOT y = f32[8,128] custom-call(s), custom_call_target="softplus"
})";
  auto expanded = ir::parse_module(text);
  passes::make_custom_call_expander()->run(*expanded);
  std::mt19937_64 rng(5);
  std::vector<ir::Literal> args = {
      random_literal(ir::Shape(ir::PrimitiveType::kF32, {8, 128}), rng, -8, 8)};
  const ir::Literal expected = ir::evaluate(*expanded, args);
  std::vector<ir::Literal> actual =
      run_executable(compile_text(text, "v5e"), args, {expected.shape()});
  passes::clear_custom_call_definitions();
  EXPECT_TRUE(near(actual.at(0), expected, 4e-6, 1e-30));
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

// The tiles of a batch (here all of them: they fit in VMEM) have their input DMAs in
// flight together, each tile in its own slots: every input DMA is issued before the
// vector unit computes, and the results go back only after the last input DMA (writes
// issued while reads are in flight would hold up the reads).
TEST(TpuCompile, ElementwiseDmasOfABatchAreInFlightTogether) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[64,40] parameter(0)
  y = f32[64,40] parameter(1)
  ROOT r = f32[64,40] add(x, y)
})",
                                   "tiny");
  const auto& code = program(e).instructions;
  auto space = [&](const isa::Instruction& in, bool dst) {
    const isa::DmaDescriptor& d = e.descriptors[static_cast<size_t>(in.operands[0])];
    return e.regions[static_cast<size_t>(dst ? d.dst_region : d.src_region)].space;
  };
  std::vector<size_t> input_at, output_at;
  std::set<int32_t> input_slots;
  size_t first_vadd = code.size();
  for (size_t pc = 0; pc < code.size(); ++pc) {
    if (code[pc].opcode == isa::Opcode::kVadd) first_vadd = std::min(first_vadd, pc);
    if (code[pc].opcode != isa::Opcode::kDma) continue;
    if (space(code[pc], false) == isa::MemorySpace::kHbm) {
      input_at.push_back(pc);
      input_slots.insert(e.descriptors[static_cast<size_t>(code[pc].operands[0])].dst_region);
    } else {
      output_at.push_back(pc);
    }
  }
  ASSERT_GE(input_at.size(), 6u);
  EXPECT_EQ(input_slots.size(), input_at.size()) << "every tile of a batch has its own slots";
  EXPECT_LT(input_at.back(), first_vadd);
  ASSERT_FALSE(output_at.empty());
  EXPECT_GT(output_at.front(), input_at.back());
  // And the result is right.
  check(Case{R"(HloModule m
ENTRY e {
  x = f32[64,40] parameter(0)
  y = f32[64,40] parameter(1)
  ROOT r = f32[64,40] add(x, y)
})"});
}

// The weights stay in VMEM while the LHS streams past them: every weight element is
// loaded once (a block's parts all requested before its passes end), and the LHS once
// per block of N tiles (at most once per N tile).
TEST(TpuCompile, DotWeightsStayResidentWhileTheLhsStreams) {
  isa::Executable e = compile_text(R"(HloModule m
ENTRY e {
  x = f32[16,40] parameter(0)
  w = f32[40,16] parameter(1)
  ROOT d = f32[16,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                                   "tiny");
  auto bytes_from = [&](const isa::Instruction& in, const std::string& region) -> int64_t {
    if (in.opcode != isa::Opcode::kDma) return 0;
    const isa::DmaDescriptor& d = e.descriptors[static_cast<size_t>(in.operands[0])];
    if (e.regions[static_cast<size_t>(d.src_region)].name != region) return 0;
    int64_t n = d.element_bytes;
    for (int64_t size : d.sizes) n *= size;
    return n;
  };
  int64_t weights = 0, lhs = 0;
  int mmuls = 0;
  for (const isa::Instruction& in : program(e).instructions) {
    weights += bytes_from(in, "w");
    lhs += bytes_from(in, "x");
    mmuls += in.opcode == isa::Opcode::kMmul;
  }
  EXPECT_EQ(mmuls, 2 * 2 * 5);  // 2 x 2 output tiles of 8 x 8, 5 K tiles each
  EXPECT_EQ(weights, 40 * 16 * 4);
  EXPECT_EQ(lhs % (16 * 40 * 4), 0);
  EXPECT_GE(lhs, 16 * 40 * 4);
  EXPECT_LE(lhs, 2 * 16 * 40 * 4);
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
