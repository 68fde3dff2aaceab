// Internal to sim/timing: one timed run of one chip. Built on the SystemC kernel thread
// while the kernel is paused; start() spawns its processes (an issue process per core
// with a program, one per DMA engine), sc_start() runs them until nothing is left to do,
// and finish() checks how it ended and collects the result. Everything it creates lives
// for one run; nothing is elaborated per run (SystemC modules cannot be created after the
// first sc_start), so one process serves any number of runs on any chips.
#pragma once

#include <array>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/functional/functional_model.h"
#include "sim/timing/hazard_checker.h"
#include "sim/timing/recorder.h"
#include "sim/timing/timed_chip.h"
#include "sim/timing/unit_models.h"
#include "sim/timing/memory/vmem.h"

namespace podsim::sim::timing {

class ChipRun;

// A transfer from one chip to another, for the profile's flows: each end a track of its
// chip (by name: the pod resolves them when it assembles the profile) at a profile time.
struct PendingFlow {
  std::string name;
  int from_chip = 0, to_chip = 0;
  std::string from_track, to_track;
  uint64_t from_cycle = 0, to_cycle = 0;
};

// What a chip needs from the pod it belongs to (PodRun, pod_run.h, implements it): the
// other chips, the interconnect between them, and a way to end the run everywhere.
class PodContext {
 public:
  virtual ~PodContext() = default;
  virtual ChipRun& chip(int device) = 0;
  virtual Interconnect* interconnect() = 0;  // null for a single chip
  // The pod's figures (a pod of one chip for a single-chip run): what models read.
  virtual const topology::PodConfig& config() const = 0;
  // Ends the run on every chip; the error belongs to `from`.
  virtual void abort(std::exception_ptr error, ChipRun* from) = 0;
  virtual void add_flow(PendingFlow flow) = 0;
};

// A remote transfer as the hazard checker of each end sees it: on the issuing chip its
// destination is elsewhere (core -1 overlaps nothing); on the receiving chip its source
// is, it has an id of its own (ids are per chip) and its semaphore is the receiving one.
DmaTransfer outgoing_view(const DmaTransfer& t);
DmaTransfer incoming_view(const DmaTransfer& t, int src_device);

class ChipRun final : public DmaHost {
 public:
  // One chip of `pod` (a pod of one chip for a single-chip run), running `model`, which
  // the pod owns.
  // speed: the TensorCores' clock as a fraction of the chip's (stragglers, PodConfig):
  // their units' times and the issue rate stretch by 1 / speed.
  ChipRun(PodContext& pod, FunctionalModel& model, const std::vector<std::vector<uint8_t>>& parameters,
          const TimingOptions& options, double speed = 1.0);
  ~ChipRun() override;

  void start();
  // After sc_start() returned. Whether some core has neither halted nor failed (it waits
  // for something that will never happen), and its lines for a deadlock report.
  bool stuck() const { return !error_ && live_cores_ > 0; }
  std::string describe_stuck_cores(bool name_the_chip) const;
  // Ends the run with `error` (or with another chip's: error may be null).
  void abort(std::exception_ptr error);
  std::exception_ptr error() const { return error_; }
  // When its last core halted and its last DMA landed (absolute).
  Cycle end_cycle() const;
  // The result, once every chip finished without error; throws the chip's hazards when
  // they are errors. The profile runs to profile_end at least (a pod's end: the chip's
  // links may carry other chips' traffic after its own work).
  TimedRunResult finish(Cycle profile_end = 0);
  Recorder& recorder() { return recorder_; }
  int incoming_track() const { return incoming_track_; }

  MemoryTarget& memory(isa::MemorySpace space, int core) override;
  int device() const override { return model_.place().device; }
  MemoryTarget& remote_memory(const DmaTransfer& t) override;
  Interconnect* interconnect() override;
  void dma_completed(const DmaJob& job, int engine_core, int engine,
                     const DmaTiming& timing) override;
  void dma_source_read(const DmaJob& job, Cycle cycle) override;
  bool aborted() const override { return aborted_; }
  bool finishing() const override { return finishing_; }
  void fail_run(std::exception_ptr error) override;

  // A remote transfer from chip src_device: issued into this chip's memory, and landed
  // (its semaphore here has been signalled).
  void remote_issued(int src_device, const DmaTransfer& t, Cycle cycle, int32_t source_op);
  // A transfer from chip src_device has landed here: its first burst at `first`, all of it
  // by `cycle`. Returns the profile time of its span's start on incoming_track() (nothing
  // when the run is not profiled).
  std::optional<uint64_t> remote_landed(int src_device, const DmaTransfer& t, Cycle first, Cycle cycle,
                                        int32_t source_op);

 private:
  struct Mxu {
    std::unique_ptr<MxuModel> model;
    int track = 0, weight_track = 0, result_track = 0;
    int64_t k = 0;  // rows of the last weights loaded
  };
  struct Pending {
    MemoryRange range;
    Cycle end = 0;
    bool write = false;
  };
  struct Core {
    int index = 0;
    const isa::Program* program = nullptr;
    std::unique_ptr<VpuModel> vpu;
    std::vector<Mxu> mxus;
    std::vector<std::unique_ptr<DmaEngineModel>> engines;
    size_t next_engine = 0;
    std::unique_ptr<VmemPorts> vmem_ports;
    std::unique_ptr<VmemBanks> vmem_banks;
    std::unique_ptr<MemoryTarget> vmem_port;  // the DMA engines' path into VMEM
    std::vector<Cycle> vreg_ready;
    std::array<Cycle, isa::kScalarRegisters> sreg_ready{};
    std::vector<Pending> pending;  // unit accesses to VMEM still under way
    sc_core::sc_event sem_event;   // a DMA of this core completed
    int scalar_track = 0, vpu_track = 0;
    std::vector<int> dma_tracks;
    Cycle halt_time = 0;
    Cycle work_end = 0;  // when the last unit work the core started ends
    double issue_debt = 0;  // a straggler's fractional issue cycles
    bool done = false;
  };

  void run_core(Core& core);
  void issue_loop(Core& core);
  // Waits until SystemC time reaches t (the core's local time).
  void sync_to(Cycle t);
  // The earliest cycle >= t at which `range` may be read (write = false) or written
  // without overtaking an earlier unit access of the core.
  Cycle interlock(const Core& core, const MemoryRange& range, bool write, Cycle t);
  void core_done(Core& core);
  // The bytes an instruction's access touches (rows of a tile or of MXU operands).
  Footprint footprint(const Core& core, const Effect& effect, const MemoryRange& hull) const;
  void notify_all();
  // Cycles of the chip's clock as SystemC cycles: stretched on a straggler.
  Cycle stretch(int64_t cycles) const;
  // The cycles from one instruction's issue to the next's: 1, or on a straggler 1 / speed
  // on average.
  Cycle issue_gap(Core& core);
  // The host link's transfers of the bindings, one after another from cycle `from`
  // (profile time); returns when the last ends.
  Cycle host_transfers(const std::vector<isa::Binding>& bindings, bool to_device, Cycle from);

  PodContext& pod_;
  FunctionalModel& model_;
  TimingOptions options_;
  UnitLatencies latencies_;  // from the executable's ChipConfig
  double dilation_ = 1;      // 1 / the chip's speed
  Cycle base_ = 0;
  Recorder recorder_;
  std::unique_ptr<HazardChecker> hazards_;
  std::unique_ptr<MemoryTarget> hbm_;
  int hbm_track_ = 0;
  int incoming_track_ = -1;  // remote transfers landing here (profiles only; made at the first)
  int host_track_ = -1;  // with profile_host_link
  Cycle host_in_ = 0;    // the parameters' upload, before the program
  std::vector<std::unique_ptr<Core>> cores_;
  sc_core::sc_event barrier_event_;
  std::unordered_map<uint64_t, size_t> dma_trace_;  // DMA id -> trace record
  std::exception_ptr error_;
  bool aborted_ = false;
  bool finishing_ = false;
  int live_cores_ = 0;
  int64_t instructions_ = 0;
  int64_t dmas_ = 0;
  Cycle last_dma_end_ = 0;
  // Remote transfers whose last byte is in but that land only once every transfer issued
  // before them to the same chip has: transfers between two chips land in issue order.
  struct HeldLanding {
    DmaJob job;
    int engine_core = 0, engine = 0;
    DmaTiming timing;
  };
  std::vector<HeldLanding> held_;
  bool lands_after_earlier(const DmaTransfer& t) const;
  void land(const DmaJob& job, int engine_core, int engine, const DmaTiming& timing);
};

}  // namespace podsim::sim::timing
