# The podsim executable file (.pex): one Cap'n Proto message whose root is Executable.
# It mirrors isa::Executable (isa/isa.h); isa/serialize.cc converts between the two.
#
# Compatibility rules:
# - formatVersion is checked before anything else is read; a reader rejects versions
#   outside [isa::kOldestReadableFormatVersion, isa::kFormatVersion]. Bump it for any
#   change that old readers would misread: new meanings (version 2: pods), renumbered
#   fields, changed field types.
# - Opcodes are stored as indices into opcodeTable, which the writer fills with its own
#   mnemonics and operand signatures. A reader maps them by name, so adding or
#   reordering opcodes in isa/opcodes.def keeps old files readable; an instruction whose
#   opcode the reader does not know (or whose operands changed) is rejected.
# - Data types (dtype fields) are raw isa::DType values: append to that enum only.
@0x9c850bc58ea70b63;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("podsim::isa::schema");

struct Executable {
  formatVersion @0 :UInt32;
  compilerVersion @1 :Text;
  chip @2 :ChipConfig;
  opcodeTable @3 :List(OpcodeInfo);
  regions @4 :List(Region);
  descriptors @5 :List(DmaDescriptor);
  programs @6 :List(Program);
  constants @7 :List(Constant);
  parameters @8 :List(Binding);
  outputs @9 :List(Binding);
  sourceOps @10 :List(SourceOp);
  # Version 2: the pod as topology's TOML (empty for one chip), and how its chips split.
  pod @11 :Text;
  replicas @12 :Int32 = 1;
  partitions @13 :Int32 = 1;
}

# Every field of topology::ChipConfig (topology/chip_config.h), in its units.
struct ChipConfig {
  name @0 :Text;
  description @1 :Text;
  clockHz @2 :Float64;
  tensorCores @3 :Int32;
  mxusPerCore @4 :Int32;
  mxuRows @5 :Int32;
  mxuCols @6 :Int32;
  vpuSublanes @7 :Int32;
  vpuLanes @8 :Int32;
  vectorRegisters @9 :Int32;
  vmemBytes @10 :Int64;
  hbmBytes @11 :Int64;
  hbmChannels @12 :Int32;
  hbmBandwidthBytesPerS @13 :Float64;
  hbmLatencyNs @14 :Float64;
  dmaEngines @15 :Int32;
  iciPorts @16 :Int32;
  # Retired: the links' figures are the pod's (PodConfig). Neither written nor read.
  iciLinkBandwidthBytesPerS @17 :Float64;
  iciLatencyNs @18 :Float64;
  hostLinkBandwidthBytesPerS @19 :Float64;
  # Timing-model assumptions (added later: older files read ChipConfig's defaults).
  scalarLatencyCycles @20 :Int64 = 1;
  vmemLatencyCycles @21 :Int64 = 2;
  vectorLatencyCycles @22 :Int64 = 2;
  transcendentalLatencyCycles @23 :Int64 = 8;
  transcendentalIssueCycles @24 :Int64 = 4;
  crossLaneLatencyCycles @25 :Int64 = 4;
  mxuFillDrainCycles @26 :Int64 = 0;
  dmaSetupCycles @27 :Int64 = 16;
  dmaBurstBytes @28 :Int64 = 2048;
  hbmTurnaroundCycles @29 :Int64 = 8;
  vmemDmaBytesPerCycle @30 :Int64 = 0;
  vmemPorts @31 :Int64 = 2;
  vmemBanks @32 :Int64 = 0;
  vmemBankBytes @33 :Int64 = 0;
  barrierCycles @34 :Int64 = 8;
  hostLinkLatencyNs @35 :Float64 = 1000;
  mxuAccumulators @36 :Int64 = 2;
  mxuPassOverheadCycles @37 :Int64 = 0;
  hbmRefreshIntervalNs @38 :Float64 = 3900;
  hbmRefreshNs @39 :Float64 = 260;
}

struct OpcodeInfo {
  mnemonic @0 :Text;
  signature @1 :Text;
}

enum MemorySpace {
  hbm @0;
  vmem @1;
}

struct Region {
  name @0 :Text;
  space @1 :MemorySpace;
  core @2 :Int32;
  offset @3 :Int64;
  size @4 :Int64;
}

struct DmaDescriptor {
  srcRegion @0 :Int32;
  dstRegion @1 :Int32;
  elementBytes @2 :Int32;
  sizes @3 :List(Int64);
  srcStrides @4 :List(Int64);
  dstStrides @5 :List(Int64);
}

struct Instruction {
  opcode @0 :UInt16;          # index into Executable.opcodeTable
  dtype @1 :UInt8;            # isa::DType
  sourceOp @2 :Int32 = -1;    # index into Executable.sourceOps, -1 for none
  operands @3 :List(Int64);   # trailing zero operands are left out
}

struct Program {
  core @0 :Int32;
  instructions @1 :List(Instruction);
}

struct Constant {
  region @0 :Int32;
  # The bytes, in order, split into chunks because one Data is limited to 512 MiB.
  chunks @1 :List(Data);
}

struct Binding {
  name @0 :Text;
  region @1 :Int32;
  dtype @2 :UInt8;
  dims @3 :List(Int64);
}

struct SourceOp {
  instruction @0 :Text;
  opType @1 :Text;
  opName @2 :Text;
  sourceFile @3 :Text;
  sourceLine @4 :Int64;
}
