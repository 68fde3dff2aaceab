// The built-in interconnect model "torus": ICI links along the torus's routes inside a
// slice, host links and NICs through the DCN switch between slices; event-driven at
// burst granularity with first-come-first-served links and credits (interconnect.h).
#include "sim/timing/interconnect/interconnect.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <unordered_map>

#include "sim/timing/unit_latencies.h"

namespace podsim::sim::timing {
namespace {

constexpr const char* kPortNames[6] = {"x+", "x-", "y+", "y-", "z+", "z-"};

class TorusInterconnect final : public Interconnect {
 public:
  explicit TorusInterconnect(const InterconnectContext& c)
      : torus_(c.torus),
        recorders_(c.recorders),
        aborted_(c.aborted),
        fail_(c.fail) {
    const topology::PodConfig& pod = c.pod;
    const int chips = torus_.chips();
    // ICI: link (device, port) at index device * 6 + port, whether or not it exists.
    for (int d = 0; d < chips; ++d)
      for (int port = 0; port < 6; ++port)
        add_link(pod, fmt::format("ICI {} {}->{}", kPortNames[port], d, torus_.neighbour(d, port)),
                 "ici", d, pod.ici_link_bandwidth_bytes_per_s, pod.ici_link_latency_ns);
    // DCN, only with several slices: each chip's host link up and down, each host's NIC
    // out (with the switch's latency) and in.
    dcn_base_ = static_cast<int>(links_.size());
    if (pod.slices > 1) {
      const topology::ChipConfig& chip = pod.chip;
      for (int d = 0; d < chips; ++d) {
        add_link(pod, fmt::format("host link {} up", d), "dcn", d,
                 chip.host_link_bandwidth_bytes_per_s, chip.host_link_latency_ns);
        add_link(pod, fmt::format("host link {} down", d), "dcn", d,
                 chip.host_link_bandwidth_bytes_per_s, chip.host_link_latency_ns);
      }
      std::vector<int> owner(static_cast<size_t>(pod.hosts()), 0);  // a chip that shows the NIC
      for (int d = chips - 1; d >= 0; --d) owner[static_cast<size_t>(torus_.host(d))] = d;
      for (int h = 0; h < pod.hosts(); ++h) {
        add_link(pod, fmt::format("DCN host {} out", h), "dcn", owner[static_cast<size_t>(h)],
                 pod.dcn_host_bandwidth_bytes_per_s, pod.dcn_latency_ns);
        add_link(pod, fmt::format("DCN host {} in", h), "dcn", owner[static_cast<size_t>(h)],
                 pod.dcn_host_bandwidth_bytes_per_s, 0);
      }
    }
    states_.resize(links_.size());
    payload_.set_command(tlm::TLM_WRITE_COMMAND);
  }

  void start() override {
    sc_core::sc_spawn([this] {
      try {
        run();
      } catch (...) {
        fail_(std::current_exception());
      }
    });
  }

  void wake() override {
    wake_.notify(sc_core::SC_ZERO_TIME);
    space_.notify(sc_core::SC_ZERO_TIME);
  }

  void stop() override {
    stopping_ = true;
    wake();
  }

  RemoteDelivery* new_delivery() override {
    if (!free_deliveries_.empty()) {
      RemoteDelivery* d = free_deliveries_.back();
      free_deliveries_.pop_back();
      *d = RemoteDelivery{};
      return d;
    }
    deliveries_.push_back(std::make_unique<RemoteDelivery>());
    return deliveries_.back().get();
  }

  void send(int src, int dst, Cycle ready, int64_t bytes, MemoryTarget& destination,
            int64_t address, RemoteDelivery* delivery) override {
    const std::vector<int32_t>& r = route(src, dst);
    if (!r.empty()) {
      const auto link = static_cast<size_t>(r.front());
      const int from = engine_input(*delivery);
      while (input(link, from).injected >= links_[link].buffer_bytes && !aborted_())
        sc_core::wait(space_);
      input(link, from).injected += bytes;
    }
    uint32_t b = new_burst();
    Burst& burst = bursts_[b];
    burst = Burst{&r, 0, bytes, std::max(ready, now_cycles()), 0, &destination, address, delivery};
    burst.tail = burst.head;
    // Once the last burst is handed over, the sender hears when the source has been read
    // (its bursts' data may come back out of order; the delivery lives until it lands).
    delivery->read_end = std::max(delivery->read_end, burst.head);
    if (--delivery->unsent == 0) schedule(delivery->read_end, Kind::kSourceRead, 0, delivery);
    schedule(burst.head, r.empty() ? Kind::kLand : Kind::kArrive, b);
  }

  const std::vector<LinkState>& links() const override { return links_; }

 private:
  enum class Kind : uint8_t { kArrive, kLinkFree, kLand, kComplete, kSourceRead };
  struct Event {
    Cycle time;
    uint64_t seq;
    Kind kind;
    uint32_t index;  // burst, or link for kLinkFree
    RemoteDelivery* delivery = nullptr;  // kSourceRead
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct Burst {
    const std::vector<int32_t>* route = nullptr;
    size_t hop = 0;  // the link it waits for or crosses next
    int64_t bytes = 0;
    Cycle head = 0;  // its first byte at the current hop's input
    Cycle tail = 0;  // its last byte there
    MemoryTarget* destination = nullptr;
    int64_t address = 0;
    RemoteDelivery* delivery = nullptr;
  };
  struct Input {
    int from;  // the upstream link, or a DMA engine of this chip (engine_input)
    std::deque<uint32_t> waiting;
    int64_t injected = 0;  // an engine's bytes not yet sent on the link
  };
  struct State {
    Cycle free = 0;               // the end of what it is sending
    bool free_event = false;      // a kLinkFree is scheduled
    std::vector<Input> inputs;    // bursts waiting for it, by where they come from
    size_t waiting = 0;           // in all inputs
    size_t next_port = 0;         // round robin over the upstream inputs, then the local port
    size_t next_engine = 0;       // round robin over the engines' inputs within the local port
    int64_t buffered = 0;         // bytes sent into the buffer at its far end, not yet gone on
    int track = -1;               // in the owner's recorder, once used
  };

  void add_link(const topology::PodConfig& pod, std::string name, std::string category, int owner,
                double bytes_per_s, double latency_ns) {
    LinkState l;
    l.name = std::move(name);
    l.category = std::move(category);
    l.owner = owner;
    l.cycles_per_byte = pod.chip.clock_hz / bytes_per_s;
    l.latency = static_cast<Cycle>(ns_to_cycles(latency_ns, pod.chip.clock_hz));
    l.packet_bytes = std::max<int64_t>(pod.ici_packet_bytes, 1);
    l.buffer_bytes = std::max<int64_t>(pod.ici_buffer_packets, 1) * l.packet_bytes;
    if (l.category == "dcn")  // NICs and switches buffer a round trip: DCN is not credit-bound
      l.buffer_bytes = std::max(
          l.buffer_bytes, static_cast<int64_t>(2.0 * static_cast<double>(l.latency + 1) /
                                               l.cycles_per_byte) + l.packet_bytes);
    links_.push_back(std::move(l));
  }

  void run() {
    for (;;) {
      if (aborted_()) return;
      if (events_.empty()) {
        if (stopping_) return;
        sc_core::wait(wake_);
        continue;
      }
      const Cycle now = now_cycles();
      const Event e = events_.top();
      if (e.time > now) {
        sc_core::wait(cycles(e.time - now), wake_);  // an engine may send something sooner
        continue;
      }
      events_.pop();
      handle(e, now);
    }
  }

  void handle(const Event& e, Cycle now) {
    switch (e.kind) {
      case Kind::kArrive: {
        Burst& b = bursts_[e.index];
        const auto link = static_cast<size_t>((*b.route)[b.hop]);
        input(link, b.hop == 0 ? engine_input(*b.delivery) : (*b.route)[b.hop - 1])
            .waiting.push_back(e.index);
        ++states_[link].waiting;
        serve(link, now);
        break;
      }
      case Kind::kLinkFree:
        states_[e.index].free_event = false;
        serve(e.index, now);
        break;
      case Kind::kLand:
        land(e.index, now);
        break;
      case Kind::kSourceRead:
        e.delivery->host->dma_source_read(e.delivery->job, now);
        break;
      case Kind::kComplete: {
        RemoteDelivery* d = bursts_[e.index].delivery;
        free_bursts_.push_back(e.index);
        d->host->dma_completed(d->job, d->engine_core, d->engine, d->timing);
        free_deliveries_.push_back(d);
        break;
      }
    }
  }

  // A link's input of that name, made on first use. Each DMA engine of the chip is an
  // input of its own (negative names), with a buffer's worth of injection of its own;
  // together they are the link's local port (serve()).
  Input& input(size_t link, int from) {
    std::vector<Input>& inputs = states_[link].inputs;
    for (Input& in : inputs)
      if (in.from == from) return in;
    return inputs.emplace_back(Input{from, {}});
  }
  static int engine_input(const RemoteDelivery& d) { return -1 - (d.engine_core * 64 + d.engine); }

  // Starts the burst at the head of the link's queue if the link is free and the buffer
  // behind it has room.
  void serve(size_t link, Cycle now) {
    State& s = states_[link];
    const LinkState& l = links_[link];
    if (s.free > now) {
      if (!s.free_event) {
        s.free_event = true;
        schedule(s.free, Kind::kLinkFree, static_cast<uint32_t>(link));
      }
      return;
    }
    if (s.waiting == 0) return;
    // Round robin over the link's input ports with a burst, as a router arbitrates: each
    // upstream link, and the chip's injection port (position n), in which the chip's DMA
    // engines take turns. (Engines as ports of their own would starve the traffic passing
    // through a chip whose engines all send on the same link.)
    const size_t n = s.inputs.size();
    size_t pick = n, port = 0;
    for (size_t k = 0; k <= n && pick == n; ++k) {
      port = (s.next_port + k) % (n + 1);
      if (port < n) {
        if (s.inputs[port].from >= 0 && !s.inputs[port].waiting.empty()) pick = port;
        continue;
      }
      for (size_t e = 0; e < n && pick == n; ++e) {
        const size_t i = (s.next_engine + e) % n;
        if (s.inputs[i].from < 0 && !s.inputs[i].waiting.empty()) pick = i;
      }
    }
    const uint32_t index = s.inputs[pick].waiting.front();
    Burst& b = bursts_[index];
    if (s.buffered > 0 && s.buffered + b.bytes > l.buffer_bytes) return;  // no credits yet
    s.inputs[pick].waiting.pop_front();
    --s.waiting;
    s.next_port = port + 1;
    if (s.inputs[pick].from < 0) s.next_engine = pick + 1;
    if (b.hop == 0) {
      s.inputs[pick].injected -= b.bytes;
      space_.notify(sc_core::SC_ZERO_TIME);
    }
    const Cycle serial = serial_cycles(l, b.bytes);
    const Cycle first_packet = serial_cycles(l, std::min(b.bytes, l.packet_bytes));
    const Cycle start = now;
    const Cycle end = std::max(start + serial, b.tail + first_packet);
    s.free = end;
    s.buffered += b.bytes;
    links_[link].bytes += static_cast<double>(b.bytes);
    links_[link].busy += end - start;
    record(link, start, end, b);
    if (b.hop > 0) release(static_cast<size_t>((*b.route)[b.hop - 1]), b.bytes, now);
    b.head = start + first_packet + l.latency;
    b.tail = end + l.latency;
    ++b.hop;
    if (b.hop < b.route->size())
      schedule(b.head, Kind::kArrive, index);
    else
      schedule(b.tail, Kind::kLand, index);
    if (!s.free_event) {  // one pending at a time: it re-arms itself while the link is busy
      s.free_event = true;
      schedule(s.free, Kind::kLinkFree, static_cast<uint32_t>(link));
    }
  }

  // Bytes left the buffer behind `link`: credits go back to it.
  void release(size_t link, int64_t bytes, Cycle now) {
    states_[link].buffered -= bytes;
    serve(link, now);
  }

  // The burst's last byte is at the destination chip: write it into the memory.
  void land(uint32_t index, Cycle now) {
    Burst& b = bursts_[index];
    if (!b.route->empty()) release(static_cast<size_t>(b.route->back()), b.bytes, now);
    payload_.set_address(static_cast<uint64_t>(b.address));
    payload_.set_data_length(static_cast<unsigned>(b.bytes));
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    b.destination->b_transport(payload_, delay);
    RemoteDelivery* d = b.delivery;
    d->timing.end = std::max<Cycle>(d->timing.end, now + delay.value());
    if (--d->bursts_left > 0) {
      free_bursts_.push_back(index);
      return;
    }
    schedule(d->timing.end, Kind::kComplete, index);  // the burst carries the delivery on
  }

  static Cycle serial_cycles(const LinkState& l, int64_t bytes) {
    return std::max<Cycle>(
        static_cast<Cycle>(std::ceil(static_cast<double>(bytes) * l.cycles_per_byte - 1e-9)), 1);
  }

  void record(size_t link, Cycle start, Cycle end, const Burst& b) {
    const LinkState& l = links_[link];
    Recorder* recorder = recorders_[static_cast<size_t>(l.owner)];
    if (!recorder || !recorder->profiling()) return;
    State& s = states_[link];
    if (s.track < 0) s.track = recorder->add_track(l.name, l.category, 64);
    recorder->span(s.track, "burst", start, end, b.delivery->job.source_op, 0,
                   static_cast<double>(b.bytes));
    recorder->link_traffic(start, end, static_cast<double>(b.bytes));
  }

  void schedule(Cycle time, Kind kind, uint32_t index, RemoteDelivery* delivery = nullptr) {
    const bool sooner = events_.empty() || time < events_.top().time;
    events_.push(Event{time, next_seq_++, kind, index, delivery});
    if (sooner) wake_.notify(sc_core::SC_ZERO_TIME);
  }

  uint32_t new_burst() {
    if (!free_bursts_.empty()) {
      uint32_t b = free_bursts_.back();
      free_bursts_.pop_back();
      return b;
    }
    bursts_.emplace_back();
    return static_cast<uint32_t>(bursts_.size() - 1);
  }

  // Link indices from src to dst, computed once per pair.
  const std::vector<int32_t>& route(int src, int dst) {
    const uint64_t key = (static_cast<uint64_t>(src) << 32) | static_cast<uint32_t>(dst);
    auto it = routes_.find(key);
    if (it != routes_.end()) return *it->second;
    auto r = std::make_unique<std::vector<int32_t>>();
    if (torus_.coord(src).slice == torus_.coord(dst).slice) {
      for (const topology::Hop& h : torus_.route(src, dst)) r->push_back(h.device * 6 + h.port);
    } else {
      const int chips = torus_.chips();
      *r = {dcn_base_ + 2 * src, dcn_base_ + 2 * chips + 2 * torus_.host(src),
            dcn_base_ + 2 * chips + 2 * torus_.host(dst) + 1, dcn_base_ + 2 * dst + 1};
    }
    return *routes_.emplace(key, std::move(r)).first->second;
  }

  const topology::Torus& torus_;
  std::vector<Recorder*> recorders_;
  std::function<bool()> aborted_;
  bool stopping_ = false;
  std::function<void(std::exception_ptr)> fail_;
  std::vector<LinkState> links_;
  std::vector<State> states_;
  int dcn_base_ = 0;
  // Routes are referred to by bursts in flight: each lives at a fixed address.
  std::unordered_map<uint64_t, std::unique_ptr<std::vector<int32_t>>> routes_;
  std::vector<Burst> bursts_;
  std::vector<uint32_t> free_bursts_;
  std::vector<std::unique_ptr<RemoteDelivery>> deliveries_;
  std::vector<RemoteDelivery*> free_deliveries_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t next_seq_ = 0;
  tlm::tlm_generic_payload payload_;
  sc_core::sc_event wake_, space_;
};

}  // namespace

InterconnectRegistry& interconnect_models() {
  static InterconnectRegistry r("interconnect");
  return r;
}

void register_torus_interconnect(InterconnectRegistry& registry) {
  registry.add("torus", [](const InterconnectContext& c) -> std::unique_ptr<Interconnect> {
    return std::make_unique<TorusInterconnect>(c);
  });
}

}  // namespace podsim::sim::timing
