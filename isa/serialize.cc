// The Cap'n Proto file form of an executable (isa/executable.capnp). Readers treat the
// bytes as hostile: the traversal limit follows from the size, nesting is shallow, every
// kj exception becomes a podsim::Error naming the file, raw enum values are checked
// before they are cast, and what is read goes through validate().
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/utf8.h"
#include "isa/executable.capnp.h"
#include "isa/isa.h"

namespace podsim::isa {
namespace {

// One Data blob holds at most 2^29 - 1 bytes; constants are stored in chunks below that.
constexpr size_t kChunkBytes = size_t{1} << 28;
// Enough for the schema's depth (Executable > programs > instruction > operands) with room
// to grow; hostile files cannot recurse deeper.
constexpr int kNestingLimit = 8;

capnp::Text::Reader text(const std::string& s) { return {s.c_str(), s.size()}; }

std::string string(capnp::Text::Reader t) { return {t.begin(), t.size()}; }

template <typename List>
std::vector<int64_t> int64s(List list) {
  std::vector<int64_t> out;
  out.reserve(list.size());
  for (int64_t v : list) out.push_back(v);
  return out;
}

template <typename Builder>
void set_int64s(Builder builder, const std::vector<int64_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) builder.set(static_cast<unsigned>(i), values[i]);
}

void write_chip(schema::ChipConfig::Builder b, const topology::ChipConfig& c) {
  b.setName(text(c.name));
  b.setDescription(text(c.description));
  b.setClockHz(c.clock_hz);
  b.setTensorCores(c.tensor_cores);
  b.setMxusPerCore(c.mxus_per_core);
  b.setMxuRows(c.mxu_rows);
  b.setMxuCols(c.mxu_cols);
  b.setVpuSublanes(c.vpu_sublanes);
  b.setVpuLanes(c.vpu_lanes);
  b.setVectorRegisters(c.vector_registers);
  b.setVmemBytes(c.vmem_bytes);
  b.setHbmBytes(c.hbm_bytes);
  b.setHbmChannels(c.hbm_channels);
  b.setHbmBandwidthBytesPerS(c.hbm_bandwidth_bytes_per_s);
  b.setHbmLatencyNs(c.hbm_latency_ns);
  b.setDmaEngines(c.dma_engines);
  b.setIciPorts(c.ici_ports);
  b.setHostLinkBandwidthBytesPerS(c.host_link_bandwidth_bytes_per_s);
  b.setScalarLatencyCycles(c.scalar_latency_cycles);
  b.setVmemLatencyCycles(c.vmem_latency_cycles);
  b.setVectorLatencyCycles(c.vector_latency_cycles);
  b.setTranscendentalLatencyCycles(c.transcendental_latency_cycles);
  b.setTranscendentalIssueCycles(c.transcendental_issue_cycles);
  b.setCrossLaneLatencyCycles(c.cross_lane_latency_cycles);
  b.setMxuFillDrainCycles(c.mxu_fill_drain_cycles);
  b.setDmaSetupCycles(c.dma_setup_cycles);
  b.setDmaBurstBytes(c.dma_burst_bytes);
  b.setHbmTurnaroundCycles(c.hbm_turnaround_cycles);
  b.setVmemDmaBytesPerCycle(c.vmem_dma_bytes_per_cycle);
  b.setVmemPorts(c.vmem_ports);
  b.setVmemBanks(c.vmem_banks);
  b.setVmemBankBytes(c.vmem_bank_bytes);
  b.setBarrierCycles(c.barrier_cycles);
  b.setHostLinkLatencyNs(c.host_link_latency_ns);
  b.setMxuAccumulators(c.mxu_accumulators);
  b.setMxuPassOverheadCycles(c.mxu_pass_overhead_cycles);
  b.setHbmRefreshIntervalNs(c.hbm_refresh_interval_ns);
  b.setHbmRefreshNs(c.hbm_refresh_ns);
}

topology::ChipConfig read_chip(schema::ChipConfig::Reader r) {
  topology::ChipConfig c;
  c.name = string(r.getName());
  c.description = string(r.getDescription());
  c.clock_hz = r.getClockHz();
  c.tensor_cores = r.getTensorCores();
  c.mxus_per_core = r.getMxusPerCore();
  c.mxu_rows = r.getMxuRows();
  c.mxu_cols = r.getMxuCols();
  c.vpu_sublanes = r.getVpuSublanes();
  c.vpu_lanes = r.getVpuLanes();
  c.vector_registers = r.getVectorRegisters();
  c.vmem_bytes = r.getVmemBytes();
  c.hbm_bytes = r.getHbmBytes();
  c.hbm_channels = r.getHbmChannels();
  c.hbm_bandwidth_bytes_per_s = r.getHbmBandwidthBytesPerS();
  c.hbm_latency_ns = r.getHbmLatencyNs();
  c.dma_engines = r.getDmaEngines();
  c.ici_ports = r.getIciPorts();
  c.host_link_bandwidth_bytes_per_s = r.getHostLinkBandwidthBytesPerS();
  c.scalar_latency_cycles = r.getScalarLatencyCycles();
  c.vmem_latency_cycles = r.getVmemLatencyCycles();
  c.vector_latency_cycles = r.getVectorLatencyCycles();
  c.transcendental_latency_cycles = r.getTranscendentalLatencyCycles();
  c.transcendental_issue_cycles = r.getTranscendentalIssueCycles();
  c.cross_lane_latency_cycles = r.getCrossLaneLatencyCycles();
  c.mxu_fill_drain_cycles = r.getMxuFillDrainCycles();
  c.dma_setup_cycles = r.getDmaSetupCycles();
  c.dma_burst_bytes = r.getDmaBurstBytes();
  c.hbm_turnaround_cycles = r.getHbmTurnaroundCycles();
  c.vmem_dma_bytes_per_cycle = r.getVmemDmaBytesPerCycle();
  c.vmem_ports = r.getVmemPorts();
  c.vmem_banks = r.getVmemBanks();
  c.vmem_bank_bytes = r.getVmemBankBytes();
  c.barrier_cycles = r.getBarrierCycles();
  c.host_link_latency_ns = r.getHostLinkLatencyNs();
  c.mxu_accumulators = r.getMxuAccumulators();
  c.mxu_pass_overhead_cycles = r.getMxuPassOverheadCycles();
  c.hbm_refresh_interval_ns = r.getHbmRefreshIntervalNs();
  c.hbm_refresh_ns = r.getHbmRefreshNs();
  return c;
}

void write_binding(schema::Binding::Builder b, const Binding& binding) {
  b.setName(text(binding.name));
  b.setRegion(binding.region);
  b.setDtype(static_cast<uint8_t>(binding.dtype));
  set_int64s(b.initDims(static_cast<unsigned>(binding.dims.size())), binding.dims);
}

Binding read_binding(schema::Binding::Reader r) {
  return Binding{string(r.getName()), r.getRegion(), static_cast<DType>(r.getDtype()),
                 int64s(r.getDims())};
}

// The file's opcode numbers mapped to this podsim's opcodes by mnemonic and signature;
// nullopt where this podsim has no such instruction.
std::vector<std::optional<Opcode>> map_opcodes(capnp::List<schema::OpcodeInfo>::Reader table) {
  std::vector<std::optional<Opcode>> map;
  map.reserve(table.size());
  for (schema::OpcodeInfo::Reader info : table) {
    std::optional<Opcode> op = opcode_from_mnemonic(
        std::string_view(info.getMnemonic().cStr(), info.getMnemonic().size()));
    if (op &&
        signature(*op) != std::string_view(info.getSignature().cStr(), info.getSignature().size()))
      op.reset();
    map.push_back(op);
  }
  return map;
}

Program read_program(schema::Program::Reader r, size_t index,
                     capnp::List<schema::OpcodeInfo>::Reader table,
                     const std::vector<std::optional<Opcode>>& opcodes) {
  Program p;
  p.core = r.getCore();
  auto instructions = r.getInstructions();
  p.instructions.reserve(instructions.size());
  for (schema::Instruction::Reader in : instructions) {
    auto where = [&] {
      return fmt::format("program {} (core {}), instruction {}", index, p.core,
                         p.instructions.size());
    };
    Instruction out;
    uint16_t op = in.getOpcode();
    if (op >= opcodes.size())
      fail("{}: unknown opcode {} (the file's opcode table has {} entries)", where(), op,
           opcodes.size());
    if (!opcodes[op])
      fail("{}: this podsim has no instruction '{}' with operands '{}' (recompile the program)",
           where(), table[op].getMnemonic().cStr(), table[op].getSignature().cStr());
    out.opcode = *opcodes[op];
    out.dtype = static_cast<DType>(in.getDtype());  // range-checked by validate()
    out.source_op = in.getSourceOp();
    auto operands = in.getOperands();
    if (operands.size() > static_cast<unsigned>(kMaxOperands))
      fail("{}: {} operands (at most {})", where(), operands.size(), kMaxOperands);
    for (unsigned k = 0; k < operands.size(); ++k) out.operands[k] = operands[k];
    p.instructions.push_back(out);
  }
  return p;
}

Executable read_root(schema::Executable::Reader root) {
  const uint32_t version = root.getFormatVersion();
  if (version < kOldestReadableFormatVersion || version > kFormatVersion) {
    if (version == 0) fail("not a podsim executable (no format version)");
    fail(
        "executable format version {} cannot be read: this podsim reads format versions {} to "
        "{} (recompile the program)",
        version, kOldestReadableFormatVersion, kFormatVersion);
  }
  Executable e;  // read into this podsim's version: older files lack only newer parts
  e.compiler_version = string(root.getCompilerVersion());
  e.chip = read_chip(root.getChip());
  if (root.hasPod()) {
    e.pod = topology::parse_pod_config(string(root.getPod()), "the pod");
    // The pod's text names its chip by preset where it is one; the chip record is the
    // executable's own, which stays as compiled when this podsim's preset has changed.
    // (Its text must be UTF-8 then: the pod is written back as TOML.)
    if (e.pod->chip.name == e.chip.name) {
      if (first_invalid_utf8(e.chip.description) != std::string_view::npos)
        fail("the chip's description is not UTF-8");
      e.pod->chip = e.chip;
    }
  }
  e.replicas = root.getReplicas();
  e.partitions = root.getPartitions();
  for (schema::Region::Reader r : root.getRegions()) {
    auto space = static_cast<uint16_t>(r.getSpace());
    if (space > static_cast<uint16_t>(MemorySpace::kVmem))
      fail("region {}: unknown memory space {}", e.regions.size(), space);
    e.regions.push_back(Region{string(r.getName()), static_cast<MemorySpace>(space), r.getCore(),
                               r.getOffset(), r.getSize()});
  }
  for (schema::DmaDescriptor::Reader d : root.getDescriptors())
    e.descriptors.push_back(DmaDescriptor{d.getSrcRegion(), d.getDstRegion(), d.getElementBytes(),
                                          int64s(d.getSizes()), int64s(d.getSrcStrides()),
                                          int64s(d.getDstStrides())});
  auto table = root.getOpcodeTable();
  std::vector<std::optional<Opcode>> opcodes = map_opcodes(table);
  for (schema::Program::Reader p : root.getPrograms())
    e.programs.push_back(read_program(p, e.programs.size(), table, opcodes));
  for (schema::Constant::Reader c : root.getConstants()) {
    Constant constant{c.getRegion(), {}};
    for (capnp::Data::Reader chunk : c.getChunks())
      constant.data.insert(constant.data.end(), chunk.begin(), chunk.end());
    e.constants.push_back(std::move(constant));
  }
  for (schema::Binding::Reader b : root.getParameters()) e.parameters.push_back(read_binding(b));
  for (schema::Binding::Reader b : root.getOutputs()) e.outputs.push_back(read_binding(b));
  for (schema::SourceOp::Reader s : root.getSourceOps())
    e.source_ops.push_back(SourceOp{string(s.getInstruction()), string(s.getOpType()),
                                    string(s.getOpName()), string(s.getSourceFile()),
                                    s.getSourceLine()});
  return e;
}

}  // namespace

std::vector<uint8_t> serialize(const Executable& e) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::Executable>();
  root.setFormatVersion(e.format_version);
  root.setCompilerVersion(text(e.compiler_version));
  write_chip(root.initChip(), e.chip);
  if (e.pod) root.setPod(text(topology::to_toml(*e.pod)));
  root.setReplicas(e.replicas);
  root.setPartitions(e.partitions);

  auto table = root.initOpcodeTable(kIsaOpcodeCount);
  for (int i = 0; i < kIsaOpcodeCount; ++i) {
    std::string m(mnemonic(static_cast<Opcode>(i))), s(signature(static_cast<Opcode>(i)));
    table[i].setMnemonic(text(m));
    table[i].setSignature(text(s));
  }

  auto regions = root.initRegions(static_cast<unsigned>(e.regions.size()));
  for (size_t i = 0; i < e.regions.size(); ++i) {
    const Region& r = e.regions[i];
    regions[i].setName(text(r.name));
    // Raw values survive (a later validate() rejects them), as for every other enum.
    regions[i].setSpace(static_cast<schema::MemorySpace>(r.space));
    regions[i].setCore(r.core);
    regions[i].setOffset(r.offset);
    regions[i].setSize(r.size);
  }

  auto descriptors = root.initDescriptors(static_cast<unsigned>(e.descriptors.size()));
  for (size_t i = 0; i < e.descriptors.size(); ++i) {
    const DmaDescriptor& d = e.descriptors[i];
    descriptors[i].setSrcRegion(d.src_region);
    descriptors[i].setDstRegion(d.dst_region);
    descriptors[i].setElementBytes(d.element_bytes);
    set_int64s(descriptors[i].initSizes(static_cast<unsigned>(d.sizes.size())), d.sizes);
    set_int64s(descriptors[i].initSrcStrides(static_cast<unsigned>(d.src_strides.size())),
               d.src_strides);
    set_int64s(descriptors[i].initDstStrides(static_cast<unsigned>(d.dst_strides.size())),
               d.dst_strides);
  }

  auto programs = root.initPrograms(static_cast<unsigned>(e.programs.size()));
  for (size_t i = 0; i < e.programs.size(); ++i) {
    const Program& p = e.programs[i];
    programs[i].setCore(p.core);
    auto instructions = programs[i].initInstructions(static_cast<unsigned>(p.instructions.size()));
    for (size_t n = 0; n < p.instructions.size(); ++n) {
      const Instruction& in = p.instructions[n];
      instructions[n].setOpcode(static_cast<uint16_t>(in.opcode));
      instructions[n].setDtype(static_cast<uint8_t>(in.dtype));
      instructions[n].setSourceOp(in.source_op);
      size_t used = in.operands.size();
      while (used > 0 && in.operands[used - 1] == 0) --used;
      auto operands = instructions[n].initOperands(static_cast<unsigned>(used));
      for (size_t k = 0; k < used; ++k) operands.set(static_cast<unsigned>(k), in.operands[k]);
    }
  }

  auto constants = root.initConstants(static_cast<unsigned>(e.constants.size()));
  for (size_t i = 0; i < e.constants.size(); ++i) {
    const std::vector<uint8_t>& data = e.constants[i].data;
    constants[i].setRegion(e.constants[i].region);
    auto chunks = constants[i].initChunks(
        static_cast<unsigned>((data.size() + kChunkBytes - 1) / kChunkBytes));
    for (size_t c = 0, at = 0; at < data.size(); ++c, at += kChunkBytes)
      chunks.set(static_cast<unsigned>(c),
                 capnp::Data::Reader(data.data() + at, std::min(kChunkBytes, data.size() - at)));
  }

  auto parameters = root.initParameters(static_cast<unsigned>(e.parameters.size()));
  for (size_t i = 0; i < e.parameters.size(); ++i) write_binding(parameters[i], e.parameters[i]);
  auto outputs = root.initOutputs(static_cast<unsigned>(e.outputs.size()));
  for (size_t i = 0; i < e.outputs.size(); ++i) write_binding(outputs[i], e.outputs[i]);

  auto source_ops = root.initSourceOps(static_cast<unsigned>(e.source_ops.size()));
  for (size_t i = 0; i < e.source_ops.size(); ++i) {
    const SourceOp& s = e.source_ops[i];
    source_ops[i].setInstruction(text(s.instruction));
    source_ops[i].setOpType(text(s.op_type));
    source_ops[i].setOpName(text(s.op_name));
    source_ops[i].setSourceFile(text(s.source_file));
    source_ops[i].setSourceLine(s.source_line);
  }

  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return {bytes.begin(), bytes.end()};
}

Executable deserialize(const uint8_t* data, size_t size, std::string_view source_name) {
  if (size == 0) fail("{}: empty, not a podsim executable", source_name);
  if (size % sizeof(capnp::word) != 0)
    fail("{}: not a podsim executable: {} bytes is not a whole number of 8-byte words (truncated?)",
         source_name, size);
  // Cap'n Proto reads aligned words; the caller's bytes may not be aligned.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, size);

  Executable e;
  try {
    capnp::ReaderOptions options;
    // Every object is read once; the slack covers small messages whose lists of empty
    // structs are charged a word per element.
    options.traversalLimitInWords = 4 * words.size() + 1024;
    options.nestingLimit = kNestingLimit;
    // Constructed inside the try: the constructor already checks the segment table.
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    if (reader.getEnd() != words.end())
      fail("not a podsim executable: {} bytes after the end of the message",
           (words.end() - reader.getEnd()) * sizeof(capnp::word));
    e = read_root(reader.getRoot<schema::Executable>());
  } catch (const kj::Exception& ex) {
    fail("{}: not a valid podsim executable: {}", source_name, ex.getDescription().cStr());
  } catch (const Error& err) {
    fail("{}: {}", source_name, err.what());
  }
  try {
    validate(e);
  } catch (const Error& err) {
    fail("{}: {}", source_name, err.what());
  }
  return e;
}

void write_executable(const std::string& path, const Executable& executable) {
  validate(executable);
  std::vector<uint8_t> bytes = serialize(executable);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot write executable '{}'", path);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail("cannot write executable '{}' (disk full?)", path);
}

Executable read_executable(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open executable '{}'", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) fail("cannot read executable '{}'", path);
  return deserialize(bytes.data(), bytes.size(), path);
}

}  // namespace podsim::isa
