// The OpenCL backend on its first device (a GPU where there is one, else PoCL on the
// CPU), all ratios measured in one run:
//   * GEMM f32 NxN x NxN through the runtime: podsim's own kernel (the fastest of its
//     tilings, and each tiling) vs CLBlast, GFLOP/s, checked against OpenBLAS on the host; with
//     --peak-gflops, the share of the device's FP32 peak;
//   * a fused chain of 10 elementwise ops over N floats (one generated kernel) in GB/s
//     vs a plain copy kernel on the same device;
//   * training steps (forward, backward, Adam; one compiled graph per step) of the
//     digits MLP (64-128-10, batch 64) and of a wide MLP, vs the CPU backend.
//   build/bin/bench/opencl_bench [--quick] [--require-gpu] [--peak-gflops G | --flops-per-cu-cycle
//   F]
// F: FP32 flops per compute unit and cycle (256 on NVIDIA Ampere/Hopper SMs: 128 FMA lanes),
// times the device's compute units and maximum clock.
// --quick: PoCL-sized problems (GEMM 256/512/1024, 4M floats, a smaller wide MLP).
// The copy kernel runs on the first GPU (else the first device), as the backend's
// device 0 does when PODSIM_OPENCL_DEVICE is unset.
#include <CL/cl.h>
#include <cblas.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/opencl/gemm_source.h"
#include "runtime/autograd/autograd.h"
#include "runtime/pjrt/opencl/opencl_backend.h"
#include "runtime/pjrt/device.h"
#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace {

using Clock = std::chrono::steady_clock;
using podsim::Tensor;
namespace ir = podsim::ir;
namespace nn = podsim::nn;
namespace rt = podsim::pjrt;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ir::Literal random_f32(std::vector<int64_t> dims, uint32_t seed) {
  ir::Literal l(ir::Shape(ir::PrimitiveType::kF32, std::move(dims)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : l.data<float>()) v = u(rng);
  return l;
}

// Seconds per run of executable (after a warm-up run): runs are queued back to back
// until at least min_seconds passed, then waited for.
double time_runs(rt::Executable& executable, const std::vector<std::shared_ptr<rt::Buffer>>& args,
                 rt::Device& device, double min_seconds,
                 std::vector<ir::Literal>* result = nullptr) {
  auto outputs = executable.execute(args, device);
  for (const auto& o : outputs) o->ready_event()->wait();
  if (result != nullptr)
    for (const auto& o : outputs) result->push_back(o->to_literal());
  int runs = 0;
  const auto start = Clock::now();
  while (runs < 3 || seconds_since(start) < min_seconds) {
    const int batch = std::max(1, runs);
    for (int k = 0; k < batch; ++k) outputs = executable.execute(args, device);
    for (const auto& o : outputs) o->ready_event()->wait();
    runs += batch;
  }
  return seconds_since(start) / runs;
}

void gemm(rt::Client& opencl, rt::Device& device, int64_t n, double peak_gflops) {
  auto module =
      ir::parse_module(fmt::format("HloModule gemm\nENTRY e {{\n  a = f32[{0},{0}] parameter(0)\n  "
                                   "b = f32[{0},{0}] parameter(1)\n"
                                   "  ROOT c = f32[{0},{0}] dot(a, b), lhs_contracting_dims={{1}}, "
                                   "rhs_contracting_dims={{0}}\n}}\n",
                                   n));
  ir::Literal a = random_f32({n, n}, 1), b = random_f32({n, n}, 2);
  std::vector<float> want(static_cast<size_t>(n * n));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
              static_cast<int>(n), 1.0f, a.data<float>().data(), static_cast<int>(n),
              b.data<float>().data(), static_cast<int>(n), 0.0f, want.data(), static_cast<int>(n));
  std::vector<std::shared_ptr<rt::Buffer>> args = {opencl.transfer_to_device(a, device),
                                                   opencl.transfer_to_device(b, device)};
  // own: the fastest tiling as the backend times them; then each tiling forced.
  std::vector<std::string> modes = {"own", "clblast"};
  for (size_t t = 0; t < podsim::opencl::kGemmTilings.size(); ++t)
    modes.push_back(fmt::format("own:{}", t));
  std::vector<double> gflops(modes.size());
  for (size_t m = 0; m < modes.size(); ++m) {
    std::fprintf(stderr, "  ... gemm %lld %s\n", static_cast<long long>(n), modes[m].c_str());
    setenv("PODSIM_OPENCL_GEMM", modes[m].c_str(), 1);
    auto executable = opencl.compile(*module);
    std::vector<ir::Literal> result;
    const double s = time_runs(*executable, args, device, 0.5, &result);
    gflops[m] =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / s / 1e9;
    double err = 0, scale = 0;
    auto got = result[0].data<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
    }
    if (err > 1e-4 * scale)
      std::printf("  WRONG: %s GEMM %lld differs from OpenBLAS by %g (scale %g)\n",
                  modes[m].c_str(), static_cast<long long>(n), err, scale);
  }
  unsetenv("PODSIM_OPENCL_GEMM");
  std::printf("  gemm %5lld  own %9.1f GFLOP/s  clblast %9.1f GFLOP/s  own/clblast %.2fx",
              static_cast<long long>(n), gflops[0], gflops[1], gflops[0] / gflops[1]);
  if (peak_gflops > 0) std::printf("  own %.1f%% of peak", 100 * gflops[0] / peak_gflops);
  std::printf("\n");
  if (2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) <
      podsim::opencl::kTimedGemmFlops)
    return;  // one tiling only: too small to time
  std::printf("        tilings (p: pipelined; k: slab depth)");
  for (size_t t = 0; t < podsim::opencl::kGemmTilings.size(); ++t) {
    const auto& g = podsim::opencl::kGemmTilings[t];
    std::printf("%s %dx%dx%d/%dx%d%s %.1f", t % 4 == 0 ? "\n         " : " ", g.tile_m, g.tile_n,
                g.tile_k, g.reg_m, g.reg_n, g.pipelined ? "p" : "", gflops[2 + t]);
  }
  std::printf(" GFLOP/s\n");
}

// The first GPU (else the first device): the backend's device 0.
cl_device_id first_device() {
  cl_uint count = 0;
  clGetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  cl_device_id chosen = nullptr;
  for (int want_gpu = 1; want_gpu >= 0 && chosen == nullptr; --want_gpu)
    for (cl_platform_id p : platforms) {
      cl_device_id d;
      if (clGetDeviceIDs(p, want_gpu ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, 1, &d, nullptr) ==
          CL_SUCCESS) {
        chosen = d;
        break;
      }
    }
  return chosen;
}

// FP32 GFLOP/s of the first device: compute units x clock x flops_per_cu_cycle.
double peak_gflops(double flops_per_cu_cycle) {
  cl_device_id d = first_device();
  cl_uint units = 0, mhz = 0;
  if (d == nullptr) return 0;
  clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, nullptr);
  clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof(mhz), &mhz, nullptr);
  return units * static_cast<double>(mhz) * flops_per_cu_cycle / 1e3;
}

// GB/s of a plain copy kernel over n floats on first_device().
double copy_bandwidth(int64_t n) {
  cl_device_id chosen = first_device();
  if (chosen == nullptr) return 0;
  cl_int err;
  cl_context ctx = clCreateContext(nullptr, 1, &chosen, nullptr, nullptr, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, chosen, 0, &err);
  const char* src =
      "__kernel void copy(__global const float* restrict a, __global float* restrict b) {"
      " const size_t i = get_global_id(0); b[i] = a[i]; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
  clBuildProgram(prog, 1, &chosen, "", nullptr, nullptr);
  cl_kernel k = clCreateKernel(prog, "copy", &err);
  const size_t bytes = static_cast<size_t>(n) * 4;
  cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  const float zero = 0;
  clEnqueueFillBuffer(q, a, &zero, sizeof(zero), 0, bytes, 0, nullptr, nullptr);
  clSetKernelArg(k, 0, sizeof(cl_mem), &a);
  clSetKernelArg(k, 1, sizeof(cl_mem), &b);
  const size_t global = static_cast<size_t>(n), local = 256;
  clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
  clFinish(q);
  int runs = 0;
  const auto start = Clock::now();
  while (runs < 3 || seconds_since(start) < 0.5) {
    clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    clFinish(q);
    ++runs;
  }
  const double s = seconds_since(start) / runs;
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 2.0 * static_cast<double>(bytes) / s / 1e9;
}

void elementwise(rt::Client& opencl, rt::Device& device, int64_t n) {
  // 10 elementwise ops after the parameter; constants are broadcast scalars (fused).
  auto module = ir::parse_module(fmt::format(R"(HloModule chain
ENTRY e {{
  x = f32[{0}] parameter(0)
  c1 = f32[] constant(1.5)
  c2 = f32[] constant(-0.25)
  c3 = f32[] constant(0.75)
  b1 = f32[{0}] broadcast(c1), dimensions={{}}
  b2 = f32[{0}] broadcast(c2), dimensions={{}}
  b3 = f32[{0}] broadcast(c3), dimensions={{}}
  o1 = f32[{0}] multiply(x, b1)
  o2 = f32[{0}] add(o1, b2)
  o3 = f32[{0}] maximum(o2, b2)
  o4 = f32[{0}] subtract(o3, x)
  o5 = f32[{0}] multiply(o4, b3)
  o6 = f32[{0}] add(o5, o1)
  o7 = f32[{0}] minimum(o6, b1)
  o8 = f32[{0}] negate(o7)
  o9 = f32[{0}] abs(o8)
  ROOT o10 = f32[{0}] add(o9, x)
}}
)",
                                             n));
  auto executable = opencl.compile(*module);
  std::vector<std::shared_ptr<rt::Buffer>> args = {
      opencl.transfer_to_device(random_f32({n}, 3), device)};
  const double s = time_runs(*executable, args, device, 0.5);
  const double fused = 2.0 * static_cast<double>(n) * 4 / s / 1e9;
  const double copy = copy_bandwidth(n);
  std::printf(
      "  fused 10-op chain over %lld floats: %.1f GB/s; copy kernel %.1f GB/s; fused/copy %.1f%%\n",
      static_cast<long long>(n), fused, copy, 100 * fused / copy);
}

// Median seconds per training step over 5 segments after 3 warm-up steps.
double step_seconds(const std::function<void()>& step, int steps) {
  for (int k = 0; k < 3; ++k) {
    step();
    podsim::mark_step();
  }
  podsim::wait_device_ops();
  std::vector<double> per_step;
  for (int s = 0; s < 5; ++s) {
    const auto start = Clock::now();
    for (int k = 0; k < std::max(1, steps / 5); ++k) {
      step();
      podsim::mark_step();
    }
    podsim::wait_device_ops();
    per_step.push_back(seconds_since(start) / std::max(1, steps / 5));
  }
  std::sort(per_step.begin(), per_step.end());
  return per_step[per_step.size() / 2];
}

double mlp_step(rt::Device& device, std::vector<int64_t> widths, int64_t batch, int steps) {
  podsim::manual_seed(0);
  auto mlp = std::make_shared<nn::Sequential>();
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    if (i > 0) mlp->push_back(std::make_shared<nn::ReLU>());
    mlp->push_back(std::make_shared<nn::Linear>(widths[i], widths[i + 1]));
  }
  mlp->to(device);
  podsim::optim::Adam opt(mlp->parameters(), {.lr = 1e-3});
  Tensor x = podsim::rand({batch, widths.front()}).to(device);
  Tensor y =
      (podsim::rand({batch}) * static_cast<double>(widths.back())).to(podsim::kInt64).to(device);
  return step_seconds(
      [&] {
        nn::functional::cross_entropy((*mlp)(x), y).backward();
        opt.step();
        opt.zero_grad();
      },
      steps);
}

void training(rt::Device& opencl, rt::Device& cpu, const char* name, std::vector<int64_t> widths,
              int64_t batch, int steps) {
  std::fprintf(stderr, "  ... %s training steps\n", name);
  const double o = mlp_step(opencl, widths, batch, steps);
  const double c = mlp_step(cpu, widths, batch, steps);
  std::string shape;
  for (int64_t w : widths) shape += (shape.empty() ? "" : "-") + std::to_string(w);
  std::printf(
      "  %-12s %-16s batch %4lld: opencl %8.3f ms/step  cpu %8.3f ms/step  cpu/opencl %.2fx\n",
      name, shape.c_str(), static_cast<long long>(batch), 1e3 * o, 1e3 * c, c / o);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, require_gpu = false;
  double peak = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--require-gpu") {
      require_gpu = true;
    } else if (a == "--peak-gflops" && i + 1 < argc) {
      peak = std::atof(argv[++i]);
    } else if (a == "--flops-per-cu-cycle" && i + 1 < argc) {
      peak = peak_gflops(std::atof(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: opencl_bench [--quick] [--require-gpu] [--peak-gflops G | "
                   "--flops-per-cu-cycle F]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF,
               0);  // each figure as soon as it is measured, also into a pipe
  try {
    rt::Client& opencl = rt::client("OPENCL");
    rt::Device& device = *opencl.devices()[0];
    cl_device_type type = 0;
    if (cl_device_id d = first_device())
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
    if (require_gpu && (type & CL_DEVICE_TYPE_GPU) == 0) {
      for (const std::string& line : rt::describe_opencl_devices())
        std::fprintf(stderr, "  found: %s\n", line.c_str());
      std::fprintf(stderr,
                   "opencl_bench: --require-gpu: no OpenCL GPU was found (figures on these would "
                   "not be GPU figures)\n");
      return 1;
    }
    std::printf("opencl_bench on %s%s\n", device.name().c_str(), quick ? " (--quick)" : "");
    if (peak > 0) std::printf("  FP32 peak taken as %.0f GFLOP/s\n", peak);
    for (const std::string& line : rt::describe_opencl_devices())
      std::printf("  device: %s\n", line.c_str());
    for (int64_t n :
         quick ? std::vector<int64_t>{256, 512, 1024} : std::vector<int64_t>{1024, 2048, 4096})
      gemm(opencl, device, n, peak);
    elementwise(opencl, device, quick ? int64_t{1} << 22 : int64_t{1} << 26);
    rt::Device& cpu = *rt::client("CPU").devices()[0];
    training(device, cpu, "digits MLP", {64, 128, 10}, 64, quick ? 20 : 100);
    if (quick)
      training(device, cpu, "wide MLP", {256, 512, 512, 10}, 128, 10);
    else
      training(device, cpu, "wide MLP", {1024, 4096, 4096, 10}, 1024, 20);
    for (const std::string& name : podsim::debug::counter_names())
      if (name.starts_with("OpenClHostOp::"))
        std::printf("  host steps: %s %lld\n", name.c_str(),
                    static_cast<long long>(podsim::debug::counter_value(name)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opencl_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
