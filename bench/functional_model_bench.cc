// Speed of the functional chip model (sim/functional) in simulated instructions per
// second, on hand-written kernels for the v4 chip (8 x 128 vector registers, 128 x 128
// MXU): a scalar loop (dispatch cost alone), a vector-heavy loop and an MXU-heavy loop.
// Each is compared with the same work done directly in C++ in the same run (plain loops
// for the vector kernel, OpenBLAS sgemm for the MXU kernel), and the ratios printed.
//   build/bin/bench/functional_model_bench
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"

namespace {

using podsim::isa::Executable;
using podsim::sim::FunctionalModel;

constexpr int kScalarIterations = 1'000'000;
constexpr int kVectorIterations = 20'000;
constexpr int kMxuIterations = 200;
constexpr int kTile = 8 * 128;  // floats in one v4 vector register
constexpr int kMxu = 128;

const Executable& scalar_kernel() {
  static const Executable e = podsim::isa::assemble(fmt::format(R"(
.chip v4
.program core 0
  sli s1, {}
loop:
  sadd s2, s2, s1
  saddi s1, s1, -1
  bnz s1, loop
  halt
)",
                                                                kScalarIterations));
  return e;
}

// Per iteration: two tile loads, add, multiply, max, a store, and the loop's two scalar
// instructions.
const Executable& vector_kernel() {
  static const Executable e = podsim::isa::assemble(fmt::format(R"(
.chip v4
.region a vmem[0] 0 4096
.region b vmem[0] 4096 4096
.region c vmem[0] 8192 4096
.program core 0
  sli s1, {}
  sli s2, 512
loop:
  vld.f32 v0, a[s0], s2
  vld.f32 v1, b[s0], s2
  vadd.f32 v2, v0, v1
  vmul.f32 v3, v2, v0
  vmax.f32 v4, v3, v1
  vst.f32 c[s0], s2, v4
  saddi s1, s1, -1
  bnz s1, loop
  halt
)",
                                                                kVectorIterations));
  return e;
}

// One weight load, then per iteration a 128 x 128 x 128 pass accumulating (2M MACs).
const Executable& mxu_kernel() {
  static const Executable e = podsim::isa::assemble(fmt::format(R"(
.chip v4
.region lhs vmem[0] 0 65536
.region w vmem[0] 65536 65536
.region out vmem[0] 131072 65536
.program core 0
  sli s1, {}
  sli s2, 512
  sli s3, 128
  mldw.f32 m0, w[s0], s2, s3
  mmul.f32 m0, lhs[s0], s2, 0
loop:
  mmul.f32 m0, lhs[s0], s2, 1
  saddi s1, s1, -1
  bnz s1, loop
  mpop.f32 m0, out[s0], s2
  halt
)",
                                                                kMxuIterations));
  return e;
}

void fill(FunctionalModel& model, int region, int64_t floats) {
  std::vector<float> values(static_cast<size_t>(floats));
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(k % 97) * 0.01f - 0.3f;
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  model.write_region(region, 0, bytes);
}

void run_model(benchmark::State& state, const Executable& e, int filled_regions,
               int64_t floats_per_region) {
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    FunctionalModel model(e);
    for (int r = 0; r < filled_regions; ++r) fill(model, r, floats_per_region);
    state.ResumeTiming();
    instructions = model.run_to_completion(int64_t{1} << 32).instructions;
    benchmark::DoNotOptimize(model.state().core(0).scalar[2]);
  }
  state.counters["instructions/s"] = benchmark::Counter(
      static_cast<double>(instructions) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_ModelScalarLoop(benchmark::State& state) { run_model(state, scalar_kernel(), 0, 0); }
void BM_ModelVectorLoop(benchmark::State& state) { run_model(state, vector_kernel(), 2, kTile); }
void BM_ModelMxuLoop(benchmark::State& state) {
  run_model(state, mxu_kernel(), 2, kMxu * kMxu);
  double macs = double{kMxuIterations + 1} * kMxu * kMxu * kMxu;
  state.counters["MACs/s"] = benchmark::Counter(macs * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

// The vector kernel's arithmetic on plain arrays.
void BM_ReferenceVectorLoop(benchmark::State& state) {
  std::vector<float> a(kTile), b(kTile), c(kTile), v0(kTile), v1(kTile), v2(kTile), v3(kTile),
      v4(kTile);
  for (int k = 0; k < kTile; ++k)
    a[k] = static_cast<float>(k % 97) * 0.01f - 0.3f, b[k] = a[k] * 0.5f;
  for (auto _ : state) {
    for (int it = 0; it < kVectorIterations; ++it) {
      std::memcpy(v0.data(), a.data(), kTile * 4);
      std::memcpy(v1.data(), b.data(), kTile * 4);
      for (int k = 0; k < kTile; ++k) v2[k] = v0[k] + v1[k];
      for (int k = 0; k < kTile; ++k) v3[k] = v2[k] * v0[k];
      for (int k = 0; k < kTile; ++k) v4[k] = std::max(v3[k], v1[k]);
      std::memcpy(c.data(), v4.data(), kTile * 4);
      benchmark::ClobberMemory();
    }
  }
}

// The MXU kernel's matrix products with OpenBLAS.
void BM_ReferenceMxuLoop(benchmark::State& state) {
  double macs = double{kMxuIterations + 1} * kMxu * kMxu * kMxu;
  std::vector<float> lhs(kMxu * kMxu, 0.25f), w(kMxu * kMxu, 0.5f), acc(kMxu * kMxu, 0.0f);
  for (auto _ : state) {
    for (int it = 0; it < kMxuIterations + 1; ++it)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kMxu, kMxu, kMxu, 1.0f, lhs.data(),
                  kMxu, w.data(), kMxu, 1.0f, acc.data(), kMxu);
    benchmark::DoNotOptimize(acc.data());
  }
  state.counters["MACs/s"] = benchmark::Counter(macs * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

BENCHMARK(BM_ModelScalarLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ModelVectorLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReferenceVectorLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ModelMxuLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReferenceMxuLoop)->Unit(benchmark::kMillisecond);

// Keeps each benchmark's CPU time per iteration for the ratios printed at the end (CPU
// time: the build machines are shared, and every benchmark here runs on one thread).
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Iteration && !run.error_occurred)
        seconds[run.benchmark_name()] = run.GetAdjustedCPUTime();
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  openblas_set_num_threads(1);  // one core against one core
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto ratio = [&](const char* model, const char* reference, const char* what) {
    auto m = reporter.seconds.find(model), r = reporter.seconds.find(reference);
    if (m != reporter.seconds.end() && r != reporter.seconds.end() && r->second > 0)
      fmt::print("{}: the functional model takes {:.1f}x the time of {}\n", what,
                 m->second / r->second, reference);
  };
  ratio("BM_ModelVectorLoop", "BM_ReferenceVectorLoop", "vector kernel");
  ratio("BM_ModelMxuLoop", "BM_ReferenceMxuLoop", "MXU kernel");
  benchmark::Shutdown();
  return 0;
}
