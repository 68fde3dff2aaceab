// `podsim train --device opencl` end to end on the first OpenCL device (PoCL on the CPU
// where there is no GPU): the MLP reaches the accuracy the CPU backend does (>= 95% on
// the digits test split) and the small GPT's loss falls, each with one compiled training
// graph after warm-up and losses that follow the CPU backend's (the same graph; only
// summation orders differ).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "examples/train/train.h"
#include "runtime/pjrt/device.h"

namespace podsim::examples {
namespace {

// Skips the test (with the reason) where this machine has no OpenCL platform.
bool no_opencl(std::string& why) {
  try {
    pjrt::client("OPENCL");
    return false;
  } catch (const std::exception& e) {
    why = e.what();
    return true;
  }
}

TEST(TrainOnOpenCl, MlpReachesTheAccuracyOfTheCpu) {
  std::string why;
  if (no_opencl(why)) GTEST_SKIP() << why;
  TrainOptions options;
  options.steps = 200;
  options.seed = 3;
  std::ostringstream cpu_log, log;
  const TrainResult cpu = train_mlp(options, cpu_log);
  options.device = "opencl";
  const TrainResult result = train_mlp(options, log);
  EXPECT_EQ(result.device, "OPENCL:0");
  ASSERT_TRUE(result.test_accuracy.has_value());
  EXPECT_GE(*result.test_accuracy, 0.95) << log.str();
  EXPECT_NEAR(*result.test_accuracy, *cpu.test_accuracy, 0.01) << log.str() << cpu_log.str();
  EXPECT_NEAR(result.first_loss, cpu.first_loss, 1e-4 * cpu.first_loss);
  EXPECT_NEAR(result.final_loss, cpu.final_loss, 0.02 * cpu.final_loss + 1e-3)
      << log.str() << cpu_log.str();
  EXPECT_EQ(result.compilations, 2) << log.str();
}

TEST(TrainOnOpenCl, TransformerLossFallsAsOnTheCpu) {
  std::string why;
  if (no_opencl(why)) GTEST_SKIP() << why;
  TrainOptions options;
  options.steps = 30;
  std::ostringstream cpu_log, log;
  const TrainResult cpu = train_transformer(options, cpu_log);
  options.device = "opencl";
  const TrainResult result = train_transformer(options, log);
  EXPECT_LT(result.final_loss, result.first_loss - 0.5) << log.str();
  EXPECT_NEAR(result.final_loss, cpu.final_loss, 0.02 * cpu.final_loss)
      << log.str() << cpu_log.str();
  EXPECT_EQ(result.compilations, 2) << log.str();
}

TEST(TrainOnOpenCl, ReplicasAreAClearError) {
  std::string why;
  if (no_opencl(why)) GTEST_SKIP() << why;
  TrainOptions options;
  options.device = "opencl";
  options.replicas = 2;
  std::ostringstream log;
  try {
    train_mlp(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the OpenCL backend trains one replica"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::examples
