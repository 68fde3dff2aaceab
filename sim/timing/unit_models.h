// Internal to sim/timing: the interfaces of the chip's unit models and their registries.
// A model is an implementation file that registers a factory under a name (as Ramulator 2
// does with its interfaces and implementations); TimingOptions picks one per kind by
// name, so another MXU or HBM model is a new file plus one line in
// register_builtin_unit_models(). Where it registers, a model declares what it reads and
// what it counts (ModelDeclaration): the configuration fields it takes by name, which is
// the only way its factory gets figures (Parameters), and its statistics, which a run
// collects (`podsim models` lists every model's; `podsim run --stats` prints them).
//
// Time: SystemC time counts cycles of the chip's clock (the kernel's resolution is 1 ns
// and one cycle is 1 ns of SystemC time), so every delay is an exact integer. Times
// passed around are absolute SystemC values (Cycle).
//
// Style of each kind: MXU and VPU have no behaviour of their own, so they are
// loosely-timed objects the issuing core calls with the time it wants them (the
// annotated-delay style of TLM-2.0) and that answer when the work starts and ends while
// accounting their own occupancy. DMA engines are SystemC processes that wait for their
// transfers' times. HBM and the VMEM DMA ports are TLM-2.0 targets
// (tlm_blocking_transport_if): an engine's burst is a generic payload whose annotated
// delay goes in as the request time and comes out as the completion time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "common/error.h"
#include "sim/functional/functional_model.h"
#include "sim/timing/timed_chip.h"
#include "sim/timing/unit_latencies.h"
#include "topology/pod_config.h"

namespace podsim::sim::timing {

using Cycle = uint64_t;

inline Cycle now_cycles() { return sc_core::sc_time_stamp().value(); }
// The simulated time as the cores and links last saw it, for a progress line read from
// another thread (TimingOptions::progress): they store now_cycles() into it as they go.
std::atomic<Cycle>& published_cycle();
inline sc_core::sc_time cycles(Cycle c) { return sc_core::sc_time::from_value(c); }

// What a unit says about one piece of work: it starts at `start`, occupies the unit until
// `busy_end` (the span drawn on the unit's track) and its result is there at `done`.
struct UnitTiming {
  Cycle start = 0;
  Cycle busy_end = 0;
  Cycle done = 0;
};

// Where a unit sits in its chip.
struct UnitContext {
  int core = 0;
  int index = 0;  // MXU or DMA engine index within the core
};

// A statistic a model counts over a run, and what a model declares where it registers
// (as SST's components and Ramulator 2's implementations do): a line on what it models,
// the configuration fields it reads (by their names in the pod's and the chip's field
// tables, topology::find_field) and its statistics, in the order statistics() returns
// them.
struct StatisticDeclaration {
  std::string_view name;
  std::string_view unit;  // "count", "cycles", "bytes"
  std::string_view meaning;
};
struct ModelDeclaration {
  std::string_view summary;
  std::vector<std::string_view> parameters;
  std::vector<StatisticDeclaration> statistics;
};

// A model's figures: the fields it declared, read from the run's pod (a pod of one chip
// for a single-chip run: its chip's fields). Reading a field the model did not declare is
// a podsim::Error, so a declaration is complete; a declared name that neither table has
// is one when the model is made.
class Parameters {
 public:
  Parameters(const topology::PodConfig& pod, std::string model, const ModelDeclaration& declaration);
  double operator[](std::string_view name) const;
  int64_t count(std::string_view name) const { return static_cast<int64_t>((*this)[name]); }
  // A field in nanoseconds as whole cycles of the chip's clock, rounded up.
  int64_t ns_as_cycles(std::string_view name) const {
    return ns_to_cycles((*this)[name], pod_.chip.clock_hz);
  }

 private:
  const topology::PodConfig& pod_;
  std::string model_;
  const ModelDeclaration& declaration_;
};

// One systolic matrix unit. Calls come in program order with t = the earliest cycle the
// core can hand the work over; the model applies its own occupancy on top.
class MxuModel {
 public:
  virtual ~MxuModel() = default;
  virtual UnitTiming load_weights(Cycle t, int64_t k_rows) = 0;  // mldw
  // mmul (waits for its weights); `accumulate` false starts a new output tile.
  virtual UnitTiming multiply(Cycle t, int64_t m_rows, bool accumulate) = 0;
  virtual UnitTiming pop(Cycle t, int64_t m_rows) = 0;  // mpop (waits for the result)
  virtual std::vector<double> statistics() const { return {}; }  // as declared
  // Whether an mpop leaves issue free (the core hands it to the MXU's result path and
  // goes on, as with a DMA) rather than holding it until the pop starts.
  virtual bool pop_is_queued() const { return false; }
};

enum class VectorClass : uint8_t { kMemory, kSimple, kTranscendental, kCrossLane };

class VpuModel {
 public:
  virtual ~VpuModel() = default;
  // An op whose operands are ready at t; `registers` is how many vector registers it
  // moves (vxpose moves a block), or for loads and stores the cycles VMEM's banks need.
  virtual UnitTiming issue(Cycle t, VectorClass kind, int64_t registers) = 0;
  virtual std::vector<double> statistics() const { return {}; }  // as declared
};

// A memory as a TLM-2.0 target: b_transport(payload, delay) takes the request time as
// now + delay and returns with delay = completion - now. The payload's address is
// absolute in the memory, its length the burst's bytes; no data moves (the functional
// model copies). Bytes served are reported to `on_traffic` for the bandwidth counter.
class MemoryTarget : public tlm::tlm_blocking_transport_if<tlm::tlm_generic_payload> {
 public:
  using TrafficHook = std::function<void(Cycle start, Cycle end, double bytes)>;
  void set_traffic_hook(TrafficHook hook) { on_traffic_ = std::move(hook); }
  virtual std::vector<double> statistics() const { return {}; }  // as declared (HBM models)

 protected:
  TrafficHook on_traffic_;
};

// A DMA transfer handed to an engine.
struct DmaJob {
  DmaTransfer transfer;
  Cycle issue = 0;  // when the core issued it
  Cycle ready = 0;  // earliest start (issue + setup, after interlocks)
  int32_t source_op = -1;
};

// When a transfer's parts happen: the engine works on it over [start, busy_end) (the
// span drawn on its track), it lands at `end`, and its HBM traffic lies in
// [hbm_start, hbm_end) (equal when it has none).
struct DmaTiming {
  Cycle start = 0;
  Cycle busy_end = 0;
  Cycle end = 0;
  Cycle hbm_start = 0;
  Cycle hbm_end = 0;
  // A remote transfer: handed to the interconnect, which completes it when it lands (end
  // is not known when run_bursts returns), its first burst landing at landing_start.
  bool remote = false;
  Cycle landing_start = 0;
};

class Interconnect;  // interconnect.h

// What an engine needs from the run: the memories, and whom to tell.
class DmaHost {
 public:
  virtual ~DmaHost() = default;
  virtual MemoryTarget& memory(isa::MemorySpace space, int core) = 0;
  // dma.remote: this chip's device id, the destination's memory on chip t.dst_device, and
  // the interconnect between them.
  virtual int device() const = 0;
  virtual MemoryTarget& remote_memory(const DmaTransfer& t) = 0;
  virtual Interconnect* interconnect() = 0;
  // Called by the engine's process at timing.end (SystemC time now): performs the copy
  // and signals the semaphore (dma.remote: the destination's, by the interconnect).
  virtual void dma_completed(const DmaJob& job, int engine_core, int engine,
                             const DmaTiming& timing) = 0;
  // dma.remote, by the interconnect once the source has been read (SystemC time now):
  // the copy and the issuing core's semaphore.
  virtual void dma_source_read(const DmaJob& job, Cycle cycle) = 0;
  virtual bool aborted() const = 0;
  virtual bool finishing() const = 0;  // every core halted: drain and stop
  virtual void fail_run(std::exception_ptr error) = 0;
};

class DmaEngineModel {
 public:
  virtual ~DmaEngineModel() = default;
  virtual void submit(DmaJob job) = 0;  // from the issuing core's process
  virtual size_t queued() const = 0;    // transfers submitted and not started yet
  virtual void start() = 0;             // spawns its process (once per run)
  virtual void wake() = 0;              // re-check finishing/aborted
  virtual std::vector<double> statistics() const { return {}; }  // as declared
};

template <class Model, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Model>(const Parameters&, Args...)>;
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }
  void add(const std::string& name, ModelDeclaration declaration, Factory factory) {
    entries_[name] = Entry{std::move(declaration), std::move(factory)};
  }
  // The model `name`, its parameters read from `pod`.
  std::unique_ptr<Model> make(const std::string& name, const topology::PodConfig& pod,
                              Args... args) const {
    const Entry& e = entry(name);
    return e.factory(Parameters(pod, kind_ + " model '" + name + "'", e.declaration), args...);
  }
  const ModelDeclaration& declaration(const std::string& name) const {
    return entry(name).declaration;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [n, e] : entries_) out.push_back(n);
    return out;
  }

 private:
  struct Entry {
    ModelDeclaration declaration;
    Factory factory;
  };
  const Entry& entry(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::string known;
      for (const auto& [n, e] : entries_) known += (known.empty() ? "" : ", ") + n;
      fail("unknown {} model '{}'; registered: {}", kind_, name, known);
    }
    return it->second;
  }
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

// Appends a model instance's statistics (values in the order its declaration lists them)
// as StatisticValues of `component`; podsim::Error when the counts disagree.
void add_statistics(const std::string& kind, const std::string& model,
                    const ModelDeclaration& declaration, std::string component,
                    const std::vector<double>& values, std::vector<StatisticValue>& out);
template <class Registry>
void add_statistics(const Registry& registry, const std::string& model, std::string component,
                    const std::vector<double>& values, std::vector<StatisticValue>& out) {
  add_statistics(registry.kind(), model, registry.declaration(model), std::move(component), values,
                 out);
}

using MxuRegistry = Registry<MxuModel, const UnitContext&>;
using VpuRegistry = Registry<VpuModel, const UnitContext&>;
using DmaRegistry = Registry<DmaEngineModel, const UnitContext&, DmaHost&>;
// HBM of a chip (core and index of the context are 0).
using HbmRegistry = Registry<MemoryTarget, const UnitContext&>;

MxuRegistry& mxu_models();
VpuRegistry& vpu_models();
DmaRegistry& dma_models();
HbmRegistry& hbm_models();

// The built-in models; called once before the first run.
void register_builtin_unit_models();
void register_systolic_mxu(MxuRegistry& registry);
void register_inorder_vpu(VpuRegistry& registry);
void register_burst_dma(DmaRegistry& registry);
void register_pipelined_dma(DmaRegistry& registry);

// The bursts of one transfer starting at `start` (>= SystemC time): requested one per
// cycle from the source memory, each written to the destination when it arrived. Fills
// everything but busy_end. A remote transfer's bursts go to the interconnect instead
// (the call waits in simulated time while its first link has no room), which calls
// host.dma_completed(job, engine_core, engine, ...) when the last has landed: the result
// has `remote` set and its busy_end filled (when the last burst was handed over).
DmaTiming run_bursts(DmaHost& host, const DmaJob& job, Cycle start, int64_t burst_bytes,
                     int engine_core, int engine);

// What every DMA engine model reads and counts (with its own summary), and its counters.
ModelDeclaration dma_engine_declaration(std::string_view summary);
struct DmaEngineStatistics {
  // In the order dma_engine_declaration() lists them.
  enum { kTransfers, kRemoteTransfers, kBytes, kBusyCycles, kQueueCycles, kCount };
  // A transfer the engine started at `start` and worked on until t.busy_end.
  void count(const DmaJob& job, const DmaTiming& t, Cycle start) {
    ++values[t.remote ? kRemoteTransfers : kTransfers];
    values[kBytes] += static_cast<double>(job.transfer.bytes);
    values[kBusyCycles] += static_cast<double>(t.busy_end - start);
    values[kQueueCycles] += static_cast<double>(start - job.ready);
  }
  std::vector<double> values = std::vector<double>(kCount, 0.0);
};
void register_channel_hbm(HbmRegistry& registry);

}  // namespace podsim::sim::timing
