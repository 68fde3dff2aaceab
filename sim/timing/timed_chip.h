// The cycle-approximate timing model of one chip, behind a plain C++ API: run an
// executable on sim/functional's model while a SystemC model decides when each
// instruction, MXU pass, DMA burst and HBM access happens, and get the outputs, the
// cycle count, a profile (traces::Profile), an instruction trace and hazard reports.
//
// SystemC is hidden: its kernel lives on one dedicated thread, elaborated once per
// process, and every run_timed() call (from any thread) is queued to it and runs to
// completion there before the next. Results are deterministic: the same executable and
// inputs give the same outputs, cycles and profile.
//
// What the model captures and what it leaves out is documented in sim/timing/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"
#include "traces/profile.h"

namespace podsim::sim::timing {

struct TimingOptions {
  bool profile = true;              // fill TimedRunResult::profile
  bool instruction_trace = false;   // fill TimedRunResult::trace
  bool check_hazards = false;       // fill TimedRunResult::hazards
  bool hazards_are_errors = false;  // with check_hazards: podsim::Error if any is found
  // Timing-only: the run computes no vector, MXU or DMA data (FunctionalModel's
  // set_compute_data(false)); scalars, control flow, semaphores and addresses execute
  // exactly, so cycles, trace, profile and hazards are those of a full run for any program
  // whose control flow does not depend on computed data (see README.md). Parameters may be
  // omitted (an empty vector) and are not written; TimedRunResult::outputs is empty.
  bool timing_only = false;
  // The host link: the parameters go host -> device before the program and the outputs
  // device -> host after it (TimedRunResult::host_*). With this, the profile shows them on
  // a "Host link" track: its timeline starts with the uploads, then the program (every
  // program span shifted by host_to_device_cycles), then the downloads. The instruction
  // trace and TimedRunResult::cycles stay the program's alone.
  bool profile_host_link = false;
  // The profile's flows (arrows in Perfetto UI) go from each remote transfer's engine to
  // the receiving chip; with this, also from each local transfer's engine to the HBM
  // traffic it makes (about 400 bytes of trace file a DMA: a 64-chip training step's
  // profile grows by a third).
  bool profile_local_flows = false;
  int64_t max_instructions = int64_t{1} << 40;  // runaway guard (podsim::Error past it)
  // A core's issue runs at most this many cycles ahead of SystemC time before it
  // synchronises (temporal decoupling); larger is faster, smaller orders shared-HBM
  // requests of different cores more exactly.
  uint64_t quantum_cycles = 1000;
  // Unit models by registered name (sim/timing/unit_models.h); the defaults are the
  // built-in ones.
  std::string mxu_model = "systolic";
  std::string vpu_model = "inorder";
  std::string dma_model = "pipelined";
  std::string hbm_model = "request-time";
  std::string interconnect_model = "torus";  // pods: ICI links and DCN (interconnect/)
  // Progress of a long run: called on the calling thread with about the cycles simulated
  // so far, every progress_interval_s of host time from the first on (short runs stay
  // quiet). The simulation does not see it: it changes no result.
  std::function<void(uint64_t cycles)> progress;
  double progress_interval_s = 1.0;
  // Every figure of the model comes from the executable's ChipConfig (its timing fields
  // included: latencies, DMA burst, VMEM ports and banks, host link latency); to vary
  // one, run a copy of the executable with that field changed.
};

// One executed instruction (or DMA transfer), in cycles from the start of the run.
// issue: when it reached the head of its core's in-order issue; start: when its unit
// began it; end: when its result (or the transfer) was complete.
struct InstructionRecord {
  int32_t core = 0;
  int32_t pc = 0;
  isa::Opcode opcode = isa::Opcode::kHalt;
  std::string unit;  // "scalar", "vpu", "mxu1", "dma0", "sync"
  uint64_t issue = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  int32_t source_op = -1;  // index into the executable's source_ops
};

// One side of a hazard: an instruction's access to memory, or a DMA in flight.
struct HazardAccess {
  int32_t core = 0;
  int32_t pc = 0;
  std::string instruction;  // disassembly-like: "vld.f32 (pc 7)" or "dma d2 (pc 3)"
  bool is_dma = false;
  bool write = false;
  uint64_t start = 0;  // access cycle, or DMA issue cycle
  uint64_t end = 0;    // access cycle, or DMA completion cycle
  int32_t source_op = -1;
  MemoryRange range;
};

struct Hazard {
  std::string kind;    // "read-after-write", "write-after-read", "write-after-write"
  HazardAccess first;  // the earlier-issued side (a DMA, or a DMA's competitor)
  HazardAccess second;
  std::string message;  // one line naming both, their cycles, source ops and the range
};

// One statistic of one model instance over a run (the models declare theirs where they
// register: `podsim models`).
struct StatisticValue {
  std::string component;  // "TensorCore 0 / MXU 1", "HBM", "interconnect"; on a pod "chip D / ..."
  std::string model;      // its kind and name: "MXU systolic", "interconnect torus"
  std::string name;       // "passes"
  std::string unit;       // "count", "cycles", "bytes"
  double value = 0;
};

struct TimedRunResult {
  std::vector<std::vector<uint8_t>>
      outputs;               // as FunctionalModel::read_output; none if timing_only
  uint64_t cycles = 0;       // until the last core halted and the last DMA landed
  double seconds = 0;        // cycles at the chip's clock
  int64_t instructions = 0;  // executed (blocked retries not counted)
  int64_t dmas = 0;
  int64_t host_memory_bytes = 0;  // simulated memories' host footprint at the end
  // Host transfers over ChipConfig::host_link_bandwidth_bytes_per_s, one at a time, each
  // UnitLatencies::host_link_latency then its bytes: the parameters before the program,
  // the outputs after it. Not part of `cycles`.
  uint64_t host_to_device_cycles = 0;
  uint64_t device_to_host_cycles = 0;
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  traces::Profile profile;               // with TimingOptions::profile
  std::vector<InstructionRecord> trace;  // with instruction_trace; sorted by issue, core, pc
  std::vector<Hazard> hazards;           // with check_hazards; at most kMaxHazards
  std::vector<StatisticValue> statistics;  // every unit model's, in the chip's unit order
};

inline constexpr size_t kMaxHazards = 64;

// One link direction that carried traffic in a pod run.
struct LinkUse {
  std::string name;      // "ICI x+ 0->1", "DCN host 0 out", "host link 3 up"
  std::string category;  // "ici" or "dcn"
  double bytes = 0;
  uint64_t busy_cycles = 0;  // while it was sending
};

// A run of every chip of a pod (or of one chip).
struct PodRunResult {
  std::vector<TimedRunResult> chips;  // by device id; their profiles are merged below
  uint64_t cycles = 0;                // until the last chip's last core and DMA were done
  double seconds = 0;
  int64_t instructions = 0;
  int64_t dmas = 0;
  int64_t host_memory_bytes = 0;  // all chips' simulated memories
  traces::Profile profile;        // one ChipProfile per chip, links on the chip they leave
  std::vector<Hazard> hazards;    // on a pod, each message starts "chip D: "
  std::vector<LinkUse> links;     // in wiring order
  double ici_bytes = 0;           // summed over links (a byte crossing k hops counts k times)
  double dcn_bytes = 0;
  std::vector<StatisticValue> statistics;  // every chip's ("chip D / ..."), then the interconnect's
};

// Runs the executable (of one chip: no pod, or a pod of one) with its parameters (exactly
// each binding's bytes, in order).
// podsim::Error for a bad executable, wrong parameters, a run-time fault (as the
// functional model reports it), a deadlock (every core waits and no DMA is in flight),
// a runaway loop, an unknown unit model, and hazards when they are errors.
TimedRunResult run_timed(const isa::Executable& executable,
                         const std::vector<std::vector<uint8_t>>& parameters,
                         const TimingOptions& options = {});

// Runs an executable on every chip of its pod (executable.pod; one chip without), each
// with its own parameters: parameters[device][k], for every chip or only for the
// executable's devices (the chips past them idle), or none at all when timing-only. The
// chips share one SystemC time; remote DMAs cross the interconnect. podsim::Error as
// run_timed, naming the chip, and for a deadlock across chips (every blocked core of every
// chip listed with its device id and coordinates).
PodRunResult run_timed_pod(const isa::Executable& executable,
                           const std::vector<std::vector<std::vector<uint8_t>>>& parameters,
                           const TimingOptions& options = {});

// A few lines for a pod run: cycles and time, per-chip time (min / max), bytes over ICI
// and DCN, and link utilisation (max / mean over the links used).
std::string format_pod_summary(const PodRunResult& result, const topology::ChipConfig& chip);

// The trace as CSV: core,pc,instruction,unit,issue,start,end,source_op (the op's name).
std::string format_instruction_trace(const std::vector<InstructionRecord>& trace,
                                     const isa::Executable& executable);

// A few lines: cycles, time, MXU utilisation, HBM bandwidth (for when traces' summary is
// not wanted).
std::string format_timing_summary(const TimedRunResult& result, const topology::ChipConfig& chip);

// One line: the host link's transfers (bytes, cycles, time), which format_timing_summary
// ends with.
std::string format_host_link(const TimedRunResult& result, const topology::ChipConfig& chip);

// Totals of a run's statistics per model and statistic (over every unit of every chip),
// with the largest value of one unit: a table for `podsim run --stats`.
std::string format_statistics(const std::vector<StatisticValue>& statistics);

// A registered model as it declares itself: the fields it reads (with their values in a
// pod and its chip) and the statistics it counts.
struct ModelInfo {
  struct Parameter {
    std::string name, value, meaning;
  };
  struct Statistic {
    std::string name, unit, meaning;
  };
  std::string kind;  // "mxu", "vpu", "dma", "hbm", "interconnect"
  std::string name;
  bool is_default = false;  // TimingOptions' choice
  std::string summary;
  std::vector<Parameter> parameters;
  std::vector<Statistic> statistics;
};
std::vector<ModelInfo> describe_models(const topology::PodConfig& pod);
std::string format_models(const std::vector<ModelInfo>& models);

// Registered unit model names, for help texts and errors.
std::vector<std::string> registered_unit_models(
    std::string_view kind);  // "mxu", "vpu", "dma", "hbm", "interconnect"

}  // namespace podsim::sim::timing
