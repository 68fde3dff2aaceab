// The training workloads of `podsim train`, end to end: the MLP and the CNN reach the
// accuracy the issues ask for (>= 95% on the digits test split) on the simulated chip
// (the MLP also on the CPU), with one compiled training-step graph after warm-up, and
// the small GPT's loss falls from about ln(vocabulary) as it learns the text.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "examples/train/train.h"
#include "traces/chrome_trace.h"

namespace podsim::examples {
namespace {

TEST(TrainMlp, ReachesTheAccuracyOnTheSimulatedChip) {
  TrainOptions options;
  options.device = "sim";
  options.topology = "v5e";
  std::ostringstream log;
  TrainResult result = train_mlp(options, log);
  EXPECT_EQ(result.device, "SIM:0");
  EXPECT_EQ(result.steps, 300);
  ASSERT_TRUE(result.test_accuracy.has_value());
  EXPECT_GE(*result.test_accuracy, 0.95) << log.str();
  EXPECT_LT(result.final_loss, result.first_loss / 4) << log.str();
  // The first step (no optimizer state yet) and every later step (one graph) compile;
  // nothing else does during training.
  EXPECT_EQ(result.compilations, 2) << log.str();
  EXPECT_NE(log.str().find("step   300/300  loss "), std::string::npos) << log.str();
}

TEST(TrainMlp, ReachesTheAccuracyOnTheCpu) {
  TrainOptions options;
  options.steps = 200;
  options.seed = 3;
  std::ostringstream log;
  TrainResult result = train_mlp(options, log);
  EXPECT_EQ(result.device, "CPU:0");
  EXPECT_GE(*result.test_accuracy, 0.95) << log.str();
}

// The CNN (convolutions, batch norm, pooling and their gradients) on the simulated chip:
// the TPU target lowers every op of its training step. 60 steps (the default run of 300
// reaches about 99%).
TEST(TrainCnn, ReachesTheAccuracyOnTheSimulatedChip) {
  TrainOptions options;
  options.device = "sim";
  options.topology = "v5e";
  options.steps = 60;
  std::ostringstream log;
  TrainResult result = train_cnn(options, log);
  EXPECT_EQ(result.device, "SIM:0");
  ASSERT_TRUE(result.test_accuracy.has_value());
  EXPECT_GE(*result.test_accuracy, 0.95) << log.str();
  EXPECT_LT(result.final_loss, result.first_loss / 4) << log.str();
  EXPECT_EQ(result.compilations, 2) << log.str();
}

TEST(TrainTransformer, LossFallsFromUniform) {
  TrainOptions options;
  options.steps = 60;
  std::ostringstream log;
  TrainResult result = train_transformer(options, log);
  EXPECT_EQ(result.steps, 60);
  EXPECT_LT(result.final_loss, result.first_loss - 0.5) << log.str();
  EXPECT_EQ(result.compilations, 2) << log.str();
}

// --profile writes the last step's profile: it reads back, its chip ran as many cycles
// as one step took on average (every step runs the same graph), and its MXU track did
// the step's matmul work.
TEST(TrainMlp, ProfilesTheLastStepOnTheSimulatedChip) {
  TrainOptions options;
  options.device = "sim";
  options.steps = 12;
  options.profile =
      (std::filesystem::temp_directory_path() / fmt::format("podsim_train_{}.json", getpid()))
          .string();
  std::ostringstream log;
  TrainResult result = train_mlp(options, log);
  traces::Profile profile = traces::read_chrome_trace(options.profile);
  std::filesystem::remove(options.profile);
  ASSERT_EQ(profile.chips.size(), 1u);
  // Steps after the first run one graph; the first has no optimizer state yet.
  EXPECT_GT(profile.chips[0].total_cycles, 0u);
  EXPECT_LT(profile.chips[0].total_cycles, static_cast<uint64_t>(result.simulated_cycles));
  double mxu_flops = 0;
  for (const traces::Track& track : profile.chips[0].tracks)
    if (track.category == "mxu")
      for (const traces::Span& span : track.spans) mxu_flops += span.flops;
  // Forward 64x64x128 + 64x128x10 and the backward's three matmuls of each size (the
  // input gradient of the first layer is not needed): at least 2 * 64 * (64*128 + 128*10) * 2.
  EXPECT_GE(mxu_flops, 2.0 * 64 * (64 * 128 + 128 * 10) * 2) << log.str();
  EXPECT_NE(log.str().find("wrote the profile of the last step"), std::string::npos);
}

// The compiled training steps (MLP and GPT) run hazard-free on the timing model: the
// hazard checker validates every DMA and unit access of each step.
TEST(TrainOnSim, StepsAreHazardFree) {
  setenv("PODSIM_CHECK_HAZARDS", "1", 1);
  TrainOptions options;
  options.device = "sim";
  options.steps = 3;
  std::ostringstream log;
  EXPECT_NO_THROW(train_mlp(options, log)) << log.str();
  options.steps = 2;
  EXPECT_NO_THROW(train_transformer(options, log)) << log.str();
  unsetenv("PODSIM_CHECK_HAZARDS");
}

TEST(TrainOptions, ProfileNeedsASimulatedChip) {
  TrainOptions options;
  options.profile = "unused.json";
  std::ostringstream log;
  try {
    train_mlp(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--profile needs a simulated chip"), std::string::npos)
        << e.what();
  }
}

TEST(TrainOptions, UnknownDeviceIsAClearError) {
  TrainOptions options;
  options.device = "tpu";
  std::ostringstream log;
  try {
    train_mlp(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--device tpu: expected cpu, sim or opencl");
  }
}

}  // namespace
}  // namespace podsim::examples
