// A 10-op elementwise chain on 16M floats (two inputs, one output) through the CPU
// target, which fuses it into one pass over memory. Prints, measured in this run:
//  * GB/s counting input + output bytes, against a plain memcpy of a buffer (bytes
//    read + written) on one thread and on TBB's threads;
//  * the time against PyTorch eager running the same chain with the same thread count
//    (bench/torch_reference.py through /usr/bin/python3; skipped when torch is missing).
// The CPU target's time is given for run_into() (results reused, as a runtime loop
// would) and for run() (which allocates and zero-fills a fresh 64 MiB result).
// Usage: cpu_fusion_bench [elements]
#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "compiler/cpu/cpu_compiler.h"
#include "compiler/ir/parser.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string chain_module(int64_t n) {
  const std::string s = "f32[" + std::to_string(n) + "]";
  std::string m = "HloModule chain\n\nENTRY main {\n";
  m += "  x = " + s + " parameter(0)\n  y = " + s + " parameter(1)\n";
  auto constant = [&](const std::string& name, const char* value) {
    m += "  " + name + "c = f32[] constant(" + value + ")\n";
    m += "  " + name + " = " + s + " broadcast(" + name + "c), dimensions={}\n";
  };
  constant("k15", "1.5");
  constant("k0", "0");
  constant("k4", "4");
  constant("k05", "0.5");
  constant("k025", "0.25");
  // Must match torch_reference.py op for op.
  m += "  v1 = " + s + " multiply(x, k15)\n";
  m += "  v2 = " + s + " add(v1, y)\n";
  m += "  v3 = " + s + " maximum(v2, k0)\n";
  m += "  v4 = " + s + " multiply(v3, v3)\n";
  m += "  v5 = " + s + " subtract(v4, x)\n";
  m += "  v6 = " + s + " abs(v5)\n";
  m += "  v7 = " + s + " minimum(v6, k4)\n";
  m += "  v8 = " + s + " multiply(v7, k05)\n";
  m += "  v9 = " + s + " add(v8, k025)\n";
  m += "  ROOT v10 = " + s + " subtract(v9, y)\n}\n";
  return m;
}

float chain_value(float x, float y) {
  float v = x * 1.5f;
  v = v + y;
  v = (v >= 0.0f || std::isnan(v)) ? v : 0.0f;
  v = v * v;
  v = v - x;
  v = std::fabs(v);
  v = (v <= 4.0f || std::isnan(v)) ? v : 4.0f;
  v = v * 0.5f;
  v = v + 0.25f;
  return v - y;
}

// Runs torch_reference.py; returns its median seconds, or a negative value.
double torch_median(int64_t n, int threads, std::string& note) {
  const std::filesystem::path script =
      std::filesystem::path(PODSIM_SOURCE_DIR) / "bench" / "torch_reference.py";
  const std::string command = "/usr/bin/python3 " + script.string() + " --n " + std::to_string(n) +
                              " --threads " + std::to_string(threads) + " --reps 10 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    note = "could not start /usr/bin/python3";
    return -1;
  }
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe)) output += buffer;
  const int status = pclose(pipe);
  const size_t at = output.find("\"median_s\":");
  if (status != 0 || at == std::string::npos) {
    note = output.empty() ? "no output" : output;
    return -1;
  }
  const size_t version = output.find("\"torch\": \"");
  if (version != std::string::npos)
    note = output.substr(version + 10, output.find('"', version + 10) - version - 10);
  return std::stod(output.substr(at + 11));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::stoll(argv[1]) : int64_t{16} << 20;
  const int threads = tbb::info::default_concurrency();
  std::unique_ptr<podsim::ir::Module> module = podsim::ir::parse_module(chain_module(n));
  std::unique_ptr<podsim::cpu::Executable> executable = podsim::cpu::compile(*module);
  std::printf("cpu_fusion_bench: 10-op f32 elementwise chain, %lld elements, %d threads (TBB)\n",
              static_cast<long long>(n), threads);
  std::printf("  plan: %lld step(s), %lld fusion(s), %lld intermediate bytes\n",
              static_cast<long long>(executable->stats().steps),
              static_cast<long long>(executable->stats().fusions),
              static_cast<long long>(executable->stats().intermediate_bytes));

  const podsim::ir::Shape shape(podsim::ir::PrimitiveType::kF32, {n});
  std::vector<podsim::ir::Literal> args{podsim::ir::Literal(shape), podsim::ir::Literal(shape)};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (auto& a : args)
    for (float& v : a.data<float>()) v = dist(rng);
  const std::vector<const podsim::ir::Literal*> pointers{&args[0], &args[1]};

  std::vector<podsim::ir::Literal> results = executable->run(pointers);
  const auto x = args[0].data<float>(), y = args[1].data<float>();
  const auto out = results[0].data<float>();
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want = chain_value(x[static_cast<size_t>(i)], y[static_cast<size_t>(i)]);
    if (std::memcmp(&want, &out[static_cast<size_t>(i)], sizeof(float)) != 0) ++mismatches;
  }
  std::printf("  check against a scalar C++ loop: %lld mismatching elements\n",
              static_cast<long long>(mismatches));

  const int reps = 15;
  const double t_into = median_seconds(reps, [&] { executable->run_into(pointers, results); });
  const double t_run = median_seconds(5, [&] { results = executable->run(pointers); });

  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes, std::byte{0});
  const double t_copy = median_seconds(reps, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  const size_t chunk = size_t{1} << 20;
  const double t_copy_tbb = median_seconds(reps, [&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, (bytes + chunk - 1) / chunk),
                      [&](const tbb::blocked_range<size_t>& r) {
                        for (size_t c = r.begin(); c < r.end(); ++c) {
                          const size_t begin = c * chunk, len = std::min(chunk, bytes - begin);
                          std::memcpy(dst.data() + begin, src.data() + begin, len);
                        }
                      });
  });

  const double fused_bytes = 3.0 * static_cast<double>(bytes);  // two inputs, one output
  const double copy_bytes = 2.0 * static_cast<double>(bytes);   // read + write
  const double gbs_into = fused_bytes / t_into / 1e9, gbs_run = fused_bytes / t_run / 1e9;
  const double gbs_copy = copy_bytes / t_copy / 1e9, gbs_copy_tbb = copy_bytes / t_copy_tbb / 1e9;
  std::printf("  cpu target run_into: %8.3f ms  %6.2f GB/s (inputs + output)\n", t_into * 1e3,
              gbs_into);
  std::printf("  cpu target run:      %8.3f ms  %6.2f GB/s (allocates the result)\n", t_run * 1e3,
              gbs_run);
  std::printf("  memcpy, 1 thread:    %8.3f ms  %6.2f GB/s (read + write of %zu MiB)\n",
              t_copy * 1e3, gbs_copy, bytes >> 20);
  std::printf("  memcpy, TBB threads: %8.3f ms  %6.2f GB/s\n", t_copy_tbb * 1e3, gbs_copy_tbb);
  std::printf(
      "  ratio fused GB/s / memcpy GB/s: %.2f (1 thread), %.2f (TBB)   [run(): %.2f / %.2f]\n",
      gbs_into / gbs_copy, gbs_into / gbs_copy_tbb, gbs_run / gbs_copy, gbs_run / gbs_copy_tbb);

  std::string note;
  const double t_torch = torch_median(n, threads, note);
  if (t_torch < 0) {
    std::printf("  PyTorch eager: skipped (%s)\n", note.c_str());
  } else {
    std::printf("  PyTorch %s eager, %d threads: %8.3f ms\n", note.c_str(), threads, t_torch * 1e3);
    std::printf("  speedup over PyTorch eager: %.2fx (run_into), %.2fx (run)\n", t_torch / t_into,
                t_torch / t_run);
  }
  return mismatches == 0 ? 0 : 1;
}
