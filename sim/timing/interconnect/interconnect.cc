// The built-in interconnect model "torus": ICI links along the torus's routes inside a
// slice, host links and NICs through the DCN switch between slices; event-driven at
// burst granularity with first-come-first-served links and credits (interconnect.h).
#include "sim/timing/interconnect/interconnect.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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
  TorusInterconnect(const Parameters& p, const InterconnectContext& c)
      : torus_(c.torus),
        recorders_(c.recorders),
        aborted_(c.aborted),
        fail_(c.fail),
        clock_hz_(p["clock_hz"]),
        packet_bytes_(std::max<int64_t>(p.count("ici_packet_bytes"), 1)),
        buffer_bytes_(std::max<int64_t>(p.count("ici_buffer_packets"), 1) * packet_bytes_),
        credit_latency_(static_cast<Cycle>(p.ns_as_cycles("ici_credit_latency_ns"))),
        virtual_channels_(static_cast<int>(p.count("ici_virtual_channels"))) {
    const topology::PodConfig& pod = c.pod;
    const int chips = torus_.chips();
    // ICI: link (device, port) at index device * 6 + port, whether or not it exists.
    for (int d = 0; d < chips; ++d)
      for (int port = 0; port < 6; ++port)
        add_link(fmt::format("ICI {} {}->{}", kPortNames[port], d, torus_.neighbour(d, port)),
                 "ici", d, p["ici_link_bandwidth_bytes_per_s"], p["ici_link_latency_ns"]);
    // DCN, only with several slices: each chip's host link up and down, each host's NIC
    // out (with the switch's latency) and in.
    dcn_base_ = static_cast<int>(links_.size());
    if (pod.slices > 1) {
      for (int d = 0; d < chips; ++d) {
        add_link(fmt::format("host link {} up", d), "dcn", d,
                 p["host_link_bandwidth_bytes_per_s"], p["host_link_latency_ns"]);
        add_link(fmt::format("host link {} down", d), "dcn", d,
                 p["host_link_bandwidth_bytes_per_s"], p["host_link_latency_ns"]);
      }
      std::vector<int> owner(static_cast<size_t>(pod.hosts()), 0);  // a chip that shows the NIC
      for (int d = chips - 1; d >= 0; --d) owner[static_cast<size_t>(torus_.host(d))] = d;
      for (int h = 0; h < pod.hosts(); ++h) {
        add_link(fmt::format("DCN host {} out", h), "dcn", owner[static_cast<size_t>(h)],
                 p["dcn_host_bandwidth_bytes_per_s"], p["dcn_latency_ns"]);
        add_link(fmt::format("DCN host {} in", h), "dcn", owner[static_cast<size_t>(h)],
                 p["dcn_host_bandwidth_bytes_per_s"], 0);
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
    const Route& r = route(src, dst);
    if (!r.links.empty()) {
      const auto link = static_cast<size_t>(r.links.front());
      const int from = engine_input(*delivery);
      while (input(link, from, 0).injected >= links_[link].buffer_bytes && !aborted_())
        sc_core::wait(space_);
      input(link, from, 0).injected += bytes;
    }
    uint32_t b = new_burst();
    Burst& burst = bursts_[b];
    burst = Burst{&r, 0, bytes, std::max(ready, now_cycles()), 0, &destination, address, delivery};
    burst.tail = burst.head;
    // Once the last burst is handed over, the sender hears when the source has been read
    // (its bursts' data may come back out of order; the delivery lives until it lands).
    delivery->read_end = std::max(delivery->read_end, burst.head);
    if (--delivery->unsent == 0) schedule(delivery->read_end, Kind::kSourceRead, 0, delivery);
    schedule(burst.head, r.links.empty() ? Kind::kLand : Kind::kArrive, b);
  }

  const std::vector<LinkState>& links() const override { return links_; }
  std::vector<double> statistics() const override { return {stats_.begin(), stats_.end()}; }

 private:
  enum class Kind : uint8_t { kArrive, kLinkFree, kLand, kComplete, kSourceRead, kCredit };
  struct Event {
    Cycle time;
    uint64_t seq;
    Kind kind;
    uint32_t index;  // burst, or link for kLinkFree and kCredit
    RemoteDelivery* delivery = nullptr;  // kSourceRead
    int64_t bytes = 0;                   // kCredit: credits for that many bytes
    uint8_t vc = 0;                      // kCredit: of that virtual channel
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  // The links from one chip to another, and the virtual channel each hop's burst takes
  // into the buffer at that link's far end.
  struct Route {
    std::vector<int32_t> links;
    std::vector<uint8_t> vcs;
  };
  struct Burst {
    const Route* route = nullptr;
    size_t hop = 0;  // the link it waits for or crosses next
    int64_t bytes = 0;
    Cycle head = 0;  // its first byte at the current hop's input
    Cycle tail = 0;  // its last byte there
    MemoryTarget* destination = nullptr;
    int64_t address = 0;
    RemoteDelivery* delivery = nullptr;
  };
  struct Input {
    int from;    // the upstream link, or a DMA engine of this chip (engine_input)
    uint8_t vc;  // the upstream link's virtual channel its bursts wait in (engines: 0)
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
    int64_t buffered[2] = {0, 0};  // bytes sent into each VC's buffer at its far end, not yet
                                   // gone on (or their credits not yet back)
    int track = -1;               // in the owner's recorder, once used
    bool starved = false;         // free, with bursts waiting and no credits for them, since
    Cycle starved_since = 0;
  };

  void add_link(std::string name, std::string category, int owner, double bytes_per_s,
                double latency_ns) {
    LinkState l;
    l.name = std::move(name);
    l.category = std::move(category);
    l.owner = owner;
    l.cycles_per_byte = clock_hz_ / bytes_per_s;
    l.latency = static_cast<Cycle>(ns_to_cycles(latency_ns, clock_hz_));
    l.packet_bytes = packet_bytes_;
    l.buffer_bytes = buffer_bytes_;
    l.credit_latency = l.category == "dcn" ? l.latency : credit_latency_;
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
      published_cycle().store(now, std::memory_order_relaxed);
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
        const auto link = static_cast<size_t>(b.route->links[b.hop]);
        Input& in = b.hop == 0 ? input(link, engine_input(*b.delivery), 0)
                               : input(link, b.route->links[b.hop - 1], b.route->vcs[b.hop - 1]);
        in.waiting.push_back(e.index);
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
      case Kind::kCredit:
        states_[e.index].buffered[e.vc] -= e.bytes;
        serve(e.index, now);
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

  // A link's input of that name and virtual channel, made on first use. Each DMA engine of
  // the chip is an input of its own (negative names), with a buffer's worth of injection
  // of its own; together they are the link's local port (serve()).
  Input& input(size_t link, int from, uint8_t vc) {
    std::vector<Input>& inputs = states_[link].inputs;
    for (Input& in : inputs)
      if (in.from == from && in.vc == vc) return in;
    return inputs.emplace_back(Input{from, vc, {}});
  }
  static int engine_input(const RemoteDelivery& d) { return -1 - (d.engine_core * 64 + d.engine); }

  // Starts a burst waiting for the link if the link is free: the first, in round robin over
  // the inputs, whose virtual channel has room in the buffer behind the link.
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
    // Round robin over the link's input ports with a burst it can send, as a router
    // arbitrates: each upstream link (and virtual channel), and the chip's injection port
    // (position n), in which the chip's DMA engines take turns. (Engines as ports of their
    // own would starve the traffic passing through a chip whose engines all send on the
    // same link.) A burst can go when its channel's buffer behind the link has room (or
    // is empty); one waiting for credits does not hold up the other channel's.
    auto sendable = [&](const Input& in) {
      if (in.waiting.empty()) return false;
      const Burst& b = bursts_[in.waiting.front()];
      const int64_t held = s.buffered[b.route->vcs[b.hop]];
      return held == 0 || held + b.bytes <= l.buffer_bytes;
    };
    const size_t n = s.inputs.size();
    size_t pick = n, port = 0;
    for (size_t k = 0; k <= n && pick == n; ++k) {
      port = (s.next_port + k) % (n + 1);
      if (port < n) {
        if (s.inputs[port].from >= 0 && sendable(s.inputs[port])) pick = port;
        continue;
      }
      for (size_t e = 0; e < n && pick == n; ++e) {
        const size_t i = (s.next_engine + e) % n;
        if (s.inputs[i].from < 0 && sendable(s.inputs[i])) pick = i;
      }
    }
    if (pick == n) {  // no credits yet: a kCredit serves it again
      if (!s.starved) s.starved = true, s.starved_since = now;
      return;
    }
    if (s.starved) {
      s.starved = false;
      stats_[kCreditWait] += static_cast<double>(now - s.starved_since);
    }
    const uint32_t index = s.inputs[pick].waiting.front();
    Burst& b = bursts_[index];
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
    s.buffered[b.route->vcs[b.hop]] += b.bytes;
    stats_[static_cast<int>(link) < dcn_base_ ? kIciBytes : kDcnBytes] += static_cast<double>(b.bytes);
    stats_[kSecondChannelHops] += b.route->vcs[b.hop];
    links_[link].bytes += static_cast<double>(b.bytes);
    links_[link].busy += end - start;
    record(link, start, end, b);
    if (b.hop > 0) release(*b.route, b.hop - 1, b.bytes, now);
    b.head = start + first_packet + l.latency;
    b.tail = end + l.latency;
    ++b.hop;
    if (b.hop < b.route->links.size())
      schedule(b.head, Kind::kArrive, index);
    else
      schedule(b.tail, Kind::kLand, index);
    if (!s.free_event) {  // one pending at a time: it re-arms itself while the link is busy
      s.free_event = true;
      schedule(s.free, Kind::kLinkFree, static_cast<uint32_t>(link));
    }
  }

  // Bytes left the buffer behind the route's hop'th link: credits go back to that link,
  // reaching it credit_latency later.
  void release(const Route& route, size_t hop, int64_t bytes, Cycle now) {
    const auto link = static_cast<size_t>(route.links[hop]);
    const uint8_t vc = route.vcs[hop];
    if (links_[link].credit_latency > 0) {
      schedule(now + links_[link].credit_latency, Kind::kCredit, static_cast<uint32_t>(link),
               nullptr, bytes, vc);
      return;
    }
    states_[link].buffered[vc] -= bytes;
    serve(link, now);
  }

  // The burst's last byte is at the destination chip: write it into the memory.
  void land(uint32_t index, Cycle now) {
    Burst& b = bursts_[index];
    if (!b.route->links.empty()) release(*b.route, b.route->links.size() - 1, b.bytes, now);
    payload_.set_address(static_cast<uint64_t>(b.address));
    payload_.set_data_length(static_cast<unsigned>(b.bytes));
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    b.destination->b_transport(payload_, delay);
    RemoteDelivery* d = b.delivery;
    if (d->timing.landing_start == 0 || now < d->timing.landing_start) d->timing.landing_start = now;
    d->timing.end = std::max<Cycle>(d->timing.end, now + delay.value());
    ++stats_[kBursts];
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

  void schedule(Cycle time, Kind kind, uint32_t index, RemoteDelivery* delivery = nullptr,
                int64_t bytes = 0, uint8_t vc = 0) {
    const bool sooner = events_.empty() || time < events_.top().time;
    events_.push(Event{time, next_seq_++, kind, index, delivery, bytes, vc});
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

  // The route from src to dst, worked out once per pair. Inside a slice, with two virtual
  // channels, a hop takes the second once the route has crossed the wraparound link of
  // the axis it travels along (that link included), and the first again when it turns to
  // another axis: on dimension-order routes no ring of buffers waits on itself. (Twisted
  // tori route greedily and get the same rule, without that guarantee.)
  const Route& route(int src, int dst) {
    const uint64_t key = (static_cast<uint64_t>(src) << 32) | static_cast<uint32_t>(dst);
    auto it = routes_.find(key);
    if (it != routes_.end()) return *it->second;
    auto r = std::make_unique<Route>();
    if (torus_.coord(src).slice == torus_.coord(dst).slice) {
      const topology::PodConfig& pod = torus_.pod();
      int axis = -1;
      uint8_t vc = 0;
      for (const topology::Hop& h : torus_.route(src, dst)) {
        const int a = h.port / 2;
        if (a != axis) vc = 0;
        axis = a;
        const int at = torus_.coord(h.device).xyz[static_cast<size_t>(a)];
        const bool wraps = pod.wraps()[static_cast<size_t>(a)] &&
                           (h.port % 2 == 0 ? at == pod.dims()[static_cast<size_t>(a)] - 1 : at == 0);
        if (wraps && virtual_channels_ > 1) vc = 1;
        r->links.push_back(h.device * 6 + h.port);
        r->vcs.push_back(vc);
      }
    } else {
      const int chips = torus_.chips();
      r->links = {dcn_base_ + 2 * src, dcn_base_ + 2 * chips + 2 * torus_.host(src),
                  dcn_base_ + 2 * chips + 2 * torus_.host(dst) + 1, dcn_base_ + 2 * dst + 1};
      r->vcs.assign(r->links.size(), 0);
    }
    return *routes_.emplace(key, std::move(r)).first->second;
  }

  const topology::Torus& torus_;
  std::vector<Recorder*> recorders_;
  std::function<bool()> aborted_;
  bool stopping_ = false;
  std::function<void(std::exception_ptr)> fail_;
  double clock_hz_;
  int64_t packet_bytes_, buffer_bytes_;
  Cycle credit_latency_;
  int virtual_channels_;
  enum { kBursts, kIciBytes, kDcnBytes, kSecondChannelHops, kCreditWait, kStatistics };
  std::array<double, kStatistics> stats_{};
  std::vector<LinkState> links_;
  std::vector<State> states_;
  int dcn_base_ = 0;
  // Routes are referred to by bursts in flight: each lives at a fixed address.
  std::unordered_map<uint64_t, std::unique_ptr<Route>> routes_;
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
  registry.add(
      "torus",
      {"ICI links along the torus's dimension-order routes, DCN through host links, NICs and a "
       "switch; bursts, credits, dateline virtual channels, round-robin routers",
       {"clock_hz", "ici_link_bandwidth_bytes_per_s", "ici_link_latency_ns", "ici_packet_bytes",
        "ici_buffer_packets", "ici_credit_latency_ns", "ici_virtual_channels",
        "host_link_bandwidth_bytes_per_s", "host_link_latency_ns",
        "dcn_host_bandwidth_bytes_per_s", "dcn_latency_ns"},
       {{"bursts", "count", "bursts delivered"},
        {"ici_bytes", "bytes", "bytes sent over ICI links (a byte crossing k links counts k times)"},
        {"dcn_bytes", "bytes", "bytes sent over host links and NICs"},
        {"second_channel_hops", "count", "hops bursts took on the second virtual channel"},
        {"credit_wait_cycles", "cycles",
         "cycles links were free, with bursts waiting, and no credits to send them"}}},
      [](const Parameters& p, const InterconnectContext& c) -> std::unique_ptr<Interconnect> {
        return std::make_unique<TorusInterconnect>(p, c);
      });
}

}  // namespace podsim::sim::timing
