// mark_step / sync on the device path: graphs compile once and then hit the cache
// (scalar values never recompile, shapes do), item() runs only the graph it needs,
// launches are asynchronous, random numbers come from a device-resident state, and a
// small MLP matches a hand-written HLO module run by the reference evaluator.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "runtime/pjrt/compile_cache.h"
#include "runtime/lazy/debug_report.h"
#include "runtime/debug/metrics.h"
#include "runtime/tensor/tensor.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

// Two CPU devices, so that device mixing and transfers can be exercised; set before
// the first use of the backend.
const bool kTwoDevices = [] { return setenv("PODSIM_CPU_DEVICES", "2", 1) == 0; }();

pjrt::Device& dev(int i = 0) { return podsim::device(i); }

struct Compiles {
  int64_t cached = debug::counter_value("CachedCompile");
  int64_t uncached = debug::counter_value("UncachedCompile");
  int64_t cached_since() const { return debug::counter_value("CachedCompile") - cached; }
  int64_t uncached_since() const { return debug::counter_value("UncachedCompile") - uncached; }
};

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kTwoDevices);
    set_eager_mode(false);
    mark_step();
    wait_device_ops();
  }
};

TEST_F(SyncTest, SecondStepIsACacheHit) {
  Tensor x = Tensor::from_vector<float>({1, -2, 3, -4}, {2, 2}, &dev());
  Compiles before;
  for (int step = 0; step < 3; ++step) {
    x = (x * 2 + 1).relu();
    mark_step();
  }
  EXPECT_EQ(before.uncached_since(), 1);
  EXPECT_EQ(before.cached_since(), 2);
  // relu(2v + 1) three times: 1 -> 3 -> 7 -> 15; -2 -> 0 -> 1 -> 3; 3 -> 7 -> 15 -> 31; -4 -> 0 ->
  // 1 -> 3
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{15, 3, 31, 3}));
}

TEST_F(SyncTest, ChangingAScalarDoesNotRecompile) {
  Tensor w = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  Tensor g = Tensor::from_vector<float>({10, 20}, {2}, &dev());
  Compiles before;
  double expected0 = 1, expected1 = 2;
  for (double lr : {0.1, 0.05, 0.025, 0.3}) {
    w = w - lr * g;
    expected0 -= lr * 10;
    expected1 -= lr * 20;
    mark_step();
  }
  EXPECT_EQ(before.uncached_since(), 1);
  EXPECT_EQ(before.cached_since(), 3);
  std::vector<float> got = w.to_vector<float>();
  EXPECT_NEAR(got[0], expected0, 1e-5);
  EXPECT_NEAR(got[1], expected1, 1e-5);
}

TEST_F(SyncTest, ChangingAShapeRecompiles) {
  Compiles before;
  auto step = [](int64_t n) {
    Tensor t = arange(n, {kFloat32, &dev()}) * 2;
    mark_step();
    return t.sum().item().to_double();
  };
  EXPECT_EQ(step(3), 6);   // 0 + 2 + 4
  EXPECT_EQ(step(4), 12);  // 0 + 2 + 4 + 6
  EXPECT_EQ(step(3), 6);   // the first graphs again: cache hits
  // Two step shapes and two sum shapes.
  EXPECT_EQ(before.uncached_since(), 4);
  EXPECT_EQ(before.cached_since(), 2);
}

TEST_F(SyncTest, ItemRunsOnlyTheGraphItNeeds) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, &dev());
  Tensor y = Tensor::from_vector<float>({4, 5}, {2}, &dev());
  Tensor a = x * 2;
  Tensor b = y.exp();
  int64_t steps = debug::counter_value("MarkStep");
  EXPECT_EQ(a.sum().item().to_double(), 12);
  std::optional<lazy::GraphRun> run = lazy::last_graph_run();
  ASSERT_TRUE(run);
  EXPECT_EQ(run->inputs, 2);   // x and the scalar 2
  EXPECT_EQ(run->outputs, 1);  // the sum only
  EXPECT_EQ(run->cause, "item(): user code reading a value before mark_step");
  EXPECT_TRUE(a.is_pending());
  EXPECT_TRUE(b.is_pending());
  EXPECT_EQ(debug::counter_value("MarkStep"), steps);
  mark_step();
  EXPECT_FALSE(a.is_pending());
  EXPECT_FALSE(b.is_pending());
  EXPECT_EQ(lazy::last_graph_run()->outputs, 2);
}

TEST_F(SyncTest, SyncOfSelectedTensorsLeavesTheOthersPending) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  Tensor a = x + 1, b = x + 2;
  int64_t steps = debug::counter_value("MarkStep");
  sync(std::vector<Tensor>{a});
  EXPECT_FALSE(a.is_pending());
  EXPECT_TRUE(b.is_pending());
  EXPECT_EQ(debug::counter_value("MarkStep"), steps);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST_F(SyncTest, LaunchReturnsBeforeTheDeviceFinishes) {
  std::vector<float> data = random_values(384 * 384, 1);
  Tensor m = Tensor::from_vector(data, {384, 384}, &dev()) * (1.0 / 384);
  mark_step();
  auto step = [&] {
    Tensor x = m;
    for (int i = 0; i < 40; ++i) x = x.matmul(m);
    return x;
  };
  Tensor warm = step();
  mark_step();  // compiles
  wait_device_ops();
  Tensor x = step();
  mark_step();  // a cache hit: launches and returns
  bool ready_at_return = x.impl()->buffer->ready_event()->is_ready();
  // The next step traces while the device still runs the last one.
  Tensor next = x + 1;
  EXPECT_TRUE(next.is_pending());
  wait_device_ops();
  EXPECT_FALSE(ready_at_return) << "40 384x384 matmuls finished before mark_step returned";
  EXPECT_TRUE(x.impl()->buffer->ready_event()->is_ready());
}

TEST_F(SyncTest, MlpForwardMatchesTheEvaluatorAndHitsTheCache) {
  const char* kMlp = R"(
HloModule mlp
ENTRY main {
  x = f32[5,8] parameter(0)
  w1 = f32[8,16] parameter(1)
  b1 = f32[16] parameter(2)
  w2 = f32[16,4] parameter(3)
  b2 = f32[4] parameter(4)
  d1 = f32[5,16] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb1 = f32[5,16] broadcast(b1), dimensions={1}
  a1 = f32[5,16] add(d1, bb1)
  zero = f32[] constant(0)
  z = f32[5,16] broadcast(zero), dimensions={}
  h = f32[5,16] maximum(a1, z)
  d2 = f32[5,4] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb2 = f32[5,4] broadcast(b2), dimensions={1}
  ROOT out = f32[5,4] add(d2, bb2)
})";
  std::unique_ptr<ir::Module> reference = ir::parse_module(kMlp);
  auto literal = [](std::vector<float> v, std::vector<int64_t> dims) {
    ir::Literal l(ir::Shape(kFloat32, dims));
    std::memcpy(l.bytes().data(), v.data(), v.size() * sizeof(float));
    return l;
  };
  ir::Literal w1 = literal(random_values(8 * 16, 2), {8, 16});
  ir::Literal b1 = literal(random_values(16, 3), {16});
  ir::Literal w2 = literal(random_values(16 * 4, 4), {16, 4});
  ir::Literal b2 = literal(random_values(4, 5), {4});
  Tensor tw1 = Tensor::from_literal(w1, &dev()), tb1 = Tensor::from_literal(b1, &dev());
  Tensor tw2 = Tensor::from_literal(w2, &dev()), tb2 = Tensor::from_literal(b2, &dev());
  Compiles before;
  for (unsigned step = 0; step < 2; ++step) {
    ir::Literal x = literal(random_values(5 * 8, 10 + step), {5, 8});
    Tensor out = relu(Tensor::from_literal(x, &dev()).matmul(tw1) + tb1).matmul(tw2) + tb2;
    mark_step();
    ir::Literal want = ir::evaluate(*reference, std::vector<ir::Literal>{x, w1, b1, w2, b2});
    ir::Literal got = out.to_literal();
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.num_elements(); ++i)
      EXPECT_NEAR(got.get_as_double(i), want.get_as_double(i),
                  1e-5 * (1 + std::fabs(want.get_as_double(i))));
  }
  EXPECT_EQ(before.uncached_since(), 1);
  EXPECT_EQ(before.cached_since(), 1);
}

TEST_F(SyncTest, RandomNumbersAreSeededAndNeverRecompile) {
  auto draw = [] {
    Tensor r = rand({2000}, &dev());
    mark_step();
    return r.to_vector<float>();
  };
  manual_seed(42);
  std::vector<float> a = draw();
  Compiles before;
  manual_seed(42);
  std::vector<float> b = draw();
  std::vector<float> c = draw();
  manual_seed(7);
  std::vector<float> d = draw();
  EXPECT_EQ(before.uncached_since(), 0) << "the seed or the state must not be part of the graph";
  EXPECT_EQ(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, d);
  double sum = 0;
  for (float v : c) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
    sum += v;
  }
  // Mean of 2000 uniforms: 0.5 with standard deviation 0.0065.
  EXPECT_NEAR(sum / 2000, 0.5, 0.03);

  Tensor n = randn({20000}, &dev());
  Tensor mean = n.mean();
  Tensor var = ((n - mean) * (n - mean)).mean();
  mark_step();
  EXPECT_NEAR(mean.item().to_double(), 0, 0.03);  // sd of the mean: 0.007
  EXPECT_NEAR(var.item().to_double(), 1, 0.05);   // sd of the variance: 0.01
}

TEST_F(SyncTest, HostRandomNumbersToo) {
  manual_seed(3);
  std::vector<float> a = rand({100}).to_vector<float>();
  manual_seed(3);
  std::vector<float> b = rand({100}).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, rand({100}).to_vector<float>());
}

TEST_F(SyncTest, EagerModeRunsEachOpAtOnce) {
  set_eager_mode(true);
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  Tensor y = (x * 3).exp().log();
  EXPECT_FALSE(y.is_pending());
  set_eager_mode(false);
  std::vector<float> v = y.to_vector<float>();
  EXPECT_NEAR(v[0], 3, 1e-5);
  EXPECT_NEAR(v[1], 6, 1e-5);
}

TEST_F(SyncTest, DevicesDoNotMixButTransfer) {
  ASSERT_GE(device_count(), 2);
  Tensor a = Tensor::from_vector<float>({1, 2}, {2}, &dev(0));
  Tensor b = Tensor::from_vector<float>({3, 4}, {2}, &dev(1));
  std::string message = error_of([&] { Tensor c = a + b; });
  EXPECT_NE(message.find("CPU:0"), std::string::npos) << message;
  EXPECT_NE(message.find("CPU:1"), std::string::npos) << message;
  Tensor moved = (a * 10).to(dev(1));
  Tensor c = moved + b;
  EXPECT_EQ(c.device(), &dev(1));
  mark_step();
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{13, 24}));
}

// A backend whose runs fail on the device (after launch) or whose compiler rejects
// every graph, to see where each kind of failure surfaces.
class FailingBackend final : public pjrt::Client {
 public:
  class Dev final : public pjrt::Device {
   public:
    explicit Dev(pjrt::Client& c) : client_(c) {}
    pjrt::DeviceKind kind() const override { return pjrt::DeviceKind::kSim; }
    int ordinal() const override { return 0; }
    pjrt::MemoryStats memory_stats() const override { return {}; }
    pjrt::Client& client() const override { return client_; }

   private:
    pjrt::Client& client_;
  };
  class Buf final : public pjrt::Buffer {
   public:
    Buf(ir::Literal literal, pjrt::Device& device, std::shared_ptr<pjrt::Event> event)
        : literal_(std::move(literal)), device_(device), event_(std::move(event)) {}
    const ir::Shape& shape() const override { return literal_.shape(); }
    pjrt::Device& device() const override { return device_; }
    const std::shared_ptr<pjrt::Event>& ready_event() const override { return event_; }
    ir::Literal to_literal() const override {
      event_->wait();
      return literal_;
    }

   private:
    ir::Literal literal_;
    pjrt::Device& device_;
    std::shared_ptr<pjrt::Event> event_;
  };
  class Exe final : public pjrt::Executable {
   public:
    explicit Exe(const ir::Module& m) : module_(m.name()) { shape_ = m.entry()->root()->shape(); }
    const ir::Module& module() const override { return module_; }
    const pjrt::ExecutableInfo& info() const override { return info_; }
    std::vector<std::shared_ptr<pjrt::Buffer>> execute(
        std::span<const std::shared_ptr<pjrt::Buffer>>, pjrt::Device& device) override {
      std::vector<std::shared_ptr<pjrt::Buffer>> out;
      for (const ir::Shape& s : shape_.elements()) {
        auto event = pjrt::Event::make();
        event->set_error(std::make_exception_ptr(Error("simulated device failure")));
        out.push_back(std::make_shared<Buf>(ir::Literal(s), device, event));
      }
      return out;
    }
    std::string serialize() const override { return ""; }

   private:
    ir::Module module_;
    ir::Shape shape_;
    pjrt::ExecutableInfo info_;
  };

  explicit FailingBackend(bool reject_compiles) : reject_(reject_compiles), device_(*this) {}
  pjrt::DeviceKind kind() const override { return pjrt::DeviceKind::kSim; }
  std::span<pjrt::Device* const> devices() const override { return {&device_ptr_, 1}; }
  std::string target() const override { return reject_ ? "rejecting" : "failing"; }
  std::shared_ptr<pjrt::Executable> compile(const ir::Module& module) override {
    if (reject_) fail("no kernel for this graph");
    return std::make_shared<Exe>(module);
  }
  std::shared_ptr<pjrt::Executable> deserialize(std::string_view) override {
    fail("not supported");
  }
  std::shared_ptr<pjrt::Buffer> transfer_to_device(ir::Literal literal,
                                                      pjrt::Device& device) override {
    return std::make_shared<Buf>(std::move(literal), device, pjrt::Event::make_ready());
  }

 private:
  bool reject_;
  Dev device_;
  pjrt::Device* device_ptr_ = &device_;
};

TEST_F(SyncTest, DeviceFailuresSurfaceWhereTheValueIsRead) {
  FailingBackend backend(false);
  pjrt::Device& device = *backend.devices()[0];
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &device);
  Tensor y = x * 2;
  mark_step();  // launches; the failure is the device's, later
  EXPECT_FALSE(y.is_pending());
  std::string message = error_of([&] { y.to_literal(); });
  EXPECT_NE(message.find("simulated device failure"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { wait_device_ops(); }).find("simulated device failure"),
            std::string::npos);
  x = y = Tensor();
  lazy::drop_device_state();  // the backend goes away with this test
}

TEST_F(SyncTest, CompileFailuresSurfaceAtTheSyncWithItsLocation) {
  FailingBackend backend(true);
  pjrt::Device& device = *backend.devices()[0];
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &device);
  Tensor y = x * 2;
  int line = __LINE__ + 1;
  std::string message = error_of([&] { mark_step(); });
  EXPECT_NE(message.find(fmt::format("sync_test.cc:{}: user mark_step: compiling graph", line)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no kernel for this graph"), std::string::npos) << message;
  EXPECT_TRUE(y.is_pending());  // nothing ran: the tensor keeps its graph
  x = y = Tensor();             // so that later steps do not retry it
  lazy::drop_device_state();
}

TEST_F(SyncTest, ReadsCountTransfersFromTheDevice) {
  int64_t transfers = debug::metric_summary("TransferFromDeviceTime").total_samples;
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  (void)(x + 1).sum().item().to_double();
  EXPECT_EQ(debug::metric_summary("TransferFromDeviceTime").total_samples - transfers, 1);
}

}  // namespace
}  // namespace podsim
