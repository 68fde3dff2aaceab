#include "runtime/lazy/debug_report.h"

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string_view>

#include "common/error.h"
#include "compiler/ir/printer.h"
#include "runtime/lazy/graph.h"
#include "runtime/debug/metrics.h"

namespace podsim::lazy {
namespace {

constexpr std::string_view kRule =
    "================================================================================";
constexpr std::string_view kDashes =
    "--------------------------------------------------------------------------------";

struct State {
  std::mutex mutex;
  std::optional<GraphRun> last_run;
  std::string last_printed_analysis;
  bool exit_hook = false;
};

State& state() {
  static State* instance = new State;  // used from an atexit hook
  return *instance;
}

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

std::string frame(const std::source_location& loc) {
  return fmt::format("{} ({}:{})", loc.function_name(), loc.file_name(), loc.line());
}

void print_block(std::string_view prefix, const std::vector<std::string>& lines) {
  std::string out;
  out += fmt::format("{}: {}\n", prefix, kRule);
  for (const std::string& line : lines) out += fmt::format("{}: {}\n", prefix, line);
  out += fmt::format("{}: {}\n", prefix, kDashes);
  out += fmt::format("{}: {}\n", prefix, kRule);
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

FrameSource& frame_source() {
  static FrameSource* source = new FrameSource;
  return *source;
}

std::vector<std::string> graph_lines(std::string_view cause_title, const GraphRun& run) {
  std::vector<std::string> lines = {std::string(cause_title),
                                    "  " + run.cause,
                                    "Graph Info:",
                                    "  Graph Hash: " + run.hash.hex(),
                                    fmt::format("  Number of Graph Inputs: {}", run.inputs),
                                    fmt::format("  Number of Graph Outputs: {}", run.outputs),
                                    "C++ Frame Triggered Execution:",
                                    "  " + frame(run.loc)};
  if (frame_source()) {
    std::vector<std::string> frames = frame_source()();
    if (!frames.empty()) lines.push_back("Python Frame Triggered Execution:");
    for (const std::string& f : frames) lines.push_back("  " + f);
  }
  return lines;
}

// GB as PyTorch/XLA prints them, with the exact byte count (small graphs round to 0 GB).
std::string gigabytes(int64_t bytes) {
  return fmt::format("{:.6f} GB ({} bytes)", static_cast<double>(bytes) / 1e9, bytes);
}

void print_exit_analysis() {
  if (debug_level() < 1) return;
  std::string analysis = debug::metrics_analysis();
  State& s = state();
  std::lock_guard guard(s.mutex);
  if (!analysis.empty() && analysis != s.last_printed_analysis) {
    std::fputs(analysis.c_str(), stderr);
    std::fflush(stderr);
  }
}

void append_to(const char* path, const std::string& text, const char* variable) {
  std::string_view p(path);
  if (p == "STDOUT" || p == "STDERR") {
    std::FILE* out = p == "STDOUT" ? stdout : stderr;
    std::fputs(text.c_str(), out);
    std::fflush(out);
    return;
  }
  std::ofstream file(path, std::ios::app);
  if (!file) fail("{}={}: cannot open the file for appending", variable, path);
  file << text;
  if (!file) fail("{}={}: writing failed", variable, path);
}

}  // namespace

void set_frame_source(FrameSource source) { frame_source() = std::move(source); }

int debug_level() {
  const char* value = env("PODSIM_DEBUG");
  if (value == nullptr) return 0;
  char* end = nullptr;
  long level = std::strtol(value, &end, 10);
  return end != value && *end == '\0' && level > 0 ? static_cast<int>(std::min(level, 9L)) : 0;
}

std::optional<GraphRun> last_graph_run() {
  State& s = state();
  std::lock_guard guard(s.mutex);
  return s.last_run;
}

void on_compile(const GraphRun& run) {
  if (debug_level() >= 2)
    print_block("Compilation Analysis", graph_lines("Compilation Cause", run));
}

void on_post_compile(const pjrt::ExecutableInfo& info) {
  if (debug_level() < 2) return;
  print_block("Post Compilation Analysis",
              {"Graph input size: " + gigabytes(info.argument_bytes),
               "Graph output size: " + gigabytes(info.output_bytes),
               "Aliased Input size: " + gigabytes(info.alias_bytes),
               "Intermediate tensor size: " + gigabytes(info.intermediate_bytes),
               "Compiled program size: " + gigabytes(info.program_bytes)});
}

void on_execute(const GraphRun& run) {
  {
    State& s = state();
    std::lock_guard guard(s.mutex);
    s.last_run = run;
  }
  if (debug_level() >= 2) print_block("Execution Analysis", graph_lines("Execution Cause", run));
}

void save_graph(const GraphRun& run, const lazy::Graph& graph, const ir::Module* module) {
  const char* path = env("PODSIM_SAVE_TENSORS_FILE");
  if (path == nullptr) return;
  const char* format_value = env("PODSIM_SAVE_TENSORS_FMT");
  std::string_view format = format_value ? format_value : "text";
  std::string body;
  if (format == "text") {
    body = lazy::graph_text(graph);
  } else if (format == "dot") {
    body = lazy::graph_dot(graph);
  } else if (format == "hlo") {
    std::unique_ptr<ir::Module> lowered;
    if (module == nullptr) {
      lowered = lazy::lower_graph(graph, fmt::format("graph_{}", run.hash.hex().substr(0, 16)));
      module = lowered.get();
    }
    body = ir::print_module(*module);
  } else {
    fail("PODSIM_SAVE_TENSORS_FMT={}: expected text, dot or hlo", format);
  }
  std::string header = fmt::format(
      "## BEGIN_GRAPH {} on {}, cause: {}; {} nodes, {} inputs, {} outputs\n## at {}\n",
      run.hash.hex(), run.device, run.cause, run.nodes, run.inputs, run.outputs, frame(run.loc));
  append_to(path, header + body + "## END_GRAPH\n\n", "PODSIM_SAVE_TENSORS_FILE");
}

void on_step_end() {
  if (const char* path = env("PODSIM_METRICS_FILE"))
    append_to(path, debug::metrics_report(), "PODSIM_METRICS_FILE");
  if (debug_level() < 1) return;
  std::string analysis = debug::metrics_analysis();
  State& s = state();
  std::lock_guard guard(s.mutex);
  if (!s.exit_hook) {
    std::atexit(print_exit_analysis);
    s.exit_hook = true;
  }
  if (!analysis.empty()) {
    std::fputs(analysis.c_str(), stderr);
    std::fflush(stderr);
    s.last_printed_analysis = analysis;
  }
}

}  // namespace podsim::lazy
