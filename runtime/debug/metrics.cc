#include "runtime/debug/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

namespace podsim::debug {
namespace {

// Rates and percentiles describe the recent past: the last kWindow samples.
constexpr size_t kWindow = 1024;
constexpr double kPercents[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class CounterImpl final : public Counter {
 public:
  void add(int64_t delta) override {
    value_.fetch_add(delta, std::memory_order_relaxed);
    // A plain load first keeps the common case to one read-modify-write.
    if (!touched_.load(std::memory_order_relaxed)) touched_.store(true, std::memory_order_relaxed);
  }
  int64_t value() const override { return value_.load(std::memory_order_relaxed); }
  bool touched() const { return touched_.load(std::memory_order_relaxed); }
  void reset() {
    value_.store(0, std::memory_order_relaxed);
    touched_.store(false, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> value_{0};
  std::atomic<bool> touched_{false};
};

class Metric {
 public:
  explicit Metric(MetricUnit unit) : unit_(unit) {}

  void record(double value, int64_t time_ns) {
    std::lock_guard lock(mutex_);
    ++total_samples_;
    accumulator_ += value;
    Sample sample{value, time_ns};
    if (window_.size() < kWindow) {
      window_.push_back(sample);
    } else {
      window_[next_] = sample;
      next_ = (next_ + 1) % kWindow;
    }
  }

  MetricSummary summary() const {
    std::lock_guard lock(mutex_);
    MetricSummary s;
    s.unit = unit_;
    s.total_samples = total_samples_;
    s.accumulator = accumulator_;
    if (window_.empty()) return s;
    std::vector<double> values;
    values.reserve(window_.size());
    int64_t first = window_.front().time_ns, last = first;
    double sum = 0;
    for (const Sample& sample : window_) {
      values.push_back(sample.value);
      first = std::min(first, sample.time_ns);
      last = std::max(last, sample.time_ns);
      sum += sample.value;
    }
    // n samples span n - 1 intervals; the value rate is that rate times the mean value.
    if (values.size() >= 2 && last > first) {
      s.rate_per_second =
          static_cast<double>(values.size() - 1) / (static_cast<double>(last - first) * 1e-9);
      s.value_rate_per_second = s.rate_per_second * sum / static_cast<double>(values.size());
    }
    std::sort(values.begin(), values.end());
    // Nearest rank: the smallest value with at least p% of the samples at or below it.
    for (double p : kPercents) {
      auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
      s.percentiles.emplace_back(p, values[std::clamp<size_t>(rank, 1, values.size()) - 1]);
    }
    return s;
  }

  int64_t total_samples() const {
    std::lock_guard lock(mutex_);
    return total_samples_;
  }

  void reset() {
    std::lock_guard lock(mutex_);
    total_samples_ = 0;
    accumulator_ = 0;
    window_.clear();
    next_ = 0;
  }

 private:
  struct Sample {
    double value;
    int64_t time_ns;
  };
  mutable std::mutex mutex_;
  MetricUnit unit_;  // the unit of the first record; later units are ignored
  int64_t total_samples_ = 0;
  double accumulator_ = 0;
  std::vector<Sample> window_;  // a ring once full; next_ is the oldest
  size_t next_ = 0;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<CounterImpl>, std::less<>> counters;
  std::map<std::string, std::unique_ptr<Metric>, std::less<>> metrics;
};

Registry& registry() {
  // Never destroyed: objects destroyed at exit may still count things.
  static Registry* instance = new Registry;
  return *instance;
}

Metric* find_metric(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? nullptr : it->second.get();
}

std::string format_time(double ns) {
  if (std::isnan(ns)) return "nan";
  if (ns < 0) return "-" + format_time(-ns);
  if (ns >= 9.2e18) return fmt::format("{:.3g}s", ns * 1e-9);  // beyond int64 nanoseconds
  auto n = static_cast<int64_t>(std::llround(ns));
  int64_t hours = n / 3'600'000'000'000;
  int64_t minutes = n / 60'000'000'000 % 60;
  int64_t seconds = n / 1'000'000'000 % 60;
  int64_t millis = n / 1'000'000 % 1000;
  double micros = static_cast<double>(n % 1'000'000) / 1000.0;
  std::string out;
  if (hours > 0) out += fmt::format("{}h", hours);
  if (!out.empty() || minutes > 0) out += fmt::format("{:02}m", minutes);
  if (!out.empty() || seconds > 0) out += fmt::format("{:02}s", seconds);
  if (!out.empty() || millis > 0) out += fmt::format("{:03}ms", millis);
  out += out.empty() ? fmt::format("{:.3f}us", micros) : fmt::format("{:07.3f}us", micros);
  return out;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  size_t unit = 0;
  double magnitude = std::fabs(bytes);
  while (magnitude >= 1024 && unit + 1 < std::size(kUnits)) {
    magnitude /= 1024;
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.2f}{}", bytes, kUnits[unit]);
}

void append_metric(std::string& out, std::string_view name, const MetricSummary& s) {
  out += fmt::format("Metric: {}\n", name);
  out += fmt::format("  TotalSamples: {}\n", s.total_samples);
  out += fmt::format("  Accumulator: {}\n", format_metric_value(s.accumulator, s.unit));
  out += fmt::format("  ValueRate: {} / second\n",
                     format_metric_value(s.value_rate_per_second, s.unit));
  out += fmt::format("  Rate: {:.6g} / second\n", s.rate_per_second);
  out += "  Percentiles: ";
  for (size_t i = 0; i < s.percentiles.size(); ++i)
    out += fmt::format("{}{:g}%={}", i == 0 ? "" : "; ", s.percentiles[i].first,
                       format_metric_value(s.percentiles[i].second, s.unit));
  out += "\n";
}

void append_counter(std::string& out, std::string_view name, int64_t value) {
  out += fmt::format("Counter: {}\n  Value: {}\n", name, value);
}

}  // namespace

Counter& counter(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.counters.find(name);
  if (it == r.counters.end())
    it = r.counters.emplace(std::string(name), std::make_unique<CounterImpl>()).first;
  return *it->second;
}

void counter_add(std::string_view name, int64_t delta) { counter(name).add(delta); }

int64_t counter_value(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.counters.find(name);
  return it == r.counters.end() ? 0 : it->second->value();
}

void metric_record(std::string_view name, double value, MetricUnit unit) {
  if (std::isnan(value)) return;  // would break the ordering percentiles rely on
  Metric* metric;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.metrics.find(name);
    if (it == r.metrics.end())
      it = r.metrics.emplace(std::string(name), std::make_unique<Metric>(unit)).first;
    metric = it->second.get();
  }
  metric->record(value, now_ns());
}

MetricSummary metric_summary(std::string_view name) {
  Metric* metric = find_metric(name);
  return metric == nullptr ? MetricSummary{} : metric->summary();
}

ScopedTimer::ScopedTimer(std::string_view metric) : metric_(metric), start_ns_(now_ns()) {}
ScopedTimer::~ScopedTimer() { metric_record(metric_, static_cast<double>(now_ns() - start_ns_)); }

std::string format_metric_value(double value, MetricUnit unit) {
  switch (unit) {
    case MetricUnit::kNanoseconds:
      return format_time(value);
    case MetricUnit::kBytes:
      return format_bytes(value);
    case MetricUnit::kCount:
      break;
  }
  return fmt::format("{:.6g}", value);
}

std::vector<std::string> counter_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, c] : r.counters)
    if (c->touched()) names.push_back(name);
  return names;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  std::vector<std::pair<std::string, Metric*>> all;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& [name, m] : r.metrics) all.emplace_back(name, m.get());
  }
  for (const auto& [name, m] : all)
    if (m->total_samples() > 0) names.push_back(name);
  return names;
}

std::string metrics_report() {
  std::string out;
  for (const std::string& name : metric_names()) append_metric(out, name, metric_summary(name));
  for (const std::string& name : counter_names()) {
    int64_t value = counter_value(name);
    if (value != 0) append_counter(out, name, value);
  }
  return out;
}

std::string short_metrics_report() {
  static constexpr std::string_view kMetrics[] = {"CompileTime", "ExecuteTime",
                                                  "TransferToDeviceTime", "TransferFromDeviceTime"};
  static constexpr std::string_view kCounters[] = {"CachedCompile", "UncachedCompile", "MarkStep"};
  std::string out;
  for (std::string_view name : kMetrics) {
    MetricSummary s = metric_summary(name);
    if (s.total_samples > 0) append_metric(out, name, s);
  }
  for (std::string_view name : kCounters) {
    int64_t value = counter_value(name);
    if (value != 0) append_counter(out, name, value);
  }
  return out;
}

void clear_metrics() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto& [name, c] : r.counters) c->reset();
  for (auto& [name, m] : r.metrics) m->reset();
}

namespace {

constexpr std::string_view kProfilerPrefix = "podsim-profiler";

// Thresholds of the analysis (PyTorch/XLA's): more than one compilation per two steps
// once 10 steps have passed; more than one device-to-host transfer per two steps;
// single compilations over 300 s and executions over 30 s.
constexpr int64_t kCompileWarmupSteps = 10;
constexpr double kCompileSlowNs = 300e9;
constexpr double kExecuteSlowNs = 30e9;

// The longest sample the summary still knows (its highest percentile).
double longest(const MetricSummary& summary) {
  double value = 0;
  for (const auto& [percent, v] : summary.percentiles) value = std::max(value, v);
  return value;
}

}  // namespace

std::string metrics_analysis() {
  std::string out;
  int64_t steps = counter_value("MarkStep");
  MetricSummary compile = metric_summary("CompileTime");
  MetricSummary transfer = metric_summary("TransferFromDeviceTime");
  MetricSummary execute = metric_summary("ExecuteTime");
  if (steps > kCompileWarmupSteps && 2 * compile.total_samples > steps)
    out += fmt::format("{}: CompileTime too frequent: {} counts during {} steps\n", kProfilerPrefix,
                       compile.total_samples, steps);
  if (steps > 0 && 2 * transfer.total_samples > steps)
    out += fmt::format("{}: TransferFromDeviceTime too frequent: {} counts during {} steps\n",
                       kProfilerPrefix, transfer.total_samples, steps);
  if (longest(compile) > kCompileSlowNs)
    out += fmt::format(
        "{}: CompileTime too slow: longest instance took {}\n", kProfilerPrefix,
        format_metric_value(longest(compile), MetricUnit::kNanoseconds));
  if (longest(execute) > kExecuteSlowNs)
    out += fmt::format(
        "{}: ExecuteTime too slow: longest instance took {}\n", kProfilerPrefix,
        format_metric_value(longest(execute), MetricUnit::kNanoseconds));
  return out;
}

}  // namespace podsim::debug
