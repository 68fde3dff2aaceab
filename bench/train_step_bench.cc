// Training-step time of podsim's lazy tensors on the CPU backend against PyTorch 1.13
// eager on the same models, in the same run (bench/torch_train_reference.py through
// /usr/bin/python3, same thread count): an MLP (64-128-10, batch 64, cross-entropy,
// Adam) and one pre-norm transformer block (width 64, 4 heads, causal, context 32,
// batch 16, GELU MLP, AdamW). Each podsim step records forward, backward and update and
// marks the step: the whole step is one compiled graph. Prints ms per step, steps/s,
// the speed-up over torch (goal >= 1.5x), and the compilations (1 after warm-up: the
// first step, which creates the optimizer state, is a graph of its own).
// threads (default: TBB's default concurrency) bounds podsim's TBB workers and is
// torch's thread count: on a shared machine, 1 compares the two without either
// runtime's spinning worker threads competing for the cores.
//   build/bin/bench/train_step_bench [steps] [threads]
#include <fmt/core.h>
#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/autograd/autograd.h"
#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace {

using podsim::Tensor;
namespace nn = podsim::nn;

struct Measured {
  double seconds_per_step = 0;
  int64_t compilations_warm = 0;  // after the warm-up steps
  int64_t compilations_total = 0;
};

// Warm-up steps (compiling), then `steps` timed steps in kSegments segments, waiting
// at the end of each: the median segment's time per step. Steps overlap (tracing the
// next while the device runs the last), so single steps are not timed; the median of
// segments, like the reference's median step, discounts the segments another process
// preempted on a shared machine.
constexpr int kSegments = 5;

Measured measure(const std::function<void()>& step, int steps) {
  using Clock = std::chrono::steady_clock;
  const int64_t before = podsim::debug::counter_value("UncachedCompile");
  for (int k = 0; k < 3; ++k) {
    step();
    podsim::mark_step();
  }
  podsim::wait_device_ops();
  const int64_t warm = podsim::debug::counter_value("UncachedCompile");
  std::vector<double> per_step;
  for (int s = 0; s < kSegments; ++s) {
    const int count = steps / kSegments + (s < steps % kSegments ? 1 : 0);
    if (count == 0) continue;
    auto start = Clock::now();
    for (int k = 0; k < count; ++k) {
      step();
      podsim::mark_step();
    }
    podsim::wait_device_ops();
    per_step.push_back(std::chrono::duration<double>(Clock::now() - start).count() / count);
  }
  std::sort(per_step.begin(), per_step.end());
  Measured m;
  m.seconds_per_step = per_step[per_step.size() / 2];
  m.compilations_warm = podsim::debug::counter_value("UncachedCompile") - warm;
  m.compilations_total = podsim::debug::counter_value("UncachedCompile") - before;
  return m;
}

class Block : public nn::Module {
 public:
  explicit Block(int64_t d, int64_t heads) : Module("Block") {
    ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{d}));
    attn_ = register_module("attn",
                            std::make_shared<nn::MultiheadAttention>(d, heads, true, true, true));
    ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{d}));
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(d, 4 * d));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(4 * d, d));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x + attn_->forward(ln1_->forward(x));
    return h + fc2_->forward(
                   podsim::gelu(fc1_->forward(ln2_->forward(h)), podsim::GeluApproximate::kTanh));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::MultiheadAttention> attn_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

// Runs torch_train_reference.py; returns {mlp, block} median seconds per step (negative
// when unavailable, with the reason in note).
std::pair<double, double> torch_steps(int threads, std::string& note) {
  const auto script =
      std::filesystem::path(PODSIM_SOURCE_DIR) / "bench" / "torch_train_reference.py";
  const std::string command =
      "/usr/bin/python3 " + script.string() + " --threads " + std::to_string(threads) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    note = "could not start /usr/bin/python3";
    return {-1, -1};
  }
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe)) output += buffer;
  const int status = pclose(pipe);
  auto number = [&](const std::string& key) {
    size_t at = output.find("\"" + key + "\": ");
    return at == std::string::npos ? -1.0 : std::stod(output.substr(at + key.size() + 4));
  };
  if (status != 0 || output.find("mlp_step_s") == std::string::npos) {
    note = output.empty() ? "no output" : output;
    return {-1, -1};
  }
  size_t version = output.find("\"torch\": \"");
  if (version != std::string::npos)
    note = output.substr(version + 10, output.find('"', version + 10) - version - 10);
  return {number("mlp_step_s"), number("block_step_s")};
}

void report(const char* name, const Measured& m, double torch_seconds) {
  std::printf("  %-18s %8.3f ms/step  %8.1f steps/s  compilations %lld (after warm-up %lld)", name,
              1e3 * m.seconds_per_step, 1 / m.seconds_per_step,
              static_cast<long long>(m.compilations_total),
              static_cast<long long>(m.compilations_warm));
  if (torch_seconds > 0)
    std::printf("  torch eager %8.3f ms/step  speed-up %.2fx\n", 1e3 * torch_seconds,
                torch_seconds / m.seconds_per_step);
  else
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 50;
  const int threads = argc > 2 ? std::stoi(argv[2]) : tbb::info::default_concurrency();
  if (steps < 1 || threads < 1) {
    std::fprintf(stderr, "usage: train_step_bench [steps >= 1] [threads >= 1]\n");
    return 2;
  }
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                  static_cast<size_t>(threads));
  podsim::pjrt::Device& device = podsim::device();
  std::printf("train_step_bench: %d timed steps on %s, %d threads\n", steps, device.name().c_str(),
              threads);

  podsim::manual_seed(0);
  auto mlp = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(64, 128), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(128, 10)});
  mlp->to(device);
  podsim::optim::Adam mlp_opt(mlp->parameters(), {.lr = 1e-3});
  Tensor x = podsim::rand({64, 64}).to(device);
  Tensor y = (podsim::rand({64}) * 10).to(podsim::kInt64).to(device);
  Measured mlp_m = measure(
      [&] {
        nn::functional::cross_entropy((*mlp)(x), y).backward();
        mlp_opt.step();
        mlp_opt.zero_grad();
      },
      steps);

  auto block = std::make_shared<Block>(64, 4);
  block->to(device);
  podsim::optim::AdamW block_opt(block->parameters(), {.lr = 1e-3});
  Tensor hx = podsim::randn({16, 32, 64}).to(device);
  Measured block_m = measure(
      [&] {
        // The reference's square(): torch computes pow(x, 2) as x * x.
        Tensor out = (*block)(hx);
        (out * out).mean().backward();
        block_opt.step();
        block_opt.zero_grad();
      },
      steps);

  std::string note;
  auto [torch_mlp, torch_block] = torch_steps(threads, note);
  std::printf("  reference: %s\n",
              torch_mlp > 0 ? ("torch " + note).c_str() : ("unavailable: " + note).c_str());
  report("mlp", mlp_m, torch_mlp);
  report("transformer block", block_m, torch_block);
  return 0;
}
