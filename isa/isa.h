// The TensorCore ISA and the in-memory form of an executable: the only contract between
// the compiler (compiler/tpu) and the simulator (sim/). Work is expressed at tile
// granularity — a vector register of sublanes x lanes, an MXU pass, a DMA burst — with
// explicit asynchrony: DMAs run in the background and complete on semaphores.
//
// Machine state per TensorCore: 32 scalar registers (64-bit; s0 is zero), the chip's
// vector registers (sublanes x lanes 32-bit lanes each), mxus_per_core MXUs (weights
// and an f32 accumulator each), 64 semaphores, and VMEM; per chip: HBM. Programs
// address memory through regions (space + base + size) declared in the executable.
//
// Pods: an executable compiled for a pod records it; every chip of the pod runs the same
// programs (SPMD) on its own memories, reads where it is with sdev, and reaches other
// chips' memories with dma.remote, which names the destination chip by device id
// (topology/torus.h has the device order) and a region of the same region table.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/chip_config.h"
#include "topology/pod_config.h"

namespace podsim::isa {

// Version 2 added the pod, replicas and partitions, sdev and dma.remote by device id;
// version-1 files (single chip) still read.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestReadableFormatVersion = 1;
inline constexpr int kScalarRegisters = 32;
inline constexpr int kSemaphores = 64;
inline constexpr int kMaxOperands = 6;
inline constexpr int kMaxDmaDims = 4;
// The VMEM region of a pod executable where chips' handshake flags land and are polled
// by sld (compiler/tpu/collective_rings.h): synchronisation memory. The models copy DMAs
// from it even when they compute no data (timing-only), and the hazard checker leaves it
// out. It starts zeroed, as all memory does at the start of a run.
inline constexpr std::string_view kFlagsRegion = "collective_flags";

enum class Opcode : uint8_t {
#define PODSIM_ISA_OP(e, m, sig, unit) e,
#include "isa/opcodes.def"
#undef PODSIM_ISA_OP
};

inline constexpr int kIsaOpcodeCount = 0
#define PODSIM_ISA_OP(e, m, sig, unit) +1
#include "isa/opcodes.def"
#undef PODSIM_ISA_OP
    ;

enum class Unit : uint8_t { kScalar, kVector, kMxu, kDma, kSync };

std::string_view mnemonic(Opcode op);
std::optional<Opcode> opcode_from_mnemonic(std::string_view m);
std::string_view signature(Opcode op);  // operand kinds, e.g. "VVV"
Unit unit(Opcode op);

// Element types in memory. Vector registers hold 32-bit lanes: f32 (bf16/f16 widened on
// load, rounded to nearest even on store), s32 or u32 (narrower ints widened).
enum class DType : uint8_t { kF32, kBF16, kF16, kS32, kU32, kS16, kU16, kS8, kU8, kPred, kS64, kU64, kF64 };
inline constexpr int kDTypeCount = static_cast<int>(DType::kF64) + 1;  // raw values >= this are invalid
std::string_view dtype_name(DType t);  // "f32", "bf16", ...
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_bytes(DType t);

struct Instruction {
  Opcode opcode = Opcode::kHalt;
  DType dtype = DType::kF32;
  std::array<int64_t, kMaxOperands> operands{};  // meaning from signature(opcode)
  int32_t source_op = -1;                        // index into Executable::source_ops
  bool operator==(const Instruction&) const = default;
};

enum class MemorySpace : uint8_t { kHbm, kVmem };

struct Region {
  std::string name;
  MemorySpace space = MemorySpace::kHbm;
  int32_t core = 0;  // VMEM: the TensorCore whose VMEM it is
  int64_t offset = 0;
  int64_t size = 0;
  bool operator==(const Region&) const = default;
};

// A multi-dimensional strided copy: for every index (i0..in) < sizes, element_bytes are
// copied from src + sum(i_k * src_strides[k]) to dst + sum(i_k * dst_strides[k]).
struct DmaDescriptor {
  int32_t src_region = 0;
  int32_t dst_region = 0;
  int32_t element_bytes = 4;
  std::vector<int64_t> sizes;
  std::vector<int64_t> src_strides;  // bytes
  std::vector<int64_t> dst_strides;  // bytes
  bool operator==(const DmaDescriptor&) const = default;
};

struct Program {
  int32_t core = 0;
  std::vector<Instruction> instructions;
  bool operator==(const Program&) const = default;
};

// Data placed in a region before the run (constants of the module).
struct Constant {
  int32_t region = 0;
  std::vector<uint8_t> data;
  bool operator==(const Constant&) const = default;
};

// A parameter or output: which region holds it, with its element type and dimensions
// (row-major, dense).
struct Binding {
  std::string name;
  int32_t region = 0;
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  bool operator==(const Binding&) const = default;
};

// The IR op an instruction came from, for profile attribution.
struct SourceOp {
  std::string instruction;  // IR instruction name
  std::string op_type;
  std::string op_name;
  std::string source_file;
  int64_t source_line = 0;
  bool operator==(const SourceOp&) const = default;
};

struct Executable {
  uint32_t format_version = kFormatVersion;
  std::string compiler_version;
  topology::ChipConfig chip;
  // The pod it runs on (its chip is `chip`); none for one chip. replicas x partitions is
  // the number of chips that run it: the pod's, or 1.
  std::optional<topology::PodConfig> pod;
  int32_t replicas = 1;
  int32_t partitions = 1;
  std::vector<Region> regions;
  std::vector<DmaDescriptor> descriptors;
  std::vector<Program> programs;  // one per TensorCore
  std::vector<Constant> constants;
  std::vector<Binding> parameters;
  std::vector<Binding> outputs;
  std::vector<SourceOp> source_ops;
  bool operator==(const Executable&) const = default;
};

// Throws podsim::Error naming the program, instruction index and what is wrong: unknown
// opcode or dtype, register / MXU / semaphore / descriptor / region index out of range,
// branch target outside the program, region outside the chip's memories, descriptor
// extents outside its regions, constants larger than their regions, bindings whose size
// exceeds their region, a program for a TensorCore the chip does not have, a program that
// can fall off its end without halt. Messages read "program P (core C), instruction N
// (mnemonic): what", "region R ('name'): what", "descriptor dN: what", ...
// Also required, so that every valid executable has one text form: the chip passes
// ChipConfig::validate() and has a name; region names are unique identifiers
// ([A-Za-z_][A-Za-z0-9_.-]*); an HBM region has core 0; descriptors have at most
// kMaxDmaDims dimensions, sizes >= 1 and strides >= 0 (run-time offsets are the
// simulator's to check); scalar, vector and MXU memory operands name a region in the
// program's own core's VMEM; operands beyond the signature are 0; immediates with a fixed
// set of meanings are in range (viota, vcmp, vred*, vcvt's source dtype, mmul's flag,
// sdev's selector, semaphore counts >= 0); at most one program per core.
// Pods: the pod is valid and its chip is `chip`; replicas and partitions are >= 1 and their
// product is the pod's chip count (1 without a pod); dma.remote needs a pod.
// Overlapping regions are allowed (buffers may alias).
void validate(const Executable& executable);

// The Cap'n Proto file form (isa/executable.capnp). Readers treat the bytes as hostile:
// limits derived from the size, then validate().
// serialize() encodes any executable (invalid ones too, for tests); write_executable()
// validates first, so no invalid file is written. Errors name the file (source_name).
std::vector<uint8_t> serialize(const Executable& executable);
Executable deserialize(const uint8_t* data, size_t size, std::string_view source_name = "<input>");
void write_executable(const std::string& path, const Executable& executable);
Executable read_executable(const std::string& path);

// Readable text form: assemble(disassemble(e)) == e. The syntax is documented at the top
// of isa/assembler.cc. disassemble() validates first; assemble() validates what it read
// and reports errors as "source:line:column: what".
std::string disassemble(const Executable& executable);
Executable assemble(std::string_view text, std::string_view source_name = "<input>");

}  // namespace podsim::isa
