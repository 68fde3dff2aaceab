// The debug reports: PODSIM_DEBUG=2 analysis blocks per compilation and execution,
// PODSIM_DEBUG=1 metrics analysis (per step and at exit) with PyTorch/XLA's thresholds,
// PODSIM_SAVE_TENSORS_FILE dumps in the three formats, PODSIM_METRICS_FILE appends.
#include "runtime/lazy/debug_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "runtime/debug/metrics.h"
#include "runtime/tensor/tensor.h"
#include "tests/runtime/scoped_env.h"

namespace podsim {
namespace {

pjrt::Device& dev() { return podsim::device(); }

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
    ++n;
  return n;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using ::podsim::test_env::ScopedEnv;

std::filesystem::path temp_file(const std::string& name) {
  auto dir = std::filesystem::path(PODSIM_BINARY_DIR) / "tests" / "runtime_debug";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return dir / name;
}

class DebugTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mark_step();
    wait_device_ops();
  }
};

TEST_F(DebugTest, LevelTwoAnalyzesEveryCompilationAndExecution) {
  ScopedEnv level("PODSIM_DEBUG", "2");
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7}, &dev());
  Tensor y = (x * 2).exp();
  testing::internal::CaptureStderr();
  int line = __LINE__ + 1;
  mark_step();
  std::string first = testing::internal::GetCapturedStderr();
  std::optional<lazy::GraphRun> run = lazy::last_graph_run();
  ASSERT_TRUE(run);
  EXPECT_TRUE(has(
      first, "Compilation Analysis: Compilation Cause\nCompilation Analysis:   user mark_step\n"))
      << first;
  EXPECT_TRUE(has(first, "Compilation Analysis:   Graph Hash: " + run->hash.hex())) << first;
  EXPECT_TRUE(has(first, "Compilation Analysis:   Number of Graph Inputs: 2\n")) << first;
  EXPECT_TRUE(has(first, "Compilation Analysis:   Number of Graph Outputs: 1\n")) << first;
  EXPECT_TRUE(has(first, "Compilation Analysis: C++ Frame Triggered Execution:")) << first;
  EXPECT_TRUE(has(first, fmt::format("debug_test.cc:{})", line))) << first;
  for (const char* field : {"Graph input size: ", "Graph output size: ", "Aliased Input size: ",
                            "Intermediate tensor size: ", "Compiled program size: "})
    EXPECT_TRUE(has(first, std::string("Post Compilation Analysis: ") + field)) << first;
  // f32[7] and an f32[] scalar in, f32[7] out.
  EXPECT_TRUE(has(first, "Post Compilation Analysis: Graph input size: 0.000000 GB (32 bytes)\n"))
      << first;
  EXPECT_TRUE(has(first, "Post Compilation Analysis: Graph output size: 0.000000 GB (28 bytes)\n"))
      << first;
  EXPECT_TRUE(
      has(first, "Execution Analysis: Execution Cause\nExecution Analysis:   user mark_step\n"))
      << first;
  EXPECT_EQ(count_of(first, "Execution Analysis: ================"), 2) << first;

  // The same graph again: executed from the cache, so no compilation block.
  y = (x * 3).exp();
  testing::internal::CaptureStderr();
  mark_step();
  std::string second = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(has(second, "Compilation Analysis")) << second;
  EXPECT_TRUE(has(second, "Execution Analysis:   Graph Hash: " + run->hash.hex())) << second;

  testing::internal::CaptureStderr();
  (void)(y * 2).sum().item();
  std::string read = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(has(read, "Execution Analysis:   item(): user code reading a value before mark_step"))
      << read;
}

TEST_F(DebugTest, LevelOneAnalyzesTheMetricsWithWarmup) {
  debug::clear_metrics();
  ScopedEnv level("PODSIM_DEBUG", "1");
  std::string last;
  for (int step = 1; step <= 12; ++step) {
    // A new shape each step (one compilation) and one read (one transfer).
    Tensor t = arange(step + 100, {kFloat32, &dev()});
    testing::internal::CaptureStderr();
    mark_step();
    last = testing::internal::GetCapturedStderr();
    (void)t.to_literal();
    if (step == 10) {
      // Ten steps are the compilation warm-up: only transfers are reported yet.
      EXPECT_FALSE(has(last, "CompileTime too frequent")) << last;
      EXPECT_TRUE(has(
          last, "podsim-profiler: TransferFromDeviceTime too frequent: 9 counts during 10 steps"))
          << last;
    }
  }
  EXPECT_TRUE(has(last, "podsim-profiler: CompileTime too frequent: 12 counts during 12 steps\n"))
      << last;
  EXPECT_TRUE(has(
      last, "podsim-profiler: TransferFromDeviceTime too frequent: 11 counts during 12 steps\n"))
      << last;
  EXPECT_EQ(debug::metrics_analysis(),
            "podsim-profiler: CompileTime too frequent: 12 counts during 12 steps\n"
            "podsim-profiler: TransferFromDeviceTime too frequent: 12 counts during 12 steps\n");
}

TEST_F(DebugTest, LevelOneReportsAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("PODSIM_DEBUG", "1", 1);
        debug::clear_metrics();
        Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
        for (int step = 0; step < 2; ++step) {
          (void)(x + step).to_literal();
          mark_step();
        }
        (void)(x + 5).to_literal();  // after the last step: only the exit report shows it
        std::exit(0);
      },
      testing::ExitedWithCode(0), "TransferFromDeviceTime too frequent: 3 counts during 2 steps");
}

TEST_F(DebugTest, NothingIsPrintedWithoutTheVariable) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) (void)(x + i).to_literal();
  mark_step();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(DebugTest, SaveTensorsDumpsEveryExecutedGraph) {
  std::filesystem::path path = temp_file("graphs.txt");
  ScopedEnv file("PODSIM_SAVE_TENSORS_FILE", path.string());
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, &dev());
  {
    ScopedEnv format("PODSIM_SAVE_TENSORS_FMT", "text");
    Tensor y = x * 2 + 1;
    mark_step();
  }
  std::string text = read_file(path);
  std::optional<lazy::GraphRun> run = lazy::last_graph_run();
  ASSERT_TRUE(run);
  EXPECT_TRUE(has(text, "## BEGIN_GRAPH " + run->hash.hex())) << text;
  EXPECT_TRUE(has(text, "cause: user mark_step")) << text;
  // One line per node: x, the scalars 2 and 1 (f32[] leaves), multiply, add.
  EXPECT_EQ(run->nodes, 5);
  EXPECT_EQ(count_of(text, "\n  %"), 5) << text;
  EXPECT_TRUE(has(text, "%0 = f32[3] parameter(0), kind=data")) << text;
  EXPECT_TRUE(has(text, "multiply(")) << text;
  EXPECT_TRUE(has(text, "  ROOT (%4)")) << text;

  std::filesystem::remove(path);
  {
    ScopedEnv format("PODSIM_SAVE_TENSORS_FMT", "dot");
    Tensor y = x - 1;
    mark_step();
  }
  std::string dot = read_file(path);
  EXPECT_TRUE(has(dot, "digraph G {")) << dot;
  EXPECT_TRUE(has(dot, " -> ")) << dot;

  std::filesystem::remove(path);
  Tensor z;
  {
    ScopedEnv format("PODSIM_SAVE_TENSORS_FMT", "hlo");
    z = (x * x).sum();
    mark_step();
  }
  // The dumped module parses and computes 1 + 4 + 9.
  std::string hlo = read_file(path);
  size_t begin = hlo.find("HloModule");
  size_t end = hlo.find("## END_GRAPH");
  ASSERT_NE(begin, std::string::npos) << hlo;
  std::unique_ptr<ir::Module> module = ir::parse_module(hlo.substr(begin, end - begin));
  ir::Literal result = ir::evaluate(*module, std::vector<ir::Literal>{x.to_literal()});
  EXPECT_EQ(result.elements().at(0).get_as_double(0), 14);
  EXPECT_EQ(z.item().to_double(), 14);

  ScopedEnv format("PODSIM_SAVE_TENSORS_FMT", "svg");
  Tensor w = x + 5;
  try {
    mark_step();
    ADD_FAILURE() << "a bad format must be an error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "PODSIM_SAVE_TENSORS_FMT=svg")) << e.what();
  }
}

TEST_F(DebugTest, MetricsFileGetsAReportEveryStep) {
  std::filesystem::path path = temp_file("metrics.txt");
  ScopedEnv file("PODSIM_METRICS_FILE", path.string());
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &dev());
  for (int i = 0; i < 3; ++i) {
    x = x + 1;
    mark_step();
  }
  std::string text = read_file(path);
  EXPECT_EQ(count_of(text, "Counter: MarkStep\n"), 3) << text;
  EXPECT_TRUE(has(text, "Metric: CompileTime")) << text;
}

}  // namespace
}  // namespace podsim
