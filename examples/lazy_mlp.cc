// A small MLP forward pass on lazy tensors: the ops are recorded on podsim::device()
// (PODSIM_DEVICE, CPU by default), mark_step() compiles and launches the graph, and the
// result is compared with the reference evaluator running a hand-written HLO module of
// the same network. The second step, on new input data, finds the graph in the compile
// cache: the counters show one compilation for two steps.
//
//   build/bin/lazy_mlp_example            (exit status 0 when both checks pass)
//   PODSIM_DEBUG=2 build/bin/lazy_mlp_example   shows the compilation/execution analysis
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "runtime/debug/metrics.h"
#include "runtime/tensor/tensor.h"

namespace {

constexpr int64_t kBatch = 32, kIn = 64, kHidden = 128, kOut = 10;

// The same network written directly in HLO: logits = relu(x W1 + b1) W2 + b2.
std::string reference_hlo() {
  return fmt::format(R"(
HloModule mlp_reference
ENTRY main {{
  x = f32[{0},{1}] parameter(0)
  w1 = f32[{1},{2}] parameter(1)
  b1 = f32[{2}] parameter(2)
  w2 = f32[{2},{3}] parameter(3)
  b2 = f32[{3}] parameter(4)
  d1 = f32[{0},{2}] dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb1 = f32[{0},{2}] broadcast(b1), dimensions={{1}}
  a1 = f32[{0},{2}] add(d1, bb1)
  zero = f32[] constant(0)
  zeros = f32[{0},{2}] broadcast(zero), dimensions={{}}
  h = f32[{0},{2}] maximum(a1, zeros)
  d2 = f32[{0},{3}] dot(h, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb2 = f32[{0},{3}] broadcast(b2), dimensions={{1}}
  ROOT logits = f32[{0},{3}] add(d2, bb2)
}}
)",
                     kBatch, kIn, kHidden, kOut);
}

double max_abs_diff(const podsim::ir::Literal& a, const podsim::ir::Literal& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    worst = std::max(worst, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
  return worst;
}

void print_counters(const char* when) {
  using podsim::debug::counter_value;
  std::printf("%s: UncachedCompile=%lld CachedCompile=%lld MarkStep=%lld\n", when,
              static_cast<long long>(counter_value("UncachedCompile")),
              static_cast<long long>(counter_value("CachedCompile")),
              static_cast<long long>(counter_value("MarkStep")));
}

int run() {
  using podsim::Tensor;
  podsim::pjrt::Device& device = podsim::device();
  std::printf("device: %s\n", device.name().c_str());

  // Parameters drawn on the device, scaled like a default linear-layer initialization.
  podsim::manual_seed(0);
  Tensor w1 = podsim::randn({kIn, kHidden}, device) * (1.0 / std::sqrt(double(kIn)));
  Tensor b1 = podsim::zeros({kHidden}, device);
  Tensor w2 = podsim::randn({kHidden, kOut}, device) * (1.0 / std::sqrt(double(kHidden)));
  Tensor b2 = podsim::full({kOut}, 0.01, device);
  podsim::mark_step();  // materialize the parameters (a graph of its own)

  auto reference = podsim::ir::parse_module(reference_hlo(), "mlp_reference.hlo");
  const double kTolerance = 1e-4;  // f32 dots of 64 and 128 terms, summed in another order
  bool ok = true;
  for (int step = 0; step < 2; ++step) {
    Tensor x = podsim::rand({kBatch, kIn}, device) * 2.0 - 1.0;
    Tensor logits = podsim::relu(x.matmul(w1) + b1).matmul(w2) + b2;
    Tensor predicted = logits.argmax(1);
    podsim::mark_step();  // one graph: compiled on the first step, from the cache after

    std::vector<podsim::ir::Literal> inputs = {x.to_literal(), w1.to_literal(), b1.to_literal(),
                                               w2.to_literal(), b2.to_literal()};
    podsim::ir::Literal want = podsim::ir::evaluate(*reference, inputs);
    double diff = max_abs_diff(logits.to_literal(), want);
    std::printf(
        "step %d: max |lazy - evaluator| = %.3g over %lld logits; first prediction: class %lld\n",
        step, diff, static_cast<long long>(kBatch * kOut),
        static_cast<long long>(predicted.to_vector<int64_t>()[0]));
    ok = ok && diff <= kTolerance;
    print_counters(step == 0 ? "after step 0" : "after step 1");
  }
  int64_t step_compiles = podsim::debug::counter_value("UncachedCompile");
  bool cache_hit = podsim::debug::counter_value("CachedCompile") >= 1;
  std::printf("second step %s the compile cache (%lld compilations in all)\n",
              cache_hit ? "hit" : "MISSED", static_cast<long long>(step_compiles));
  ok = ok && cache_hit;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lazy_mlp_example: %s\n", e.what());
    return 2;
  }
}
