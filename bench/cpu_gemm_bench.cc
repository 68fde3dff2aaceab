// SGEMM through the CPU target (a dot module compiled once, run repeatedly) against
// cblas_sgemm called directly, measured alternately in this run. Prints GFLOP/s of
// both and their ratio for 1024 and 2048 square matrices. The CPU target's time is for
// run_into() (result reused); run() additionally allocates and zero-fills the result.
// The CPU target runs OpenBLAS single-threaded and splits large products into panels on
// its TBB workers; the direct cblas_sgemm calls share that process-wide setting.
// Usage: cpu_gemm_bench [size ...]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/cpu/cpu_compiler.h"
#include "compiler/ir/parser.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename F>
double seconds(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoi(argv[i]));
  if (sizes.empty()) sizes = {1024, 2048};
  std::printf("cpu_gemm_bench: f32 [n,n] x [n,n]; OpenBLAS %s, %d thread(s)\n",
              openblas_get_config(), openblas_get_num_threads());
  bool all_identical = true;
  for (int n : sizes) {
    const std::string s = "f32[" + std::to_string(n) + "," + std::to_string(n) + "]";
    const std::string text = "HloModule gemm\n\nENTRY main {\n  a = " + s +
                             " parameter(0)\n  b = " + s + " parameter(1)\n  ROOT c = " + s +
                             " dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    std::unique_ptr<podsim::ir::Module> module = podsim::ir::parse_module(text);
    std::unique_ptr<podsim::cpu::Executable> executable = podsim::cpu::compile(*module);
    const podsim::ir::Shape shape(podsim::ir::PrimitiveType::kF32, {n, n});
    std::vector<podsim::ir::Literal> args{podsim::ir::Literal(shape), podsim::ir::Literal(shape)};
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& a : args)
      for (float& v : a.data<float>()) v = dist(rng);
    const std::vector<const podsim::ir::Literal*> pointers{&args[0], &args[1]};
    std::vector<float> c(static_cast<size_t>(n) * static_cast<size_t>(n));
    auto direct = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                  args[0].data<float>().data(), n, args[1].data<float>().data(), n, 0.0f, c.data(),
                  n);
    };
    std::vector<podsim::ir::Literal> results = executable->run(pointers);
    direct();
    const bool identical =
        std::memcmp(results[0].bytes().data(), c.data(), c.size() * sizeof(float)) == 0;
    all_identical = all_identical && identical;

    const int reps = n <= 1024 ? 20 : 8;
    std::vector<double> ours, theirs, allocating;
    for (int r = 0; r < reps; ++r) {
      ours.push_back(seconds([&] { executable->run_into(pointers, results); }));
      theirs.push_back(seconds(direct));
      if (r % 2 == 0) allocating.push_back(seconds([&] { results = executable->run(pointers); }));
    }
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    const double g_ours = flops / median(ours) / 1e9, g_theirs = flops / median(theirs) / 1e9;
    const double g_alloc = flops / median(allocating) / 1e9;
    std::printf(
        "  n=%d: cpu target %7.1f GFLOP/s, cblas_sgemm %7.1f GFLOP/s, ratio %.3f"
        "  (run(): %.1f GFLOP/s, ratio %.3f); results identical: %s\n",
        n, g_ours, g_theirs, g_ours / g_theirs, g_alloc, g_alloc / g_theirs,
        identical ? "yes" : "NO");
  }
  return all_identical ? 0 : 1;
}
