#include "examples/train/train_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "runtime/metrics.h"

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

int64_t log_interval(const TrainOptions& options, int64_t steps) {
  if (options.log_every > 0) return options.log_every;
  return std::max<int64_t>(1, steps / 10);
}

void run_training(data::DeviceLoader& loader, int64_t steps, int64_t log_every, const StepFn& step,
                  std::ostream& out, TrainResult& result) {
  using Clock = std::chrono::steady_clock;
  const int64_t compiled_before = runtime::counter_value("UncachedCompile");
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
        double rate = static_cast<double>(window.size()) / std::chrono::duration<double>(now - last_line).count();
        last_line = now;
        window.clear();
        out << fmt::format("step {:>5}/{}  loss {:.4f}  {:.1f} steps/s\n", done, steps, loss, rate) << std::flush;
      }
    }
  }
  mark_step();
  wait_device_ops();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.steps = done;
  result.steps_per_second = done > 1 && seconds > 0 ? static_cast<double>(done - 1) / seconds : 0;
  result.compilations = runtime::counter_value("UncachedCompile") - compiled_before;
}

}  // namespace podsim::examples
