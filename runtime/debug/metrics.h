// Counters and metrics with PyTorch/XLA's names and report format.
//   counters: CachedCompile, UncachedCompile, MarkStep, CreateTensor, DestroyTensor, ...
//   metrics:  CompileTime, ExecuteTime, TransferToDeviceTime, TransferFromDeviceTime, ...
// Metrics keep TotalSamples, Accumulator, Rate and Percentiles (over a bounded sample
// window). Thread-safe; cheap enough for hot paths (a counter add is one atomic add
// once its name has been looked up: keep the Counter& around).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::debug {

enum class MetricUnit { kNanoseconds, kBytes, kCount };

class Counter {
 public:
  virtual ~Counter() = default;
  virtual void add(int64_t delta = 1) = 0;
  virtual int64_t value() const = 0;
};

// The counter of that name, created on first use; the reference stays valid.
Counter& counter(std::string_view name);
void counter_add(std::string_view name, int64_t delta = 1);
int64_t counter_value(std::string_view name);  // 0 if never touched

// Records one sample of a metric (created on first use with that unit).
void metric_record(std::string_view name, double value, MetricUnit unit = MetricUnit::kNanoseconds);

struct MetricSummary {
  int64_t total_samples = 0;
  double accumulator = 0;
  double rate_per_second = 0;                          // samples per second over the window
  double value_rate_per_second = 0;                    // recorded value per second over the window
  std::vector<std::pair<double, double>> percentiles;  // (percent, value)
  MetricUnit unit = MetricUnit::kNanoseconds;
};
// Empty summary (total_samples 0) if never recorded.
MetricSummary metric_summary(std::string_view name);

// Records the wall time of a scope into a kNanoseconds metric.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::string_view metric);
  ~ScopedTimer();
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::string metric_;
  int64_t start_ns_;
};

// A value as the reports print it: times as 01s002ms003.400us, bytes as 1.50MB.
std::string format_metric_value(double value, MetricUnit unit);

std::vector<std::string> counter_names();  // touched counters, sorted
std::vector<std::string> metric_names();   // recorded metrics, sorted
std::string metrics_report();        // every metric and non-zero counter
std::string short_metrics_report();  // the key metrics and counters only
void clear_metrics();                // metrics and counters back to zero

// PyTorch/XLA's auto-analysis of the metrics: one "podsim-profiler: ..." line per symptom
// (compiling too often or too slowly, reading values too often, slow executions); empty if
// none. PODSIM_DEBUG=1 prints it (runtime/lazy/debug_report.h).
std::string metrics_analysis();

}  // namespace podsim::debug
