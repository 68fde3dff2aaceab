// Profiles as Chrome trace event JSON, the format Perfetto UI (ui.perfetto.dev) and
// chrome://tracing open: one process per chip, one thread per track (unit), "X" complete
// events for spans (args carry the source IR op, cycles, flops, bytes), "C" counter events,
// and "M" metadata naming and ordering processes and threads. Timestamps are fractional
// microseconds (cycles / clock) with nanosecond digits, the finest time Perfetto keeps:
// each cycle boundary is rounded to a nanosecond once, so nesting survives the import and
// a one-cycle span is visible on clocks up to 1 GHz (faster clocks can round one cycle to
// zero width; the exact cycles are in each span's args).
//
// The file also carries the profile's own structure under otherData.podsim (source ops,
// chips, tracks, peaks), so that read_chrome_trace() gives back exactly what was written;
// `podsim profile summary|diff` read profiles that way.
#pragma once

#include <string>

#include "traces/profile.h"

namespace podsim::traces {

// Version of the otherData.podsim layout; the reader refuses any other.
inline constexpr int kChromeTraceFormatVersion = 1;

// Checks what viewers and the summary rely on, throwing podsim::Error naming the chip,
// track and span(s) at fault: clock_hz > 0; every span has start <= end <= total_cycles
// and a valid source op; spans on one track are strictly nested or disjoint (never a
// partial overlap, which Perfetto cannot draw); flops, bytes and counter values finite;
// counter samples sorted by cycle.
void validate_profile(const Profile& profile);

// The profile as Chrome trace JSON (validates first). Spans on each track are emitted
// ordered by start, enclosing span first, as the JSON importers need for nesting.
std::string chrome_trace_json(const Profile& profile);

// Writes chrome_trace_json(profile) to path atomically (a temporary file in the same
// directory, then rename), so a reader never sees a half-written profile.
void write_chrome_trace(const Profile& profile, const std::string& path);

// Reads a profile written by write_chrome_trace(). A file that is not JSON, a Chrome
// trace from another tool (no otherData.podsim), another format version, or events that
// do not match the profile's structure are podsim::Error naming the file and the fault.
// Spans come back in the writer's order (by start, enclosing span first).
Profile read_chrome_trace(const std::string& path);
// The same from JSON text; source_name names it in error messages.
Profile parse_chrome_trace(const std::string& json_text, const std::string& source_name);

}  // namespace podsim::traces
