// The training workloads of `podsim train`, end to end: the MLP reaches the accuracy the
// issue asks for (>= 95% on the digits test split) on the simulated chip and on the CPU,
// with one compiled training-step graph after warm-up, and the small GPT's loss falls
// from about ln(vocabulary) as it learns the text.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "examples/train/train.h"

namespace podsim::examples {
namespace {

TEST(TrainMlp, ReachesTheAccuracyOnTheSimulatedChip) {
  TrainOptions options;
  options.device = "sim";
  options.chip = "v5e";
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

TEST(TrainTransformer, LossFallsFromUniform) {
  TrainOptions options;
  options.steps = 60;
  std::ostringstream log;
  TrainResult result = train_transformer(options, log);
  EXPECT_EQ(result.steps, 60);
  EXPECT_LT(result.final_loss, result.first_loss - 0.5) << log.str();
  EXPECT_EQ(result.compilations, 2) << log.str();
}

TEST(TrainOptions, UnknownDeviceIsAClearError) {
  TrainOptions options;
  options.device = "tpu";
  std::ostringstream log;
  try {
    train_mlp(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--device tpu: expected cpu or sim");
  }
}

}  // namespace
}  // namespace podsim::examples
