#include "runtime/pjrt/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "compiler/cpu/cpu_compiler.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "runtime/pjrt/cpu/cpu_backend.h"
#include "runtime/pjrt/compile_cache.h"
#include "runtime/lazy/tensor_impl.h"
#include "runtime/debug/metrics.h"
#include "tests/runtime/scoped_env.h"

namespace podsim::pjrt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using ::podsim::test_env::ScopedEnv;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ir::Literal f32s(std::vector<double> values) {
  ir::Literal l(ir::Shape(ir::PrimitiveType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) l.set_from_double(static_cast<int64_t>(i), values[i]);
  return l;
}

ir::Literal f32(double value) { return ir::Literal::scalar(ir::PrimitiveType::kF32, value); }

std::vector<double> values_of(const ir::Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.num_elements(); ++i) out.push_back(l.get_as_double(i));
  return out;
}

constexpr const char* kAdd = R"(
HloModule add
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT s = f32[3] add(a, b)
})";

constexpr const char* kPair = R"(
HloModule pair
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  s = f32[3] add(a, b)
  d = f32[3] subtract(a, b)
  ROOT t = (f32[3], f32[3]) tuple(s, d)
})";

constexpr const char* kIncrement = R"(
HloModule increment
ENTRY main {
  x = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT y = f32[] add(x, one)
})";

std::string custom_call_module(const std::string& target) {
  return "HloModule " + target +
         "\nENTRY main {\n  x = f32[] parameter(0)\n  ROOT c = f32[] custom-call(x), " +
         "custom_call_target=\"" + target + "\"\n}";
}

// Custom-call targets that let a test hold a step back, record the order of steps or
// make a step fail.
struct TestHooks {
  std::mutex mutex;
  std::condition_variable cv;
  bool gate_open = true;
  std::vector<double> recorded;

  void set_gate(bool open) {
    {
      std::lock_guard lock(mutex);
      gate_open = open;
    }
    cv.notify_all();
  }
};

TestHooks& hooks() {
  static TestHooks* instance = [] {
    auto* h = new TestHooks;
    ir::register_custom_call(
        "podsim_test_gate", [h](const ir::Instruction&, std::span<const ir::Literal* const> ops) {
          std::unique_lock lock(h->mutex);
          if (!h->cv.wait_for(lock, std::chrono::seconds(30), [&] { return h->gate_open; }))
            fail("test gate never opened");
          return *ops[0];
        });
    ir::register_custom_call("podsim_test_record",
                             [h](const ir::Instruction&, std::span<const ir::Literal* const> ops) {
                               std::lock_guard lock(h->mutex);
                               h->recorded.push_back(ops[0]->get_as_double(0));
                               return *ops[0];
                             });
    ir::register_custom_call("podsim_test_fail",
                             [](const ir::Instruction&, std::span<const ir::Literal* const>) {
                               fail("boom from the failing step");
                               return ir::Literal();
                             });
    return h;
  }();
  return *instance;
}

std::shared_ptr<Executable> compile_text(Client& client, const std::string& text) {
  return client.compile(*ir::parse_module(text));
}

// ---- Registry and PODSIM_DEVICE ----

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { lazy::reset_for_testing(); }
  void TearDown() override { lazy::reset_for_testing(); }
  ScopedEnv device_{"PODSIM_DEVICE", std::nullopt};
  ScopedEnv cpu_devices_{"PODSIM_CPU_DEVICES", std::nullopt};
};

TEST_F(RegistryTest, DefaultIsOneCpuDevice) {
  Client& c = default_client();
  EXPECT_EQ(c.kind(), DeviceKind::kCpu);
  EXPECT_EQ(&c, &client("CPU"));
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(device().name(), "CPU:0");
  EXPECT_EQ(device().ordinal(), 0);
  EXPECT_EQ(&device().client(), &c);
  EXPECT_EQ(devices(), std::vector<Device*>{&device(0)});
  EXPECT_THAT(error_of([] { device(1); }), HasSubstr("device index 1 is out of range"));
  EXPECT_THAT(error_of([] { device(-1); }), HasSubstr("device index -1 is out of range"));
}

TEST_F(RegistryTest, DeviceKindNames) {
  EXPECT_EQ(device_kind_name(DeviceKind::kCpu), "CPU");
  EXPECT_EQ(device_kind_name(DeviceKind::kSim), "SIM");
  EXPECT_EQ(device_kind_name(DeviceKind::kOpenCl), "OPENCL");
}

TEST_F(RegistryTest, EnvironmentChoosesTheBackendCaseInsensitively) {
  ScopedEnv env("PODSIM_DEVICE", "cpu");
  EXPECT_EQ(default_client().kind(), DeviceKind::kCpu);
}

TEST_F(RegistryTest, EnvironmentChoosesTheSimBackend) {
  ScopedEnv env("PODSIM_DEVICE", "sim");
  ScopedEnv chip("PODSIM_TOPOLOGY", "tiny");
  EXPECT_EQ(default_client().kind(), DeviceKind::kSim);
  EXPECT_EQ(podsim::device().name(), "SIM:0");
  EXPECT_GT(podsim::device().memory_stats().bytes_limit, 0);
}

TEST_F(RegistryTest, BadSimTopologyIsAClearError) {
  ScopedEnv env("PODSIM_DEVICE", "SIM");
  ScopedEnv chip("PODSIM_TOPOLOGY", "no-such-chip");
  EXPECT_THAT(error_of([] { default_client(); }),
              StartsWith("SIM backend (PODSIM_TOPOLOGY=no-such-chip): neither a chip (v4, "));
}

TEST_F(RegistryTest, OpenClIsChosenByName) {
  ScopedEnv env("PODSIM_DEVICE", "opencl");
  Client* opencl = nullptr;
  try {
    opencl = &default_client();
  } catch (const Error& e) {
    GTEST_SKIP() << "no OpenCL platform here: " << e.what();
  }
  EXPECT_EQ(opencl->kind(), DeviceKind::kOpenCl);
  EXPECT_EQ(opencl->devices()[0]->name(), "OPENCL:0");
  EXPECT_GT(opencl->devices()[0]->memory_stats().bytes_limit, 0);
}

TEST_F(RegistryTest, AnOpenClDeviceNobodyHasIsAClearError) {
  ScopedEnv env("PODSIM_DEVICE", "OPENCL");
  ScopedEnv pick("PODSIM_OPENCL_DEVICE", "no-such-device");
  const std::string error = error_of([] { default_client(); });
  if (error.find("no OpenCL platform") != std::string::npos) GTEST_SKIP() << error;
  EXPECT_THAT(
      error,
      StartsWith("PODSIM_OPENCL_DEVICE=no-such-device: no OpenCL device's or platform's name "
                 "contains it; found:"));
}

TEST_F(RegistryTest, UnknownBackendListsTheValidValues) {
  ScopedEnv env("PODSIM_DEVICE", "TPU");
  EXPECT_THAT(error_of([] { default_client(); }),
              StartsWith("PODSIM_DEVICE=TPU: not a known backend; valid values: CPU, SIM, OPENCL"));
  EXPECT_THAT(error_of([] { client("NOPE"); }), StartsWith("backend NOPE: not a known backend"));
  // The failed choice is not remembered: fixing the variable fixes the next call.
  ScopedEnv fixed("PODSIM_DEVICE", "CPU");
  EXPECT_EQ(default_client().kind(), DeviceKind::kCpu);
}

TEST_F(RegistryTest, CpuDeviceCountFromEnvironment) {
  ScopedEnv env("PODSIM_CPU_DEVICES", "4");
  lazy::reset_for_testing();
  ASSERT_EQ(device_count(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(device(i).ordinal(), i);
    EXPECT_EQ(device(i).name(), "CPU:" + std::to_string(i));
  }
  EXPECT_THAT(error_of([] { device(4); }), HasSubstr("the CPU backend has 4 device(s)"));
}

TEST_F(RegistryTest, BadCpuDeviceCountsAreErrors) {
  for (const char* bad : {"0", "abc", "257", "3x", "-2"}) {
    ScopedEnv env("PODSIM_CPU_DEVICES", bad);
    lazy::reset_for_testing();
    EXPECT_THAT(error_of([] { default_client(); }),
                HasSubstr(std::string("PODSIM_CPU_DEVICES=") + bad))
        << bad;
  }
  ScopedEnv empty("PODSIM_CPU_DEVICES", "");
  lazy::reset_for_testing();
  EXPECT_EQ(device_count(), 1);
}

TEST_F(RegistryTest, RegisteredBackendsAreCreatedOnceOnFirstUse) {
  static std::atomic<int> created;
  created = 0;
  register_backend("TESTCPU", [] {
    ++created;
    return make_cpu_client(2);
  });
  EXPECT_EQ(created, 0);
  Client& c = client("TESTCPU");
  EXPECT_EQ(&client("TESTCPU"), &c);
  EXPECT_EQ(created, 1);
  EXPECT_EQ(c.devices().size(), 2u);
  EXPECT_THAT(error_of([] { register_backend("TESTCPU", [] { return make_cpu_client(1); }); }),
              HasSubstr("already in use"));
  EXPECT_THAT(error_of([] { client("NOPE"); }),
              HasSubstr("valid values: CPU, SIM, OPENCL, TESTCPU"));
  ScopedEnv env("PODSIM_DEVICE", "testcpu");
  lazy::reset_for_testing();
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(created, 2);
}

// ---- The CPU backend ----

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hooks().set_gate(true);
    debug::clear_metrics();
  }
  void TearDown() override { hooks().set_gate(true); }

  std::unique_ptr<Client> client_ = make_cpu_client(2);
  Device& device0_ = *client_->devices()[0];
  Device& device1_ = *client_->devices()[1];
};

TEST_F(CpuBackendTest, TargetNamesTheCompilerVersion) {
  EXPECT_THAT(client_->target(), StartsWith("cpu/" + std::string(cpu::kCompilerVersion) + "/"));
  EXPECT_EQ(client_->kind(), DeviceKind::kCpu);
  EXPECT_EQ(device1_.name(), "CPU:1");
  EXPECT_EQ(&device1_.client(), client_.get());
}

TEST_F(CpuBackendTest, TransfersRoundTrip) {
  ir::Literal matrix(ir::Shape(ir::PrimitiveType::kF32, {2, 3}));
  for (int64_t i = 0; i < 6; ++i) matrix.set_from_double(i, 0.5 * static_cast<double>(i) - 1);
  ir::Literal ints(ir::Shape(ir::PrimitiveType::kS32, {4}));
  for (int64_t i = 0; i < 4; ++i) ints.set_from_int64(i, -7 * i);
  ir::Literal tuple = ir::Literal::tuple({f32(2.5), ints});
  for (const ir::Literal& literal : {matrix, ints, tuple}) {
    auto buffer = client_->transfer_to_device(literal, device1_);
    EXPECT_TRUE(buffer->ready_event()->is_ready());
    EXPECT_EQ(&buffer->device(), &device1_);
    EXPECT_TRUE(buffer->shape().compatible(literal.shape()));
    EXPECT_EQ(buffer->to_literal(), literal);
  }
  EXPECT_EQ(debug::metric_summary("TransferToDeviceTime").total_samples, 3);
  EXPECT_EQ(debug::metric_summary("TransferFromDeviceTime").total_samples, 3);
  // 24 + 16 + (4 + 16) bytes.
  EXPECT_DOUBLE_EQ(debug::metric_summary("InboundData").accumulator, 60);
  EXPECT_DOUBLE_EQ(debug::metric_summary("OutboundData").accumulator, 60);
}

TEST_F(CpuBackendTest, MemoryStatsFollowLiveBuffers) {
  const int64_t base = device0_.memory_stats().bytes_in_use;
  auto a = client_->transfer_to_device(f32s({1, 2, 3}), device0_);
  auto b = client_->transfer_to_device(f32s({4, 5, 6}), device0_);
  EXPECT_EQ(device0_.memory_stats().bytes_in_use, base + 24);
  EXPECT_EQ(device1_.memory_stats().bytes_in_use, 0);
  auto exe = compile_text(*client_, kAdd);
  {
    auto out = exe->execute(std::vector{a, b}, device0_);
    EXPECT_EQ(device0_.memory_stats().bytes_in_use, base + 36);
    out[0]->to_literal();
  }
  a.reset();
  // The output is released by its step too, once it has run.
  for (int i = 0; i < 1000 && device0_.memory_stats().bytes_in_use != base + 12; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  MemoryStats stats = device0_.memory_stats();
  EXPECT_EQ(stats.bytes_in_use, base + 12);
  EXPECT_EQ(stats.peak_bytes_in_use, base + 36);
  EXPECT_EQ(stats.bytes_limit, 0);
  b.reset();
  EXPECT_EQ(device0_.memory_stats().bytes_in_use, base);
}

TEST_F(CpuBackendTest, ExecuteMatchesTheEvaluator) {
  auto exe = compile_text(*client_, kAdd);
  ir::Literal a = f32s({1, 2.5, -3}), b = f32s({10, 20, 30});
  auto out = exe->execute(std::vector{client_->transfer_to_device(a, device0_),
                                      client_->transfer_to_device(b, device0_)},
                          device0_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_of(out[0]->to_literal()), (std::vector<double>{11, 22.5, 27}));
  EXPECT_EQ(out[0]->to_literal(), ir::evaluate(*ir::parse_module(kAdd), std::vector{a, b}));
  EXPECT_EQ(debug::metric_summary("CompileTime").total_samples, 1);
  EXPECT_EQ(debug::metric_summary("ExecuteTime").total_samples, 1);
  EXPECT_EQ(exe->info().argument_bytes, 24);
  EXPECT_EQ(exe->info().output_bytes, 12);
}

TEST_F(CpuBackendTest, TupleRootGivesOneBufferPerElement) {
  auto exe = compile_text(*client_, kPair);
  auto out = exe->execute(std::vector{client_->transfer_to_device(f32s({5, 6, 7}), device1_),
                                      client_->transfer_to_device(f32s({1, 2, 3}), device1_)},
                          device1_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(&out[1]->device(), &device1_);
  EXPECT_EQ(out[0]->shape().to_string(false), "f32[3]");
  EXPECT_EQ(values_of(out[0]->to_literal()), (std::vector<double>{6, 8, 10}));
  EXPECT_EQ(values_of(out[1]->to_literal()), (std::vector<double>{4, 4, 4}));
}

TEST_F(CpuBackendTest, OutputsAreNotReadyUntilTheStepRuns) {
  auto gate = compile_text(*client_, custom_call_module("podsim_test_gate"));
  auto increment = compile_text(*client_, kIncrement);
  hooks().set_gate(false);
  auto held = gate->execute(std::vector{client_->transfer_to_device(f32(41), device0_)}, device0_);
  auto next = increment->execute(held, device0_);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(held[0]->ready_event()->is_ready());
  EXPECT_FALSE(next[0]->ready_event()->is_ready());
  // The other device has a queue of its own.
  auto other =
      increment->execute(std::vector{client_->transfer_to_device(f32(1), device1_)}, device1_);
  EXPECT_EQ(other[0]->to_literal(), f32(2));
  hooks().set_gate(true);
  EXPECT_EQ(next[0]->to_literal(), f32(42));
  EXPECT_TRUE(held[0]->ready_event()->is_ready());
}

TEST_F(CpuBackendTest, FailuresReachEveryDependentOutput) {
  auto failing = compile_text(*client_, custom_call_module("podsim_test_fail"));
  auto increment = compile_text(*client_, kIncrement);
  auto bad = failing->execute(std::vector{client_->transfer_to_device(f32(1), device0_)}, device0_);
  auto dependent = increment->execute(bad, device0_);
  EXPECT_THAT(error_of([&] { bad[0]->to_literal(); }), HasSubstr("boom from the failing step"));
  EXPECT_THAT(error_of([&] { dependent[0]->to_literal(); }),
              HasSubstr("boom from the failing step"));
  EXPECT_NE(dependent[0]->ready_event()->error(), nullptr);
  // The device keeps working.
  auto good =
      increment->execute(std::vector{client_->transfer_to_device(f32(1), device0_)}, device0_);
  EXPECT_EQ(good[0]->to_literal(), f32(2));
}

TEST_F(CpuBackendTest, StepsRunInSubmissionOrder) {
  auto record = compile_text(*client_, custom_call_module("podsim_test_record"));
  {
    std::lock_guard lock(hooks().mutex);
    hooks().recorded.clear();
  }
  std::vector<std::shared_ptr<Buffer>> outputs;
  std::vector<double> expected;
  for (int i = 0; i < 50; ++i) {
    auto out =
        record->execute(std::vector{client_->transfer_to_device(f32(i), device0_)}, device0_);
    outputs.push_back(out[0]);
    expected.push_back(i);
  }
  outputs.back()->to_literal();
  std::lock_guard lock(hooks().mutex);
  EXPECT_EQ(hooks().recorded, expected);
}

TEST_F(CpuBackendTest, ChainedStepsSeeEachOthersResults) {
  auto increment = compile_text(*client_, kIncrement);
  std::vector<std::shared_ptr<Buffer>> x{client_->transfer_to_device(f32(0), device1_)};
  for (int i = 0; i < 100; ++i) x = increment->execute(x, device1_);
  EXPECT_EQ(x[0]->to_literal(), f32(100));
}

TEST_F(CpuBackendTest, ManyConcurrentExecutes) {
  auto exe = compile_text(*client_, kAdd);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      Device& device = *client_->devices()[static_cast<size_t>(t % 2)];
      std::vector<std::pair<double, std::shared_ptr<Buffer>>> pending;
      for (int i = 0; i < 30; ++i) {
        double base = 1000.0 * t + i;
        auto out =
            exe->execute(std::vector{client_->transfer_to_device(f32s({base, 1, 2}), device),
                                     client_->transfer_to_device(f32s({1, base, 3}), device)},
                         device);
        pending.emplace_back(base, out[0]);
      }
      for (auto& [base, buffer] : pending)
        if (values_of(buffer->to_literal()) != std::vector<double>{base + 1, base + 1, 5}) ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
}

TEST_F(CpuBackendTest, BadArgumentsAreErrorsAtOnce) {
  auto exe = compile_text(*client_, kAdd);
  auto a = client_->transfer_to_device(f32s({1, 2, 3}), device0_);
  auto wrong_shape = client_->transfer_to_device(f32s({1, 2}), device0_);
  auto elsewhere = client_->transfer_to_device(f32s({1, 2, 3}), device1_);
  EXPECT_THAT(error_of([&] { exe->execute(std::vector{a}, device0_); }),
              HasSubstr("expected 2 argument(s), got 1"));
  EXPECT_THAT(error_of([&] {
                exe->execute(std::vector{a, wrong_shape}, device0_);
              }),
              HasSubstr("argument 1 has shape f32[2] but parameter 1 is f32[3]"));
  EXPECT_THAT(error_of([&] {
                exe->execute(std::vector{a, elsewhere}, device0_);
              }),
              HasSubstr("argument 1 is on CPU:1 but the run is on CPU:0"));
  EXPECT_THAT(error_of([&] {
                exe->execute(std::vector<std::shared_ptr<Buffer>>{a, nullptr}, device0_);
              }),
              HasSubstr("argument 1 is null"));
}

TEST_F(CpuBackendTest, SerializedExecutablesRunTheSame) {
  auto exe = compile_text(*client_, kPair);
  auto copy = client_->deserialize(exe->serialize());
  std::vector args{client_->transfer_to_device(f32s({1, 2, 3}), device0_),
                   client_->transfer_to_device(f32s({0.5, 0.25, 8}), device0_)};
  auto a = exe->execute(args, device0_);
  auto b = copy->execute(args, device0_);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(a[i]->to_literal(), b[i]->to_literal());
}

TEST_F(CpuBackendTest, DestroyingTheClientFinishesQueuedWork) {
  auto local = make_cpu_client(1);
  Device& device = *local->devices()[0];
  auto record = compile_text(*local, custom_call_module("podsim_test_record"));
  {
    std::lock_guard lock(hooks().mutex);
    hooks().recorded.clear();
  }
  hooks().set_gate(false);
  auto gate = compile_text(*local, custom_call_module("podsim_test_gate"));
  gate->execute(std::vector{local->transfer_to_device(f32(-1), device)}, device);
  for (int i = 0; i < 20; ++i)
    record->execute(std::vector{local->transfer_to_device(f32(i), device)}, device);
  std::thread opener([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    hooks().set_gate(true);
  });
  local.reset();
  opener.join();
  std::lock_guard lock(hooks().mutex);
  EXPECT_EQ(hooks().recorded.size(), 20u);
}

TEST_F(CpuBackendTest, PersistentCacheRoundTripsCpuExecutables) {
  ScopedEnv no_dir("PODSIM_CACHE_DIR", std::nullopt);
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("podsim-device-test-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Hash128 key{1, 2};
  auto writer = CompileCache::create();
  writer->set_persistent(dir.string(), false);
  writer->insert(key, *client_, compile_text(*client_, kAdd));
  auto reader = CompileCache::create();
  reader->set_persistent(dir.string(), true);
  auto exe = reader->lookup(key, *client_);
  std::filesystem::remove_all(dir);
  ASSERT_NE(exe, nullptr);
  auto out = exe->execute(std::vector{client_->transfer_to_device(f32s({1, 2, 3}), device0_),
                                      client_->transfer_to_device(f32s({3, 2, 1}), device0_)},
                          device0_);
  EXPECT_EQ(values_of(out[0]->to_literal()), (std::vector<double>{4, 4, 4}));
}

}  // namespace
}  // namespace podsim::pjrt
