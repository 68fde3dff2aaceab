#include "examples/train/train_loop.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "runtime/pjrt/sim/sim_backend.h"
#include "runtime/distributed/collectives.h"
#include "runtime/data/device_loader.h"
#include "runtime/debug/metrics.h"
#include "runtime/distributed/checkpoint.h"
#include "runtime/distributed/spmd.h"
#include "topology/pod_config.h"
#include "traces/chrome_trace.h"
#include "traces/summary.h"

namespace podsim::examples {

namespace {

bool spmd_training(const TrainOptions& options) {
  return !options.mesh.empty() || !options.dcn_mesh.empty() || options.fsdp;
}

// The sizes of the data and model axes in `text` ("data=2,model=4"; an axis not named
// has size 1), for the option `flag`.
std::map<std::string, int64_t> parse_axes(const std::string& text, const char* flag) {
  std::map<std::string, int64_t> axes;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string axis = text.substr(at, end - at);
    const size_t eq = axis.find('=');
    const std::string name = axis.substr(0, eq);
    int64_t size = 0;
    if (eq != std::string::npos) std::from_chars(axis.data() + eq + 1, axis.data() + axis.size(), size);
    if ((name != "data" && name != "model") || size < 1 || axes.count(name))
      fail("{} {}: expected data=N and/or model=N (e.g. data=2,model=4)", flag, text);
    axes[name] = size;
    at = end + 1;
  }
  return axes;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// The mesh's axes: names in the order data, model (those either option names), their
// ICI sizes (--mesh: within a slice) and DCN sizes (--dcn-mesh: across slices). For
// --fsdp alone, a data axis over `devices`.
struct MeshAxes {
  std::vector<std::string> names;
  std::vector<int64_t> ici, dcn;
  int64_t devices() const { return product(ici) * product(dcn); }
};

MeshAxes mesh_axes(const TrainOptions& options, int64_t devices) {
  if (options.mesh.empty() && options.dcn_mesh.empty()) return {{"data"}, {devices}, {1}};
  const auto ici = parse_axes(options.mesh, "--mesh");
  const auto dcn = parse_axes(options.dcn_mesh, "--dcn-mesh");
  MeshAxes axes;
  for (const char* name : {"data", "model"}) {
    if (!ici.count(name) && !dcn.count(name)) continue;
    axes.names.push_back(name);
    axes.ici.push_back(ici.count(name) ? ici.at(name) : 1);
    axes.dcn.push_back(dcn.count(name) ? dcn.at(name) : 1);
  }
  return axes;
}

distributed::Mesh training_mesh(const TrainOptions& options, int64_t devices) {
  const MeshAxes axes = mesh_axes(options, devices);
  if (axes.devices() != devices)
    fail("--mesh {}{}{} spans {} devices, but the simulated pod has {} chips (choose it with --topology)",
         options.mesh, options.dcn_mesh.empty() ? "" : " --dcn-mesh ", options.dcn_mesh, axes.devices(), devices);
  if (options.dcn_mesh.empty()) {
    std::vector<int64_t> ids(static_cast<size_t>(devices));
    for (int64_t d = 0; d < devices; ++d) ids[static_cast<size_t>(d)] = d;
    return distributed::Mesh(std::move(ids), axes.ici, axes.names);
  }
  // A pod's devices are numbered slice by slice: the DCN axes must split it into its slices.
  if (options.device == "sim") {
    const int slices = topology::pod_config(pjrt::sim_topology_from_env()).slices;
    if (product(axes.dcn) != slices)
      fail("--dcn-mesh {} spans {} slices, but the simulated pod {} has {}", options.dcn_mesh, product(axes.dcn),
           pjrt::sim_topology_from_env(), slices);
  }
  return distributed::Mesh::hybrid(axes.ici, axes.dcn, axes.names);
}

bool has_axis(const distributed::Mesh& mesh, const std::string& name) {
  return std::find(mesh.axis_names().begin(), mesh.axis_names().end(), name) != mesh.axis_names().end();
}

int64_t axis_size(const distributed::Mesh& mesh, const std::string& name) {
  return has_axis(mesh, name) ? mesh.shape()[static_cast<size_t>(mesh.axis(name))] : 1;
}

// Megatron-style splits over the model axis, by parameter name: attention's packed
// QKV projection and an MLP's first layer by output features (weights are [out, in]),
// attention's output projection and an MLP's second layer by input features. With fsdp,
// a weight's first free dimension also splits over the data axis.
void shard_parameters(nn::Module& model, const distributed::Mesh& mesh, bool fsdp) {
  const int64_t model_ways = axis_size(mesh, "model"), data_ways = axis_size(mesh, "data");
  for (const auto& [name, p] : model.named_parameters()) {
    distributed::PartitionSpec spec(static_cast<size_t>(p.dim()), std::nullopt);
    int64_t tp = -1;  // the dimension split over the model axis
    if (name.ends_with("in_proj_weight") || name.ends_with("in_proj_bias") || name.ends_with("fc1.weight") ||
        name.ends_with("fc1.bias"))
      tp = 0;
    else if (name.ends_with("out_proj.weight") || name.ends_with("fc2.weight"))
      tp = 1;
    if (model_ways == 1 || tp < 0 || p.size(tp) % model_ways != 0) tp = -1;
    if (tp >= 0) spec[static_cast<size_t>(tp)] = "model";
    // FSDP splits a weight's first dimension (its second where the model axis has the
    // first); a weight that does not divide stays whole (an embedding table split by
    // columns would split the activations it feeds the same way).
    const int64_t f = tp == 0 ? 1 : 0;
    if (fsdp && data_ways > 1 && f < p.dim() && p.size(f) % data_ways == 0) spec[static_cast<size_t>(f)] = "data";
    distributed::mark_sharding(p, mesh, spec);
  }
}

}  // namespace

std::vector<pjrt::Device*> training_devices(const TrainOptions& options) {
  if (options.replicas < 0) fail("--replicas {}: expected a positive count", options.replicas);
  if (spmd_training(options)) {
    // One virtual device over every device of the backend (runtime/distributed/spmd.h).
    if (options.device != "cpu" && options.device != "sim") fail("--device {}: expected cpu or sim", options.device);
    if (options.device == "cpu") {
      if (!options.topology.empty())
        fail("--topology {} names a simulated chip or pod: add --device sim", options.topology);
      if (options.mesh.empty() && options.replicas < 2)
        fail("--fsdp on the CPU: say over how many devices with --replicas N (or --mesh data=N)");
      const int64_t n =
          options.mesh.empty() && options.dcn_mesh.empty() ? options.replicas : mesh_axes(options, 0).devices();
      if (options.replicas > 0 && options.replicas != n)
        fail("--replicas {} and --mesh {}: the mesh spans {} devices", options.replicas, options.mesh, n);
      setenv("PODSIM_CPU_DEVICES", std::to_string(n).c_str(), 1);
    } else if (!options.topology.empty()) {
      setenv("PODSIM_TOPOLOGY", options.topology.c_str(), 1);
    }
    setenv("PODSIM_DEVICE", options.device == "cpu" ? "CPU" : "SIM", 1);
    distributed::use_spmd();
    training_mesh(options, distributed::global_device_count());  // checks the mesh against the devices
    return {&podsim::device()};
  }
  if (options.device == "cpu") {
    if (!options.topology.empty())
      fail("--topology {} names a simulated chip or pod: add --device sim", options.topology);
    const auto replicas = std::max<int64_t>(1, options.replicas);
    // The CPU backend reads its device count when its client is first made.
    if (replicas > 1) setenv("PODSIM_CPU_DEVICES", std::to_string(replicas).c_str(), 1);
    std::span<pjrt::Device* const> all = pjrt::client("CPU").devices();
    if (static_cast<int64_t>(all.size()) < replicas)
      fail("--replicas {}: the CPU backend has {} device(s) (it was made before; set "
           "PODSIM_CPU_DEVICES={})",
           replicas, all.size(), replicas);
    return {all.begin(), all.begin() + replicas};
  }
  if (options.device == "sim") {
    // The SIM backend reads its chip or pod when its client is first made.
    if (!options.topology.empty()) setenv("PODSIM_TOPOLOGY", options.topology.c_str(), 1);
    std::span<pjrt::Device* const> all = pjrt::client("SIM").devices();
    if (options.replicas > 0 && options.replicas != static_cast<int64_t>(all.size()))
      fail("--replicas {}: the simulated {} has {} chip(s), and every chip trains a replica "
           "(choose the pod with --topology)",
           options.replicas, pjrt::sim_topology_from_env(), all.size());
    return {all.begin(), all.end()};
  }
  if (options.device == "opencl") {
    if (!options.topology.empty())
      fail("--topology {} names a simulated chip or pod: add --device sim", options.topology);
    if (options.replicas > 1)
      fail("--replicas {}: the OpenCL backend trains one replica (its modules run on one device)",
           options.replicas);
    return {pjrt::client("OPENCL").devices()[0]};
  }
  fail("--device {}: expected cpu, sim or opencl", options.device);
}

std::vector<Replica> make_replicas(const TrainOptions& options,
                                   const std::function<Replica(pjrt::Device&)>& make) {
  std::vector<Replica> replicas;
  for (pjrt::Device* device : training_devices(options)) {
    manual_seed(options.seed);
    replicas.push_back(make(*device));
    replicas.back().device = device;
  }
  if (spmd_training(options))
    shard_parameters(*replicas[0].model, training_mesh(options, distributed::global_device_count()), options.fsdp);
  return replicas;
}

std::string placement(const std::vector<Replica>& replicas) {
  if (replicas.size() == 1 && replicas[0].device->kind() == pjrt::DeviceKind::kSpmd)
    return fmt::format("{} over {} devices (SPMD)", replicas[0].device->name(), distributed::global_device_count());
  if (replicas.size() == 1) return replicas[0].device->name();
  return fmt::format("{} replicas on {} .. {} (data parallel)", replicas.size(),
                     replicas.front().device->name(), replicas.back().device->name());
}

namespace {

using StepFn = std::function<Tensor(const data::Example& batch)>;

// The simulated pod step just profiled, for a progress line: its time, split into
// compute and exposed collectives (the cores in the collectives' instructions and waits),
// how long collectives were in flight, and the bytes that crossed ICI links. Profiling stays on when
// keep_profiling (the last step's profile is wanted).
std::string pod_step_report(bool keep_profiling, TrainResult& result) {
  std::optional<pjrt::SimRun> run = pjrt::last_sim_run();
  if (!keep_profiling) pjrt::set_sim_profiling(false);
  if (!run) return "";
  traces::Summary summary = traces::summarize(run->profile);
  result.pod_step_seconds = summary.seconds;
  result.pod_collective_seconds = summary.collective_exposed_seconds;
  result.pod_ici_bytes = run->ici_bytes;
  return fmt::format(
      "  | pod step {}: compute {}, exposed collectives {} ({} in flight); {:.1f} KiB over ICI",
      traces::format_seconds(summary.seconds),
      traces::format_seconds(summary.seconds - summary.collective_exposed_seconds),
      traces::format_seconds(summary.collective_exposed_seconds),
      traces::format_seconds(summary.collective_seconds), run->ici_bytes / 1024);
}

// One replica's loop; replica 0 prints and fills result.
void run_training(data::DeviceLoader& loader, int64_t steps, int64_t log_every, const StepFn& step,
                  bool pod_report, const std::string& profile, bool progress, std::ostream& out,
                  TrainResult& result) {
  using Clock = std::chrono::steady_clock;
  const bool leader = distributed::ordinal() == 0;
  const int64_t compiled_before = debug::counter_value("UncachedCompile");
  const int64_t cycles_before = debug::counter_value("SimulatedCycles");
  // The terminal's progress line: rewritten at most 4 times a second, cleared before a log line.
  const bool show_progress = progress && leader && ::isatty(2);
  const Clock::time_point began = Clock::now();
  Clock::time_point start{}, last_line = began;
  Clock::time_point last_progress{};
  bool progress_shown = false;
  auto clear_progress = [&] {
    if (progress_shown) std::fputs("\r\033[K", stderr);
    progress_shown = false;
  };
  auto show = [&](int64_t done) {
    const Clock::time_point now = Clock::now();
    if (now - last_progress < std::chrono::milliseconds(250)) return;
    last_progress = now;
    const double host = std::chrono::duration<double>(now - began).count();
    const double measured = start == Clock::time_point{} ? 0 : std::chrono::duration<double>(now - start).count();
    const double rate = measured > 0 && done > 1 ? static_cast<double>(done - 1) / measured : 0;
    const int64_t cycles = debug::counter_value("SimulatedCycles") - cycles_before;
    std::string line = fmt::format("step {}/{}  {:.1f} steps/s  host {:.1f} s", done, steps, rate, host);
    if (cycles > 0) line += fmt::format("  simulated {} cycles", cycles);
    if (rate > 0) line += fmt::format("  ETA {:.0f} s", static_cast<double>(steps - done) / rate);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    progress_shown = true;
  };
  std::vector<Tensor> window;  // the losses since the last progress line
  auto window_mean = [&] {
    double sum = 0;
    for (const Tensor& loss : window) sum += loss.item().to_double();
    return window.empty() ? 0.0 : sum / static_cast<double>(window.size());
  };
  int64_t done = 0;
  bool first_window = true;
  while (done < steps) {
    for (const data::Example& batch : loader) {
      if (done == steps) break;
      // Profiled steps: the last one for --profile; on a pod, the last of each window,
      // for the progress line's split of the step. Everything else runs unprofiled.
      const bool ends_window = (done + 1) % log_every == 0 || done + 1 == steps;
      if ((!profile.empty() && done == steps - 1) || (pod_report && ends_window)) {
        mark_step();
        wait_device_ops();
        if (leader) pjrt::set_sim_profiling(true);
      }
      window.push_back(step(batch));
      ++done;
      if (show_progress) show(done);
      if (done == 1) {
        // The first step compiles: speed is measured from the end of it.
        mark_step();
        wait_device_ops();
        start = Clock::now();
      }
      if (done % log_every == 0 || done == steps) {
        // Launch the step before reading its loss: reading first would run the loss's
        // part of the step as a graph of its own (PyTorch/XLA logs the same way).
        mark_step();
        if (!leader) {
          window.clear();
          continue;
        }
        double loss = window_mean();
        if (first_window) result.first_loss = loss;
        first_window = false;
        result.final_loss = loss;
        result.losses.push_back(loss);
        Clock::time_point now = Clock::now();
        double rate = static_cast<double>(window.size()) /
                      std::chrono::duration<double>(now - last_line).count();
        last_line = now;
        window.clear();
        clear_progress();
        out << fmt::format("step {:>5}/{}  loss {:.4f}  {:.1f} steps/s{}\n", done, steps, loss, rate,
                           pod_report ? pod_step_report(done == steps && !profile.empty(), result) : "")
            << std::flush;
      }
    }
  }
  mark_step();
  wait_device_ops();
  if (!leader) return;
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.steps = done;
  result.steps_per_second = done > 1 && seconds > 0 ? static_cast<double>(done - 1) / seconds : 0;
  result.compilations = debug::counter_value("UncachedCompile") - compiled_before;
  result.simulated_cycles = debug::counter_value("SimulatedCycles") - cycles_before;
}

// What the run's last profiled step and cycle count say, after every replica finished.
void report_simulation(const std::string& profile, std::ostream& out, const TrainResult& result) {
  if (!profile.empty()) {
    std::optional<pjrt::SimRun> run = pjrt::last_sim_run();
    pjrt::set_sim_profiling(false);
    if (!run) fail("no profiled run of the last step");
    traces::write_chrome_trace(run->profile, profile);
    out << traces::format_summary(traces::summarize(run->profile));
    if (run->chips > 1)
      out << fmt::format("last step on {} chips: {:.1f} KiB over ICI, {:.1f} KiB over DCN\n",
                         run->chips, run->ici_bytes / 1024, run->dcn_bytes / 1024);
    out << fmt::format("wrote the profile of the last step to {} (open it in Perfetto UI)\n",
                       profile);
  }
  if (result.simulated_cycles > 0)
    out << fmt::format("simulated {}: {} cycles per step on average\n",
                       result.replicas > 1 ? fmt::format("pod ({} chips)", result.replicas)
                                           : std::string("chip"),
                       result.simulated_cycles / result.steps);
}

}  // namespace

TrainResult train(std::vector<Replica>& replicas, std::shared_ptr<const data::Dataset> dataset,
                  int64_t steps, int64_t batch, const TrainOptions& options, std::ostream& out) {
  if (replicas.empty()) fail("train: no replicas");
  const auto world = static_cast<int64_t>(replicas.size());
  if (batch % world != 0)
    fail("--batch {} does not split over {} replicas: use a multiple of {}", batch, world, world);
  pjrt::Device& first = *replicas[0].device;
  const bool spmd = first.kind() == pjrt::DeviceKind::kSpmd;
  const bool simulated = first.kind() == pjrt::DeviceKind::kSim || (spmd && options.device == "sim");
  if (!options.profile.empty() && !simulated)
    fail("--profile needs a simulated chip (--device sim); {} has no cycle model", first.name());
  // SPMD: the loader splits every batch over the mesh's data axis.
  std::optional<distributed::Mesh> mesh;
  if (spmd) mesh = training_mesh(options, distributed::global_device_count());
  const int64_t data_ways = mesh ? axis_size(*mesh, "data") : 1;
  if (batch % data_ways != 0)
    fail("--batch {} does not split over the mesh's {} data-parallel devices", batch, data_ways);
  TrainResult result;
  result.device = first.name();
  result.replicas = spmd ? distributed::global_device_count() : world;
  const int64_t log_every =
      options.log_every > 0 ? options.log_every : std::max<int64_t>(1, steps / 10);
  auto replica_loop = [&](int rank) {
    Replica& replica = replicas[static_cast<size_t>(rank)];
    data::DeviceLoader loader(
        data::DataLoader(dataset, {.batch_size = batch / world,
                                   .shuffle = true,
                                   .seed = options.seed,
                                   .drop_last = true,
                                   .replicas = world,
                                   .rank = rank}),
        *replica.device, {.mesh = mesh && data_ways > 1 ? &*mesh : nullptr});
    run_training(
        loader, steps, log_every,
        [&](const data::Example& b) {
          Tensor value = replica.loss(b);
          value.backward();
          distributed::optimizer_step(*replica.optimizer);  // all-reduces the gradients
          replica.optimizer->zero_grad();
          replica.schedule->step();
          return distributed::all_reduce(value.detach(), distributed::ReduceOp::kMean);  // the global batch's loss
        },
        (world > 1 || spmd) && simulated, options.profile, options.progress, out, result);
  };
  if (world == 1) {
    replica_loop(0);
  } else {
    std::vector<pjrt::Device*> devices;
    for (Replica& replica : replicas) devices.push_back(replica.device);
    distributed::launch(replica_loop, devices);
  }
  report_simulation(options.profile, out, result);
  if (!options.checkpoint.empty()) {
    distributed::save_checkpoint(*replicas[0].model, replicas[0].optimizer.get(), result.steps,
                           options.checkpoint);
    out << "checkpoint written to " << options.checkpoint << "\n";
  }
  return result;
}

}  // namespace podsim::examples
