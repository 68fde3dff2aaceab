// Debug reports of the lazy-tensor runtime, in the spirit of PyTorch/XLA's debug mode:
//
// PODSIM_DEBUG=1  the metrics auto-analysis (debug::metrics_analysis, runtime/debug/metrics.h), printed to stderr after each step that
//                 shows a symptom and once at exit:
//                   podsim-profiler: CompileTime too frequent: N counts during M steps
//                     (more than one compilation per two steps, after 10 warm-up steps)
//                   podsim-profiler: TransferFromDeviceTime too frequent: N counts during M steps
//                     (more than one device-to-host transfer per two steps)
//                   podsim-profiler: CompileTime / ExecuteTime too slow: longest instance took T
//                     (over 300 s / 30 s)
// PODSIM_DEBUG=2  also "Compilation Analysis", "Post Compilation Analysis" and "Execution
//                 Analysis" blocks for every compilation and execution: the cause (user
//                 mark_step, item(), cpu(), ...), graph hash, numbers of graph inputs and
//                 outputs, the C++ call site that triggered it, and the executable's sizes.
// PODSIM_SAVE_TENSORS_FILE=path  appends every executed graph to path, in the format
//                 PODSIM_SAVE_TENSORS_FMT=text (default; one line per node), dot
//                 (Graphviz) or hlo (the lowered module in HLO text).
// PODSIM_METRICS_FILE=path  appends debug::metrics_report() to path at every step
//                 (STDOUT / STDERR print it instead).
//
// The variables are read at each step, so a program (or test) may change them while it
// runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "runtime/pjrt/device.h"
#include "runtime/pjrt/hash.h"

namespace podsim::lazy {

struct Graph;

// PODSIM_DEBUG as a number (0 when unset or not a number).
int debug_level();

// The frames of the language the program is written in above C++ (Python's, set by
// podsim's Python module), innermost first; the PODSIM_DEBUG=2 blocks print them as
// PyTorch/XLA prints its "Python Frame Triggered Execution". None by default.
using FrameSource = std::function<std::vector<std::string>()>;
void set_frame_source(FrameSource source);

// What the last graph run on a device was (for tests and tools).
struct GraphRun {
  pjrt::Hash128 hash;
  std::string cause;
  std::string device;
  int64_t inputs = 0;
  int64_t outputs = 0;
  int64_t nodes = 0;      // lazy-graph nodes
  bool compiled = false;  // a compile-cache miss
  std::source_location loc;
};
std::optional<GraphRun> last_graph_run();

// ---- Hooks of the runtime (sync.cc) ------------------------------------------------
void on_compile(const GraphRun& run);
void on_post_compile(const pjrt::ExecutableInfo& info);
void on_execute(const GraphRun& run);
// module: the lowered graph if the caller has it (the hlo dump lowers it otherwise).
void save_graph(const GraphRun& run, const lazy::Graph& graph, const ir::Module* module);
void on_step_end();

}  // namespace podsim::lazy
