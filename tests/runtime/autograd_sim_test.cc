// A whole training step (forward, backward, SGD update under NoGradGuard) of a small
// classifier with a log_softmax + gather loss, compiled for the TPU target and run on
// the simulated chip: its gradients lower to ops the TPU lowering has (the index
// gradients are one-hot contractions, no scatter), the results match the same step
// run at once on host tensors (the reference evaluator), and the second step is a
// compile-cache hit.
//
// Tolerance: DEFAULT precision runs f32 dots as one bf16 MXU pass (8-bit mantissas),
// so after one step with lr 0.1 the weights may differ by ~1e-4; we allow 1e-3
// absolute (weights are O(1)) and 1e-3 relative on the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "runtime/autograd/autograd.h"
#include "runtime/pjrt/sim/sim_backend.h"
#include "runtime/debug/metrics.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

pjrt::Device& sim_device() {
  static std::unique_ptr<pjrt::Client> client = pjrt::make_sim_client("tiny");
  return *client->devices()[0];
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
  return worst;
}

struct Classifier {
  Tensor w1, b1, w2;
  Tensor x, target;

  // The same start on the host (device null) or moved to device.
  Classifier(const Classifier& host, pjrt::Device* device) {
    auto place = [&](const Tensor& t) { return device ? t.to(*device) : t.detach(); };
    w1 = place(host.w1), b1 = place(host.b1), w2 = place(host.w2);
    x = place(host.x), target = place(host.target);
    for (Tensor* p : {&w1, &b1, &w2}) p->requires_grad_();
  }
  explicit Classifier(uint64_t seed) {
    manual_seed(seed);
    x = randn({16, 24});
    w1 = randn({24, 40}) * 0.2;
    b1 = randn({40}) * 0.1;
    w2 = randn({40, 10}) * 0.2;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < 16; ++i) labels.push_back((i * 7) % 10);
    target = Tensor::from_vector(labels, {16});
  }

  Tensor step(double lr) {
    for (Tensor* p : {&w1, &b1, &w2}) p->set_grad(Tensor());
    // tanh rather than relu: a bf16 MXU pass can flip the sign of a hidden value near 0,
    // and a flipped relu gate changes that unit's gradient by O(1), not O(bf16 eps).
    Tensor h = tanh(matmul(x, w1) + b1);
    Tensor log_p = log_softmax(matmul(h, w2), 1);
    Tensor loss = -log_p.gather(1, target.unsqueeze(1)).mean();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor* p : {&w1, &b1, &w2}) *p -= p->grad() * lr;
    return loss;
  }
};

TEST(AutogradSim, TrainingStepRunsOnTheSimulatedChip) {
  Classifier start(11);
  Classifier host(start, nullptr);
  Classifier sim(start, &sim_device());
  mark_step();
  wait_device_ops();
  int64_t uncached = debug::counter_value("UncachedCompile");
  int64_t cached = debug::counter_value("CachedCompile");
  for (int i = 0; i < 2; ++i) {
    Tensor expected = host.step(0.1);
    Tensor loss = sim.step(0.1);
    mark_step();
    EXPECT_EQ(loss.device_name(), "SIM:0");
    double want = expected.item().to_double();
    EXPECT_NEAR(loss.item().to_double(), want, 1e-3 * std::fabs(want)) << "step " << i;
    EXPECT_LT(max_abs_diff(sim.w1.cpu(), host.w1), 1e-3) << "step " << i;
    EXPECT_LT(max_abs_diff(sim.b1.cpu(), host.b1), 1e-3) << "step " << i;
    EXPECT_LT(max_abs_diff(sim.w2.cpu(), host.w2), 1e-3) << "step " << i;
  }
  EXPECT_EQ(debug::counter_value("UncachedCompile") - uncached, 1);
  EXPECT_EQ(debug::counter_value("CachedCompile") - cached, 1);
}

}  // namespace
}  // namespace podsim
