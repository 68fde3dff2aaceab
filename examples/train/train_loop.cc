#include "examples/train/train_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "runtime/backends/sim/sim_backend.h"
#include "runtime/data/device_loader.h"
#include "runtime/metrics.h"
#include "runtime/optim/checkpoint.h"
#include "traces/chrome_trace.h"
#include "traces/summary.h"

namespace podsim::examples {

runtime::Device& training_device(const TrainOptions& options) {
  if (options.device == "cpu") return *runtime::client("CPU").devices()[0];
  if (options.device == "sim") {
    // The SIM backend reads its chip when its client is first made.
    if (!options.chip.empty()) setenv("PODSIM_TOPOLOGY", options.chip.c_str(), 1);
    return *runtime::client("SIM").devices()[0];
  }
  fail("--device {}: expected cpu or sim", options.device);
}

namespace {

using StepFn = std::function<Tensor(const data::Example& batch)>;

void run_training(data::DeviceLoader& loader, int64_t steps, int64_t log_every, const StepFn& step,
                  const std::string& profile, std::ostream& out, TrainResult& result) {
  if (!profile.empty() && loader.device().kind() != runtime::DeviceKind::kSim)
    fail("--profile needs a simulated chip (--device sim); {} has no cycle model",
         loader.device().name());
  using Clock = std::chrono::steady_clock;
  const int64_t compiled_before = runtime::counter_value("UncachedCompile");
  const int64_t cycles_before = runtime::counter_value("SimulatedCycles");
  std::vector<Tensor> window;  // the losses since the last progress line
  auto window_mean = [&] {
    double sum = 0;
    for (const Tensor& loss : window) sum += loss.item().to_double();
    return window.empty() ? 0.0 : sum / static_cast<double>(window.size());
  };
  Clock::time_point start{}, last_line = Clock::now();
  int64_t done = 0;
  bool first_window = true;
  while (done < steps) {
    for (const data::Example& batch : loader) {
      if (done == steps) break;
      if (!profile.empty() && done == steps - 1) {
        // Profile only the last step: everything before it runs unprofiled.
        mark_step();
        wait_device_ops();
        runtime::set_sim_profiling(true);
      }
      window.push_back(step(batch));
      ++done;
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
        double loss = window_mean();
        if (first_window) result.first_loss = loss;
        first_window = false;
        result.final_loss = loss;
        Clock::time_point now = Clock::now();
        double rate = static_cast<double>(window.size()) /
                      std::chrono::duration<double>(now - last_line).count();
        last_line = now;
        window.clear();
        out << fmt::format("step {:>5}/{}  loss {:.4f}  {:.1f} steps/s\n", done, steps, loss, rate)
            << std::flush;
      }
    }
  }
  mark_step();
  wait_device_ops();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.steps = done;
  result.steps_per_second = done > 1 && seconds > 0 ? static_cast<double>(done - 1) / seconds : 0;
  result.compilations = runtime::counter_value("UncachedCompile") - compiled_before;
  result.simulated_cycles = runtime::counter_value("SimulatedCycles") - cycles_before;
  if (!profile.empty()) {
    std::optional<runtime::SimRun> run = runtime::last_sim_run();
    runtime::set_sim_profiling(false);
    if (!run) fail("no profiled run of the last step");
    traces::write_chrome_trace(run->profile, profile);
    out << traces::format_summary(traces::summarize(run->profile))
        << fmt::format("wrote the profile of the last step to {} (open it in Perfetto UI)\n",
                       profile);
  }
  if (result.simulated_cycles > 0)
    out << fmt::format("simulated chip: {} cycles per step on average\n",
                       result.simulated_cycles / result.steps);
}

}  // namespace

TrainResult train(const Training& training, std::shared_ptr<const data::Dataset> dataset,
                  int64_t steps, int64_t batch, const LossFn& loss, const TrainOptions& options,
                  std::ostream& out) {
  runtime::Device& device = training_device(options);
  data::DeviceLoader loader(
      data::DataLoader(
          std::move(dataset),
          {.batch_size = batch, .shuffle = true, .seed = options.seed, .drop_last = true}),
      device);
  TrainResult result;
  result.device = device.name();
  const int64_t log_every =
      options.log_every > 0 ? options.log_every : std::max<int64_t>(1, steps / 10);
  run_training(
      loader, steps, log_every,
      [&](const data::Example& b) {
        Tensor value = loss(b);
        value.backward();
        training.optimizer.step();
        training.optimizer.zero_grad();
        training.schedule.step();
        return value;
      },
      options.profile, out, result);
  if (!options.checkpoint.empty()) {
    optim::save_checkpoint(training.model, &training.optimizer, result.steps, options.checkpoint);
    out << "checkpoint written to " << options.checkpoint << "\n";
  }
  return result;
}

}  // namespace podsim::examples
