// The profile data model: what a simulated run did, when, and on whose behalf. The
// simulator fills it (sim/ depends on traces/, never the other way); writers turn it
// into Chrome trace JSON for Perfetto UI, and the summary and comparison tools read it.
// It is the only contract between the simulator and the analysis tools.
//
// Time is in cycles of each chip's clock (ChipProfile::clock_hz converts to seconds).
// Every span names the IR op it came from by index into Profile::source_ops, so time
// can be attributed to the user's program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace podsim::traces {

// An IR op that work was done for (HLO instruction name and opcode, from the
// executable's source-op table), with the framework's names for it where the HLO's
// metadata has them.
struct SourceOp {
  std::string name;         // "dot.3"
  std::string opcode;       // "dot"
  // Initialised so that SourceOp{name, opcode} leaves them empty without a warning.
  std::string op_name{};      // metadata op_name: "jit(step)/dense/dot_general"
  std::string source_file{};  // metadata source_file and source_line: "model.py", 42
  int64_t source_line = 0;

  bool operator==(const SourceOp&) const = default;
};

inline constexpr int32_t kNoSourceOp = -1;

// One piece of work on one unit: [start, end) in cycles.
struct Span {
  std::string name;  // the instruction or transfer ("mmul", "dma hbm->vmem")
  uint64_t start = 0;
  uint64_t end = 0;
  int32_t source_op = kNoSourceOp;  // index into Profile::source_ops
  double flops = 0;                 // arithmetic done (2 per multiply-add)
  double bytes = 0;                 // bytes moved to or from memory

  bool operator==(const Span&) const = default;
};

// A unit of a chip (an MXU, the VPU, a DMA engine, HBM, an ICI link): its spans sorted
// by start. Spans on one track never overlap partially: each is either disjoint from
// or nested in the ones before it, so that trace viewers draw them.
struct Track {
  std::string name;      // "TensorCore 0 / MXU 1"
  std::string category;  // "mxu", "vpu", "dma", "hbm", "scalar", "ici", "host"
  std::vector<Span> spans;

  bool operator==(const Track&) const = default;
};

struct CounterSample {
  uint64_t cycle = 0;
  double value = 0;

  bool operator==(const CounterSample&) const = default;
};

// A value over time (HBM bandwidth in bytes/s, MXU utilisation in [0, 1]).
struct Counter {
  std::string name;
  std::string unit;
  std::vector<CounterSample> samples;  // sorted by cycle; each value holds until the next

  bool operator==(const Counter&) const = default;
};

// Peak figures of the chip the run was modelled on, for utilisation figures.
struct ChipPeaks {
  double flops_per_cycle = 0;      // MXU peak, all cores
  double hbm_bytes_per_cycle = 0;  // HBM peak

  bool operator==(const ChipPeaks&) const = default;
};

struct ChipProfile {
  std::string name;  // "chip 0 (v4)"
  double clock_hz = 0;
  ChipPeaks peaks;
  uint64_t total_cycles = 0;
  std::vector<Track> tracks;
  std::vector<Counter> counters;

  bool operator==(const ChipProfile&) const = default;
};

// A transfer from one unit to another (a DMA from one chip's engine to where it landed
// on another chip): trace viewers draw it as an arrow between the spans enclosing its ends.
struct FlowEnd {
  int32_t chip = 0;   // index into Profile::chips
  int32_t track = 0;  // index into that chip's tracks
  uint64_t cycle = 0;

  bool operator==(const FlowEnd&) const = default;
};

struct Flow {
  std::string name;
  FlowEnd from, to;

  bool operator==(const Flow&) const = default;
};

struct Profile {
  std::string program;  // what ran (module name)
  std::vector<SourceOp> source_ops;
  std::vector<ChipProfile> chips;
  std::vector<Flow> flows;

  bool operator==(const Profile&) const = default;
};

}  // namespace podsim::traces
