// Valid executables for the ISA tests, built field by field so that each test can mutate
// one thing and see it rejected (or survive a round trip).
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "isa/isa.h"
#include "topology/chip_config.h"

namespace podsim::isa::testing {

inline Instruction make(Opcode op, DType t, std::vector<int64_t> operands, int32_t source_op = -1) {
  Instruction in;
  in.opcode = op;
  in.dtype = t;
  for (size_t k = 0; k < operands.size(); ++k) in.operands[k] = operands[k];
  in.source_op = source_op;
  return in;
}

// On the tiny chip (1 core, 16 vector registers, 1 MXU, 1 MiB VMEM, 256 MiB HBM): copy x
// from HBM to VMEM, add it to itself in a counted loop, store and copy back.
//   regions: 0 x_hbm, 1 y_hbm, 2 x (VMEM), 3 y (VMEM), 4 w (VMEM, a constant)
inline Executable small_executable() {
  Executable e;
  e.compiler_version = "test 1.0";
  e.chip = topology::preset("tiny");
  e.regions = {{"x_hbm", MemorySpace::kHbm, 0, 0, 256},
               {"y_hbm", MemorySpace::kHbm, 0, 4096, 256},
               {"x", MemorySpace::kVmem, 0, 0, 256},
               {"y", MemorySpace::kVmem, 0, 256, 256},
               {"w", MemorySpace::kVmem, 0, 512, 16}};
  e.descriptors = {{0, 2, 4, {8, 8}, {32, 4}, {32, 4}}, {3, 1, 4, {64}, {4}, {4}}};
  e.constants = {{4, {0x00, 0x01, 0x7f, 0x80, 0xff, 0x10}}};
  e.parameters = {{"x", 0, DType::kF32, {8, 8}}};
  e.outputs = {{"y", 1, DType::kF32, {8, 8}}};
  e.source_ops = {{"add.3", "add", "jit(f)/add", "model.py", 12}, {"copy.1", "copy", "", "", 0}};
  Program p;
  p.core = 0;
  p.instructions = {
      make(Opcode::kSli, DType::kF32, {1, 0}),
      make(Opcode::kSli, DType::kF32, {2, 32}),
      make(Opcode::kSli, DType::kF32, {3, 3}),
      make(Opcode::kDma, DType::kF32, {0, 1, 1, 0}, 1),
      make(Opcode::kSemWait, DType::kF32, {0, 1}, 1),
      make(Opcode::kVld, DType::kF32, {0, 2, 1, 2}),  // 5: loop
      make(Opcode::kVadd, DType::kF32, {0, 0, 0}, 0),
      make(Opcode::kVst, DType::kF32, {3, 1, 2, 0}),
      make(Opcode::kSaddi, DType::kF32, {3, 3, -1}),
      make(Opcode::kBnz, DType::kF32, {3, 5}),
      make(Opcode::kDma, DType::kF32, {1, 1, 1, 1}, 1),
      make(Opcode::kSemWait, DType::kF32, {1, 1}),
      make(Opcode::kHalt, DType::kF32, {}),
  };
  e.programs = {p};
  return e;
}

// Every opcode of the table once, in order, on a pod of two-core chips, then halt; operands are
// chosen from each opcode's signature, so a new opcode is covered without a change here.
// Immediates take the first of a few candidates that validate (some opcodes restrict
// theirs to a small set of values). Data types cycle through all of them.
inline Executable every_opcode_executable() {
  Executable e;
  e.compiler_version = "every opcode";
  e.pod = topology::pod_config("v4:2x2x1");  // dma.remote needs a pod
  e.chip = e.pod->chip;
  e.replicas = 4;
  e.regions = {{"hbm_a", MemorySpace::kHbm, 0, 1 << 20, 1 << 16},
               {"vmem_a", MemorySpace::kVmem, 0, 0, 1 << 16},
               {"vmem_b", MemorySpace::kVmem, 1, 4096, 1 << 12}};
  e.descriptors = {{0, 1, 2, {16, 4}, {8, 2}, {16, 2}}};
  e.source_ops = {{"dot.1", "dot", "jit(f)/dot", "f.py", 3}};
  Program p;
  p.core = 0;
  for (int i = 0; i < kIsaOpcodeCount; ++i) {
    auto op = static_cast<Opcode>(i);
    std::string_view sig = signature(op);
    Instruction in = make(op, static_cast<DType>(i % kDTypeCount), {}, i % 3 == 0 ? 0 : -1);
    std::vector<size_t> immediates;
    for (size_t k = 0; k < sig.size(); ++k) {
      switch (sig[k]) {
        case 'S':
          in.operands[k] = 31 - static_cast<int64_t>(k);
          break;
        case 'V':
          in.operands[k] = e.chip.vector_registers - 1 - static_cast<int64_t>(k);
          break;
        case 'M':
          in.operands[k] = 3;
          break;
        case 'Q':
          in.operands[k] = 31;
          break;
        case 'D':
          in.operands[k] = 0;
          break;
        case 'R':
          in.operands[k] = 1;
          break;
        case 'L':
          in.operands[k] = i;
          break;
        case 'I':
          immediates.push_back(k);
          break;
      }
    }
    p.instructions.push_back(in);
    for (size_t k : immediates) {
      for (int64_t candidate : {int64_t{-1234567890123}, int64_t{5}, int64_t{1}, int64_t{0}}) {
        p.instructions.back().operands[k] = candidate;
        Executable probe = e;
        probe.programs = {p};
        probe.programs[0].instructions.push_back(make(Opcode::kHalt, DType::kF32, {}));
        try {
          validate(probe);
          break;
        } catch (const Error&) {
        }
      }
    }
  }
  p.instructions.push_back(make(Opcode::kHalt, DType::kF32, {}));
  Program second;
  second.core = 1;
  second.instructions = {make(Opcode::kBarrier, DType::kF32, {}),
                         make(Opcode::kHalt, DType::kF32, {})};
  e.programs = {p, second};
  return e;
}

// A chip that is no preset (so the text form spells out its fields), with a name and a
// description holding bytes that need quoting.
inline Executable custom_chip_executable() {
  Executable e;
  e.chip = topology::preset("tiny");
  e.chip.name = "my \"chip\"\n\x01\xff";
  e.chip.description = "tiny with 4 MiB VMEM, clock 1.234567890123 GHz";
  e.chip.vmem_bytes = 4 << 20;
  e.chip.clock_hz = 1.234567890123e9;
  e.chip.hbm_latency_ns = 0.1;
  e.regions = {{"a.b-c_d", MemorySpace::kVmem, 0, 0, 4 << 20}};
  e.parameters = {{"weird name\t\"x\"", 0, DType::kBF16, {}}};
  e.outputs = {{"out.0", 0, DType::kS8, {0, 5}}};
  e.constants = {{0, {}}, {0, std::vector<uint8_t>(100, 0xab)}};
  e.source_ops = {{"", "", "", "", -5}};
  Program p;
  p.core = 0;
  p.instructions = {make(Opcode::kBr, DType::kF32, {1}), make(Opcode::kBr, DType::kF32, {0}, 0)};
  e.programs = {p};
  return e;
}

}  // namespace podsim::isa::testing
