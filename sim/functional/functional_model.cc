// Loading, host transfers, access checks, and the per-instruction dispatch with the
// scalar, control and synchronisation instructions. Vector, MXU and DMA instructions
// live in vector_ops.cc, mxu.cc and dma.cc.
#include "sim/functional/functional_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "sim/functional/model_internal.h"

namespace podsim::sim {

using isa::Opcode;

FunctionalModel::FunctionalModel(isa::Executable executable)
    : FunctionalModel(std::make_shared<const isa::Executable>(std::move(executable)), {}, {}) {}

FunctionalModel::FunctionalModel(std::shared_ptr<const isa::Executable> executable,
                                 ChipPlace place, std::span<FunctionalModel> peers)
    : executable_((detail::check_executable(*executable), std::move(executable))),
      place_(place),
      peers_(peers),
      state_(executable_->chip) {
  code_.resize(state_.cores().size());
  for (const isa::Program& p : executable_->programs) {
    code_[static_cast<size_t>(p.core)] = {p.instructions.data(),
                                          static_cast<int32_t>(p.instructions.size())};
    state_.core(p.core).has_program = true;
    ++state_.barrier_participants;
  }
  always_copied_.assign(executable_->regions.size(), false);
  for (const isa::Constant& c : executable_->constants) {
    write_region(c.region, 0, c.data);
    always_copied_[static_cast<size_t>(c.region)] = true;
  }
  for (size_t r = 0; r < executable_->regions.size(); ++r)
    if (executable_->regions[r].name == isa::kFlagsRegion) always_copied_[r] = true;
  const topology::ChipConfig& chip = executable_->chip;
  int64_t widest_row = std::max({chip.vpu_lanes, chip.mxu_rows, chip.mxu_cols});
  row_buffer_.resize(static_cast<size_t>(widest_row * 4));
  lhs_row_.resize(static_cast<size_t>(chip.mxu_rows));
  lane_buffer_.resize(static_cast<size_t>(std::max<int64_t>(
      int64_t{chip.vpu_lanes} * chip.vpu_lanes, int64_t{chip.mxu_rows} * chip.mxu_cols)));
}

void FunctionalModel::set_parameter(int index, std::span<const uint8_t> bytes) {
  if (index < 0 || static_cast<size_t>(index) >= executable_->parameters.size())
    fail("set_parameter: parameter {} does not exist (the executable has {})", index,
         executable_->parameters.size());
  const isa::Binding& b = executable_->parameters[static_cast<size_t>(index)];
  int64_t expected = detail::binding_bytes(b);
  if (static_cast<int64_t>(bytes.size()) != expected)
    fail("set_parameter: parameter {} ('{}', {}[{}]) takes {} bytes, got {}", index, b.name,
         isa::dtype_name(b.dtype), fmt::join(b.dims, ","), expected, bytes.size());
  if (compute_data_) write_region(b.region, 0, bytes);
}

std::vector<uint8_t> FunctionalModel::read_output(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= executable_->outputs.size())
    fail("read_output: output {} does not exist (the executable has {})", index,
         executable_->outputs.size());
  const isa::Binding& b = executable_->outputs[static_cast<size_t>(index)];
  return read_region(b.region, 0, detail::binding_bytes(b));
}

std::vector<uint8_t> FunctionalModel::read_region(int region, int64_t offset, int64_t bytes) const {
  if (region < 0 || static_cast<size_t>(region) >= executable_->regions.size())
    fail("read_region: region {} does not exist", region);
  const isa::Region& r = executable_->regions[static_cast<size_t>(region)];
  if (offset < 0 || bytes < 0 || offset > r.size || bytes > r.size - offset)
    fail("read_region: bytes [{}, +{}) are outside {}", offset, bytes,
         detail::describe_region(*executable_, region));
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  const SparseMemory& memory =
      r.space == isa::MemorySpace::kHbm ? state_.hbm() : state_.core(r.core).vmem;
  memory.read(r.offset + offset, out.data(), bytes);
  return out;
}

void FunctionalModel::write_region(int region, int64_t offset, std::span<const uint8_t> bytes) {
  if (region < 0 || static_cast<size_t>(region) >= executable_->regions.size())
    fail("write_region: region {} does not exist", region);
  const isa::Region& r = executable_->regions[static_cast<size_t>(region)];
  auto n = static_cast<int64_t>(bytes.size());
  if (offset < 0 || offset > r.size || n > r.size - offset)
    fail("write_region: bytes [{}, +{}) are outside {}", offset, n,
         detail::describe_region(*executable_, region));
  state_.memory(r.space, r.core).write(r.offset + offset, bytes.data(), n);
}

bool FunctionalModel::is_live(int core) const {
  const CoreState& c = state_.core(core);
  return c.has_program && !c.halted;
}

bool FunctionalModel::all_halted() const {
  for (int i = 0; i < core_count(); ++i)
    if (is_live(i)) return false;
  return true;
}

void FunctionalModel::fail_at(int core, const isa::Instruction& in,
                              const std::string& message) const {
  fail("core {}, pc {} ({}): {}", core, state_.core(core).pc,
       detail::format_instruction(*executable_, in), message);
}

MemoryRange FunctionalModel::resolve(int core, const isa::Instruction& in, int32_t region,
                                     int64_t offset, std::span<const int64_t> sizes,
                                     std::span<const int64_t> strides, int64_t element_bytes,
                                     const char* role) const {
  const isa::Region& r = executable_->regions[static_cast<size_t>(region)];
  __int128 lo = offset, hi = offset;
  for (size_t k = 0; k < sizes.size(); ++k) {
    __int128 reach = static_cast<__int128>(sizes[k] - 1) * strides[k];
    if (reach < 0)
      lo += reach;
    else
      hi += reach;
  }
  hi += element_bytes;
  if (lo < 0 || hi > r.size)
    fail_at(core, in,
            fmt::format("{} bytes [{}, {}) relative to {}, outside it", role, lo, hi,
                        detail::describe_region(*executable_, region)));
  return {r.space, r.core, r.offset + static_cast<int64_t>(lo),
          r.offset + static_cast<int64_t>(hi)};
}

Effect FunctionalModel::step(int core) {
  Effect effect;
  step(core, effect);
  return effect;
}

void FunctionalModel::step(int core, Effect& e) {
  if (core < 0 || core >= core_count())
    fail("step: core {} does not exist (the chip has {})", core, core_count());
  CoreState& c = state_.core(core);
  const Code& code = code_[static_cast<size_t>(core)];
  if (!c.has_program) fail("step: core {} has no program", core);
  if (c.halted) fail("step: core {} has halted", core);
  if (c.pc >= code.size)
    fail("core {} ran past the end of its program ({} instructions) without halt", core, code.size);
  const isa::Instruction& in = code.instructions[c.pc];
  e.core = core;
  e.pc = c.pc;
  e.instruction = &in;
  e.unit = isa::unit(in.opcode);
  e.blocked = e.halted = e.has_read = e.has_write = e.has_dma = false;
  e.rows = 0;

  const auto& o = in.operands;
  int64_t* s = c.scalar.data();
  int32_t next = c.pc + 1;
  auto set = [s](int64_t reg, int64_t value) { s[reg] = value; };
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  auto u = [s](int64_t reg) { return static_cast<uint64_t>(s[reg]); };

  switch (in.opcode) {
    case Opcode::kSli:
      set(o[0], o[1]);
      break;
    case Opcode::kSadd:
      set(o[0], wrap(u(o[1]) + u(o[2])));
      break;
    case Opcode::kSaddi:
      set(o[0], wrap(u(o[1]) + static_cast<uint64_t>(o[2])));
      break;
    case Opcode::kSsub:
      set(o[0], wrap(u(o[1]) - u(o[2])));
      break;
    case Opcode::kSmul:
      set(o[0], wrap(u(o[1]) * u(o[2])));
      break;
    case Opcode::kSmuli:
      set(o[0], wrap(u(o[1]) * static_cast<uint64_t>(o[2])));
      break;
    case Opcode::kSdiv:
    case Opcode::kSrem: {
      int64_t a = s[o[1]], b = s[o[2]];
      if (b == 0) fail_at(core, in, fmt::format("division by zero (s{} is 0)", o[2]));
      bool overflow = a == INT64_MIN && b == -1;  // wraps, as the vector unit's s32 does
      if (in.opcode == Opcode::kSdiv)
        set(o[0], overflow ? a : a / b);
      else
        set(o[0], overflow ? 0 : a % b);
      break;
    }
    case Opcode::kSmin:
      set(o[0], std::min(s[o[1]], s[o[2]]));
      break;
    case Opcode::kSmax:
      set(o[0], std::max(s[o[1]], s[o[2]]));
      break;
    case Opcode::kSlt:
      set(o[0], s[o[1]] < s[o[2]]);
      break;
    case Opcode::kSeq:
      set(o[0], s[o[1]] == s[o[2]]);
      break;
    case Opcode::kSld: {
      std::array<int64_t, 1> one{1}, zero{0};
      e.read = resolve(core, in, static_cast<int32_t>(o[1]), s[o[2]], one, zero, 8, "loads");
      e.has_read = true;
      int64_t value;
      state_.memory(e.read.space, e.read.core).read(e.read.begin, &value, 8);
      set(o[0], value);
      break;
    }
    case Opcode::kSst: {
      std::array<int64_t, 1> one{1}, zero{0};
      e.write = resolve(core, in, static_cast<int32_t>(o[0]), s[o[1]], one, zero, 8, "stores");
      e.has_write = true;
      state_.memory(e.write.space, e.write.core).write(e.write.begin, &s[o[2]], 8);
      break;
    }
    case Opcode::kSdev: {
      const std::array<int64_t, 6> where{place_.device, place_.xyz[0], place_.xyz[1],
                                         place_.xyz[2], place_.slice,  place_.chips};
      set(o[0], where[static_cast<size_t>(o[1])]);
      break;
    }
    case Opcode::kBr:
      next = static_cast<int32_t>(o[0]);
      break;
    case Opcode::kBnz:
      if (s[o[0]] != 0) next = static_cast<int32_t>(o[1]);
      break;
    case Opcode::kBz:
      if (s[o[0]] == 0) next = static_cast<int32_t>(o[1]);
      break;
    case Opcode::kHalt:
      next = c.pc;
      c.halted = true;
      e.halted = true;
      break;
    case Opcode::kMldw:
    case Opcode::kMmul:
    case Opcode::kMpop:
      execute_mxu(core, in, e);
      break;
    case Opcode::kDma:
    case Opcode::kDmaRemote:
      issue_dma(core, in, e);
      break;
    case Opcode::kSemWait: {
      int64_t& sem = c.semaphores[static_cast<size_t>(o[0])];
      if (sem >= o[1])
        sem -= o[1];
      else
        e.blocked = true;
      break;
    }
    case Opcode::kSemSignal: {
      int64_t& sem = c.semaphores[static_cast<size_t>(o[0])];
      if (__builtin_add_overflow(sem, o[1], &sem))
        fail_at(core, in, fmt::format("semaphore q{} overflows", o[0]));
      break;
    }
    case Opcode::kBarrier:
      if (!c.at_barrier) {
        c.at_barrier = true;
        c.barrier_generation = state_.barrier_generation;
        if (++state_.barrier_arrived == state_.barrier_participants) {
          ++state_.barrier_generation;
          state_.barrier_arrived = 0;
        }
      }
      if (state_.barrier_generation == c.barrier_generation)
        e.blocked = true;
      else
        c.at_barrier = false;
      break;
    default:
      execute_vector(core, in, e);
      break;
  }
  s[0] = 0;
  if (e.blocked) next = c.pc;
  e.next_pc = next;
  c.pc = next;
}

}  // namespace podsim::sim
