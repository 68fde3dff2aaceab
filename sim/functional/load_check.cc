// The load-time checks of the functional model: isa::validate() (which makes every index,
// region and descriptor safe to use unchecked), then what this model adds.
#include <fmt/format.h>

#include "common/error.h"
#include "sim/functional/lanes.h"
#include "sim/functional/model_internal.h"

namespace podsim::sim::detail {
namespace {

using isa::DType;
using isa::Opcode;

bool valid_dtype(int64_t value) { return value >= 0 && value < isa::kDTypeCount; }

std::string region_label(const isa::Executable& e, int32_t r) {
  const isa::Region& region = e.regions[static_cast<size_t>(r)];
  return region.name.empty() ? fmt::format("r{}", r) : region.name;
}

// Which dtypes an opcode accepts; empty string when fine.
std::string dtype_problem(Opcode op, DType t) {
  lanes::Kind k = lanes::kind(t);
  bool arithmetic = k != lanes::Kind::kNone && t != DType::kPred;
  switch (op) {
    case Opcode::kVld:
    case Opcode::kVst:
    case Opcode::kVcmp:
      return k == lanes::Kind::kNone ? "has no 32-bit lane form" : "";
    case Opcode::kVadd:
    case Opcode::kVsub:
    case Opcode::kVmul:
    case Opcode::kVdiv:
    case Opcode::kVmax:
    case Opcode::kVmin:
    case Opcode::kVpow:
    case Opcode::kVneg:
    case Opcode::kVabs:
    case Opcode::kVredl:
    case Opcode::kVreds:
      return arithmetic ? "" : "is not an arithmetic lane type (f32, bf16, f16, s/u 8..32)";
    case Opcode::kVexp:
    case Opcode::kVlog:
    case Opcode::kVsqrt:
    case Opcode::kVrsqrt:
    case Opcode::kVtanh:
    case Opcode::kVlogistic:
    case Opcode::kVfloor:
    case Opcode::kVceil:
    case Opcode::kMldw:
    case Opcode::kMmul:
    case Opcode::kMpop:
      return k == lanes::Kind::kFloat ? "" : "is not a floating-point type (f32, bf16, f16)";
    case Opcode::kVcvt:
      return k == lanes::Kind::kNone ? "has no 32-bit lane form" : "";
    default:
      return "";
  }
}

// Checks one instruction against what this model implements beyond validate(): which
// dtypes an opcode takes, conversions between lane types, and vxpose's register block.
void check_instruction(const isa::Executable& e, const isa::Program& p, size_t pc) {
  const isa::Instruction& in = p.instructions[pc];
  const topology::ChipConfig& chip = e.chip;
  auto bad = [&](const std::string& what) {
    fail("program for core {}, instruction {} ({}): {}", p.core, pc, isa::mnemonic(in.opcode),
         what);
  };
  std::string problem = dtype_problem(in.opcode, in.dtype);
  if (!problem.empty()) bad(fmt::format("dtype {} {}", isa::dtype_name(in.dtype), problem));
  if (in.opcode == Opcode::kVcvt &&
      lanes::kind(static_cast<DType>(in.operands[2])) == lanes::Kind::kNone)
    bad(fmt::format("source dtype {} has no 32-bit lane form",
                    isa::dtype_name(static_cast<DType>(in.operands[2]))));
  if (in.opcode == Opcode::kVxpose) {
    if (chip.vpu_lanes % chip.vpu_sublanes != 0)
      bad(fmt::format("needs lanes ({}) to be a multiple of sublanes ({})", chip.vpu_lanes,
                      chip.vpu_sublanes));
    int64_t n = chip.vpu_lanes / chip.vpu_sublanes;
    for (size_t i = 0; i < 2; ++i)
      if (in.operands[i] + n > chip.vector_registers)
        bad(fmt::format("its {}x{} block needs registers v{}..v{}, but the chip has {}",
                        chip.vpu_lanes, chip.vpu_lanes, in.operands[i], in.operands[i] + n - 1,
                        chip.vector_registers));
  }
}

}  // namespace

void check_executable(const isa::Executable& executable) {
  isa::validate(executable);
  for (const isa::Program& p : executable.programs)
    for (size_t pc = 0; pc < p.instructions.size(); ++pc) check_instruction(executable, p, pc);
}

int64_t binding_bytes(const isa::Binding& binding) {
  int64_t bytes = isa::dtype_bytes(binding.dtype);  // validate() ruled out overflow
  for (int64_t d : binding.dims) bytes *= d;
  return bytes;
}

std::string describe_region(const isa::Executable& e, int32_t r) {
  const isa::Region& region = e.regions[static_cast<size_t>(r)];
  std::string where = region.space == isa::MemorySpace::kHbm
                          ? std::string("HBM")
                          : fmt::format("VMEM of core {}", region.core);
  return fmt::format("region {} ({}, {} bytes at {})", region_label(e, r), where, region.size,
                     region.offset);
}

std::string format_instruction(const isa::Executable& e, const isa::Instruction& in) {
  if (static_cast<int>(in.opcode) >= isa::kIsaOpcodeCount)
    return fmt::format("<opcode {}>", static_cast<int>(in.opcode));
  std::string text(isa::mnemonic(in.opcode));
  isa::Unit unit = isa::unit(in.opcode);
  if ((unit == isa::Unit::kVector || unit == isa::Unit::kMxu || in.dtype != DType::kF32) &&
      valid_dtype(static_cast<int64_t>(in.dtype)))
    text += fmt::format(".{}", isa::dtype_name(in.dtype));
  // The assembler's syntax: a region takes the offset register that follows it.
  std::string_view sig = isa::signature(in.opcode);
  for (size_t i = 0; i < sig.size(); ++i) {
    int64_t v = in.operands[i];
    text += i == 0 ? " " : ", ";
    switch (sig[i]) {
      case 'S':
        text += fmt::format("s{}", v);
        break;
      case 'V':
        text += fmt::format("v{}", v);
        break;
      case 'M':
        text += fmt::format("m{}", v);
        break;
      case 'Q':
        text += fmt::format("q{}", v);
        break;
      case 'D':
        text += fmt::format("d{}", v);
        break;
      case 'L':
        text += fmt::format("{}", v);
        break;
      case 'R':
        text += v >= 0 && static_cast<size_t>(v) < e.regions.size()
                    ? region_label(e, static_cast<int32_t>(v))
                    : fmt::format("r{}", v);
        if (i + 1 < sig.size() && sig[i + 1] == 'S') text += fmt::format("[s{}]", in.operands[++i]);
        break;
      default:
        text += fmt::format("{}", v);
        break;
    }
  }
  return text;
}

}  // namespace podsim::sim::detail
