// The SIM backend through lazy tensors: graphs compiled for the TPU target and run on
// the simulated chip give the reference evaluator's results (host tensors), with dots
// compared against the evaluator on bf16-rounded operands (DEFAULT precision runs f32
// dots as one bf16 MXU pass), and a second step with new data is a compile-cache hit.
#include "runtime/pjrt/sim/sim_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "compiler/ir/parser.h"
#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

pjrt::Client& sim_client() {
  // One client for the whole binary: lazy tensors keep per-device state.
  static std::unique_ptr<pjrt::Client> client = pjrt::make_sim_client("tiny");
  return *client;
}
pjrt::Device& sim_device() { return *sim_client().devices()[0]; }

Tensor bf16_rounded(const Tensor& t) { return t.to(kBFloat16).to(kFloat32); }

// Largest |a - b| relative to max(1, |b|).
double max_rel_diff(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst =
        std::max(worst, std::fabs(double(x[i]) - y[i]) / std::max(1.0, std::fabs(double(y[i]))));
  return worst;
}

TEST(SimBackend, MlpForwardMatchesTheEvaluator) {
  manual_seed(3);
  Tensor x = randn({16, 24}), w1 = randn({24, 40}), b1 = randn({40}), w2 = randn({40, 10});
  Tensor expected_hidden = relu(matmul(bf16_rounded(x), bf16_rounded(w1)) + b1);
  Tensor expected = log_softmax(matmul(bf16_rounded(expected_hidden), bf16_rounded(w2)), 1);

  pjrt::Device& d = sim_device();
  Tensor hidden = relu(matmul(x.to(d), w1.to(d)) + b1.to(d));
  Tensor out = log_softmax(matmul(hidden, w2.to(d)), 1);
  mark_step();
  EXPECT_EQ(out.device_name(), "SIM:0");
  // Only the accumulation order differs (f32 sums of 24 and 40 terms).
  EXPECT_LT(max_rel_diff(out.cpu(), expected), 1e-4);
}

TEST(SimBackend, ElementwiseAndReductionsMatchTheEvaluator) {
  manual_seed(4);
  Tensor a = rand({7, 33}) + 0.5, b = randn({7, 33});
  Tensor expected = (log(a) * b + exp(-a)).sum({1}) / sqrt(a).max({1});
  pjrt::Device& d = sim_device();
  Tensor ad = a.to(d), bd = b.to(d);
  Tensor got = (log(ad) * bd + exp(-ad)).sum({1}) / sqrt(ad).max({1});
  EXPECT_LT(max_rel_diff(got.cpu(), expected), 1e-5);
}

TEST(SimBackend, SecondStepWithNewDataIsACacheHit) {
  pjrt::Device& d = sim_device();
  auto step = [&](uint64_t seed) {
    manual_seed(seed);
    Tensor x = randn({8, 16}), w = randn({16, 8});
    Tensor y = tanh(matmul(x.to(d), w.to(d))).mean();
    mark_step();
    Tensor expected = tanh(matmul(bf16_rounded(x), bf16_rounded(w))).mean();
    EXPECT_LT(max_rel_diff(y.cpu(), expected), 1e-5);
  };
  step(1);
  int64_t uncached = debug::counter_value("UncachedCompile");
  int64_t cached = debug::counter_value("CachedCompile");
  step(2);
  EXPECT_EQ(debug::counter_value("UncachedCompile"), uncached);
  EXPECT_EQ(debug::counter_value("CachedCompile"), cached + 1);
}

// The chip has no 64-bit lanes: s64 indices and results are computed in 32 bits and
// come back as s64.
TEST(SimBackend, Int64IndicesAndResults) {
  manual_seed(5);
  Tensor x = randn({6, 9});
  Tensor index = Tensor::from_vector<int64_t>({4, 0, 8}, {3});
  Tensor picked_expected = x.index_select(1, index);
  Tensor sum_expected = (index * 3 - 20).sum();
  pjrt::Device& d = sim_device();
  Tensor picked = x.to(d).index_select(1, index.to(d));
  Tensor sum = (index.to(d) * 3 - 20).sum();
  EXPECT_EQ(sum.dtype(), kInt64);
  EXPECT_EQ(sum.item().to_int(), sum_expected.item().to_int());
  EXPECT_EQ(picked.cpu().to_vector<float>(), picked_expected.to_vector<float>());
}

// argmax / argmin are single-operand reductions and compares, so they run on the chip:
// first index of the extreme, NaN counting as the extreme.
TEST(SimBackend, ArgExtremesMatchTheHost) {
  manual_seed(6);
  Tensor x = (randn({5, 37}) * 2).to(kInt32).to(kFloat32);  // integral values: many ties
  std::vector<float> values = x.to_vector<float>();
  values[40] = std::nanf("");  // row 1
  x = Tensor::from_vector(values, {5, 37});
  pjrt::Device& d = sim_device();
  Tensor xd = x.to(d);
  EXPECT_EQ(xd.argmax(1).cpu().to_vector<int64_t>(), x.argmax(1).to_vector<int64_t>());
  EXPECT_EQ(xd.argmin(0, true).cpu().to_vector<int64_t>(), x.argmin(0, true).to_vector<int64_t>());
  EXPECT_EQ(xd.argmax().item().to_int(), x.argmax().item().to_int());
  EXPECT_EQ(x.argmax(1).to_vector<int64_t>()[1], 3);  // the NaN at row 1, column 3
}

// The persistent compile cache stores executables: one read back computes the same, and
// a truncated one is an error, not a crash.
TEST(SimBackend, ExecutablesRoundTripThroughSerialization) {
  auto module = ir::parse_module(R"(HloModule m
ENTRY main {
  x = f32[4,8] parameter(0)
  i = s64[4] parameter(1)
  t = f32[4,8] tanh(x)
  ROOT r = (f32[4,8], s64[4]) tuple(t, i)
}
)");
  pjrt::Client& client = sim_client();
  std::shared_ptr<pjrt::Executable> compiled = client.compile(*module);
  std::string bytes = compiled->serialize();
  std::shared_ptr<pjrt::Executable> loaded = client.deserialize(bytes);
  manual_seed(7);
  std::vector<std::shared_ptr<pjrt::Buffer>> args = {
      client.transfer_to_device(randn({4, 8}).to_literal(), sim_device()),
      client.transfer_to_device(Tensor::from_vector<int64_t>({-5, 0, 7, 1}, {4}).to_literal(),
                                sim_device())};
  auto a = compiled->execute(args, sim_device());
  auto b = loaded->execute(args, sim_device());
  ASSERT_EQ(a.size(), 2u);
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_TRUE(a[k]->to_literal() == b[k]->to_literal()) << "output " << k;
  EXPECT_EQ(b[1]->to_literal().get_as_int64(0), -5);
  EXPECT_THROW(client.deserialize(bytes.substr(0, 12)), Error);
}

TEST(SimBackend, RandomNumbersEqualTheCpuDevicesAndDropoutTrains) {
  pjrt::Device& d = sim_device();
  manual_seed(11);
  Tensor on_sim = rand({5, 33}, d);
  Tensor half = rand({9}, TensorOptions(kBFloat16, d));
  mark_step();
  manual_seed(11);
  Tensor on_cpu = rand({5, 33}, device(0));
  Tensor half_cpu = rand({9}, TensorOptions(kBFloat16, device(0)));
  mark_step();
  EXPECT_EQ(on_sim.to_vector<float>(), on_cpu.to_vector<float>());
  EXPECT_EQ(half.to(kFloat32).to_vector<float>(), half_cpu.to(kFloat32).to_vector<float>());

  // Dropout: every step draws a new mask from the device state, and no step after the
  // first compiles.
  nn::Dropout dropout(0.5);
  Tensor x = ones({64}, d);
  mark_step();
  std::vector<std::vector<float>> masks;
  int64_t before = 0;
  for (int step = 0; step < 3; ++step) {
    if (step == 1) before = debug::counter_value("UncachedCompile");
    Tensor y = dropout(x);
    mark_step();
    masks.push_back(y.to_vector<float>());
    for (float v : masks.back()) EXPECT_TRUE(v == 0.f || v == 2.f) << v;
  }
  EXPECT_NE(masks[0], masks[1]);
  EXPECT_NE(masks[1], masks[2]);
  EXPECT_EQ(debug::counter_value("UncachedCompile"), before);
}

// Box-Muller's normals (log, sqrt and cosine composed on the vector unit) within a few
// ulps of the CPU device's from the same bits.
TEST(SimBackend, NormalsMatchTheCpuDevices) {
  manual_seed(5);
  Tensor on_sim = randn({7, 40}, sim_device());
  mark_step();
  manual_seed(5);
  Tensor on_cpu = randn({7, 40}, device(0));
  mark_step();
  EXPECT_LT(max_rel_diff(on_sim, on_cpu), 4e-6);
}

TEST(SimBackend, UnsupportedOpsNameTheOp) {
  auto module = ir::parse_module(R"(HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target="my_kernel"
}
)");
  try {
    sim_client().compile(*module);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("not supported on the TPU target: custom-call 'my_kernel'"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim
