// Internal to sim/timing: the pod's interconnect, wired from a PodConfig. Inside a slice,
// ICI links (one per port and direction) carry remote DMA bursts along the torus's
// dimension-order routes (topology/torus.h); between slices a burst goes over DCN: the
// source chip's host link, its host's NIC, the switch, the destination host's NIC and
// the destination chip's host link.
//
// Each link direction is a serial channel: bandwidth (cycles per byte), latency (wire and
// router, declared where the link is wired: the lookahead a parallel simulation would
// use), a flow-control unit (packet) and a receive buffer of buffer_packets packets at
// its far end. The model is event-driven at burst granularity, in simulated time:
// - A link sends the bursts waiting for it one at a time, taking its input ports (each
//   upstream link, and the chip's injection port, in which the chip's DMA engines take
//   turns) in round robin and each input's bursts in the order they arrived, so flows
//   that share a link interleave and share its bandwidth, traffic passing through a chip
//   as much as the chip's own.
// - Cut-through: a burst reaches the next hop when its first packet has crossed (plus
//   the latency); the next link cannot finish it before its last packet has arrived.
// - Credits: a link starts a burst only when the receive buffer behind it has room for
//   it (or is empty); the buffer drains as the next link sends the burst on, or as it is
//   written into the destination memory, and the credits reach the link
//   ici_credit_latency_ns later (over the reverse link; DCN links: their own latency). A
//   busy link therefore backs traffic up hop by hop, and into the DMA engines: an engine
//   waits (send() blocks in simulated time) while it has a buffer's worth of bursts
//   queued for that link (each engine's injection port has a buffer of its own, like
//   each link's far end, and is an input of the link). A buffer smaller than the credit
//   loop (a burst's serialisation, the hop, the credit's way back) keeps a link below its
//   bandwidth, as in hardware. DCN links (NICs, switch) always buffer a round trip.
// - Virtual channels: with PodConfig::ici_virtual_channels 2 each ICI link's buffer is
//   one per channel (each of ici_buffer_packets), and a burst takes the second channel
//   once its route has crossed the wraparound link of the axis it travels along (the
//   dateline), the first again on the next axis. Dimension-order routes then have no
//   cycle of buffers waiting on each other; with one channel a ring of full buffers
//   stalls for good (reported as a deadlock). A link takes a burst from any input whose
//   channel has credits: one channel waiting for credits does not block the other.
// Once the engine has handed over a transfer's last burst and its data has been read
// from the source, the interconnect calls the issuing chip's dma_source_read() (the
// source may be reused: the sender's semaphore); the transfer lands when its last burst
// has been written into the destination chip's memory, and the interconnect then calls
// the issuing chip's dma_completed() (the destination's semaphore).
//
// Interconnect models register by name (Registry in unit_models.h); "torus" is this one.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/timing/recorder.h"
#include "sim/timing/unit_models.h"
#include "topology/pod_config.h"
#include "topology/torus.h"

namespace podsim::sim::timing {

// One direction of one link: its figures and its traffic so far.
struct LinkState {
  std::string name;      // "ICI x+ 0->1", "DCN host 0 out"
  std::string category;  // "ici" or "dcn"
  int owner = 0;         // the chip whose profile shows it
  double cycles_per_byte = 0;
  Cycle latency = 0;
  int64_t packet_bytes = 256;
  int64_t buffer_bytes = 0;  // per virtual channel
  Cycle credit_latency = 0;  // credits' way back
  double bytes = 0;  // sent so far
  Cycle busy = 0;    // cycles spent sending
};

// A remote transfer on its way: its bursts land one by one; when the last has, the
// interconnect calls host.dma_completed() at the time it was written.
struct RemoteDelivery {
  DmaHost* host = nullptr;
  DmaJob job;
  int engine_core = 0;
  int engine = 0;
  DmaTiming timing;
  int64_t bursts_left = 0;  // set by the engine before it sends the first
  int64_t unsent = 0;       // likewise: bursts the engine has not handed over yet
  Cycle read_end = 0;       // the last handed-over burst's data read from the source
};

class Interconnect {
 public:
  virtual ~Interconnect() = default;
  virtual void start() = 0;  // spawns its process (once per run)
  virtual void wake() = 0;   // the run was aborted: re-check
  // Once the kernel has nothing left to do: lets the process end (run sc_start() again).
  virtual void stop() = 0;
  // A delivery record for one remote transfer, owned by the interconnect until it lands.
  virtual RemoteDelivery* new_delivery() = 0;
  // Hands a burst of `bytes` from chip src to the interconnect, its data there from
  // `ready`; it lands in `destination` (chip dst's memory) at `address`. Called from a
  // DMA engine's process: waits in simulated time while src's link has no room.
  virtual void send(int src, int dst, Cycle ready, int64_t bytes, MemoryTarget& destination,
                    int64_t address, RemoteDelivery* delivery) = 0;
  virtual const std::vector<LinkState>& links() const = 0;
  virtual std::vector<double> statistics() const { return {}; }  // as declared
};

// What an interconnect model is built from: the pod, its wiring, where each chip records
// its tracks (recorders[device]), whether the run was aborted, and where an error goes.
struct InterconnectContext {
  const topology::PodConfig& pod;
  const topology::Torus& torus;
  std::vector<Recorder*> recorders;
  std::function<bool()> aborted;
  std::function<void(std::exception_ptr)> fail;
};

using InterconnectRegistry = Registry<Interconnect, const InterconnectContext&>;
InterconnectRegistry& interconnect_models();
void register_torus_interconnect(InterconnectRegistry& registry);

}  // namespace podsim::sim::timing
