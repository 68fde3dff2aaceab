// podsim shard-search model.hlo --topology POD: ranks ways to shard a module's entry
// parameters over the pod by simulating each. The candidates are the usual strategies on
// every two-axis mesh (data x model) of the pod's chips: data parallel (the batch inputs'
// dimension 0 over the data axis, weights whole), FSDP (weights' dimension 0 over the
// data axis too), tensor parallel (matrices split by columns or rows over the model axis,
// vectors by their one dimension in the column form) and FSDP with tensor parallelism;
// and every parameter whole on every chip, as a reference. Each candidate is partitioned
// (compiler/passes/spmd), compiled for the pod and run once in timing-only mode; the
// ranking gives its simulated time, the share of it exposed in collectives and the HBM
// each chip holds. PyTorch/XLA's auto-sharding ranks by a cost model; this ranks by
// simulated time.
//
// Batch inputs: the parameters whose dimension 0 is the batch size (--batch, by default
// parameter 0's dimension 0), or those --batch-params names (with the dimension that holds
// the batch: an input laid out [features, batch], say); the other parameters of
// rank 1 or more are weights.
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "runtime/distributed/spmd.h"
#include "sim/timing/timed_chip.h"
#include "tools/commands.h"
#include "topology/pod_config.h"
#include "traces/summary.h"

namespace podsim::tools {
namespace {

struct SearchOptions {
  std::string file;
  std::string topology;
  int64_t batch = 0;  // 0: parameter 0's dimension 0
  std::vector<std::string> batch_params;  // NAME[:DIM]; overrides batch
  std::string write_best;
};

// Per entry parameter, the dimension that holds the batch (nullopt: a weight).
using BatchDims = std::vector<std::optional<int64_t>>;

// How the weights split: none (data parallel), dimension 0 over the data axis (FSDP),
// matrices by columns or rows over the model axis, both.
enum class Weights { kWhole, kFsdp, kColumns, kRows, kFsdpColumns };

struct Candidate {
  int64_t data = 1, model = 1;  // the mesh
  Weights weights = Weights::kWhole;
  bool replicated = false;  // every parameter whole on every chip
  std::string name() const {
    if (replicated) return "replicated (every chip computes everything)";
    static constexpr const char* kNames[] = {"data parallel", "FSDP", "tensor parallel (columns)",
                                             "tensor parallel (rows)", "FSDP + tensor parallel"};
    return fmt::format("data={},model={} {}", data, model, kNames[static_cast<int>(weights)]);
  }
};

struct Outcome {
  Candidate candidate;
  std::string error;  // empty when it ran
  uint64_t cycles = 0;
  double seconds = 0, exposed = 0;
  int64_t hbm_bytes = 0;  // per chip, the executable's HBM regions
  std::string hlo;        // the annotated module
};

std::vector<Candidate> candidates(int64_t devices) {
  std::vector<Candidate> out;
  for (int64_t model = 1; model <= devices; ++model) {
    if (devices % model != 0) continue;
    const int64_t data = devices / model;
    if (model == 1) {
      for (Weights w : {Weights::kWhole, Weights::kFsdp}) out.push_back({data, 1, w});
      continue;
    }
    for (Weights w : {Weights::kColumns, Weights::kRows}) out.push_back({data, model, w});
    if (data > 1) out.push_back({data, model, Weights::kFsdpColumns});
  }
  Candidate whole;
  whole.data = devices;
  whole.replicated = true;
  out.push_back(whole);
  return out;
}

// A copy of the (verified) module with the candidate's shardings on its entry parameters.
std::unique_ptr<ir::Module> annotate(const std::string& text, const std::string& file,
                                     const Candidate& c, const BatchDims& batch) {
  auto module = ir::parse_module(text, file);
  std::vector<int64_t> ids(static_cast<size_t>(c.data * c.model));
  for (size_t d = 0; d < ids.size(); ++d) ids[d] = static_cast<int64_t>(d);
  const distributed::Mesh mesh(ids, {c.data, c.model}, {"data", "model"});
  constexpr int64_t kData = 0, kModel = 1;
  ir::Computation& entry = *module->entry();
  for (int64_t k = 0; k < entry.parameter_count(); ++k) {
    ir::Instruction& p = *entry.parameter(k);
    const ir::Shape& shape = p.shape();
    if (shape.is_tuple()) fail("{}: parameter {} is a tuple; shard-search takes arrays", file, k);
    const int64_t rank = shape.rank();
    std::vector<std::optional<int64_t>> spec(static_cast<size_t>(rank));
    if (!c.replicated && rank > 0) {
      if (batch[static_cast<size_t>(k)]) {
        spec[static_cast<size_t>(*batch[static_cast<size_t>(k)])] = kData;
      } else if (c.weights == Weights::kFsdp) {
        spec[0] = kData;
      } else if (rank == 2 && c.weights == Weights::kRows) {
        spec[0] = kModel;
      } else if (rank == 2 && (c.weights == Weights::kColumns || c.weights == Weights::kFsdpColumns)) {
        spec[1] = kModel;
        if (c.weights == Weights::kFsdpColumns) spec[0] = kData;
      } else if (rank == 1 && (c.weights == Weights::kColumns || c.weights == Weights::kFsdpColumns)) {
        spec[0] = kModel;
      }
    }
    p.sharding() = mesh.sharding(spec);
  }
  module->num_partitions = c.data * c.model;
  return module;
}

Outcome evaluate(const std::string& text, const std::string& file, const topology::PodConfig& pod,
                 const Candidate& c, const BatchDims& batch) {
  Outcome out{c, {}, 0, 0, 0, 0, {}};
  try {
    std::unique_ptr<ir::Module> module = annotate(text, file, c, batch);
    out.hlo = ir::print_module(*module);
    const int64_t devices = c.data * c.model;
    passes::spmd_partition(*module, devices, &pod);
    const isa::Executable exe = tpu::compile(*module, tpu::Target(pod, 1, devices));
    for (const isa::Region& r : exe.regions)
      if (r.space == isa::MemorySpace::kHbm) out.hbm_bytes = std::max(out.hbm_bytes, r.offset + r.size);
    sim::timing::TimingOptions timing;
    timing.timing_only = true;
    const sim::timing::PodRunResult r = sim::timing::run_timed_pod(exe, {}, timing);
    out.cycles = r.cycles;
    out.seconds = r.seconds;
    out.exposed = traces::summarize(r.profile).collective_exposed_seconds;
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

int search(const SearchOptions& o) {
  const topology::PodConfig pod = topology::pod_config(o.topology);
  const int64_t devices = pod.chips();
  if (devices < 2) fail("--topology {} has one chip: nothing to shard over", o.topology);
  // Read once up front: a module that does not parse or verify is one error, not one per
  // candidate.
  auto module = ir::parse_module_file(o.file);
  ir::verify_module(*module, o.file);
  // Each candidate parses its own copy from the file's text, read once.
  std::ifstream in(o.file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ir::Computation& entry = *module->entry();
  BatchDims batch(static_cast<size_t>(entry.parameter_count()));
  std::string described;
  for (const std::string& item : o.batch_params) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    const ir::Instruction* p = entry.find(name);
    if (!p || p->opcode() != ir::Opcode::kParameter)
      fail("--batch-params {}: the entry has no parameter '{}'", item, name);
    int64_t dim = 0;
    if (colon != std::string::npos) {
      const std::string text = item.substr(colon + 1);
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), dim);
      if (ec != std::errc() || end != text.data() + text.size() || dim < 0 || dim >= p->shape().rank())
        fail("--batch-params {}: '{}' is no dimension of {}", item, text, p->shape().to_string(false));
    } else if (p->shape().rank() == 0) {
      fail("--batch-params {}: a scalar has no batch dimension", item);
    }
    batch[static_cast<size_t>(p->attrs().parameter_number)] = dim;
    described += fmt::format("{}{} (dimension {})", described.empty() ? "" : ", ", name, dim);
  }
  if (o.batch_params.empty()) {
    int64_t size = o.batch;
    if (size == 0) {
      if (entry.parameter_count() == 0 || entry.parameter(0)->shape().is_tuple() ||
          entry.parameter(0)->shape().rank() == 0)
        fail("{}: parameter 0 has no dimension 0 to take the batch size from; give --batch or "
             "--batch-params",
             o.file);
      size = entry.parameter(0)->shape().dims()[0];
    }
    for (int64_t k = 0; k < entry.parameter_count(); ++k) {
      const ir::Shape& shape = entry.parameter(k)->shape();
      if (shape.is_array() && shape.rank() > 0 && shape.dims()[0] == size) batch[static_cast<size_t>(k)] = 0;
    }
    described = fmt::format("dimension 0 of {}", size);
  }
  const std::vector<Candidate> all = candidates(devices);
  fmt::print("{}: {} candidates on {} ({} chips); batch inputs: {}\n", o.file, all.size(),
             pod.name, devices, described);
  std::vector<Outcome> outcomes;
  const auto start = std::chrono::steady_clock::now();
  for (const Candidate& c : all) {
    outcomes.push_back(evaluate(text, o.file, pod, c, batch));
    const Outcome& r = outcomes.back();
    const double host =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("  [{}/{}] {}: {} ({:.1f} s)\n", outcomes.size(), all.size(), c.name(),
               r.error.empty() ? fmt::format("{:.2f} us", r.seconds * 1e6) : "failed", host);
    std::fflush(stdout);
  }
  std::stable_sort(outcomes.begin(), outcomes.end(), [](const Outcome& a, const Outcome& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    return a.seconds < b.seconds;
  });
  fmt::print("\n{:>4}  {:<48} {:>12} {:>12} {:>9} {:>12}\n", "rank", "sharding", "cycles",
             "step us", "exposed", "HBM MiB/chip");
  for (size_t k = 0; k < outcomes.size(); ++k) {
    const Outcome& r = outcomes[k];
    if (!r.error.empty()) {
      fmt::print("{:>4}  {:<48} failed: {}\n", "-", r.candidate.name(), r.error);
      continue;
    }
    fmt::print("{:>4}  {:<48} {:>12} {:>12.2f} {:>8.1f}% {:>12.2f}\n", k + 1, r.candidate.name(),
               r.cycles, r.seconds * 1e6, r.seconds > 0 ? 100.0 * r.exposed / r.seconds : 0.0,
               static_cast<double>(r.hbm_bytes) / (1 << 20));
  }
  if (outcomes.front().error.empty() && !o.write_best.empty()) {
    std::ofstream f(o.write_best);
    if (!(f << outcomes.front().hlo)) fail("cannot write {}", o.write_best);
    fmt::print("wrote the best sharding's module to {} (podsim run {} --spmd --backend sim "
               "--topology {})\n",
               o.write_best, o.write_best, o.topology);
  }
  return outcomes.front().error.empty() ? 0 : 1;
}

}  // namespace

Command add_shard_search_command(CLI::App& app) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "shard-search",
      "Rank ways to shard a module's parameters over a pod (data, FSDP, tensor parallel on "
      "every mesh) by simulating each, timing-only");
  cmd->add_option("file", o->file, "An HLO module (its entry parameters get the shardings)")
      ->required();
  cmd->add_option("--topology", o->topology, "The pod: v5e-16, v4:2x2x2, a pod TOML file")
      ->required();
  cmd->add_option("--batch", o->batch,
                  "The batch size: parameters whose dimension 0 it is are batch inputs "
                  "(default: parameter 0's dimension 0)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch-params", o->batch_params,
                  "The batch inputs by name, each with the dimension that holds the batch "
                  "(x:1; default 0), instead of --batch")
      ->delimiter(',');
  cmd->add_option("--write-best", o->write_best,
                  "Write the best candidate's module, its parameters annotated, here");
  return {cmd, [o] { return search(*o); }};
}

}  // namespace podsim::tools
