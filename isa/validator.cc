// validate(): the static checks that make an executable safe to run. Whatever passes
// here cannot touch memory outside the chip's HBM and VMEM through a region or a
// descriptor, name a register or unit the chip lacks, or run off the end of a program;
// what remains (offsets held in scalar registers, division by zero) is checked by the
// simulator at run time.
#include <fmt/format.h>

#include <unordered_map>

#include "common/error.h"
#include "isa/isa.h"
#include "isa/validator_internal.h"

namespace podsim::isa::detail {
namespace {

using topology::ChipConfig;

std::optional<Issue> issue(Part part, size_t index, std::string message, size_t instruction = 0) {
  return Issue{part, index, instruction, std::move(message)};
}

// Bytes covered by `count` elements of `element_bytes`; nullopt on int64 overflow.
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::string region_label(const Executable& e, int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= e.regions.size())
    return fmt::format("region {}", index);
  return fmt::format("region {} ('{}')", index, e.regions[index].name);
}

std::optional<Issue> check_chip(const Executable& e) {
  if (e.chip.name.empty()) return issue(Part::kChip, 0, "the target chip has no name");
  try {
    e.chip.validate();
  } catch (const Error& err) {
    return issue(Part::kChip, 0, fmt::format("the target {}", err.what()));
  }
  return std::nullopt;
}

std::optional<Issue> check_pod(const Executable& e) {
  if (e.replicas < 1 || e.partitions < 1)
    return issue(Part::kPod, 0,
                 fmt::format("replicas ({}) and partitions ({}) must be at least 1", e.replicas,
                             e.partitions));
  const int64_t chips = e.pod ? e.pod->chips() : 1;
  if (int64_t{e.replicas} * e.partitions > chips || (!e.pod && e.replicas * e.partitions != 1))
    return issue(Part::kPod, 0,
                 fmt::format("{} replicas x {} partitions must fit on the {} chip(s) of {}",
                             e.replicas, e.partitions, chips,
                             e.pod ? fmt::format("pod '{}'", e.pod->name) : "a single chip"));
  if (!e.pod) return std::nullopt;
  try {
    e.pod->validate();
  } catch (const Error& err) {
    return issue(Part::kPod, 0, fmt::format("the pod: {}", err.what()));
  }
  if (e.pod->chip != e.chip)
    return issue(Part::kPod, 0,
                 fmt::format("the pod's chip ('{}') is not the executable's chip ('{}')",
                             e.pod->chip.name, e.chip.name));
  return std::nullopt;
}

std::optional<Issue> check_region(const Executable& e, size_t i,
                                  std::unordered_map<std::string, size_t>& names) {
  const Region& r = e.regions[i];
  if (!is_identifier(r.name))
    return issue(Part::kRegion, i,
                 "the name is not an identifier (letters, digits, '_', '.', '-'; starting with a "
                 "letter or '_')");
  auto [it, inserted] = names.emplace(r.name, i);
  if (!inserted)
    return issue(Part::kRegion, i, fmt::format("the name is also region {}'s", it->second));
  if (r.offset < 0) return issue(Part::kRegion, i, fmt::format("negative offset {}", r.offset));
  if (r.size < 0) return issue(Part::kRegion, i, fmt::format("negative size {}", r.size));
  int64_t capacity = 0;
  std::string memory;
  switch (r.space) {
    case MemorySpace::kHbm:
      if (r.core != 0)
        return issue(
            Part::kRegion, i,
            fmt::format("an HBM region must have core 0, not {} (HBM is per chip)", r.core));
      capacity = e.chip.hbm_bytes;
      memory = "HBM";
      break;
    case MemorySpace::kVmem:
      if (r.core < 0 || r.core >= e.chip.tensor_cores)
        return issue(Part::kRegion, i,
                     fmt::format("VMEM of core {}, but chip '{}' has {} TensorCore(s)", r.core,
                                 e.chip.name, e.chip.tensor_cores));
      capacity = e.chip.vmem_bytes;
      memory = fmt::format("VMEM of core {}", r.core);
      break;
    default:
      return issue(Part::kRegion, i,
                   fmt::format("unknown memory space {}", static_cast<int>(r.space)));
  }
  if (r.size > capacity || r.offset > capacity - r.size)
    return issue(Part::kRegion, i,
                 fmt::format("bytes [{}, {}+{}) lie outside the {} of chip '{}' ({} bytes)",
                             r.offset, r.offset, r.size, memory, e.chip.name, capacity));
  return std::nullopt;
}

// The bytes a descriptor's access pattern spans from its start: the farthest element's
// offset plus one element.
std::optional<int64_t> descriptor_extent(const DmaDescriptor& d,
                                         const std::vector<int64_t>& strides) {
  int64_t extent = d.element_bytes;
  for (size_t k = 0; k < d.sizes.size(); ++k) {
    auto step = checked_mul(d.sizes[k] - 1, strides[k]);
    if (!step) return std::nullopt;
    auto sum = checked_add(extent, *step);
    if (!sum) return std::nullopt;
    extent = *sum;
  }
  return extent;
}

std::optional<Issue> check_descriptor(const Executable& e, size_t i) {
  const DmaDescriptor& d = e.descriptors[i];
  for (int32_t r : {d.src_region, d.dst_region})
    if (r < 0 || static_cast<size_t>(r) >= e.regions.size())
      return issue(Part::kDescriptor, i,
                   fmt::format("region index {} is out of range (the executable has {})", r,
                               e.regions.size()));
  if (d.element_bytes < 1)
    return issue(Part::kDescriptor, i,
                 fmt::format("element size {} bytes is not positive", d.element_bytes));
  if (d.sizes.size() > static_cast<size_t>(kMaxDmaDims))
    return issue(Part::kDescriptor, i,
                 fmt::format("{} dimensions (at most {})", d.sizes.size(), kMaxDmaDims));
  if (d.src_strides.size() != d.sizes.size() || d.dst_strides.size() != d.sizes.size())
    return issue(Part::kDescriptor, i,
                 fmt::format("{} sizes but {} source and {} destination strides", d.sizes.size(),
                             d.src_strides.size(), d.dst_strides.size()));
  for (size_t k = 0; k < d.sizes.size(); ++k) {
    if (d.sizes[k] < 1)
      return issue(Part::kDescriptor, i,
                   fmt::format("size {} of dimension {} is not positive", d.sizes[k], k));
    if (d.src_strides[k] < 0 || d.dst_strides[k] < 0)
      return issue(Part::kDescriptor, i,
                   fmt::format("negative stride in dimension {} (strides must be >= 0)", k));
  }
  struct Side {
    const char* name;
    int32_t region;
    const std::vector<int64_t>& strides;
  };
  for (const Side& side : {Side{"source", d.src_region, d.src_strides},
                           Side{"destination", d.dst_region, d.dst_strides}}) {
    auto extent = descriptor_extent(d, side.strides);
    if (!extent)
      return issue(Part::kDescriptor, i, fmt::format("the {} extent overflows 64 bits", side.name));
    if (*extent > e.regions[side.region].size)
      return issue(Part::kDescriptor, i,
                   fmt::format("the {} extent of {} bytes exceeds {} of {} bytes", side.name,
                               *extent, region_label(e, side.region), e.regions[side.region].size));
  }
  return std::nullopt;
}

std::optional<Issue> check_bytes_fit(const Executable& e, Part part, size_t i, int32_t region,
                                     int64_t bytes, std::string_view what) {
  if (region < 0 || static_cast<size_t>(region) >= e.regions.size())
    return issue(part, i,
                 fmt::format("region index {} is out of range (the executable has {})", region,
                             e.regions.size()));
  if (bytes > e.regions[region].size)
    return issue(part, i,
                 fmt::format("{} of {} bytes do not fit {} of {} bytes", what, bytes,
                             region_label(e, region), e.regions[region].size));
  return std::nullopt;
}

std::optional<Issue> check_binding(const Executable& e, Part part, size_t i, const Binding& b) {
  if (static_cast<int>(b.dtype) >= kDTypeCount)
    return issue(part, i, fmt::format("unknown data type {}", static_cast<int>(b.dtype)));
  int64_t bytes = dtype_bytes(b.dtype);
  for (int64_t d : b.dims) {
    if (d < 0) return issue(part, i, fmt::format("negative dimension {}", d));
    auto product = checked_mul(bytes, d);
    if (!product)
      return issue(part, i,
                   fmt::format("the size of dims [{}] overflows 64 bits", fmt::join(b.dims, ", ")));
    bytes = *product;
  }
  return check_bytes_fit(e, part, i, b.region, bytes,
                         fmt::format("{}[{}]", dtype_name(b.dtype), fmt::join(b.dims, ", ")));
}

// Immediates that select among a fixed set of behaviours; nullopt when any value goes.
struct ImmediateRange {
  int64_t min, max;
  const char* meaning;
};
std::optional<ImmediateRange> immediate_range(Opcode op) {
  switch (op) {
    case Opcode::kViota:
      return ImmediateRange{0, 2, "iota mode (0 linear, 1 lane, 2 sublane)"};
    case Opcode::kVcmp:
      return ImmediateRange{0, 5, "comparison (0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE)"};
    case Opcode::kVredl:
    case Opcode::kVreds:
      return ImmediateRange{0, 2, "reduction (0 add, 1 max, 2 min)"};
    case Opcode::kVcvt:
      return ImmediateRange{0, kDTypeCount - 1, "source data type"};
    case Opcode::kMmul:
      return ImmediateRange{0, 1, "accumulate flag (0 overwrite, 1 accumulate)"};
    case Opcode::kSdev:
      return ImmediateRange{0, 5, "sdev selector (0 id, 1 x, 2 y, 3 z, 4 slice, 5 chips)"};
    case Opcode::kSemWait:
    case Opcode::kSemSignal:
      return ImmediateRange{0, INT64_MAX, "semaphore count"};
    default:
      return std::nullopt;
  }
}

// Scalar, vector and matrix units reach only their own core's VMEM; HBM and other cores'
// memories are reached by DMA.
std::string check_memory_operand(const Executable& e, const Program& p, int64_t region) {
  const Region& r = e.regions[region];
  if (r.space == MemorySpace::kVmem && r.core == p.core) return "";
  return fmt::format(
      "{} is in {}; loads and stores reach only the core's own VMEM (move data with dma)",
      region_label(e, region),
      r.space == MemorySpace::kHbm ? "HBM" : fmt::format("core {}'s VMEM", r.core));
}

std::string check_operand(const Executable& e, const Program& p, const Instruction& in, size_t k) {
  const ChipConfig& chip = e.chip;
  int64_t v = in.operands[k];
  auto in_range = [&](int64_t limit) { return v >= 0 && v < limit; };
  switch (signature(in.opcode)[k]) {
    case 'S':
      if (!in_range(kScalarRegisters))
        return fmt::format("scalar register s{} does not exist (s0..s{})", v, kScalarRegisters - 1);
      return "";
    case 'V':
      if (!in_range(chip.vector_registers))
        return fmt::format("vector register v{} does not exist (chip '{}' has v0..v{})", v,
                           chip.name, chip.vector_registers - 1);
      return "";
    case 'M':
      if (!in_range(chip.mxus_per_core))
        return fmt::format("MXU m{} does not exist (chip '{}' has m0..m{})", v, chip.name,
                           chip.mxus_per_core - 1);
      return "";
    case 'Q':
      if (!in_range(kSemaphores))
        return fmt::format("semaphore q{} does not exist (q0..q{})", v, kSemaphores - 1);
      return "";
    case 'D':
      if (!in_range(static_cast<int64_t>(e.descriptors.size())))
        return fmt::format("descriptor d{} does not exist (the executable has {})", v,
                           e.descriptors.size());
      return "";
    case 'R':
      if (!in_range(static_cast<int64_t>(e.regions.size())))
        return fmt::format("region index {} is out of range (the executable has {})", v,
                           e.regions.size());
      return check_memory_operand(e, p, v);
    case 'L':
      if (!in_range(static_cast<int64_t>(p.instructions.size())))
        return fmt::format("branch target {} is outside the program (instructions 0..{})", v,
                           static_cast<int64_t>(p.instructions.size()) - 1);
      return "";
    case 'I':
      if (auto range = immediate_range(in.opcode);
          range && (v < range->min || v > range->max))
        return fmt::format("immediate {} is not a valid {} (allowed {}..{})", v, range->meaning,
                           range->min, range->max);
      return "";
  }
  return fmt::format("operand kind '{}' is unknown", signature(in.opcode)[k]);
}

std::string check_instruction(const Executable& e, const Program& p, const Instruction& in) {
  if (static_cast<int>(in.opcode) >= kIsaOpcodeCount)
    return fmt::format("unknown opcode {}", static_cast<int>(in.opcode));
  if (static_cast<int>(in.dtype) >= kDTypeCount)
    return fmt::format("unknown data type {}", static_cast<int>(in.dtype));
  std::string_view sig = signature(in.opcode);
  for (size_t k = 0; k < static_cast<size_t>(kMaxOperands); ++k) {
    if (k >= sig.size()) {
      if (in.operands[k] != 0)
        return fmt::format("operand {} is unused by {} and must be 0, not {}", k,
                           mnemonic(in.opcode), in.operands[k]);
      continue;
    }
    if (std::string problem = check_operand(e, p, in, k); !problem.empty()) return problem;
  }
  if (in.opcode == Opcode::kDmaRemote && !e.pod)
    return "dma.remote needs a pod: this executable is for one chip (declare its .pod)";
  if (in.source_op < -1 || in.source_op >= static_cast<int64_t>(e.source_ops.size()))
    return fmt::format("source op {} is out of range (the executable has {}; -1 for none)",
                       in.source_op, e.source_ops.size());
  return "";
}

std::optional<Issue> check_program(const Executable& e, size_t i,
                                   std::unordered_map<int32_t, size_t>& cores) {
  const Program& p = e.programs[i];
  if (p.core < 0 || p.core >= e.chip.tensor_cores)
    return issue(Part::kProgram, i,
                 fmt::format("chip '{}' has {} TensorCore(s), so no core {}", e.chip.name,
                             e.chip.tensor_cores, p.core));
  auto [it, inserted] = cores.emplace(p.core, i);
  if (!inserted)
    return issue(Part::kProgram, i,
                 fmt::format("program {} is also for core {}", it->second, p.core));
  for (size_t n = 0; n < p.instructions.size(); ++n)
    if (std::string problem = check_instruction(e, p, p.instructions[n]); !problem.empty())
      return issue(Part::kInstruction, i, problem, n);
  if (p.instructions.empty())
    return issue(Part::kProgram, i, "no instructions (a program ends with halt)");
  Opcode last = p.instructions.back().opcode;
  if (last != Opcode::kHalt && last != Opcode::kBr)
    return issue(
        Part::kInstruction, i,
        fmt::format("the program can run off its end: its last instruction is {}, not halt or br",
                    mnemonic(last)),
        p.instructions.size() - 1);
  return std::nullopt;
}

}  // namespace

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(name[0])) return false;
  for (char c : name)
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '.' && c != '-') return false;
  return true;
}

std::optional<Issue> find_issue(const Executable& e) {
  if (e.format_version != kFormatVersion)
    return issue(Part::kExecutable, 0,
                 fmt::format("format version {} is not {}, the version this podsim reads",
                             e.format_version, kFormatVersion));
  if (auto found = check_chip(e)) return found;
  if (auto found = check_pod(e)) return found;
  std::unordered_map<std::string, size_t> names;
  for (size_t i = 0; i < e.regions.size(); ++i)
    if (auto found = check_region(e, i, names)) return found;
  for (size_t i = 0; i < e.descriptors.size(); ++i)
    if (auto found = check_descriptor(e, i)) return found;
  for (size_t i = 0; i < e.constants.size(); ++i)
    if (auto found = check_bytes_fit(e, Part::kConstant, i, e.constants[i].region,
                                     static_cast<int64_t>(e.constants[i].data.size()), "data"))
      return found;
  for (size_t i = 0; i < e.parameters.size(); ++i)
    if (auto found = check_binding(e, Part::kParameter, i, e.parameters[i])) return found;
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (auto found = check_binding(e, Part::kOutput, i, e.outputs[i])) return found;
  std::unordered_map<int32_t, size_t> cores;
  for (size_t i = 0; i < e.programs.size(); ++i)
    if (auto found = check_program(e, i, cores)) return found;
  return std::nullopt;
}

std::string describe(const Executable& e, const Issue& issue) {
  switch (issue.part) {
    case Part::kExecutable:
    case Part::kChip:
    case Part::kPod:
      return issue.message;
    case Part::kRegion:
      return fmt::format("{}: {}", region_label(e, static_cast<int64_t>(issue.index)),
                         issue.message);
    case Part::kDescriptor:
      return fmt::format("descriptor d{}: {}", issue.index, issue.message);
    case Part::kConstant:
      return fmt::format("constant {}: {}", issue.index, issue.message);
    case Part::kParameter:
      return fmt::format("parameter {} ('{}'): {}", issue.index, e.parameters[issue.index].name,
                         issue.message);
    case Part::kOutput:
      return fmt::format("output {} ('{}'): {}", issue.index, e.outputs[issue.index].name,
                         issue.message);
    case Part::kProgram:
    case Part::kInstruction:
      break;
  }
  const Program& p = e.programs[issue.index];
  std::string where = fmt::format("program {} (core {})", issue.index, p.core);
  if (issue.part == Part::kInstruction) {
    Opcode op = p.instructions[issue.instruction].opcode;
    where +=
        static_cast<int>(op) < kIsaOpcodeCount
            ? fmt::format(", instruction {} ({})", issue.instruction, mnemonic(op))
            : fmt::format(", instruction {} (opcode {})", issue.instruction, static_cast<int>(op));
  }
  return fmt::format("{}: {}", where, issue.message);
}

}  // namespace podsim::isa::detail

namespace podsim::isa {

void validate(const Executable& executable) {
  if (auto issue = detail::find_issue(executable)) fail("{}", detail::describe(executable, *issue));
}

}  // namespace podsim::isa
