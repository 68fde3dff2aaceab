// Data-parallel training (`podsim train --topology POD`, `--device cpu --replicas N`):
// the loss curve of R replicas, each with 1/R of every global batch and gradients
// averaged by all-reduce, follows the single-device run with the same global batch
// (the sums are only reordered; on the simulated chip both use the same bf16 MXU
// passes), on a simulated 2x2 pod and on four CPU devices; the last step's profile has
// every chip and the ICI links; the pod's steps are hazard-free.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "examples/train/train.h"
#include "runtime/lazy/tensor_impl.h"
#include "traces/chrome_trace.h"

namespace podsim::examples {
namespace {

// Each run makes its backend afresh: the SIM client reads PODSIM_TOPOLOGY, the CPU
// client PODSIM_CPU_DEVICES, when first made.
TrainResult run(TrainOptions options, std::ostringstream& log) {
  lazy::reset_for_testing();
  unsetenv("PODSIM_TOPOLOGY");
  unsetenv("PODSIM_CPU_DEVICES");
  TrainResult result = train_mlp(options, log);
  lazy::reset_for_testing();
  return result;
}

void expect_same_curve(const TrainResult& one, const TrainResult& many, double tolerance,
                       const std::string& log) {
  ASSERT_EQ(one.losses.size(), many.losses.size()) << log;
  ASSERT_GE(one.losses.size(), 5u);
  for (size_t i = 0; i < one.losses.size(); ++i)
    EXPECT_NEAR(many.losses[i], one.losses[i], tolerance * std::abs(one.losses[i]))
        << "logged window " << i << "\n" << log;
  EXPECT_LT(many.final_loss, many.first_loss / 2) << log;
}

TEST(TrainDataParallel, PodFollowsTheSingleChip) {
  TrainOptions options;
  options.device = "sim";
  options.steps = 30;
  options.log_every = 5;
  options.topology = "v5e";
  std::ostringstream log;
  TrainResult chip = run(options, log);
  options.topology = "v5e:2x2";
  TrainResult pod = run(options, log);
  EXPECT_EQ(chip.replicas, 1);
  EXPECT_EQ(pod.replicas, 4);
  EXPECT_EQ(pod.device, "SIM:0");
  expect_same_curve(chip, pod, 1e-3, log.str());
  // The training step and the first step compile once for all replicas.
  EXPECT_EQ(pod.compilations, chip.compilations) << log.str();
  // A pod step runs the chip's step on a quarter of the batch, plus the all-reduces.
  EXPECT_GT(pod.simulated_cycles, 0);
  EXPECT_NE(log.str().find("on 4 replicas on SIM:0 .. SIM:3 (data parallel)"), std::string::npos)
      << log.str();
}

TEST(TrainDataParallel, CpuReplicasFollowOneCpuDevice) {
  TrainOptions options;
  options.steps = 30;
  options.log_every = 5;
  std::ostringstream log;
  TrainResult one = run(options, log);
  options.replicas = 4;
  TrainResult four = run(options, log);
  EXPECT_EQ(four.replicas, 4);
  expect_same_curve(one, four, 1e-4, log.str());
}

TEST(TrainDataParallel, ProfileHasEveryChipAndTheLinks) {
  TrainOptions options;
  options.device = "sim";
  options.topology = "v5e:2x2";
  options.steps = 4;
  options.profile =
      (std::filesystem::temp_directory_path() / fmt::format("podsim_dp_{}.json", getpid())).string();
  std::ostringstream log;
  run(options, log);
  traces::Profile profile = traces::read_chrome_trace(options.profile);
  std::filesystem::remove(options.profile);
  ASSERT_EQ(profile.chips.size(), 4u) << log.str();
  size_t ici_tracks = 0;
  for (const traces::ChipProfile& chip : profile.chips) {
    EXPECT_GT(chip.total_cycles, 0u);
    for (const traces::Track& track : chip.tracks)
      if (track.category == "ici" && !track.spans.empty()) ++ici_tracks;
  }
  EXPECT_GE(ici_tracks, 4u) << "every chip sends over ICI in the all-reduces";
  EXPECT_NE(log.str().find("over ICI"), std::string::npos) << log.str();
}

TEST(TrainDataParallel, PodStepsAreHazardFree) {
  setenv("PODSIM_CHECK_HAZARDS", "1", 1);
  TrainOptions options;
  options.device = "sim";
  options.topology = "v5e:2x2";
  options.steps = 3;
  std::ostringstream log;
  EXPECT_NO_THROW(run(options, log)) << log.str();
  unsetenv("PODSIM_CHECK_HAZARDS");
}

TEST(TrainDataParallel, BadReplicaCountsAreClearErrors) {
  TrainOptions options;
  options.device = "sim";
  options.topology = "v5e:2x2";
  options.replicas = 2;
  std::ostringstream log;
  try {
    run(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 4 chip(s), and every chip trains a replica"),
              std::string::npos)
        << e.what();
  }
  options = {};
  options.replicas = 3;
  options.batch = 64;  // does not split over 3
  try {
    run(options, log);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch 64 does not split over 3 replicas"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::examples
