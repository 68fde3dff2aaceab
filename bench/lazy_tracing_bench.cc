// Costs of the lazy-tensor layer on the host, apart from any device work:
//   trace/*          recording one op (node, hash, shape checks, tensor handle), per op
//   capture/1k       collecting a 1k-node graph at sync: post-order, parameters, hash
//   cached_step/1k   mark_step of a traced 1k-op graph that hits the compile cache:
//                    collect + hash + cache lookup + launch (device execution excluded)
// The goal is <= 0.5 us per traced op. Each figure is also printed as a ratio to a
// reference measured in the same run: one heap allocation of a node's size plus a
// hash of eight words, the least any node-recording tracer does per op.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/pjrt/compile_cache.h"
#include "runtime/pjrt/hash.h"
#include "runtime/tensor/tensor.h"
#include "runtime/lazy/tensor_impl.h"

namespace {

using podsim::Tensor;

constexpr int kOps = 1000;

Tensor device_vector(int64_t n, float value) {
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), value), {n},
                             &podsim::device());
}

void reference_allocation(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < kOps; ++i) {
      auto node = std::make_shared<std::array<uint64_t, 32>>();
      podsim::pjrt::Hasher h;
      for (int k = 0; k < 8; ++k) h.add((*node)[static_cast<size_t>(k)] + static_cast<uint64_t>(k));
      benchmark::DoNotOptimize(h.finish());
      benchmark::DoNotOptimize(node);
    }
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(reference_allocation)->Name("reference/alloc_and_hash_per_op");

// y = y + w: one node per op. The chain is dropped after each batch (its destruction
// is part of the cost).
void trace_tensor_add(benchmark::State& state) {
  Tensor w = device_vector(64, 1);
  for (auto _ : state) {
    Tensor y = w;
    for (int i = 0; i < kOps; ++i) y = y + w;
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(trace_tensor_add)->Name("trace/add_tensor_per_op");

// y = y * 0.5: the scalar becomes a graph parameter broadcast to y's shape (3 nodes).
void trace_scalar_mul(benchmark::State& state) {
  Tensor w = device_vector(64, 1);
  for (auto _ : state) {
    Tensor y = w;
    for (int i = 0; i < kOps; ++i) y = y * 0.5;
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(trace_scalar_mul)->Name("trace/mul_scalar_per_op");

// A layer-like mix: matmul, broadcast add of a bias, relu (4 nodes for 3 ops).
void trace_layer_mix(benchmark::State& state) {
  Tensor x = Tensor::from_vector(std::vector<float>(16 * 16, 0.01f), {16, 16}, &podsim::device());
  Tensor b = device_vector(16, 0.1f);
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < kOps / 3; ++i) y = podsim::relu(y.matmul(x) + b);
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * (kOps / 3) * 3);
}
BENCHMARK(trace_layer_mix)->Name("trace/matmul_add_relu_per_op");

Tensor trace_1k(const Tensor& w) {
  Tensor y = w;
  for (int i = 0; i < kOps; ++i) y = (i % 2 == 0) ? y + w : y * w;
  return y;
}

void capture_1k(benchmark::State& state) {
  Tensor w = device_vector(64, 1);
  Tensor y = trace_1k(w);
  std::vector<podsim::lazy::NodePtr> roots = {y.impl()->pending_node()};
  for (auto _ : state) {
    podsim::lazy::Graph graph = podsim::lazy::capture_graph(roots);
    benchmark::DoNotOptimize(graph.hash);
  }
  state.SetItemsProcessed(state.iterations() * kOps);
}
BENCHMARK(capture_1k)->Name("capture/1k_op_graph");

void cached_step_1k(benchmark::State& state) {
  Tensor w = device_vector(64, 1);
  {
    Tensor warm = trace_1k(w);
    podsim::mark_step();  // compiles once
    podsim::wait_device_ops();
  }
  for (auto _ : state) {
    state.PauseTiming();
    Tensor y = trace_1k(w);
    state.ResumeTiming();
    podsim::mark_step();
    state.PauseTiming();
    podsim::wait_device_ops();
    y = Tensor();
    state.ResumeTiming();
  }
}
BENCHMARK(cached_step_1k)->Name("cached_step/1k_op_graph")->Unit(benchmark::kMicrosecond);

// Prints Google Benchmark's table, then the per-op figures and their ratios, from the
// CPU time of the tracing thread: on a shared machine the wall time mostly measures the
// other processes.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Iteration && run.iterations > 0)
        seconds_per_iteration_[run.benchmark_name()] =
            run.cpu_accumulated_time / static_cast<double>(run.iterations);
  }

  void print_summary() const {
    auto get = [&](const std::string& name) {
      auto it = seconds_per_iteration_.find(name);
      return it == seconds_per_iteration_.end() ? -1.0 : it->second;
    };
    double reference_ns = get("reference/alloc_and_hash_per_op") * 1e9 / kOps;
    std::printf(
        "\nCPU time per traced op (goal <= 500 ns), ratio to one allocation + hash (%.1f ns):\n",
        reference_ns);
    for (const char* name :
         {"trace/add_tensor_per_op", "trace/mul_scalar_per_op", "trace/matmul_add_relu_per_op"}) {
      double s = get(name);
      if (s < 0) continue;
      double per_op =
          s * 1e9 / (std::string(name) == "trace/matmul_add_relu_per_op" ? (kOps / 3) * 3 : kOps);
      std::printf("  %-32s %8.1f ns  x%.1f  %s\n", name, per_op, per_op / reference_ns,
                  per_op <= 500 ? "ok" : "OVER GOAL");
    }
    double capture = get("capture/1k_op_graph");
    double step = get("cached_step/1k_op_graph");
    if (capture >= 0)
      std::printf("  capture + hash of a 1k-op graph   %8.1f us (%.1f ns per node)\n",
                  capture * 1e6, capture * 1e9 / kOps);
    if (step >= 0)
      std::printf("  cached mark_step of a 1k-op graph %8.1f us (%.1f ns per node)\n", step * 1e6,
                  step * 1e9 / kOps);
  }

 private:
  std::map<std::string, double> seconds_per_iteration_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
