// SPMD training (`podsim train transformer --mesh data=2,model=2`, `--fsdp`): the
// transformer traced once for the SPMD device, its batch split over the data axis,
// attention and MLP weights Megatron-style over the model axis (and with --fsdp every
// weight over the data axis), every step partitioned by the compiler. Its loss curve
// follows the single-device run with the same global batch (only sums are reordered),
// on four CPU devices, on a simulated 2x2 pod, and over two slices with a HybridMesh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "examples/train/train.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::examples {
namespace {

TrainResult run(TrainOptions options, std::ostringstream& log) {
  lazy::reset_for_testing();
  unsetenv("PODSIM_TOPOLOGY");
  unsetenv("PODSIM_CPU_DEVICES");
  unsetenv("PODSIM_DEVICE");
  struct Reset {
    ~Reset() {
      lazy::reset_for_testing();
      unsetenv("PODSIM_DEVICE");
    }
  } reset;  // also when the run fails
  return train_transformer(options, log);
}

void expect_same_curve(const TrainResult& one, const TrainResult& spmd, double tolerance, const std::string& log) {
  ASSERT_EQ(one.losses.size(), spmd.losses.size()) << log;
  ASSERT_GE(one.losses.size(), 4u);
  for (size_t i = 0; i < one.losses.size(); ++i)
    EXPECT_NEAR(spmd.losses[i], one.losses[i], tolerance * std::abs(one.losses[i])) << "logged window " << i << "\n"
                                                                                     << log;
  EXPECT_LT(spmd.final_loss, spmd.first_loss * 0.9) << log;
  // The first step and the training step: each compiled once, partitioned.
  EXPECT_EQ(spmd.compilations, one.compilations) << log;
}

TrainOptions cpu_options() {
  TrainOptions options;
  options.steps = 16;
  options.log_every = 4;
  return options;
}

TEST(TrainSpmd, DataAndModelAxesOnCpuDevicesFollowOneDevice) {
  std::ostringstream log;
  TrainOptions options = cpu_options();
  TrainResult one = run(options, log);
  options.mesh = "data=2,model=2";
  TrainResult spmd = run(options, log);
  EXPECT_EQ(spmd.device, "SPMD:0");
  EXPECT_EQ(spmd.replicas, 4);
  expect_same_curve(one, spmd, 1e-4, log.str());
  EXPECT_NE(log.str().find("on SPMD:0 over 4 devices (SPMD)"), std::string::npos) << log.str();
}

TEST(TrainSpmd, FsdpOnCpuDevicesFollowsOneDevice) {
  std::ostringstream log;
  TrainOptions options = cpu_options();
  TrainResult one = run(options, log);
  options.fsdp = true;
  options.replicas = 4;
  expect_same_curve(one, run(options, log), 1e-4, log.str());
}

// The single v5e chip that the pod runs are compared against.
TrainOptions chip_options() {
  TrainOptions options;
  options.device = "sim";
  options.steps = 8;
  options.log_every = 2;
  options.topology = "v5e";
  return options;
}

TEST(TrainSpmd, MeshOnAPodFollowsTheSingleChip) {
  std::ostringstream log;
  TrainOptions options = chip_options();
  TrainResult chip = run(options, log);
  options.topology = "v5e:2x2";
  options.mesh = "data=2,model=2";
  TrainResult pod = run(options, log);
  // Both use the MXU's bf16 passes; the pod sums partial products in another order.
  expect_same_curve(chip, pod, 2e-3, log.str());
  EXPECT_GT(pod.pod_collective_seconds, 0) << log.str();
  EXPECT_GT(pod.pod_ici_bytes, 0) << log.str();
}

TEST(TrainSpmd, HybridMeshOverSlicesFollowsTheSingleChip) {
  // Two slices of two chips: the model axis inside each slice (ICI), the data axis across
  // the slices (DCN).
  std::ostringstream log;
  TrainOptions options = chip_options();
  TrainResult chip = run(options, log);
  options.topology = "v5e:1x2:slices=2";
  options.mesh = "model=2";
  options.dcn_mesh = "data=2";
  TrainResult pod = run(options, log);
  EXPECT_EQ(pod.replicas, 4);
  expect_same_curve(chip, pod, 2e-3, log.str());
  EXPECT_GT(pod.pod_collective_seconds, 0) << log.str();
  // A DCN split that is not the pod's slices is an error.
  options.dcn_mesh = "data=4";
  options.mesh = "";
  try {
    run(options, log);
    FAIL() << "four DCN ways over two slices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--dcn-mesh data=4 spans 4 slices, but the simulated pod "
                                         "v5e:1x2:slices=2 has 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainSpmd, BadMeshesAreErrors) {
  std::ostringstream log;
  TrainOptions options = cpu_options();
  options.mesh = "data=2,pipeline=2";
  EXPECT_THROW(run(options, log), Error);
  options.device = "sim";
  options.topology = "v5e:2x2";
  options.mesh = "data=8";
  try {
    run(options, log);
    FAIL() << "a mesh of 8 on 4 chips";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("spans 8 devices, but the simulated pod has 4 chips"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::examples
