// podsim train mlp|cnn|transformer: the training workloads of examples/train on the host
// CPU, a simulated chip or a simulated pod (data parallel, a replica per chip; or SPMD
// over a mesh with --mesh / --fsdp), with a progress line per few steps.
#include <fmt/core.h>

#include <memory>

#include "examples/train/train.h"
#include "tools/commands.h"

namespace podsim::tools {

Command add_train_command(CLI::App& app) {
  auto options = std::make_shared<examples::TrainOptions>();
  auto workload = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train an example model on lazy tensors (CPU, a simulated chip or pod)");
  cmd->add_option("workload", *workload,
                  "mlp: a perceptron on scikit-learn's handwritten digits; cnn: a small convolutional "
                  "network (batch norm, pooling) on the same digits; transformer: a small "
                  "character-level GPT")
      ->required()
      ->check(CLI::IsMember({"mlp", "cnn", "transformer"}));
  cmd->add_option("--device", options->device,
                  "cpu (the host CPU backend), sim (a simulated chip or pod) or opencl (the first "
                  "OpenCL device: a GPU where there is one; PODSIM_OPENCL_DEVICE picks another)")
      ->check(CLI::IsMember({"cpu", "sim", "opencl"}))
      ->capture_default_str();
  CLI::Option* topology = cmd->add_option(
      "--topology", options->topology,
      "For --device sim: a pod (v5e-4, v5e:2x2, v4-8, a pod TOML file; data parallel, one "
      "replica per chip) or a chip (v5e, v4, a chip TOML file); default PODSIM_TOPOLOGY, "
      "else the v5e chip");
  cmd->add_option("--chip", options->topology, "For --device sim: a chip preset or TOML file")
      ->excludes(topology);
  cmd->add_option("--replicas", options->replicas,
                  "For --device cpu: data-parallel replicas, one CPU device each (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--steps", options->steps, "Training steps (default: mlp and cnn 300, transformer 200)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", options->batch,
                  "Global batch size, split over the replicas (default: mlp and cnn 64, transformer 16)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--lr", options->lr, "Peak learning rate (default: mlp and cnn 1e-2, transformer 3e-3)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", options->seed, "Seed of initialization, split and shuffling")
      ->capture_default_str();
  cmd->add_option("--log-every", options->log_every,
                  "Steps between progress lines (default: about 10 lines)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--profile", options->profile,
      "With --device sim: write the last step's profile here (Chrome trace JSON, Perfetto UI) "
      "and print its summary");
  cmd->add_option("--mesh", options->mesh,
                  "SPMD over a logical mesh of the devices, e.g. data=2,model=4 (cpu: that many CPU "
                  "devices; sim: the pod's chips): the batch split over data, attention and MLP "
                  "weights Megatron-style over model");
  cmd->add_option("--dcn-mesh", options->dcn_mesh,
                  "With a multislice pod: the mesh axes across slices (over DCN), e.g. data=2; "
                  "--mesh is then the axes within a slice (over ICI), as PyTorch/XLA's HybridMesh");
  cmd->add_flag("--fsdp", options->fsdp,
                "SPMD with each weight also split over the data axis (its first free dimension, "
                "where it divides); alone: a data axis over every device");
  cmd->add_option("--checkpoint", options->checkpoint,
                  "Save model and optimizer here (safetensors) at the end");
  cmd->add_flag("--quiet{false}", options->progress,
                "No progress line on the terminal between the log lines (none is shown where stderr "
                "is not a terminal)");
  return {cmd, [options, workload] {
            if (*workload == "mlp")
              examples::train_mlp(*options, std::cout);
            else if (*workload == "cnn")
              examples::train_cnn(*options, std::cout);
            else
              examples::train_transformer(*options, std::cout);
            return 0;
          }};
}

}  // namespace podsim::tools
