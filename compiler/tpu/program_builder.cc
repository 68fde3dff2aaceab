#include "compiler/tpu/program_builder.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/ir/opcode.h"

namespace podsim::tpu {
namespace {

// [A-Za-z_][A-Za-z0-9_.-]*, as the executable's text form requires.
std::string identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z') || out[0] == '_'))
    out = "_" + out;
  return out;
}

}  // namespace

ProgramBuilder::ProgramBuilder(const topology::ChipConfig& chip, int core) {
  exe_.chip = chip;
  program_.core = core;
}

int32_t ProgramBuilder::add_region(std::string_view name, isa::MemorySpace space, int64_t offset, int64_t size) {
  std::string base = identifier(name);
  std::string unique = base;
  for (int n = 1; region_names_.count(unique); ++n) unique = fmt::format("{}.{}", base, n);
  region_names_.insert(unique);
  isa::Region r;
  r.name = unique;
  r.space = space;
  r.core = space == isa::MemorySpace::kVmem ? program_.core : 0;
  r.offset = offset;
  r.size = size;
  exe_.regions.push_back(std::move(r));
  return static_cast<int32_t>(exe_.regions.size() - 1);
}

int32_t ProgramBuilder::descriptor(const isa::DmaDescriptor& d) {
  std::vector<int64_t> key = {d.src_region, d.dst_region, d.element_bytes, static_cast<int64_t>(d.sizes.size())};
  key.insert(key.end(), d.sizes.begin(), d.sizes.end());
  key.insert(key.end(), d.src_strides.begin(), d.src_strides.end());
  key.insert(key.end(), d.dst_strides.begin(), d.dst_strides.end());
  auto [it, inserted] = descriptor_index_.emplace(std::move(key), static_cast<int32_t>(exe_.descriptors.size()));
  if (inserted) exe_.descriptors.push_back(d);
  return it->second;
}

void ProgramBuilder::set_source(const ir::Instruction& origin) {
  auto [it, inserted] = source_index_.emplace(&origin, static_cast<int32_t>(exe_.source_ops.size()));
  if (inserted) {
    isa::SourceOp s;
    s.instruction = origin.name();
    // The framework's op type where the metadata has one, else the HLO opcode.
    s.op_type = origin.metadata().op_type.empty() ? std::string(ir::opcode_name(origin.opcode()))
                                                  : origin.metadata().op_type;
    s.op_name = origin.metadata().op_name;
    s.source_file = origin.metadata().source_file;
    s.source_line = origin.metadata().source_line;
    exe_.source_ops.push_back(std::move(s));
  }
  source_ = it->second;
}

namespace {

// The register to reuse: a free one, else the least recently used; never a held one.
template <typename Valid, typename Held, typename Used>
int pick_victim(const Valid& valid, const Held& held, const Used& used) {
  int victim = -1;
  for (int r = 1; r < isa::kScalarRegisters; ++r) {
    if (held[r]) continue;
    if (victim < 0 || (valid[victim] && (!valid[r] || used[r] < used[victim]))) victim = r;
  }
  if (victim < 0) fail("internal: every scalar register is held");
  return victim;
}

}  // namespace

int ProgramBuilder::sreg(int64_t value) {
  if (value == 0) return 0;
  ++tick_;
  for (int r = 1; r < isa::kScalarRegisters; ++r)
    if (sreg_valid_[r] && sreg_value_[r] == value) {
      sreg_used_[r] = tick_;
      return r;
    }
  int victim = pick_victim(sreg_valid_, sreg_held_, sreg_used_);
  sreg_valid_[victim] = true;
  sreg_value_[victim] = value;
  sreg_used_[victim] = tick_;
  emit(isa::Opcode::kSli, isa::DType::kF32, {victim, value});
  return victim;
}

int ProgramBuilder::hold_sreg() {
  ++tick_;
  int r = pick_victim(sreg_valid_, sreg_held_, sreg_used_);
  sreg_valid_[r] = false;
  sreg_held_[r] = true;
  sreg_used_[r] = tick_;
  return r;
}

void ProgramBuilder::release_sreg(int reg) { sreg_held_[static_cast<size_t>(reg)] = false; }

void ProgramBuilder::begin_block() { sreg_valid_.fill(false); }

void ProgramBuilder::set_branch_target(int64_t branch, int64_t target) {
  isa::Instruction& in = program_.instructions.at(static_cast<size_t>(branch));
  in.operands[in.opcode == isa::Opcode::kBr ? 0 : 1] = target;
}

void ProgramBuilder::emit(isa::Opcode op, isa::DType dtype, std::initializer_list<int64_t> operands) {
  if (operands.size() != isa::signature(op).size())
    fail("internal: {} takes {} operands, not {}", isa::mnemonic(op), isa::signature(op).size(), operands.size());
  isa::Instruction in;
  in.opcode = op;
  in.dtype = dtype;
  size_t k = 0;
  for (int64_t v : operands) in.operands[k++] = v;
  in.source_op = source_;
  program_.instructions.push_back(in);
}

void ProgramBuilder::dma(int32_t descriptor, int64_t src_offset, int64_t dst_offset, int semaphore) {
  int a = sreg(src_offset);
  int b = sreg(dst_offset);
  emit(isa::Opcode::kDma, isa::DType::kF32, {descriptor, a, b, semaphore});
}

void ProgramBuilder::wait(int semaphore, int64_t count) {
  if (count > 0) emit(isa::Opcode::kSemWait, isa::DType::kF32, {semaphore, count});
}

void ProgramBuilder::vld(int vd, int32_t region, int64_t offset, int64_t row_stride, isa::DType t) {
  int a = sreg(offset);
  int b = sreg(row_stride);
  emit(isa::Opcode::kVld, t, {vd, region, a, b});
}

void ProgramBuilder::vst(int32_t region, int64_t offset, int64_t row_stride, int vs, isa::DType t) {
  int a = sreg(offset);
  int b = sreg(row_stride);
  emit(isa::Opcode::kVst, t, {region, a, b, vs});
}

void ProgramBuilder::vimm(int vd, uint32_t bits) { emit(isa::Opcode::kVbcasti, isa::DType::kF32, {vd, bits}); }

void ProgramBuilder::set_core(int core) {
  if (core == program_.core) return;
  if (core < 0 || core >= exe_.chip.tensor_cores)
    fail("internal: core {} does not exist on chip '{}'", core, exe_.chip.name);
  Parked& current = parked_[program_.core];
  current = Parked{std::move(program_), sreg_value_, sreg_valid_, sreg_used_, sreg_held_};
  Parked next;
  next.program.core = core;
  if (auto it = parked_.find(core); it != parked_.end()) {
    next = std::move(it->second);
    parked_.erase(it);
  }
  program_ = std::move(next.program);
  sreg_value_ = next.sreg_value;
  sreg_valid_ = next.sreg_valid;
  sreg_used_ = next.sreg_used;
  sreg_held_ = next.sreg_held;
  if (active_devices_ > 0 && program_.instructions.empty()) emit_device_check();
}

void ProgramBuilder::run_on_devices_below(int64_t devices) {
  if (!program_.instructions.empty()) fail("internal: run_on_devices_below after emission");
  active_devices_ = devices;
  emit_device_check();
}

void ProgramBuilder::emit_device_check() {
  const int r = hold_sreg();
  emit(isa::Opcode::kSdev, isa::DType::kS32, {r, 0});
  emit(isa::Opcode::kSlt, isa::DType::kS32, {r, r, sreg(active_devices_)});
  skip_branch_[program_.core] = pc();
  emit(isa::Opcode::kBz, isa::DType::kF32, {r, 0});
  release_sreg(r);
}

isa::Executable ProgramBuilder::finish() {
  // Programs in core order, the main one (where finish() was called) included.
  std::map<int, isa::Program> programs;
  emit(isa::Opcode::kHalt, isa::DType::kF32, {});
  programs.emplace(program_.core, std::move(program_));
  for (auto& [core, parked] : parked_) {
    parked.program.instructions.push_back(isa::Instruction{isa::Opcode::kHalt, isa::DType::kF32, {}, source_});
    programs.emplace(core, std::move(parked.program));
  }
  for (const auto& [core, branch] : skip_branch_) {  // idle chips: to the halt
    isa::Program& p = programs.at(core);
    p.instructions.at(static_cast<size_t>(branch)).operands[1] = static_cast<int64_t>(p.instructions.size()) - 1;
  }
  for (auto& [core, program] : programs) exe_.programs.push_back(std::move(program));
  return std::move(exe_);
}

}  // namespace podsim::tpu
