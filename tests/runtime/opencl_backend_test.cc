// The OpenCL backend through the device interface, on the first OpenCL device (PoCL on
// the CPU where there is no GPU): program binaries cached on disk and rebuilt when the
// cache holds something else, the GEMM choices giving the same products, memory
// accounting, and the errors a user can hit (out of device memory, a kernel that fails
// to build, a bad PODSIM_OPENCL_GEMM). Skipped, saying why, without an OpenCL platform.
#include "runtime/pjrt/opencl/opencl_backend.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/opencl/gemm_source.h"
#include "runtime/pjrt/opencl/opencl_device.h"
#include "tests/runtime/scoped_env.h"

namespace podsim::pjrt {
namespace {

using ::podsim::test_env::ScopedEnv;
using ::testing::HasSubstr;

class OpenClBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      client_ = make_opencl_client();
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }

  // Runs `text` on a fresh client's device 0 with arguments 0, 1, 2, ... per element.
  // Runs text on client's first device with `given` arguments, else i % 7 - 3 in each.
  static std::vector<ir::Literal> run(Client& client, const std::string& text,
                                      const std::vector<ir::Literal>& given = {}) {
    auto module = ir::parse_module(text);
    Device& device = *client.devices()[0];
    std::vector<std::shared_ptr<Buffer>> args;
    for (const ir::Instruction* p : module->entry()->parameters()) {
      ir::Literal l(p->shape());
      if (args.size() < given.size()) {
        l = given[args.size()];
      } else {
        for (int64_t i = 0; i < l.num_elements(); ++i)
          l.set_from_double(i, static_cast<double>(i % 7) - 3);
      }
      args.push_back(client.transfer_to_device(std::move(l), device));
    }
    std::vector<ir::Literal> out;
    for (const auto& b : client.compile(*module)->execute(args, device))
      out.push_back(b->to_literal());
    return out;
  }

  std::unique_ptr<Client> client_;
};

constexpr const char* kScaled = R"(HloModule scaled
ENTRY e {
  x = f32[100] parameter(0)
  two = f32[] constant(2)
  b = f32[100] broadcast(two), dimensions={}
  ROOT y = f32[100] multiply(x, b)
})";

TEST_F(OpenClBackend, ProgramBinariesAreCachedAndRebuiltWhenTheCacheIsForeign) {
  const auto dir = std::filesystem::path(PODSIM_BINARY_DIR) / "tests" / "opencl_binary_cache";
  std::filesystem::remove_all(dir);
  ScopedEnv cache("PODSIM_CACHE_DIR", dir.string());
  const std::vector<ir::Literal> first = run(*client_, kScaled);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir / "opencl"))
    files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  // A new client (as a new process) builds from the cached binary: same result, no new file.
  EXPECT_EQ(run(*make_opencl_client(), kScaled)[0], first[0]);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "opencl"), {}), 1);
  // A file that is not a binary for this device is rebuilt from source.
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "not a program binary";
  EXPECT_EQ(run(*make_opencl_client(), kScaled)[0], first[0]);
  EXPECT_GT(std::filesystem::file_size(files[0]), 20u);
  for (int64_t i = 0; i < 100; ++i)
    EXPECT_EQ(first[0].get_as_double(i), 2.0 * (static_cast<double>(i % 7) - 3));
}

TEST_F(OpenClBackend, EveryGemmChoiceGivesTheEvaluatorsProduct) {
  // 2 x 256^3 flops: above the size where the backend times its candidates; whole tiles
  // (the vector-load and pipelined paths) and, at 200, edge tiles (a pipelined tiling
  // forced there runs the fastest that fits). Each operand as stored or transposed, and a
  // batch of two. Integers from -3 to 3: every product and partial sum is exact in f32.
  std::vector<std::string> choices = {"auto", "own", "clblast"};
  for (size_t t = 0; t < podsim::opencl::kGemmTilings.size(); ++t)
    choices.push_back(fmt::format("own:{}", t));
  struct Case {
    int batch, n;
    const char* dims;
  };
  const char* const kBatch = "lhs_batch_dims={0}, rhs_batch_dims={0}, ";
  for (const Case& c : {Case{1, 256, "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
                        Case{1, 256, "lhs_contracting_dims={0}, rhs_contracting_dims={1}"},
                        Case{1, 256, "lhs_contracting_dims={1}, rhs_contracting_dims={1}"},
                        Case{1, 256, "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},
                        Case{1, 200, "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
                        Case{1, 200, "lhs_contracting_dims={0}, rhs_contracting_dims={1}"},
                        Case{2, 256, "lhs_contracting_dims={2}, rhs_contracting_dims={1}"}}) {
    const std::string dims = c.batch > 1 ? fmt::format("{}{}", kBatch, c.dims) : c.dims;
    const std::string shape = c.batch > 1 ? fmt::format("f32[{0},{1},{1}]", c.batch, c.n)
                                          : fmt::format("f32[{0},{0}]", c.n);
    const std::string text = fmt::format(R"(HloModule dot
ENTRY e {{
  a = {0} parameter(0)
  b = {0} parameter(1)
  ROOT c = {0} dot(a, b), {1}
}})",
                                         shape, dims);
    const auto module = ir::parse_module(text);
    std::vector<ir::Literal> args;
    for (const ir::Instruction* p : module->entry()->parameters()) {
      ir::Literal l(p->shape());
      for (int64_t i = 0; i < l.num_elements(); ++i)
        l.set_from_double(i, static_cast<double>((i * (args.size() + 2) + i / 11) % 7) - 3);
      args.push_back(std::move(l));
    }
    const ir::Literal want = ir::evaluate(*module, args);
    for (const std::string& choice : choices) {
      ScopedEnv gemm("PODSIM_OPENCL_GEMM", choice);
      EXPECT_EQ(run(*client_, text, args)[0], want) << choice << " " << c.n << " " << dims;
    }
  }
  ScopedEnv bad("PODSIM_OPENCL_GEMM", std::string("fastest"));
  try {
    run(*client_, R"(HloModule dot
ENTRY e {
  a = f32[4,4] parameter(0)
  ROOT c = f32[4,4] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("PODSIM_OPENCL_GEMM=fastest: expected auto, own, own:0"));
  }
}

TEST_F(OpenClBackend, ScattersApplyRepeatedUpdatesInTheEvaluatorsOrder) {
  // The combiner keeps the update (the last one to an element wins), so the order of
  // updates shows. Rows at repeated indices (work-items per window position), and windows
  // of 3 along the indexed dimension that overlap (one work-item in order); one index
  // is out of bounds (its window is skipped).
  const char* const kAssign = R"(
assign {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] copy(b)
})";
  for (const std::string& scatter :
       {std::string("ROOT s = f32[6,5] scatter(x, i, u), update_window_dims={1}, "
                    "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                    "index_vector_dim=1, to_apply=assign"),
        std::string("ROOT s = f32[6,5] scatter(x, i, u), update_window_dims={1,2}, "
                    "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
                    "index_vector_dim=1, to_apply=assign")}) {
    const bool rows = scatter.find("update_window_dims={1},") != std::string::npos;
    const std::string text = fmt::format(R"(HloModule m
ENTRY e {{
  x = f32[6,5] parameter(0)
  i = s32[4,1] parameter(1)
  u = {} parameter(2)
  {}
}}{})",
                                         rows ? "f32[4,5]" : "f32[4,3,5]", scatter, kAssign);
    const auto module = ir::parse_module(text);
    std::vector<ir::Literal> args;
    for (const ir::Instruction* p : module->entry()->parameters()) {
      ir::Literal l(p->shape());
      for (int64_t k = 0; k < l.num_elements(); ++k)
        l.set_from_double(k, static_cast<double>(k + 100 * (args.size() + 1)));
      args.push_back(std::move(l));
    }
    const std::vector<int64_t> index = {1, 2, 1, 9};
    for (int64_t k = 0; k < 4; ++k) args[1].set_from_int64(k, index[static_cast<size_t>(k)]);
    EXPECT_EQ(run(*client_, text, args)[0], ir::evaluate(*module, args)) << scatter;
  }
}

TEST_F(OpenClBackend, LargeAndSmallTransfersRoundTrip) {
  // Above and below the size that goes through the pinned staging buffer, twice each (the
  // staging buffer is reused and grown).
  Device& device = *client_->devices()[0];
  for (int64_t n : {int64_t{1000}, int64_t{3} << 20, int64_t{1} << 19, int64_t{5} << 20}) {
    ir::Literal l(ir::Shape(ir::PrimitiveType::kS32, {n}));
    for (int64_t i = 0; i < n; ++i) l.set_from_int64(i, i * 7919 % 100003);
    const ir::Literal back = client_->transfer_to_device(l, device)->to_literal();
    EXPECT_EQ(back, l) << n;
  }
}

TEST_F(OpenClBackend, BuffersCountAgainstTheDeviceMemory) {
  Device& device = *client_->devices()[0];
  const int64_t before = device.memory_stats().bytes_in_use;
  {
    auto buffer = client_->transfer_to_device(
        ir::Literal(ir::Shape(ir::PrimitiveType::kF32, {1024})), device);
    buffer->ready_event()->wait();
    EXPECT_EQ(device.memory_stats().bytes_in_use, before + 4096);
    EXPECT_GE(device.memory_stats().peak_bytes_in_use, before + 4096);
  }
  EXPECT_EQ(device.memory_stats().bytes_in_use, before);
}

TEST_F(OpenClBackend, RunsQueuedFarAheadOfTheDeviceHoldABoundedAmountOfMemory) {
  // 64 runs of a 4 MiB step queued back to back (each doubles then halves its input, so
  // the last output is the input): the caller waits once kMaxRunsInFlight are in flight
  // instead of holding every queued run's memory.
  const int64_t n = int64_t{1} << 20, bytes = n * 4;
  auto module = ir::parse_module(fmt::format(R"(HloModule twice
ENTRY e {{
  x = f32[{0}] parameter(0)
  two = f32[] constant(2)
  half = f32[] constant(0.5)
  twos = f32[{0}] broadcast(two), dimensions={{}}
  halves = f32[{0}] broadcast(half), dimensions={{}}
  y = f32[{0}] multiply(x, twos)
  ROOT z = f32[{0}] multiply(y, halves)
}})",
                                             n));
  Device& device = *client_->devices()[0];
  ir::Literal x(ir::Shape(ir::PrimitiveType::kF32, {n}));
  for (int64_t i = 0; i < n; ++i) x.set_from_double(i, static_cast<double>(i % 1000));
  std::vector<std::shared_ptr<Buffer>> args = {client_->transfer_to_device(x, device)};
  args[0]->ready_event()->wait();
  const int64_t before = device.memory_stats().bytes_in_use;
  auto executable = client_->compile(*module);
  std::vector<std::shared_ptr<Buffer>> last;
  for (int k = 0; k < 64; ++k) last = executable->execute(args, device);
  EXPECT_EQ(last[0]->to_literal(), x);
  const int64_t most_runs = opencl_backend::OpenClDevice::kMaxRunsInFlight + 1;
  EXPECT_LE(device.memory_stats().peak_bytes_in_use, before + most_runs * 2 * bytes);
}

TEST_F(OpenClBackend, RunningOutOfDeviceMemoryNamesTheDevice) {
  // 64 GiB of zeros: more than this device holds.
  constexpr const char* kHuge = R"(HloModule huge
ENTRY e {
  z = f32[] constant(0)
  ROOT b = f32[17179869184] broadcast(z), dimensions={}
})";
  Device& device = *client_->devices()[0];
  if (device.memory_stats().bytes_limit > (int64_t{64} << 30))
    GTEST_SKIP() << "this device holds 64 GiB";
  try {
    run(*client_, kHuge);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("OPENCL:0 ("));
    EXPECT_THAT(e.what(), HasSubstr("is out of memory: 68719476736 bytes requested"));
  }
}

TEST_F(OpenClBackend, AKernelThatFailsToBuildShowsTheBuildLog) {
  auto& device = dynamic_cast<opencl_backend::OpenClDevice&>(*client_->devices()[0]);
  try {
    device.build("__kernel void broken(__global float* x) { x[0] = undeclared_name; }", "",
                 "broken.hlo");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("building the kernels of broken.hlo on OPENCL:0 ("));
    EXPECT_THAT(e.what(), HasSubstr("Build log:"));
    EXPECT_THAT(e.what(), HasSubstr("undeclared_name"));
  }
}

}  // namespace
}  // namespace podsim::pjrt
