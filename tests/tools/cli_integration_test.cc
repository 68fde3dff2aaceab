// The podsim CLI end to end: exit codes, summaries, error messages, and a safetensors
// round trip through --output and --inputs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "tests/tools/podsim_cli.h"

namespace {

using podsim::cli_testing::podsim;
using podsim::cli_testing::Result;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("podsim_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

const char* kAxpy = R"(HloModule axpy
ENTRY %main {
  %a = f32[] parameter(0)
  %x = f32[4] parameter(1)
  %y = f32[4] parameter(2)
  %ab = f32[4] broadcast(%a), dimensions={}
  %ax = f32[4] multiply(%ab, %x)
  ROOT %r = f32[4] add(%ax, %y)
}
)";

TEST_F(Cli, HelpEverywhere) {
  for (const char* sub : {"", "check ", "run "}) {
    Result r = podsim(std::string(sub) + "--help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << r.output;
  }
}

TEST_F(Cli, CheckSummarisesAValidModule) {
  Result r = podsim("check " + write("axpy.hlo", kAxpy));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 computations, 6 instructions, 3 parameters"), std::string::npos)
      << r.output;
}

TEST_F(Cli, CheckReportsErrorsWithLocation) {
  std::string bad = kAxpy;
  bad.replace(bad.find("f32[4] add"), 10, "f32[5] add");
  Result r = podsim("check " + write("bad.hlo", bad));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.hlo:8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("r"), std::string::npos) << r.output;

  Result unknown =
      podsim("check " +
             write("unknown.hlo", "HloModule m\nENTRY e {\n  ROOT %x = f32[] frobnicate()\n}\n"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find("frobnicate"), std::string::npos) << unknown.output;
  EXPECT_NE(unknown.output.find(":3:"), std::string::npos) << unknown.output;
}

TEST_F(Cli, RunWritesOutputsThatMatchTheInputsGiven) {
  using namespace podsim::ir;
  Literal a = Literal::scalar(PrimitiveType::kF32, 2.0);
  Literal x(Shape(PrimitiveType::kF32, {4})), y(Shape(PrimitiveType::kF32, {4}));
  for (int i = 0; i < 4; ++i) {
    x.set_from_double(i, i);
    y.set_from_double(i, 10 * i);
  }
  std::string in = (dir_ / "in.safetensors").string();
  std::string out = (dir_ / "out.safetensors").string();
  write_safetensors(in, {{"a", a}, {"arg1", x}, {"y", y}});  // by name, by position, by name
  Result r = podsim("run " + write("axpy.hlo", kAxpy) + " --inputs " + in + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out0: dtype=f32 shape=[4]"), std::string::npos) << r.output;
  NamedLiterals got = read_safetensors(out);
  ASSERT_EQ(got.size(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[0].second.get_as_double(i), 2.0 * i + 10 * i);
}

TEST_F(Cli, RunIsDeterministicForASeed) {
  std::string hlo = write("axpy.hlo", kAxpy);
  Result a = podsim("run " + hlo + " --seed 7");
  Result b = podsim("run " + hlo + " --seed 7");
  Result c = podsim("run " + hlo + " --seed 8");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto values = [](const std::string& s) { return s.substr(s.find("min=")); };
  EXPECT_EQ(values(a.output), values(b.output));
  EXPECT_NE(values(a.output), values(c.output));
}

TEST_F(Cli, RunExplainsMissingInputs) {
  using namespace podsim::ir;
  std::string in = (dir_ / "in.safetensors").string();
  write_safetensors(in, {{"a", Literal::scalar(PrimitiveType::kF32, 1.0)}});
  Result r = podsim("run " + write("axpy.hlo", kAxpy) + " --inputs " + in);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no tensor for parameter 1 ('x'"), std::string::npos) << r.output;
}

TEST_F(Cli, RunDefinesCustomCallsForEveryBackend) {
  using namespace podsim::ir;
  // axpy as a vendor's kernel: the definition is kAxpy's computation, named for the target.
  std::string defs = kAxpy;
  defs.replace(defs.find("ENTRY %main"), 11, "ENTRY %vendor_axpy");
  const std::string hlo = write("call.hlo", R"(HloModule call
ENTRY %main {
  %a = f32[] parameter(0)
  %x = f32[4] parameter(1)
  %y = f32[4] parameter(2)
  ROOT %r = f32[4] custom-call(%a, %x, %y), custom_call_target="vendor$axpy"
}
)");
  Literal x(Shape(PrimitiveType::kF32, {4})), y(Shape(PrimitiveType::kF32, {4}));
  for (int i = 0; i < 4; ++i) {
    x.set_from_double(i, i);
    y.set_from_double(i, 10 * i);
  }
  std::string in = (dir_ / "in.safetensors").string();
  write_safetensors(in, {{"a", Literal::scalar(PrimitiveType::kF32, 3.0)}, {"x", x}, {"y", y}});
  const std::string out = (dir_ / "out.safetensors").string();
  for (const char* backend : {"eval", "cpu", "sim-functional"}) {
    Result r = podsim("run " + hlo + " --backend " + backend + " --custom-calls " +
                      write("defs.hlo", defs) + " --inputs " + in + " --output " + out);
    ASSERT_EQ(r.exit_code, 0) << backend << "\n" << r.output;
    NamedLiterals got = read_safetensors(out);
    ASSERT_EQ(got.size(), 1u);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[0].second.get_as_double(i), 3.0 * i + 10 * i) << backend;
  }
  Result undefined = podsim("run " + hlo + " --inputs " + in);
  EXPECT_EQ(undefined.exit_code, 1);
  EXPECT_NE(undefined.output.find(
                "custom-call target 'vendor$axpy' (line 6, instruction r) has no definition"),
            std::string::npos)
      << undefined.output;
}

TEST_F(Cli, TopologyListsAndShowsPresetsAndFiles) {
  Result list = podsim("topology list");
  ASSERT_EQ(list.exit_code, 0) << list.output;
  for (const char* name : {"v4 ", "v5e ", "v5p ", "v6e ", "tiny "})
    EXPECT_NE(list.output.find(name), std::string::npos);
  Result toml = podsim("topology show v5e --toml");
  ASSERT_EQ(toml.exit_code, 0) << toml.output;
  // What --toml prints is a file that `show` reads back to the same chip.
  std::string path = write("chip.toml", toml.output);
  Result again = podsim("topology show " + path + " --toml");
  EXPECT_EQ(again.output, toml.output);
  Result bad = podsim("topology show " + write("bad.toml", "base = \"v4\"\nmxu_rows = -1\n"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("bad.toml:2:"), std::string::npos) << bad.output;
}

TEST_F(Cli, BackendsAgreeWithTheEvaluator) {
  using namespace podsim::ir;
  std::string hlo = std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo";
  auto outputs = [&](const std::string& backend) {
    std::string out = (dir_ / (backend + ".safetensors")).string();
    Result r = podsim("run " + hlo + " --seed 3 --backend " + backend + " --output " + out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return read_safetensors(out);
  };
  NamedLiterals eval = outputs("eval");
  // The CPU target computes in f32; the simulated chip rounds dot inputs to bf16
  // (DEFAULT precision), about 2^-8 relative per product, so its softmax outputs move
  // by up to a few percent of their range.
  // OpenCL computes as the CPU target does, up to summation order and libm ulps; it
  // is left out only where `podsim devices` finds no OpenCL device at all.
  std::vector<std::pair<std::string, double>> backends = {{"cpu", 1e-5}, {"sim-functional", 2e-2}};
  if (podsim("devices").output.find("OPENCL:0") != std::string::npos) backends.emplace_back("opencl", 1e-5);
  for (const auto& [backend, tolerance] : backends) {
    NamedLiterals got = outputs(backend);
    ASSERT_EQ(got.size(), eval.size()) << backend;
    for (size_t t = 0; t < eval.size(); ++t)
      for (int64_t i = 0; i < eval[t].second.num_elements(); ++i)
        EXPECT_NEAR(got[t].second.get_as_double(i), eval[t].second.get_as_double(i), tolerance)
            << backend << " " << i;
  }
}

TEST_F(Cli, DevicesListsEveryBackend) {
  Result r = podsim("devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"CPU (the host", "  CPU:0 ", "SIM (simulated v5e", "  SIM:0 ", "OPENCL ("})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
}

TEST_F(Cli, RunsTheDemoModule) {
  Result r =
      podsim("run " + std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo --seed 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out0: dtype=f32 shape=[8,10]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("out1: dtype=f32 shape=[8]"), std::string::npos) << r.output;
}

// Training shows a progress line between its log lines on a terminal (util-linux's
// `script` gives it one), none where stderr is a pipe or with --quiet.
TEST_F(Cli, TrainingShowsProgressOnATerminalOnly) {
  const std::string train = std::string(PODSIM_BINARY_DIR) + "/bin/podsim train mlp --device cpu --steps 20";
  auto on_terminal = [](const std::string& command) {
    FILE* pipe = popen(("script -qec '" + command + "' /dev/null 2>&1").c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
    EXPECT_EQ(pclose(pipe), 0) << out;
    return out;
  };
  const std::string shown = on_terminal(train);
  EXPECT_NE(shown.find("\r\033[Kstep 1/20  "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" steps/s  host "), std::string::npos) << shown;
  EXPECT_NE(shown.find("step    20/20  loss"), std::string::npos) << shown;
  EXPECT_EQ(on_terminal(train + " --quiet").find("\033[K"), std::string::npos);
  const Result piped = podsim("train mlp --device cpu --steps 20");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.find("\033[K"), std::string::npos);
  EXPECT_NE(piped.output.find("step    20/20  loss"), std::string::npos) << piped.output;
}

}  // namespace
