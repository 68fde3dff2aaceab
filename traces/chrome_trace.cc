// Chrome trace JSON: the writer streams the text with fmt (profiles of long runs have
// millions of spans, too many for a DOM), the reader parses with nlohmann::json.
#include "traces/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "traces/atomic_file.h"

namespace podsim::traces {
namespace {

using Json = nlohmann::json;

std::string describe_op(const Profile& profile, int32_t source_op) {
  if (source_op == kNoSourceOp) return "no source op";
  return fmt::format("source op {}", profile.source_ops[source_op].name);
}

std::string describe_span(const Profile& profile, const Span& s) {
  return fmt::format("span '{}' [{}, {}) ({})", s.name, s.start, s.end,
                     describe_op(profile, s.source_op));
}

// Spans of a track in the order viewers need (by start, enclosing span first), checking
// that each is nested in or disjoint from the others.
std::vector<size_t> nesting_order(const Profile& profile, const ChipProfile& chip,
                                  const Track& track) {
  std::vector<size_t> order(track.spans.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Span& x = track.spans[a];
    const Span& y = track.spans[b];
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  std::vector<size_t> open;  // enclosing spans of the current one, innermost last
  for (size_t i : order) {
    const Span& s = track.spans[i];
    while (!open.empty() && track.spans[open.back()].end <= s.start) open.pop_back();
    if (!open.empty() && s.end > track.spans[open.back()].end)
      fail(
          "chip '{}', track '{}': {} partially overlaps {}; spans on one track must be nested or "
          "disjoint (Perfetto cannot draw otherwise): put concurrent work on separate tracks",
          chip.name, track.name, describe_span(profile, track.spans[open.back()]),
          describe_span(profile, s));
    open.push_back(i);
  }
  return order;
}

// Viewers name a counter track "<event name> <arg key>", so the unit is the key:
// "HBM bandwidth bytes/s".
std::string_view counter_arg_key(const Counter& counter) {
  return counter.unit.empty() ? std::string_view("value") : std::string_view(counter.unit);
}

void validate_chip(const Profile& profile, const ChipProfile& chip) {
  if (!(chip.clock_hz > 0) || !std::isfinite(chip.clock_hz))
    fail("chip '{}': clock_hz is {}; it must be a positive frequency to turn cycles into time",
         chip.name, chip.clock_hz);
  if (!std::isfinite(chip.peaks.flops_per_cycle) || chip.peaks.flops_per_cycle < 0 ||
      !std::isfinite(chip.peaks.hbm_bytes_per_cycle) || chip.peaks.hbm_bytes_per_cycle < 0)
    fail("chip '{}': peak figures must be finite and >= 0 (0 means unknown)", chip.name);
  for (const Track& track : chip.tracks) {
    for (const Span& s : track.spans) {
      if (s.end < s.start)
        fail("chip '{}', track '{}': span '{}' ends (cycle {}) before it starts (cycle {})",
             chip.name, track.name, s.name, s.end, s.start);
      if (s.end > chip.total_cycles)
        fail("chip '{}', track '{}': span '{}' ends at cycle {}, after the run's total_cycles {}",
             chip.name, track.name, s.name, s.end, chip.total_cycles);
      if (s.source_op != kNoSourceOp &&
          (s.source_op < 0 || static_cast<size_t>(s.source_op) >= profile.source_ops.size()))
        fail(
            "chip '{}', track '{}': span '{}' names source op {}, but the profile has {} source "
            "ops",
            chip.name, track.name, s.name, s.source_op, profile.source_ops.size());
      if (!std::isfinite(s.flops) || s.flops < 0 || !std::isfinite(s.bytes) || s.bytes < 0)
        fail(
            "chip '{}', track '{}': span '{}' has flops {} and bytes {}; both must be finite and "
            ">= 0",
            chip.name, track.name, s.name, s.flops, s.bytes);
    }
    nesting_order(profile, chip, track);
  }
  for (size_t i = 0; i < chip.counters.size(); ++i) {
    const Counter& c = chip.counters[i];
    for (size_t j = 0; j < i; ++j)
      if (chip.counters[j].name == c.name)
        fail("chip '{}': two counters named '{}'; viewers would merge them", chip.name, c.name);
    for (size_t k = 0; k < c.samples.size(); ++k) {
      if (!std::isfinite(c.samples[k].value))
        fail("chip '{}', counter '{}': sample at cycle {} is not finite", chip.name, c.name,
             c.samples[k].cycle);
      if (k > 0 && c.samples[k].cycle < c.samples[k - 1].cycle)
        fail("chip '{}', counter '{}': samples are not sorted by cycle (cycle {} after {})",
             chip.name, c.name, c.samples[k].cycle, c.samples[k - 1].cycle);
    }
  }
}

// Perfetto keeps time in whole nanoseconds and rounds ts and dur separately, which can
// push a nested span past its parent's end. Rounding each cycle boundary to a nanosecond
// once (a monotonic map) and writing exact decimal microseconds keeps nesting intact;
// exact cycles travel in args.
uint64_t cycle_to_ns(uint64_t cycle, double clock_hz) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(cycle) * 1e9 / clock_hz));
}

void append_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char ch : s) {
    switch (ch) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(ch));
        else
          out.push_back(ch);
    }
  }
  out.push_back('"');
}

// ,"op_name":...,"source_file":...,"source_line":N: those of the op's metadata it has.
void append_metadata(fmt::memory_buffer& out, const SourceOp& op) {
  if (!op.op_name.empty()) {
    out.append(std::string_view(",\"op_name\":"));
    append_string(out, op.op_name);
  }
  if (!op.source_file.empty() || op.source_line != 0) {
    out.append(std::string_view(",\"source_file\":"));
    append_string(out, op.source_file);
    fmt::format_to(std::back_inserter(out), ",\"source_line\":{}", op.source_line);
  }
}

void append_structure(fmt::memory_buffer& out, const Profile& profile) {
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{{\"version\":{},\"program\":", kChromeTraceFormatVersion);
  append_string(out, profile.program);
  out.append(std::string_view(",\"source_ops\":["));
  for (size_t i = 0; i < profile.source_ops.size(); ++i) {
    out.append(std::string_view(i ? ",{\"name\":" : "{\"name\":"));
    append_string(out, profile.source_ops[i].name);
    out.append(std::string_view(",\"opcode\":"));
    append_string(out, profile.source_ops[i].opcode);
    append_metadata(out, profile.source_ops[i]);
    out.push_back('}');
  }
  out.append(std::string_view("],\"chips\":["));
  for (size_t c = 0; c < profile.chips.size(); ++c) {
    const ChipProfile& chip = profile.chips[c];
    out.append(std::string_view(c ? ",{\"name\":" : "{\"name\":"));
    append_string(out, chip.name);
    fmt::format_to(
        to,
        ",\"clock_hz\":{},\"flops_per_cycle\":{},\"hbm_bytes_per_cycle\":{},\"total_cycles\":{}",
        chip.clock_hz, chip.peaks.flops_per_cycle, chip.peaks.hbm_bytes_per_cycle,
        chip.total_cycles);
    out.append(std::string_view(",\"tracks\":["));
    for (size_t t = 0; t < chip.tracks.size(); ++t) {
      out.append(std::string_view(t ? ",{\"name\":" : "{\"name\":"));
      append_string(out, chip.tracks[t].name);
      out.append(std::string_view(",\"category\":"));
      append_string(out, chip.tracks[t].category);
      out.push_back('}');
    }
    out.append(std::string_view("],\"counters\":["));
    for (size_t k = 0; k < chip.counters.size(); ++k) {
      out.append(std::string_view(k ? ",{\"name\":" : "{\"name\":"));
      append_string(out, chip.counters[k].name);
      out.append(std::string_view(",\"unit\":"));
      append_string(out, chip.counters[k].unit);
      out.append(std::string_view(",\"samples\":["));
      for (size_t i = 0; i < chip.counters[k].samples.size(); ++i)
        fmt::format_to(to, "{}[{},{}]", i ? "," : "", chip.counters[k].samples[i].cycle,
                       chip.counters[k].samples[i].value);
      out.append(std::string_view("]}"));
    }
    out.append(std::string_view("]}"));
  }
  out.append(std::string_view("]"));
  if (!profile.flows.empty()) {
    out.append(std::string_view(",\"flows\":["));
    for (size_t k = 0; k < profile.flows.size(); ++k) {
      const Flow& f = profile.flows[k];
      out.append(std::string_view(k ? ",[" : "["));
      append_string(out, f.name);
      fmt::format_to(to, ",{},{},{},{},{},{}]", f.from.chip, f.from.track, f.from.cycle, f.to.chip, f.to.track,
                     f.to.cycle);
    }
    out.push_back(']');
  }
  out.push_back('}');
}

// Appends the JSON of a validated profile to out, calling drain whenever out holds more
// than a megabyte (so that a file writer never holds the whole text).
void emit_json(const Profile& profile, fmt::memory_buffer& out,
               const std::function<void(fmt::memory_buffer&)>& drain) {
  constexpr size_t kDrainBytes = size_t{1} << 20;
  auto to = std::back_inserter(out);
  // No displayTimeUnit: Perfetto takes "ns" there to mean that ts is in nanoseconds.
  out.append(std::string_view("{\"otherData\":{\"podsim\":"));
  append_structure(out, profile);
  out.append(std::string_view("},\n\"traceEvents\":["));
  bool first = true;
  auto begin_event = [&] {
    if (out.size() > kDrainBytes) drain(out);
    out.append(std::string_view(first ? "\n{" : ",\n{"));
    first = false;
  };
  for (size_t c = 0; c < profile.chips.size(); ++c) {
    const ChipProfile& chip = profile.chips[c];
    const int pid = static_cast<int>(c) + 1;
    auto metadata = [&](int tid, std::string_view kind, std::string_view name, size_t sort_index) {
      begin_event();
      fmt::format_to(
          to, "\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"{}_name\",\"args\":{{\"name\":", pid,
          tid, kind);
      append_string(out, name);
      out.append(std::string_view("}}"));
      begin_event();
      fmt::format_to(to,
                     "\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"{}_sort_index\",\"args\":{{"
                     "\"sort_index\":{}}}}}",
                     pid, tid, kind, sort_index);
    };
    metadata(0, "process", chip.name, c);
    for (size_t t = 0; t < chip.tracks.size(); ++t)
      metadata(static_cast<int>(t) + 1, "thread", chip.tracks[t].name, t);
    for (size_t t = 0; t < chip.tracks.size(); ++t) {
      const Track& track = chip.tracks[t];
      for (size_t i : nesting_order(profile, chip, track)) {
        const Span& s = track.spans[i];
        const uint64_t start_ns = cycle_to_ns(s.start, chip.clock_hz);
        begin_event();
        const uint64_t dur_ns = cycle_to_ns(s.end, chip.clock_hz) - start_ns;
        fmt::format_to(
            to,
            "\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{}.{:03},\"dur\":{}.{:03},\"name\":", pid,
            t + 1, start_ns / 1000, start_ns % 1000, dur_ns / 1000, dur_ns % 1000);
        append_string(out, s.name);
        out.append(std::string_view(",\"cat\":"));
        append_string(out, track.category);
        out.append(std::string_view(",\"args\":{\"op\":"));
        append_string(out, s.source_op == kNoSourceOp ? "" : profile.source_ops[s.source_op].name);
        out.append(std::string_view(",\"opcode\":"));
        append_string(out,
                      s.source_op == kNoSourceOp ? "" : profile.source_ops[s.source_op].opcode);
        if (s.source_op != kNoSourceOp) append_metadata(out, profile.source_ops[s.source_op]);
        fmt::format_to(
            to, ",\"source_op\":{},\"start_cycle\":{},\"cycles\":{},\"flops\":{},\"bytes\":{}}}}}",
            s.source_op, s.start, s.end - s.start, s.flops, s.bytes);
      }
    }
    for (const Counter& counter : chip.counters) {
      for (const CounterSample& sample : counter.samples) {
        begin_event();
        const uint64_t ns = cycle_to_ns(sample.cycle, chip.clock_hz);
        fmt::format_to(to, "\"ph\":\"C\",\"pid\":{},\"tid\":0,\"ts\":{}.{:03},\"name\":", pid,
                       ns / 1000, ns % 1000);
        append_string(out, counter.name);
        out.append(std::string_view(",\"args\":{"));
        append_string(out, counter_arg_key(counter));
        fmt::format_to(to, ":{}}}}}", sample.value);
      }
    }
  }
  // Flows: a start bound to the span enclosing it on the sending track, an end to the one
  // enclosing it on the receiving track.
  for (size_t k = 0; k < profile.flows.size(); ++k) {
    const Flow& f = profile.flows[k];
    for (const FlowEnd* end : {&f.from, &f.to}) {
      begin_event();
      const uint64_t ns = cycle_to_ns(end->cycle, profile.chips[static_cast<size_t>(end->chip)].clock_hz);
      fmt::format_to(to, "\"ph\":\"{}\",\"bp\":\"e\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}.{:03},"
                         "\"cat\":\"flow\",\"name\":",
                     end == &f.from ? 's' : 'f', k + 1, end->chip + 1, end->track + 1, ns / 1000, ns % 1000);
      append_string(out, f.name);
      out.push_back('}');
    }
  }
  out.append(std::string_view("\n]}\n"));
  drain(out);
}

}  // namespace

void validate_profile(const Profile& profile) {
  for (const ChipProfile& chip : profile.chips) validate_chip(profile, chip);
  for (const Flow& f : profile.flows)
    for (const FlowEnd* end : {&f.from, &f.to}) {
      if (end->chip < 0 || static_cast<size_t>(end->chip) >= profile.chips.size())
        fail("flow '{}': chip {} is not in the profile ({} chips)", f.name, end->chip, profile.chips.size());
      const ChipProfile& chip = profile.chips[static_cast<size_t>(end->chip)];
      if (end->track < 0 || static_cast<size_t>(end->track) >= chip.tracks.size())
        fail("flow '{}': chip '{}' has no track {} ({} tracks)", f.name, chip.name, end->track, chip.tracks.size());
      if (end->cycle > chip.total_cycles)
        fail("flow '{}': cycle {} is after chip '{}''s total_cycles {}", f.name, end->cycle, chip.name,
             chip.total_cycles);
    }
}

std::string chrome_trace_json(const Profile& profile) {
  validate_profile(profile);
  std::string text;
  fmt::memory_buffer out;
  emit_json(profile, out, [&](fmt::memory_buffer& buf) {
    text.append(buf.data(), buf.size());
    buf.clear();
  });
  return text;
}

void write_chrome_trace(const Profile& profile, const std::string& path) {
  validate_profile(profile);
  write_file_atomically(path, "profile", [&](std::ostream& file) {
    fmt::memory_buffer out;
    emit_json(profile, out, [&](fmt::memory_buffer& buf) {
      file.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    });
  });
}

namespace {

// Field access with errors that say where in the file the fault is.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void corrupt(const std::string& what) const {
    fail("{}: corrupt podsim profile: {}; write it again with podsim", source_, what);
  }
  const Json& field(const Json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) corrupt(fmt::format("{} is not a JSON object", where));
    auto it = obj.find(key);
    if (it == obj.end()) corrupt(fmt::format("{} has no '{}'", where, key));
    return *it;
  }
  std::string string(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_string()) corrupt(fmt::format("{}.{} is not a string", where, key));
    return v.get<std::string>();
  }
  double number(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_number()) corrupt(fmt::format("{}.{} is not a number", where, key));
    return v.get<double>();
  }
  uint64_t count(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_number_unsigned())
      corrupt(fmt::format("{}.{} is not a non-negative integer", where, key));
    return v.get<uint64_t>();
  }
  int64_t integer(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_number_integer()) corrupt(fmt::format("{}.{} is not an integer", where, key));
    return v.get<int64_t>();
  }
  const Json& array(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_array()) corrupt(fmt::format("{}.{} is not an array", where, key));
    return v;
  }

 private:
  std::string source_;
};

Profile read_structure(const Reader& r, const Json& podsim) {
  Profile profile;
  profile.program = r.string(podsim, "program", "otherData.podsim");
  for (const Json& op : r.array(podsim, "source_ops", "otherData.podsim")) {
    SourceOp s{r.string(op, "name", "source op"), r.string(op, "opcode", "source op")};
    if (op.contains("op_name")) s.op_name = r.string(op, "op_name", "source op");
    if (op.contains("source_file")) s.source_file = r.string(op, "source_file", "source op");
    if (op.contains("source_line")) s.source_line = r.integer(op, "source_line", "source op");
    profile.source_ops.push_back(std::move(s));
  }
  for (const Json& c : r.array(podsim, "chips", "otherData.podsim")) {
    ChipProfile chip;
    chip.name = r.string(c, "name", "chip");
    const std::string where = fmt::format("chip '{}'", chip.name);
    chip.clock_hz = r.number(c, "clock_hz", where);
    chip.peaks.flops_per_cycle = r.number(c, "flops_per_cycle", where);
    chip.peaks.hbm_bytes_per_cycle = r.number(c, "hbm_bytes_per_cycle", where);
    chip.total_cycles = r.count(c, "total_cycles", where);
    for (const Json& t : r.array(c, "tracks", where))
      chip.tracks.push_back(
          {r.string(t, "name", where + " track"), r.string(t, "category", where + " track"), {}});
    for (const Json& k : r.array(c, "counters", where)) {
      Counter counter{
          r.string(k, "name", where + " counter"), r.string(k, "unit", where + " counter"), {}};
      for (const Json& sample : r.array(k, "samples", where + " counter"))
        if (!sample.is_array() || sample.size() != 2 || !sample[0].is_number_unsigned() ||
            !sample[1].is_number())
          r.corrupt(fmt::format("{} counter '{}' has a sample that is not [cycle, value]", where,
                                counter.name));
        else
          counter.samples.push_back({sample[0].get<uint64_t>(), sample[1].get<double>()});
      chip.counters.push_back(std::move(counter));
    }
    if (!(chip.clock_hz > 0)) r.corrupt(fmt::format("{} has clock_hz {}", where, chip.clock_hz));
    profile.chips.push_back(std::move(chip));
  }
  if (podsim.contains("flows"))
    for (const Json& f : r.array(podsim, "flows", "otherData.podsim")) {
      const bool ok = f.is_array() && f.size() == 7 && f[0].is_string() &&
                      std::all_of(f.begin() + 1, f.end(), [](const Json& v) { return v.is_number_unsigned(); });
      if (!ok) r.corrupt("otherData.podsim.flows has an entry that is not [name, chip, track, cycle, chip, track, cycle]");
      auto end = [&](size_t at) {
        return FlowEnd{static_cast<int32_t>(std::min<uint64_t>(f[at].get<uint64_t>(), std::numeric_limits<int32_t>::max())),
                       static_cast<int32_t>(std::min<uint64_t>(f[at + 1].get<uint64_t>(), std::numeric_limits<int32_t>::max())),
                       f[at + 2].get<uint64_t>()};
      };
      profile.flows.push_back({f[0].get<std::string>(), end(1), end(4)});
    }
  return profile;
}

void read_event(const Reader& r, const Json& e, size_t index, Profile& profile) {
  const std::string where = fmt::format("traceEvents[{}]", index);
  const std::string ph = r.string(e, "ph", where);
  // Names and order, and flows: already known from otherData.podsim.
  if (ph == "M" || ph == "s" || ph == "f") return;
  const int64_t pid = r.integer(e, "pid", where);
  if (pid < 1 || static_cast<size_t>(pid) > profile.chips.size())
    r.corrupt(fmt::format("{} has pid {}, but the profile has {} chips", where, pid,
                          profile.chips.size()));
  ChipProfile& chip = profile.chips[pid - 1];
  const Json& args = r.field(e, "args", where);
  if (ph == "X") {
    const int64_t tid = r.integer(e, "tid", where);
    if (tid < 1 || static_cast<size_t>(tid) > chip.tracks.size())
      r.corrupt(fmt::format("{} has tid {}, but chip '{}' has {} tracks", where, tid, chip.name,
                            chip.tracks.size()));
    Span s;
    s.name = r.string(e, "name", where);
    s.start = r.count(args, "start_cycle", where + ".args");
    const uint64_t cycles = r.count(args, "cycles", where + ".args");
    if (cycles > UINT64_MAX - s.start)
      r.corrupt(fmt::format("{} ends past the last representable cycle", where));
    s.end = s.start + cycles;
    const int64_t op = r.integer(args, "source_op", where + ".args");
    if (op < kNoSourceOp || op >= static_cast<int64_t>(profile.source_ops.size()))
      r.corrupt(fmt::format("{} names source op {}, but the profile has {}", where, op,
                            profile.source_ops.size()));
    s.source_op = static_cast<int32_t>(op);
    s.flops = r.number(args, "flops", where + ".args");
    s.bytes = r.number(args, "bytes", where + ".args");
    chip.tracks[tid - 1].spans.push_back(std::move(s));
  } else if (ph == "C") {
    // Samples come from otherData, where their cycles are exact; the events only draw them.
    const std::string name = r.string(e, "name", where);
    if (std::none_of(chip.counters.begin(), chip.counters.end(),
                     [&](const Counter& c) { return c.name == name; }))
      r.corrupt(fmt::format("{} is a sample of counter '{}', which chip '{}' does not have", where,
                            name, chip.name));
  } else {
    r.corrupt(fmt::format("{} has phase '{}'; podsim writes only M, X and C events", where, ph));
  }
}

}  // namespace

Profile parse_chrome_trace(const std::string& json_text, const std::string& source_name) {
  const std::string not_ours = fmt::format(
      "{}: not a podsim profile (no otherData.podsim before traceEvents: a Chrome trace from "
      "another tool?); podsim reads only the profiles it writes",
      source_name);
  Reader r(source_name);
  std::optional<Profile> profile;
  std::string root_key;  // the member of the root object being parsed
  size_t event_index = 0;
  bool saw_events = false;
  // Events are read as the parser completes each one and then dropped, so that a profile
  // of millions of spans never exists as a JSON tree (which costs ~2 kB per event).
  auto on_parse = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key) {
      root_key = parsed.get<std::string>();
    } else if (depth == 1 && event == Json::parse_event_t::object_end && root_key == "otherData") {
      if (!parsed.contains("podsim")) fail("{}", not_ours);
      const Json& podsim = parsed["podsim"];
      const int64_t version = r.integer(podsim, "version", "otherData.podsim");
      if (version != kChromeTraceFormatVersion)
        fail(
            "{}: podsim profile format version {}; this podsim reads version {} (write the "
            "profile again)",
            source_name, version, kChromeTraceFormatVersion);
      profile = read_structure(r, podsim);
      return false;
    } else if (depth == 1 && event == Json::parse_event_t::array_start &&
               root_key == "traceEvents") {
      saw_events = true;
    } else if (depth == 2 && event == Json::parse_event_t::object_end &&
               root_key == "traceEvents") {
      if (!profile) fail("{}", not_ours);
      read_event(r, parsed, event_index++, *profile);
      return false;
    }
    return true;
  };
  try {
    [[maybe_unused]] const Json rest = Json::parse(json_text, on_parse);  // members we dropped
  } catch (const Json::exception& e) {
    fail("{}: not a JSON file ({}); a podsim profile is Chrome trace JSON written by `--profile`",
         source_name, e.what());
  }
  if (!profile) fail("{}", not_ours);
  if (!saw_events) r.corrupt("it has no traceEvents array");
  try {
    validate_profile(*profile);
  } catch (const Error& e) {
    r.corrupt(e.what());
  }
  // podsim writes each track's spans in nesting order; a file that lists them otherwise
  // (edited, or concatenated by another tool) is read into that order too, so that every
  // profile read keeps Track's invariant and reads back as it was written.
  for (ChipProfile& chip : profile->chips)
    for (Track& track : chip.tracks) {
      std::vector<Span> ordered;
      ordered.reserve(track.spans.size());
      for (size_t i : nesting_order(*profile, chip, track))
        ordered.push_back(std::move(track.spans[i]));
      track.spans = std::move(ordered);
    }
  return std::move(*profile);
}

Profile read_chrome_trace(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot read profile '{}': {}", path, std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) fail("cannot read profile '{}': read error", path);
  return parse_chrome_trace(text.str(), path);
}

}  // namespace podsim::traces
